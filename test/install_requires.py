"""setup.py's install_requires() as an isolated interpreter sees it, with fake site folders."""

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def requires_in(site: Path) -> list:
    tree = ast.parse((REPO / 'setup.py').read_text())
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    source = '\n\n'.join(ast.unparse(f) for f in functions)
    code = f'import sys\nsys.path[:0] = [{str(site)!r}]\n{source}\nprint(install_requires())'
    out = subprocess.run([sys.executable, '-I', '-S', '-c', code], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return ast.literal_eval(out.stdout.strip())


def fake_distribution(site: Path, dist: str, module: str) -> None:
    (site / module).mkdir(parents=True)
    (site / module / '__init__.py').write_text('')
    info = site / f'{dist}-1.0.dist-info'
    info.mkdir()
    (info / 'METADATA').write_text(f'Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n')
    (info / 'top_level.txt').write_text(module + '\n')
    (info / 'RECORD').write_text(f'{module}/__init__.py,,\n')
