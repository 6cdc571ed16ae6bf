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
    node_source = '\n'.join(p.read_text() for p in [REPO / 'ik_node' / 'config' / 'ros_graph.py',
                                                      *(REPO / 'ik_node' / 'ros').rglob('*.py')])
    conv_source = node_source  # ik_node/ros/outputs/status_format.py is among them
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
