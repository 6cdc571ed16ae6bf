"""launch/ik.launch.py run for real: the real ``launch`` and ``launch_ros`` (a LaunchService in
its own process, as ``ros2 launch`` runs one), real node processes, a real client.

For every packaged robot the launch starts ik_node with the parameters file launch_ros writes;
that file is read here with ik_node's own loader (so a list launch_ros tags ``!!python/tuple``
is read as the node reads it), a target made by FK from a configuration inside the limits is sent
with ``ik-solve target``, the answer's joint positions are checked by FK, and SIGINT to the
launch ends everything with exit status 0 and no traceback. Where tf2_ros imports, a target
given in a TF frame outside the URDF (a static transform published beside the launch) is
answered too.

Skipped where ``launch_ros`` (with its ``launch_ros.actions``) is not importable. ik_node is
installed for the launch into a throw-away ament prefix: ``share/ik_node`` of symlinks to this
tree and a ``lib/ik_node/ik_node`` script running this tree's entry point, ahead of the prefixes
already on ``AMENT_PREFIX_PATH`` (robot_state_publisher, where installed, starts too).
"""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from ik_node.config.launch_plan import ROBOTS
from ik_node.config.node_config import build_chain, load_config

pytest.importorskip('launch')
pytest.importorskip('launch_ros.actions', reason='launch_ros (and composition_interfaces, which '
                    'launch_ros.actions imports) come with ROS 2; without them ik.launch.py '
                    'cannot run')

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
LAUNCH_FILE = REPO / 'launch' / 'ik.launch.py'
#: Deadlines for a step that hangs (not speed checks): the launch starting ik_node, the node's
#: answer, the launch ending after SIGINT.
WAIT_S = 90.0

# The launch, as ``ros2 launch`` runs it: a LaunchService including the launch file with the
# arguments given as name:=value. Each process started is reported on one "STARTED {json}" line.
DRIVER = r'''
import json
import sys

from launch import LaunchDescription, LaunchService
from launch.actions import IncludeLaunchDescription, RegisterEventHandler
from launch.event_handlers import OnProcessStart
from launch.launch_description_sources import PythonLaunchDescriptionSource


def started(event, context):
    print('STARTED ' + json.dumps({'name': event.action.name, 'pid': event.pid,
                                   'cmd': list(event.cmd)}), flush=True)


launch_file, *pairs = sys.argv[1:]
arguments = [tuple(pair.split(':=', 1)) for pair in pairs]
service = LaunchService(argv=pairs)
service.include_launch_description(LaunchDescription([
    RegisterEventHandler(OnProcessStart(on_start=started)),
    IncludeLaunchDescription(PythonLaunchDescriptionSource(launch_file),
                             launch_arguments=arguments),
]))
sys.exit(service.run())
'''


def _entry_point() -> str:
    """``module:function`` of the ``ik_node`` console script in setup.py."""
    match = re.search(r"'ik_node\s*=\s*([\w.]+:\w+)'", (REPO / 'setup.py').read_text())
    assert match, 'setup.py declares no ik_node console script'
    return match.group(1)


@pytest.fixture
def prefix(tmp_path):
    """An ament prefix holding this tree as the ik_node package."""
    root = tmp_path / 'prefix'
    index = root / 'share' / 'ament_index' / 'resource_index' / 'packages'
    index.mkdir(parents=True)
    (index / 'ik_node').touch()
    (root / 'share' / 'ik_node').mkdir()
    for folder in ('launch', 'config', 'urdf', 'rviz'):
        (root / 'share' / 'ik_node' / folder).symlink_to(REPO / folder)
    (root / 'share' / 'ik_node' / 'package.xml').symlink_to(REPO / 'package.xml')
    module, function = _entry_point().split(':')
    script = root / 'lib' / 'ik_node' / 'ik_node'
    script.parent.mkdir(parents=True)
    script.write_text(f'#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(REPO)!r})\n'
                      f'from {module} import {function}\nsys.exit({function}())\n')
    script.chmod(0o755)
    return root


