"""The ROS side of ik_node: the node's inputs, outputs and visuals (these modules import rclpy).

:mod:`ik_node.ros.node` wires them; everything else in the package runs without ROS.
"""
