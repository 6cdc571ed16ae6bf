"""``~/collision_world`` shows in RViz what the collision check holds: the obstacles of the
parameter and of ``~/obstacles`` as the shapes they are, and the ground plane, over real rclpy and
DDS; an obstacle taken away disappears."""

from __future__ import annotations

import threading

import pytest

from rclpy.qos import DurabilityPolicy, QoSProfile
from visualization_msgs.msg import Marker, MarkerArray


def shapes(array):
    return {(m.ns, m.text or m.id): m for m in array.markers if m.action == Marker.ADD}


def test_parameter_and_topic_obstacles_and_the_ground_are_shown_and_a_deleted_one_goes(harness):
    ik, probe = harness.start('arm6', **{
        'collision.obstacles': 'wall box 0.6 0 0.3 0.05 1 1; ball sphere 0.3 0.3 0.5 0.05',
        'collision.ground': True, 'collision.ground_z': -0.01})
    seen, lock = [], threading.Lock()

    def on_world(msg):
        with lock:
            seen.append(msg)
    probe.node.create_subscription(
        MarkerArray, f'/{probe.ik_name}/collision_world', on_world,
        QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
    first = probe.wait_for('the collision world', lambda: list(seen))[-1]
    assert first.markers[0].action == Marker.DELETEALL
    shown = shapes(first)
    assert set(shown) == {('obstacles', 'wall'), ('obstacles', 'ball'), ('ground', 0)}
    wall, ball, ground = shown['obstacles', 'wall'], shown['obstacles', 'ball'], shown['ground', 0]
    assert wall.type == Marker.CUBE and (wall.scale.x, wall.scale.y, wall.scale.z) == (0.05, 1, 1)
    assert (wall.pose.position.x, wall.pose.position.z) == (0.6, 0.3)
    assert ball.type == Marker.SPHERE and ball.scale.x == pytest.approx(0.1)
    assert ground.pose.position.z + ground.scale.z / 2 == pytest.approx(-0.01)
    assert all(m.header.frame_id == 'base_link' for m in first.markers)

    # An obstacle sent on ~/obstacles joins them; DELETE takes it away again.
    publisher = probe.node.create_publisher(MarkerArray, f'/{probe.ik_name}/obstacles', 10)
    post = Marker(type=Marker.CYLINDER, ns='cell', id=3, action=Marker.ADD)
    post.pose.position.y, post.pose.orientation.w = 0.5, 1.0
    post.scale.x = post.scale.y = 0.08
    post.scale.z = 1.2
    count = len(seen)
    publisher.publish(MarkerArray(markers=[post]))
    with_post = probe.wait_for('the post shown', lambda: next(
        (a for a in seen[count:] if ('obstacles', 'cell/3') in shapes(a)), None))
    cylinder = shapes(with_post)['obstacles', 'cell/3']
    assert cylinder.type == Marker.CYLINDER and cylinder.scale.z == pytest.approx(1.2)
    assert len(shapes(with_post)) == 4
    count = len(seen)
    publisher.publish(MarkerArray(markers=[Marker(ns='cell', id=3, action=Marker.DELETE)]))
    without = probe.wait_for('the post gone', lambda: next(
        (a for a in seen[count:] if ('obstacles', 'cell/3') not in shapes(a)), None))
    assert set(shapes(without)) == set(shown)
