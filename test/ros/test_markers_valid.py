"""Every marker the node publishes is valid for RViz, on every packaged robot.

Frames that exist (URDF links), finite values, unit quaternions, stable namespaces and ids (so
RViz replaces instead of piling up), and a DELETEALL when the chain changes. Checked over real
DDS on ``~/markers`` and ``~/reachability``, with reachable and unreachable targets.
"""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest

from rclpy.qos import DurabilityPolicy, QoSProfile
from visualization_msgs.msg import Marker, MarkerArray

from ik_node import Chain
from ik_node.model.resources import urdf_path
from harness import chain_of

LATCHED = QoSProfile(depth=10, durability=DurabilityPolicy.TRANSIENT_LOCAL)
ROBOTS = {'leg3': (None,), 'planar4': (None,), 'arm6': (None,),
          'twin_arm': ('left_hand', 'right_hand')}


def check_marker(m: Marker, links) -> None:
    assert m.header.frame_id in links, m.header.frame_id
    if m.action == Marker.DELETEALL:
        return
    assert m.ns, 'every marker has a namespace'
    if m.action == Marker.DELETE:
        return
    o = m.pose.orientation
    values = [m.pose.position.x, m.pose.position.y, m.pose.position.z, o.x, o.y, o.z, o.w,
              m.scale.x, m.scale.y, m.scale.z, m.color.r, m.color.g, m.color.b, m.color.a]
    values += [v for p in m.points for v in (p.x, p.y, p.z)]
    values += [v for c in m.colors for v in (c.r, c.g, c.b, c.a)]
    assert all(math.isfinite(v) for v in values), m
    assert abs(math.sqrt(o.x ** 2 + o.y ** 2 + o.z ** 2 + o.w ** 2) - 1.0) < 1e-6, m
    assert m.scale.x > 0 and m.color.a > 0, m
    if m.colors:
        assert len(m.colors) == len(m.points)


@pytest.mark.slow
@pytest.mark.parametrize('robot', sorted(ROBOTS))
def test_every_marker_is_valid_and_ids_are_stable(harness, robot):
    tips = ROBOTS[robot]
    ik, probe = harness.start(robot, tips=tips, reachability_samples=20000)
    reach = []
    lock = threading.Lock()

    def on_reach(msg):
        with lock:
            reach.append(msg)
    probe.node.create_subscription(MarkerArray, f'/{ik.get_name()}/reachability', on_reach,
                                   LATCHED)
    chain = chain_of(robot) if robot != 'twin_arm' else \
        Chain.from_urdf_file(urdf_path('twin_arm'), 'base_link', list(tips))
    links = {link.name for link in chain.robot.links}
    rng = np.random.default_rng(5)
    for k in range(6):
        q = rng.uniform(chain.lower, chain.upper)
        for tip in tips:
            p = chain.fk(q, tip)[:3, 3] * (1.0 if k % 2 == 0 else 3.0)  # odd: out of reach
            mark = probe.mark()
            probe.send_point(p, tip=tip)
            probe.next_status(mark, what='the answer')
    probe.wait_for('the reachability map', lambda: any(
        any(m.action == Marker.ADD for m in a.markers) for a in reach), timeout=60.0)
    probe.wait_for('target markers', lambda: any(
        any(10 <= m.id < 100 for m in a.markers) for a in probe.marker_arrays))
    with probe.lock, lock:
        arrays = list(probe.marker_arrays) + list(reach)
    keys = set()
    for array in arrays:
        for m in array.markers:
            check_marker(m, links)
            keys.add((m.ns, m.id))
    # Stable: a bounded set of (namespace, id), whatever the number of targets: the envelope
    # (2) and DELETEALLs (2), per tip its target, line, 3 orientation arrows, 2 labels, the
    # arrow towards a target beyond the view and its map's points, the map's legend (2 colour lines
    # and its title), per joint its ring and limit line, the colliding links' hull and outline.
    tips = len(chain.tip_links)
    assert len(keys) <= 4 + 9 * tips + 3 + 2 * chain.n + 2, keys
    map_markers = [m for a in reach for m in a.markers if m.action == Marker.ADD]
    assert {m.ns for m in map_markers} == {f'reachability/{t}' for t in chain.tip_links} | {
        'reachability/legend'}
    # Every tip that missed says so on screen (the odd targets are three times out).
    miss_labels = [m for a in probe.marker_arrays for m in a.markers
                   if 400 <= m.id < 500 and m.action == Marker.ADD]
    assert miss_labels and all(' missed by ' in m.text for m in miss_labels), \
        [m.text for m in miss_labels if ' missed by ' not in m.text]


def test_a_chain_change_deletes_the_old_markers_first(harness):
    ik, probe = harness.start('planar4', reachability_samples=5000)
    probe.send_point(chain_of('planar4').fk(np.array([0.3, 0.4, -0.2, 0.5]))[:3, 3])
    probe.wait_for('a joint margin marker of joint4',
                   lambda: any(any(m.id == 203 for m in a.markers) for a in probe.marker_arrays))
    mark = probe.mark()
    (result,) = probe.set_params(tip_link='link3')
    assert result.successful, result.reason
    first = probe.wait_for('the markers of the new chain', lambda: probe.marker_arrays[mark[2]:])
    assert first[0].markers[0].action == Marker.DELETEALL


def test_a_pose_target_shows_its_orientation_as_arrows_and_a_point_target_deletes_them(
        harness):
    from transforms3d.quaternions import quat2mat
    ik, probe = harness.start('arm6', reachability_samples=0)
    chain = chain_of('arm6')
    T = chain.fk(np.array([0.3, -0.5, 0.9, 0.2, 0.6, -0.4]))
    quat = np.array([0.2, -0.4, 0.1, 0.9]) / np.linalg.norm([0.2, -0.4, 0.1, 0.9])
    mark = probe.mark()
    probe.send_pose(T[:3, 3], quat)
    probe.next_status(mark, what='the answer')

    def axes():
        return [m for a in probe.marker_arrays for m in a.markers if 300 <= m.id < 303]
    probe.wait_for('the orientation arrows', lambda: len([
        m for m in axes() if m.action == Marker.ADD]) >= 3)
    found = {m.id: m for m in axes() if m.action == Marker.ADD}
    links = {link.name for link in chain.robot.links}
    x, y, z, w = quat
    R = quat2mat([w, x, y, z])
    for k in range(3):  # each arrow from the target point along the quaternion's column k
        m = found[300 + k]
        check_marker(m, links)
        assert m.type == Marker.ARROW and len(m.points) == 2
        start, end = m.points
        np.testing.assert_allclose([start.x, start.y, start.z], T[:3, 3], atol=1e-9)
        step = np.array([end.x - start.x, end.y - start.y, end.z - start.z])
        np.testing.assert_allclose(step / np.linalg.norm(step), R[:, k], atol=1e-9)
    count = len(axes())
    probe.send_point(T[:3, 3])
    probe.wait_for('the arrows deleted for a point target', lambda: len([
        m for m in axes()[count:] if m.action == Marker.DELETE]) >= 3)