class Launch:
    """``ik.launch.py`` running in a LaunchService process; its output goes to a file."""

    def __init__(self, prefix: Path, directory: Path, **arguments: str):
        self.log = directory / 'launch.log'
        self.temp = directory / 'launch_tmp'  # launch_ros writes its params files here
        self.temp.mkdir()
        env = dict(os.environ)
        env['AMENT_PREFIX_PATH'] = os.pathsep.join(
            [str(prefix)] + [p for p in env.get('AMENT_PREFIX_PATH', '').split(os.pathsep) if p])
        env['PYTHONPATH'] = os.pathsep.join(
            [str(REPO)] + [p for p in env.get('PYTHONPATH', '').split(os.pathsep) if p])
        env['TMPDIR'] = str(self.temp)
        env['ROS_HOME'] = str(directory / 'ros_home')
        env['PYTHONUNBUFFERED'] = '1'
        argv = [f'{name}:={value}' for name, value in arguments.items()]
        with open(self.log, 'w') as out:
            self.proc = subprocess.Popen([sys.executable, '-c', DRIVER, str(LAUNCH_FILE), *argv],
                                         stdout=out, stderr=subprocess.STDOUT, env=env,
                                         start_new_session=True)

    def text(self) -> str:
        return self.log.read_text()

    def started(self, name: str) -> dict:
        """The STARTED record of the process whose name starts with ``name``; waits for it."""
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            for line in self.text().splitlines():
                if line.startswith('STARTED '):
                    record = json.loads(line[len('STARTED '):])
                    if record['name'].startswith(name):
                        return record
            assert self.proc.poll() is None, \
                f'the launch ended (status {self.proc.returncode}):\n{self.text()}'
            time.sleep(0.2)
        raise AssertionError(f'{name} did not start within {WAIT_S} s:\n{self.text()}')

    def interrupt(self) -> int:
        """Ctrl-C: SIGINT to the launch; its exit status."""
        self.proc.send_signal(signal.SIGINT)
        return self.wait('after SIGINT')

    def wait(self, what: str = '') -> int:
        """The launch's exit status, once it ends."""
        try:
            return self.proc.wait(WAIT_S)
        except subprocess.TimeoutExpired:
            self.kill()
        raise AssertionError(f'the launch did not end within {WAIT_S} s {what}:\n{self.text()}')

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


@pytest.fixture
def launches(prefix, tmp_path):
    """Start launches with ``launches(**arguments)``; any still running is killed at the end."""
    made = []

    def start(**arguments):
        directory = tmp_path / f'launch{len(made)}'
        directory.mkdir()
        made.append(Launch(prefix, directory, **arguments))
        return made[-1]
    yield start
    for launch in made:
        launch.kill()


def reachable_target(chain, tip):
    """A tip position [m] by FK from a configuration inside the limits, away from their ends."""
    rng = np.random.default_rng(31)
    finite = np.isfinite(chain.lower) & np.isfinite(chain.upper)
    span = np.where(finite, chain.upper - chain.lower, 2.0)
    q = chain.clip(chain.mid_configuration() + rng.uniform(-0.2, 0.2, chain.n) * span)
    return chain.fk(q, tip)[:3, 3]


def ask(target, tip=None, frame=None):
    """``ik-solve target`` (a real client process) with one target; its JSON answer."""
    args = ['--point', *(f'{v:.9f}' for v in target), '--json', '--timeout', str(WAIT_S)]
    if tip is not None:
        args += ['--tip', tip]
    if frame is not None:
        args += ['--frame', frame]
    proc = subprocess.run([sys.executable, '-m', 'ik_node.cli', 'target', *args],
                          capture_output=True, text=True, timeout=3 * WAIT_S, cwd=REPO)
    assert proc.returncode == 0, f'no reached answer (status {proc.returncode}):\n' \
                                 f'{proc.stdout}\n{proc.stderr}'
    return json.loads(proc.stdout)


# A static transform world -> the robot's base (argv[1]), 0.5 m along x, until terminated.
BROADCASTER = r'''
import sys

import rclpy
import tf2_ros
from geometry_msgs.msg import TransformStamped

rclpy.init()
node = rclpy.create_node('world_broadcaster')
t = TransformStamped()
t.header.frame_id, t.child_frame_id = 'world', sys.argv[1]
t.header.stamp = node.get_clock().now().to_msg()
t.transform.translation.x = 0.5
t.transform.rotation.w = 1.0
tf2_ros.StaticTransformBroadcaster(node).sendTransform(t)
try:
    rclpy.spin(node)
except BaseException:  # terminated
    pass
'''


