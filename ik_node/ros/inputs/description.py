"""The robot description (URDF XML) from a topic, as robot_state_publisher publishes it."""

from __future__ import annotations

from typing import Callable

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String

#: As robot_state_publisher publishes ``robot_description``: latched.
DESCRIPTION_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)


class DescriptionListener:
    """URDF XML from a ``std_msgs/String`` topic (transient local, as robot_state_publisher)."""

    def __init__(self, node: Node, topic: str, callback: Callable[[str], None]) -> None:
        self._node = node
        self.topic = topic
        self._sub = node.create_subscription(String, topic, lambda msg: callback(msg.data),
                                             DESCRIPTION_QOS)

    def destroy(self) -> None:
        self._node.destroy_subscription(self._sub)
