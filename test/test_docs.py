"""The README documents what the code declares: parameter tables, the test command, topics."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = (REPO / 'README.md').read_text()


def test_readme_parameter_tables_are_the_ones_the_code_declares():
    tables = subprocess.run([sys.executable, str(REPO / 'scripts' / 'param_tables.py')],
                            capture_output=True, text=True, check=True).stdout
    missing = [line for line in tables.splitlines() if line.startswith('|') and
               line not in README]
    assert not missing, 'README tables are stale; paste `python scripts/param_tables.py`:\n' + \
        '\n'.join(missing)


def test_ci_runs_the_readme_test_command():
    ci_lines = [line.strip() for line in (REPO / '.ci' / 'run').read_text().splitlines()
                if line.strip() and not line.strip().startswith('#')]
    assert ci_lines[-1] in README
    assert './quickstart.sh demo' in README


def test_readme_names_every_topic_and_diagnostic_key_the_node_uses():
    node_source = '\n'.join(p.read_text() for p in [REPO / 'ik_node' / 'node.py',
                                                      REPO / 'ik_node' / 'graph.py',
                                                      *(REPO / 'ik_node' / 'ros').glob('*.py')])
    conv_source = (REPO / 'ik_node' / 'conversions.py').read_text() + node_source
    for topic in ('target_pose', 'target_point', 'joint_states', '/diagnostics', 'markers',
                  'forward_position_controller/commands',
                  'joint_trajectory_controller/joint_trajectory', 'robot_description'):
        assert topic in node_source and topic in README, topic
    for key in ('solver', 'reachable', 'position_error_m', 'orientation_error_rad',
                'min_residual_m', 'iterations', 'solve_time_ms', 'status', 'target_frame',
                'skipped_targets', 'orientation_ignored', 'solve_count', 'message',
                'target_stamp', 'joint_state_stamp', 'seed', 'output'):
        assert f"'{key}'" in conv_source and f'`{key}`' in README, key
