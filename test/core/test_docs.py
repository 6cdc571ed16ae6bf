"""The docs document what the code declares: parameter tables, the test command, topics, keys;
the README's Python example runs as a script from any folder."""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = (REPO / 'README.md').read_text()
NODE_DOC = (REPO / 'docs' / 'node.md').read_text()


@pytest.mark.slow
def test_parameter_doc_is_the_one_the_code_declares():
    generated = subprocess.run([sys.executable, str(REPO / 'scripts' / 'param_tables.py')],
                               capture_output=True, text=True, check=True).stdout
    assert (REPO / 'docs' / 'parameters.md').read_text() == generated, \
        'docs/parameters.md is stale: run `python scripts/param_tables.py --write`'


def test_ci_runs_the_readme_test_command():
    ci_lines = [line.strip() for line in (REPO / '.ci' / 'run').read_text().splitlines()
                if line.strip() and not line.strip().startswith('#')]
    assert ci_lines[-1] in README
    assert './quickstart.sh demo' in README


def test_node_doc_names_every_topic_and_diagnostic_key_the_node_uses():
    node_source = '\n'.join(p.read_text() for p in [*(REPO / 'ik_node' / 'config').rglob('*.py'),
                                                      *(REPO / 'ik_node' / 'ros').rglob('*.py')])
    conv_source = node_source  # the ros package's modules, subpackages included
    for topic in ('target_pose', 'target_point', 'joint_states', '/diagnostics', 'markers',
                  'forward_position_controller/commands',
                  'joint_trajectory_controller/joint_trajectory', 'robot_description'):
        assert topic in node_source and topic in NODE_DOC, topic
    for key in ('solver', 'reachable', 'position_error_m', 'orientation_error_rad',
                'min_residual_m', 'iterations', 'solve_time_ms', 'status', 'target_frame',
                'skipped_targets', 'orientation_ignored', 'solve_count', 'message',
                'target_stamp', 'joint_state_stamp', 'seed', 'output'):
        assert f"'{key}'" in conv_source and f'`{key}`' in NODE_DOC, key


@pytest.mark.slow
def test_readme_python_example_runs_from_any_folder_and_prints_the_result(tmp_path):
    block = README.split('```python\n', 1)[1].split('```', 1)[0]
    script = tmp_path / 'example.py'
    script.write_text(block)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         cwd=tmp_path, timeout=60)
    assert out.returncode == 0, out.stderr
    assert 'reachable' in out.stdout and 'True' in out.stdout, out.stdout
    assert 'np.' not in out.stdout, out.stdout  # plain numbers, also on numpy 2


def test_readme_links_point_to_files_that_exist():
    import re
    for target in re.findall(r'\]\(([^)#]+)\)', README):
        if not target.startswith('http'):
            assert (REPO / target).exists(), target


def test_files_the_docs_name_exist():
    """A path of the repository quoted in README.md, docs/ or benchmarks/README.md (a module, a
    config, a test, a results file) names a file that is there."""
    import re
    folders = 'ik_node|test|benchmarks|scripts|launch|config|urdf|rviz|demo'
    suffixes = 'py|yaml|urdf|rviz|md|xacro|json'
    pattern = re.compile(rf'(?<![\w/.~])((?:{folders})/[\w./-]+\.(?:{suffixes}))')
    docs = [REPO / 'README.md', REPO / 'benchmarks' / 'README.md', *(REPO / 'docs').glob('*.md')]
    named = {m for doc in docs for m in pattern.findall(doc.read_text())}
    assert len(named) > 20, sorted(named)  # the pattern finds the paths the docs name
    missing = sorted(p for p in named if not (REPO / p).exists())
    assert not missing, missing


def test_benchmark_modules_the_docs_name_exist():
    """A ``python -m benchmarks.<room>.<name>`` quoted in README.md, docs/ or benchmarks/ (its
    README and the results files) names a module that is there."""
    import re
    docs = [REPO / 'README.md', *(REPO / 'docs').glob('*.md'), *(REPO / 'benchmarks').rglob('*.md')]
    named = {m for doc in docs
             for m in re.findall(r'python -m (benchmarks(?:\.\w+)+)', doc.read_text())}
    assert len(named) > 10, sorted(named)  # the pattern finds the modules the docs name
    missing = sorted(m for m in named if not (REPO / (m.replace('.', '/') + '.py')).is_file())
    assert not missing, missing
