"""The configuration: every parameter (table, parsing, files, strings, name lists), the
node's ROS-graph options and the launch plan. No rclpy."""
