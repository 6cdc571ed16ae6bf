"""colcon builds the package into a workspace with the layout ROS 2 expects, and it runs from there.

Uses colcon-core and colcon-ros from PyPI (installed by the test extra). The installed `ik_node`
executable is started from the workspace and its /joint_states are received by a subscriber in
this (another) process over real DDS.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

#: Every test here talks to ik_node in its own process (or runs a script that starts one).
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
IGNORED = shutil.ignore_patterns('.git', '.venv', '.venv-fast', 'build', 'install', 'log',
                                 '__pycache__', '*.egg-info', '.pytest_cache', '.ruff_cache',
                                 '.hypothesis', 'demo_output')


def _colcon() -> str:
    candidate = Path(sys.executable).with_name('colcon')
    if candidate.exists():
        return str(candidate)
    found = shutil.which('colcon')
    if not found:
        pytest.skip('colcon is not installed (pip install colcon-core colcon-ros)')
    return found


@pytest.fixture(scope='module')
def workspace(tmp_path_factory):
    """A colcon workspace with ik_node built into it; yields the install prefix of ik_node."""
    ws = tmp_path_factory.mktemp('ws')
    shutil.copytree(REPO, ws / 'src' / 'ik_node', ignore=IGNORED)
    proc = subprocess.run(
        [_colcon(), 'build', '--base-paths', 'src', '--event-handlers', 'console_direct-'],
        cwd=ws, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f'colcon build failed:\n{proc.stdout}\n{proc.stderr}'
    return ws / 'install' / 'ik_node'


def test_colcon_build_installs_the_ros2_layout(workspace):
    prefix = workspace
    for exe in ('ik_node', 'ik-solve'):
        path = prefix / 'lib' / 'ik_node' / exe
        assert path.is_file() and os.access(path, os.X_OK), f'{path} missing or not executable'
    share = prefix / 'share' / 'ik_node'
    assert (share / 'package.xml').is_file()
    for sub, pattern in (('launch', '*.launch.py'), ('config', '*.yaml'), ('urdf', '*.urdf'),
                         ('rviz', '*.rviz')):
        assert sorted(p.name for p in (share / sub).glob(pattern)) == \
            sorted(p.name for p in (REPO / sub).glob(pattern)), f'share/ik_node/{sub} incomplete'
        assert list((share / sub).glob(pattern)), f'share/ik_node/{sub} is empty'
    assert (prefix / 'share' / 'ament_index' / 'resource_index' / 'packages' / 'ik_node').is_file()
    site = list(prefix.glob('lib/python3*/site-packages/ik_node/__init__.py'))
    assert site, 'the Python package is not installed under lib/python3.X/site-packages'


def test_installed_executable_publishes_joint_states(workspace):
    pytest.importorskip('rclpy')
    from harness import Ros, wait_for
    from sensor_msgs.msg import JointState

    prefix = workspace
    env = dict(os.environ)
    site = str(next(prefix.glob('lib/python3*/site-packages')))
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [site, env.get('PYTHONPATH', '')]))
    env['AMENT_PREFIX_PATH'] = os.pathsep.join(
        filter(None, [str(prefix), env.get('AMENT_PREFIX_PATH', '')]))
    params = prefix / 'share' / 'ik_node' / 'config' / 'leg3.yaml'
    node = subprocess.Popen(
        [str(prefix / 'lib' / 'ik_node' / 'ik_node'), '--ros-args', '--params-file', str(params)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    ros = Ros()
    received = []
    try:
        listener = ros.node('packaging_test_listener')
        listener.create_subscription(JointState, '/joint_states', received.append, 10)
        try:
            wait_for('a JointState or the end of the node',
                     lambda: received or node.poll() is not None, timeout=30.0)
        except AssertionError:
            pass  # the assertions below say what came
    finally:
        ros.close()
        node.terminate()
        try:
            output, _ = node.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            node.kill()
            output, _ = node.communicate()
    assert received, f'no JointState from the installed ik_node; its output:\n{output}'
    assert list(received[0].name) == ['hip_yaw', 'hip_pitch', 'knee']
    assert 'Traceback' not in output, output