def params_files_of(record):
    cmd = record['cmd']
    return [Path(cmd[i + 1]) for i, arg in enumerate(cmd) if arg == '--params-file']


@pytest.mark.parametrize('robot', ROBOTS)
def test_the_launch_runs_the_robot_and_the_node_answers_a_target_and_ctrl_c_ends_it_cleanly(
        robot, launches):
    launch = launches(robot=robot, rviz='false')
    record = launch.started('ik_node')

    # The parameters file the node reads is the one launch_ros wrote; read as the node reads it.
    files = params_files_of(record)
    written = [f for f in files if f.parent == launch.temp and f.name.startswith('launch_params_')]
    assert len(written) == 1, files
    config = load_config(written[0])
    expected = load_config(REPO / 'config' / f'{robot}.yaml')
    assert config.tip_links == expected.tip_links and config.solver == expected.solver
    assert config.robot_description == (REPO / 'urdf' / f'{robot}.urdf').read_text()

    chain = build_chain(config)
    tip = chain.tip_links[0] if config.branched else None
    target = reachable_target(chain, tip)
    answer = ask(target, tip)
    assert answer['diagnostics']['reachable'] == 'true', answer
    q = np.array([answer['joints'][name] for name in chain.joint_names])
    assert chain.within_limits(q)
    tolerance = config.params_of().get('position_tolerance', 1e-3)
    error = np.linalg.norm(chain.fk(q, tip)[:3, 3] - target)
    assert error <= tolerance, (error, tolerance, answer)

    status = launch.interrupt()
    log = launch.text()
    assert status == 0, log
    assert 'Traceback' not in log, log
    assert re.search(r'\[ik_node-\d+\]: process has finished cleanly', log), log


def test_a_target_in_a_tf_frame_outside_the_urdf_is_answered_under_the_launch(launches):
    """With tf2_ros (a ROS 2 install): a static transform world -> base_link published beside
    the launch, a target given in ``world`` is answered in the base frame, and Ctrl-C still
    ends everything cleanly."""
    pytest.importorskip('tf2_ros', reason='tf2_ros comes with a ROS 2 install (not with the '
                        'PyPI wheels); without it a target in a TF frame is refused, saying so')
    launch = launches(robot='arm6', rviz='false')
    record = launch.started('ik_node')
    (written,) = [f for f in params_files_of(record) if f.parent == launch.temp]
    config = load_config(written)
    chain = build_chain(config)
    broadcaster = subprocess.Popen([sys.executable, '-c', BROADCASTER, config.base_link])
    try:
        target = reachable_target(chain, None)
        answer = ask(target + np.array([0.5, 0.0, 0.0]), frame='world')
    finally:
        broadcaster.terminate()
        broadcaster.wait(WAIT_S)
    assert answer['diagnostics']['reachable'] == 'true', answer
    q = np.array([answer['joints'][name] for name in chain.joint_names])
    assert np.linalg.norm(chain.fk(q)[:3, 3] - target) <= 1e-3, answer
    status = launch.interrupt()
    log = launch.text()
    assert status == 0 and 'Traceback' not in log, log
    assert re.search(r'\[ik_node-\d+\]: process has finished cleanly', log), log


def test_robot_state_publisher_off_without_a_robot_is_refused_saying_what_to_add(launches):
    launch = launches(robot_state_publisher='false', rviz='false')
    status = launch.wait()
    log = launch.text()
    assert status != 0, log
    assert 'STARTED' not in log, log  # refused before any process starts
    for words in ('robot:=', 'description_file:=', 'tip_link:='):
        assert words in log, (words, log)
    assert 'no tip link' not in log and 'Traceback' not in log, log


def test_a_parameter_the_node_refuses_stops_the_launch_with_an_error_status(launches, tmp_path):
    mine = tmp_path / 'mine.yaml'
    mine.write_text('ik_node:\n  ros__parameters:\n    publish_rat: 5.0\n')  # publish_rate
    launch = launches(robot='arm6', rviz='false', params_file=str(mine))
    launch.started('ik_node')
    status = launch.wait()
    log = launch.text()
    assert status != 0, log
    assert 'publish_rat' in log and 'ik_node ended with exit status' in log, log
    assert 'Traceback' not in log, log
