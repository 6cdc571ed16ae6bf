"""Shared test set-up for both layers: ``test/core`` (no ROS) and ``test/ros`` (real rclpy, DDS).

Every pytest run talks DDS on its own domain, kept on this machine, so parallel runs (and other
ROS 2 programs) never see each other's topics: a random one that no other live run holds (a lock
file per domain in the temporary folder). Subprocesses started by tests inherit it.

Test modules import shared helpers by their plain names (``closest_reference``, ``harness``,
another test module's data), so both layer folders and this one are on ``sys.path``; the
checkout's root too (at the end), for the tests of ``benchmarks``. Slow tests
carry ``@pytest.mark.slow``: ``pytest -m "not slow" test/core`` is a developer's quick loop.
"""

import fcntl
import os
import random
import signal
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import IO, Optional, Tuple

import pytest

TEST_DIR = Path(__file__).resolve().parent
REPO = TEST_DIR.parent
for _folder in (TEST_DIR, TEST_DIR / 'core', TEST_DIR / 'ros'):
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))
if str(REPO) not in sys.path:
    sys.path.append(str(REPO))
from reference_robots import SHARED_ROBOTS, reference_robot  # noqa: E402,F401
# The vendors' arms with collision meshes, for the collision tests of both layers.
from collision_robots import collision_cache_dir, collision_robot  # noqa: E402,F401



def _reserve_domain() -> Tuple[int, Optional[IO]]:
    """A random ROS domain (1..100) no other live test run of ik_node on this machine holds,
    and the open lock file that holds it for this process's life (None: every domain was
    held, the first random one is shared). Two runs on one domain would answer each other's
    targets (every node of a test is named ``ik_node``)."""
    domains = list(range(1, 101))
    random.Random(os.getpid()).shuffle(domains)
    folder = Path(tempfile.gettempdir()) / 'ik_node_test_domains'
    try:
        folder.mkdir(mode=0o777, exist_ok=True)
    except OSError:
        return domains[0], None
    for domain in domains:
        try:
            held = open(folder / f'{domain}.lock', 'a')
        except OSError:
            continue
        try:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # another run's
            held.close()
            continue
        return domain, held
    return domains[0], None


if 'IK_NODE_TEST_KEEP_DOMAIN' not in os.environ:
    _DOMAIN, _DOMAIN_LOCK = _reserve_domain()
    os.environ['ROS_DOMAIN_ID'] = str(_DOMAIN)
# Jazzy keeps discovery on this machine with this; Humble ignores it (the domain still isolates).
os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')

# pytest started as a background job of a non-interactive shell (`pytest &`, nohup, some CI
# runners) inherits SIGINT ignored, and so would every node process a test starts: a SIGINT
# sent during such a node's start-up, before it installs its own handler, would be discarded
# (POSIX), and a test that stops a node at start-up would wait in vain. The tests model a node
# started by ros2 launch or a terminal, whose SIGINT is not ignored: restore Python's default.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_configure(config):
    config.addinivalue_line('markers', 'slow: takes seconds or more (deselect with -m "not slow")')


@pytest.fixture(scope='session', autouse=True)
def compiled_kernels():
    """The compiled kernels loaded before the first test where numba may serve (the default
    install), so every solve of the suite takes the path a user gets; with
    ``IK_NODE_NO_NUMBA=1`` the pure-Python path serves throughout."""
    from ik_node import kernels
    kernels.wait()


@pytest.fixture
def shared_robot():
    """Path of a reference URDF (``reference_robots``: ``IK_NODE_ROBOTS_DIR``), or skip saying
    which variable names their folder."""
    return reference_robot


#: A 2-joint planar arm written as xacro (an argument, a macro), for the xacro tests.
PLANAR_XACRO = textwrap.dedent('''\
    <?xml version="1.0"?>
    <robot xmlns:xacro="http://www.ros.org/wiki/xacro" name="xacro_planar">
      <xacro:arg name="upper" default="0.4"/>
      <xacro:macro name="hinge" params="name parent x">
        <link name="${name}"/>
        <joint name="${name}_joint" type="revolute">
          <parent link="${parent}"/><child link="${name}"/>
          <origin xyz="${x} 0 0"/><axis xyz="0 0 1"/>
          <limit lower="-2.5" upper="2.5" effort="1" velocity="1"/>
        </joint>
      </xacro:macro>
      <link name="base"/>
      <xacro:hinge name="upper_arm" parent="base" x="0"/>
      <xacro:hinge name="forearm" parent="upper_arm" x="$(arg upper)"/>
      <link name="hand"/>
      <joint name="hand_joint" type="fixed">
        <parent link="forearm"/><child link="hand"/><origin xyz="0.3 0 0"/>
      </joint>
    </robot>
    ''')


@pytest.fixture
def planar_xacro(tmp_path):
    path = tmp_path / 'planar.urdf.xacro'
    path.write_text(PLANAR_XACRO)
    return path
