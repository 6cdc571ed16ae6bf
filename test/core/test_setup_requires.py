"""setup.py requires the PyPI URDF parser only where no other distribution provides it.

On a ROS 2 install the module ``urdf_parser_py`` comes from the distribution ``urdfdom_py``
(rosdep key ``urdfdom_py``); requiring ``urdf_parser_py`` there would make the console scripts
refuse to start. Checked with fake site folders in an isolated interpreter.
"""

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


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


def test_a_ros_install_providing_the_module_as_urdfdom_py_is_not_asked_for_the_pypi_name(
        tmp_path):
    fake_distribution(tmp_path, 'urdfdom_py', 'urdf_parser_py')
    requires = requires_in(tmp_path)
    assert 'urdf_parser_py' not in requires and 'numpy>=1.21' in requires


def test_a_plain_python_gets_the_pypi_urdf_parser(tmp_path):
    assert 'urdf_parser_py' in requires_in(tmp_path)


def test_the_pypi_distribution_itself_stays_required(tmp_path):
    fake_distribution(tmp_path, 'urdf_parser_py', 'urdf_parser_py')
    assert 'urdf_parser_py' in requires_in(tmp_path)


def test_numba_is_required_where_it_has_wheels_and_nowhere_else(tmp_path):
    numba = [r for r in requires_in(tmp_path) if r.startswith('numba')]
    assert len(numba) == 1
    name, marker = numba[0].split(';')
    assert name.strip() == 'numba>=0.55'
    machines = {clause.split('==')[1].strip().strip('"')
                for clause in marker.split(' or ')
                if clause.split('==')[0].strip() == 'platform_machine'}
    assert machines == {'x86_64', 'AMD64', 'aarch64', 'arm64'}
    assert marker.count('==') == len(machines), marker  # nothing but machines
