"""Target messages kept serialized until the solve: the newest of each topic, in arrival order.

A real publisher node and :class:`~ik_node.ros.inputs.TargetSubscriptions` on another node of
the same context, over real DDS. Each message is published only after the previous one was
kept (the ``wake`` count), so the arrival order is known.
"""

from __future__ import annotations

import threading
from typing import List

import pytest

rclpy = pytest.importorskip('rclpy')

from geometry_msgs.msg import PointStamped, PoseStamped  # noqa: E402

from harness import wait_for  # noqa: E402
from rclpy.serialization import serialize_message  # noqa: E402

from ik_node.ros.inputs import TARGET_QOS, TargetSubscriptions  # noqa: E402


def test_kept_messages_are_handed_on_newest_per_topic_in_arrival_order(ros):
    node = ros.node('intake')
    received: List[tuple] = []
    lock = threading.Lock()
    wakes, skipped = [], []

    def wake():
        with lock:
            wakes.append(1)

    subs = TargetSubscriptions(node, lambda *targets: received.append(targets), wake=wake,
                               on_skipped=skipped.append)
    subs.make([None], ['tool0'])
    out = ros.node('intake_publisher')
    name = node.get_fully_qualified_name()
    point = out.create_publisher(PointStamped, f'{name}/target_point', TARGET_QOS)
    pose = out.create_publisher(PoseStamped, f'{name}/target_pose', TARGET_QOS)
    wait_for('the subscriptions to match', lambda: point.get_subscription_count() and
             pose.get_subscription_count())

    def send(pub, msg, x):
        if isinstance(msg, PointStamped):
            msg.point.x = x
        else:
            msg.pose.position.x, msg.pose.orientation.w = x, 1.0
        before = len(wakes)
        pub.publish(msg)
        wait_for(f'message x={x} to be kept', lambda: len(wakes) > before, lock)

    send(point, PointStamped(), 1.0)
    send(pose, PoseStamped(), 2.0)
    send(point, PointStamped(), 3.0)  # replaces x=1, which was never handed on
    assert received == [] and skipped == [1]
    subs.drain()
    assert [t.position[0] for (t,) in received] == [2.0, 3.0]  # arrival order: newest wins
    assert received[0][0].quat_xyzw is not None and received[1][0].quat_xyzw is None
    subs.drain()  # nothing kept any more
    assert len(received) == 2
    subs.destroy()


def test_bytes_the_reader_cannot_read_go_to_rclpy_which_refuses_cut_ones(ros):
    node = ros.node('intake_bytes')
    received, errors, wakes = [], [], []
    lock = threading.Lock()

    def wake():
        with lock:
            wakes.append(1)

    subs = TargetSubscriptions(node, lambda *targets: received.append(targets),
                               on_error=lambda *error: errors.append(error), wake=wake)
    subs.make([None], ['tool0'])
    out = ros.node('intake_bytes_publisher')
    point = out.create_publisher(PointStamped, f'{node.get_fully_qualified_name()}/target_point',
                                 TARGET_QOS)
    wait_for('the subscription to match', lambda: point.get_subscription_count())
    msg = PointStamped()
    msg.header.frame_id, msg.point.x = 'base_link', 0.25
    data = serialize_message(msg)

    def send(raw: bytes) -> None:
        before = len(wakes)
        point.publish(raw)
        wait_for('the bytes to be kept', lambda: len(wakes) > before, lock)
        subs.drain()

    send(data[:-4])  # cut short: rclpy cannot deserialize it either
    assert received == [] and len(errors) == 1 and 'bad target message' in errors[0][0]
    send(data)
    assert [t.position[0] for (t,) in received] == [0.25]
    subs.destroy()
