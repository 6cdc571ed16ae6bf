#!/usr/bin/env python3
"""The floor of ``benchmarks/node/latency.py``: a minimal rclpy relay in place of ik_node.

A node named ``ik_node`` subscribes to the target topics ik_node reads (``~/target_pose``,
``~/target_point``, ``~/target_poses``: the same message types, QoS and callback group) and
answers every message with one ``sensor_msgs/JointState`` on ``/joint_states`` carrying the
joint names ik_node publishes for the same config (built once, its positions refilled),
stamped by the node's clock. No solve, no check, no diagnostics, no markers. It runs through
:func:`ik_node.ros.app.run.main`, so with ik_node's executor and spin loop, and traces every answer
as ``benchmarks/node/traced.py`` does (``IK_NODE_TRACE``), so the benchmark matches answers to
targets the same way.

Usage (as the benchmark does)::

    IK_NODE_TRACE=/tmp/trace.json python -m benchmarks.node.relay config/leg3.yaml
"""

import json
import os
import sys

from ik_node.ros.app import held_signals

if __name__ == '__main__':  # hold SIGINT/SIGTERM back until main() runs, as ik_node does
    held_signals.hold()

from geometry_msgs.msg import PointStamped, PoseArray, PoseStamped  # noqa: E402
from rclpy.callback_groups import ReentrantCallbackGroup  # noqa: E402
from rclpy.node import Node  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from ik_node.config.files import flatten, load_yaml, parameters_of_file  # noqa: E402
from ik_node.config.node_config import load_config  # noqa: E402
from ik_node.config.ros_graph import graph_config_from_flat  # noqa: E402
from ik_node.ros.inputs.target_subscriptions import TARGET_QOS  # noqa: E402
from ik_node.ros.solving.robot_model import build_robot_model  # noqa: E402
from ik_node.ros.app.run import main  # noqa: E402
from ik_node.ros.inputs.targets import stamp_text  # noqa: E402

TRACE: list = []


def joint_names(config_file: str) -> list:
    """The names of the JointState ik_node publishes for ``config_file`` (chain and held
    joints)."""
    with open(config_file, encoding='utf-8') as f:
        flat = flatten(parameters_of_file(load_yaml(f.read(), config_file)))
    config = load_config(config_file)
    graph = graph_config_from_flat(flat, source=config_file)
    return list(build_robot_model(config, graph, '', None).plan.state_names)


class RelayNode(Node):
    """Every target message in, one JointState out."""

    NAMES: list = []

    def __init__(self) -> None:
        super().__init__('ik_node')
        self._pub = self.create_publisher(JointState, '/joint_states', 10)
        self._msg = JointState()
        self._msg.name = list(self.NAMES)
        self._zeros = [0.0] * len(self.NAMES)
        group = ReentrantCallbackGroup()
        for msg_type, topic in ((PoseStamped, '~/target_pose'), (PointStamped, '~/target_point'),
                                (PoseArray, '~/target_poses')):
            self.create_subscription(msg_type, topic, self._on_target, TARGET_QOS,
                                     callback_group=group)

    def _on_target(self, target) -> None:
        msg = self._msg
        stamp = self.get_clock().now().to_msg()
        msg.header.stamp = stamp
        msg.position = self._zeros
        self._pub.publish(msg)
        TRACE.append((stamp_text((target.header.stamp.sec, target.header.stamp.nanosec)),
                      stamp_text((stamp.sec, stamp.nanosec)), True, 0.0, 'relay'))


def run() -> int:
    RelayNode.NAMES = joint_names(sys.argv[1])
    status = main([sys.argv[0]], RelayNode)
    trace_path = os.environ.get('IK_NODE_TRACE')
    if trace_path:
        with open(trace_path, 'w') as f:
            json.dump(TRACE, f)
    return status


if __name__ == '__main__':
    sys.exit(run())
