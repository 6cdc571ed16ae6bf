"""Smoke test of the solver benchmark: a --quick run on one shipped robot writes sane results.

Timings are never asserted here (the machine is shared); only that the harness runs and its JSON
holds an entry per solver with success rates in [0, 100].
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / 'benchmarks' / 'bench_solvers.py'


@pytest.mark.slow
def test_quick_benchmark_on_planar4_writes_results_for_every_solver(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), '--quick', '--robots', 'planar4', '--out', str(tmp_path),
         '--no-plot'], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads((tmp_path / 'results.json').read_text())
    assert (tmp_path / 'results.md').read_text().startswith('# ik_node solver benchmark')
    assert results['blocks'], 'no robot/task/seed block was run'
    for block in results['blocks']:
        assert block['robot'] == 'planar4'
        assert block['solvers'], f'no solver ran in block {block["task"]}/{block["seed"]}'
        for name, stats in block['solvers'].items():
            assert 0.0 <= stats['success_pct'] <= 100.0, (name, stats)
            assert 0.0 <= stats['in_limits_pct'] <= 100.0, (name, stats)
            assert stats['n'] == 10
    ran = {name for block in results['blocks'] for name in block['solvers']}
    assert {'damped_jacobian', 'fabrik'} <= ran
    assert [c['target'] for c in results['target_checks']], 'the target checks are missing'


@pytest.mark.slow
def test_unknown_solver_name_is_refused_with_the_valid_names(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), '--quick', '--solvers', 'nope', '--out', str(tmp_path)],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert 'nope' in proc.stderr and 'damped_jacobian' in proc.stderr


@pytest.mark.slow
def test_a_quick_run_never_writes_the_committed_results(tmp_path):
    results = SCRIPT.parent / 'results' / 'results.md'
    before = results.read_bytes() if results.is_file() else None
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), '--quick', '--robots', 'planar4', '--solvers', 'fabrik',
         '--no-plot'], capture_output=True, text=True, timeout=600, cwd=tmp_path,
        env={**os.environ, 'TMPDIR': str(tmp_path)})  # its temp folder goes with tmp_path
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert (results.read_bytes() if results.is_file() else None) == before
    assert 'bench_quick_' in proc.stdout + proc.stderr  # says where it wrote
    assert list(tmp_path.glob('bench_quick_*/*')), 'the quick run wrote nothing to its temp folder'


def test_benchmark_scripts_import_each_other_without_a_circle():
    """The scripts import their sibling modules by name (benchmarks/ is on sys.path); the graph
    of those imports, inside functions too, has no circle."""
    import ast
    folder = SCRIPT.parent
    local = {p.stem for p in folder.glob('*.py')}
    edges = {}
    for path in folder.glob('*.py'):
        names = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(a.name.split('.')[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split('.')[0])
        edges[path.stem] = names & local - {path.stem}
    assert edges['peers'] and edges['compiled_peers'], 'the test reads no imports'
    circles = []

    def visit(module, stack):
        if module in stack:
            circles.append(stack[stack.index(module):] + [module])
            return
        for imported in sorted(edges[module]):
            visit(imported, stack + [module])

    for module in sorted(edges):
        visit(module, [])
    assert not circles, circles[:5]
