"""Target messages kept serialized until the solve: each drain hands on the oldest of each topic,
in arrival order; a topic whose oldest message waited too long skips to its newest.

A real publisher node and
:class:`~ik_node.ros.inputs.target_subscriptions.TargetSubscriptions` on another node of the
same context, over real DDS. Each message is published only after the previous one was
kept (the ``wake`` count), so the arrival order is known.
"""

from __future__ import annotations

import math
import threading
import time
from typing import List

import pytest

from geometry_msgs.msg import PointStamped, PoseStamped

from harness import wait_for
from rclpy.serialization import serialize_message

from ik_node.ros.inputs.target_flow import TARGET_LOAD_WINDOW_S, TargetFlow
from ik_node.ros.inputs.target_subscriptions import (TARGET_QOS, TARGET_QUEUE_DEPTH,
                                                     TargetSubscriptions)


def _intake(ros, name, fresh_s=3600.0, max_wait_s=3600.0, busy_share=None):
    """Subscriptions on a node (kept messages in their turn for ``fresh_s`` while the draining
    thread is busy, ``max_wait_s`` while not), publishers on another; ``send(kind, x)``
    publishes a target at x and returns once it was kept."""
    node = ros.node(name)
    received: List[tuple] = []
    lock = threading.Lock()
    wakes, skipped = [], []

    def wake():
        with lock:
            wakes.append(1)

    subs = TargetSubscriptions(node, lambda *targets: received.append(targets), wake=wake,
                               on_skipped=skipped.append,
                               flow=TargetFlow(fresh_s, max_wait_s, busy_share))
    subs.make([None], ['tool0'])
    out = ros.node(name + '_publisher')
    fq = node.get_fully_qualified_name()
    pubs = {'point': out.create_publisher(PointStamped, f'{fq}/target_point', TARGET_QOS),
            'pose': out.create_publisher(PoseStamped, f'{fq}/target_pose', TARGET_QOS)}
    wait_for('the subscriptions to match',
             lambda: all(p.get_subscription_count() for p in pubs.values()))

    def send(kind, x):
        if kind == 'point':
            msg = PointStamped()
            msg.point.x = x
        else:
            msg = PoseStamped()
            msg.pose.position.x, msg.pose.orientation.w = x, 1.0
        before = len(wakes)
        pubs[kind].publish(msg)
        wait_for(f'message x={x} to be kept', lambda: len(wakes) > before, lock)

    return subs, received, skipped, send


def _xs(received):
    return [t.position[0] for (t,) in received]


def test_each_drain_hands_on_the_oldest_message_of_each_topic_in_arrival_order(ros):
    subs, received, skipped, send = _intake(ros, 'intake')
    send('point', 1.0)
    send('pose', 2.0)
    send('point', 3.0)  # waits behind x=1 on the same topic
    assert received == [] and subs.kept
    subs.drain()
    assert _xs(received) == [1.0, 2.0]  # one per topic, in arrival order
    assert received[0][0].quat_xyzw is None and received[1][0].quat_xyzw is not None
    subs.drain()
    assert _xs(received) == [1.0, 2.0, 3.0] and not subs.kept
    subs.drain()  # nothing kept any more
    assert len(received) == 3 and skipped == []
    subs.destroy()


def test_a_topic_whose_oldest_message_waited_too_long_skips_to_its_newest(ros):
    fresh_s = 0.5
    subs, received, skipped, send = _intake(ros, 'intake_stale', fresh_s, fresh_s)
    for x in (1.0, 2.0, 3.0):
        send('point', x)
    time.sleep(fresh_s)  # the node fell behind: the three have waited too long
    send('pose', 4.0)
    send('pose', 5.0)
    subs.drain()  # x=4 has not waited fresh_s yet (unless the machine stalled that long)
    assert _xs(received)[0] == 3.0 and skipped[0] == 2
    while subs.kept:
        subs.drain()
    assert _xs(received)[-1] == 5.0 and len(received) + sum(skipped) == 5
    assert not subs.kept
    subs.destroy()


@pytest.mark.parametrize('busy', [True, False])
def test_a_busy_thread_skips_after_the_fresh_wait_an_idle_one_catches_up(ros, busy):
    # busy_share 0: the draining thread counts as busy once a load window has passed; inf:
    # never. Messages that waited longer than fresh_s are skipped only when it is busy.
    fresh_s = max(0.3, TARGET_LOAD_WINDOW_S)
    subs, received, skipped, send = _intake(ros, f'intake_busy_{busy}', fresh_s, 3600.0,
                                            0.0 if busy else math.inf)
    send('point', 1.0)
    subs.drain()  # the first drain in this thread starts its load window
    send('point', 2.0)
    send('point', 3.0)
    time.sleep(fresh_s)  # a window has passed, and both waited longer than fresh_s
    subs.drain()
    assert subs.busy is busy
    if busy:
        assert _xs(received) == [1.0, 3.0] and skipped == [1] and not subs.kept
    else:
        subs.drain()
        assert _xs(received) == [1.0, 2.0, 3.0] and skipped == []
    subs.destroy()


def test_a_full_queue_drops_its_oldest_and_skips_to_its_newest(ros):
    subs, received, skipped, send = _intake(ros, 'intake_full')
    for k in range(TARGET_QUEUE_DEPTH + 2):
        send('point', float(k))
    assert skipped == [1, 1]  # the two oldest, dropped as the queue overflowed
    subs.drain()  # a full queue: the node is behind, it skips to the newest
    assert _xs(received) == [TARGET_QUEUE_DEPTH + 1.0] and not subs.kept
    assert skipped == [1, 1, TARGET_QUEUE_DEPTH - 1]
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


def test_a_message_in_flight_to_a_replaced_subscription_is_dropped(ros):
    # A message the executor hands to a subscription's callback after new tips replaced the
    # subscription (it was taken before) goes with it; the intake goes on with the new ones.
    subs, received, skipped, send = _intake(ros, 'intake_replaced')
    old = next(s.callback for s in subs._subs if s.topic_name.endswith('/target_point'))
    subs.make([None], ['tool0'])  # the same tips: new subscriptions all the same
    msg = PointStamped()
    msg.point.x = 7.0
    old(serialize_message(msg))
    assert not subs.kept
    subs.drain()
    assert received == [] and skipped == []
    send('point', 8.0)  # the new subscription's message is handed on
    subs.drain()
    assert _xs(received) == [8.0] and not subs.kept
    subs.destroy()
