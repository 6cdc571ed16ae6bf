"""The ROS tests' fixtures, from the shared harness (test/ros/harness.py): ``harness`` (IkNode in
this process with a probe), ``ros`` (a spinning context for probes of node processes),
``probe_for`` (probes of a node process on /ik_node's topics) and ``graph`` (the test side of a
robot's ROS graph).

Without rclpy the fixtures are absent and every ROS test skips on its own importorskip.
"""

try:
    import rclpy  # noqa: F401
except ImportError:
    pass
else:
    from harness import graph, harness, probe_for, ros  # noqa: F401
