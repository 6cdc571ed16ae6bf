"""The ROS tests' fixtures, from the shared harness (test/ros/harness.py): ``harness`` (IkNode in
this process with a probe) and ``ros`` (a spinning context for probes of node processes).

Without rclpy the fixtures are absent and every ROS test skips on its own importorskip.
"""

try:
    import rclpy  # noqa: F401
except ImportError:
    pass
else:
    from harness import harness, ros  # noqa: F401
