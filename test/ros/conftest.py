"""The ROS tests' fixtures, from the shared harness (test/ros/harness.py): ``harness`` (IkNode in
this process with a probe), ``ros`` (a spinning context for probes of node processes),
``probe_for`` (probes of a node process on /ik_node's topics) and ``graph`` (the test side of a
robot's ROS graph).

rclpy is checked once, here: without it (a core-only install) only the modules in
:data:`RUN_WITHOUT_RCLPY` are collected (the launch plan, packaging, the jump guard's rules and
the message-boundary checks: each skips its ROS parts on its own); the others are left out and
the run's summary says how many.
"""

from pathlib import Path

try:
    import rclpy  # noqa: F401
except ImportError:
    HAVE_RCLPY = False
else:
    HAVE_RCLPY = True
    from harness import graph, harness, probe_for, ros  # noqa: F401

#: The modules of test/ros that are collected without rclpy.
RUN_WITHOUT_RCLPY = {'test_bad_inputs_messages.py', 'test_jump_guard.py', 'test_launch.py',
                     'test_launch_real.py', 'test_packaging.py', 'test_urdf_faults_node.py'}

collect_ignore = [] if HAVE_RCLPY else sorted(
    p.name for p in Path(__file__).parent.glob('test_*.py') if p.name not in RUN_WITHOUT_RCLPY)


def pytest_terminal_summary(terminalreporter):
    if collect_ignore:
        terminalreporter.write_line(
            f'test/ros: rclpy is not importable: {len(collect_ignore)} modules that need it '
            'were not collected (source a ROS 2 install, or pip install ".[ros]")')
