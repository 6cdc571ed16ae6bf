"""What the running node shows in RViz, over real DDS: every miss and every fragility
warning on screen, clicks on a planar arm solved on its plane, the interactive target scaled to
the robot and, on a planar arm, moving in its plane."""

from __future__ import annotations

import numpy as np
import pytest

from visualization_msgs.msg import InteractiveMarkerControl, Marker

from ik_node import Chain
from ik_node.ros.rviz import labels, markers
from harness import REPO, chain_of, values

#: leg3 at hip_yaw 0.004 rad inside its upper limit (1.2): reached, near a limit (WARN).
Q_NEAR_HIP_YAW_LIMIT = np.array([1.196, 0.4, -0.9])


def newest(probe, mark, predicate, what):
    """The newest ADD marker after ``mark`` that ``predicate`` accepts (waits for one)."""
    def find():
        found = [m for a in probe.marker_arrays[mark[2]:] for m in a.markers
                 if m.action == Marker.ADD and predicate(m)]
        return found[-1] if found else None
    return probe.wait_for(what, find)


def test_a_joint_near_its_limit_is_said_once_by_its_red_ring_and_a_line_under_its_tip(
        harness):
    ik, probe = harness.start('leg3', reachability_samples=0)
    leg = chain_of('leg3')
    mark = probe.mark()
    probe.send_point(leg.fk(Q_NEAR_HIP_YAW_LIMIT)[:3, 3])
    status = probe.next_status(mark, what='the answer')
    assert values(status)['reachable'] == 'true' and 'fragile: hip_yaw' in status.message
    ring = newest(probe, mark, lambda m: m.id == 200, "hip_yaw's ring")
    assert (ring.color.r, ring.color.g) == (1.0, 0.0)
    label = newest(probe, mark, lambda m: m.id == 500, "hip_yaw's label")
    assert label.text == 'hip_yaw near its upper limit'
    with probe.lock:
        ids = [(m.id, m.action) for a in probe.marker_arrays[mark[2]:] for m in a.markers]
    assert (400, Marker.DELETE) in ids  # reached: no miss label
    assert (600, Marker.DELETE) in ids and (600, Marker.ADD) not in ids  # said once, by 500


def test_a_target_out_of_reach_is_not_called_near_a_singularity(harness):
    """Stretched towards a target far out of reach, the leg is at its knee's singularity: the
    miss label and the status say how far it missed, neither warns of the singularity."""
    ik, probe = harness.start('leg3', reachability_samples=0)
    mark = probe.mark()
    probe.send_point([1.5, 0.0, -0.5])
    status = probe.next_status(mark, what='the answer')
    assert values(status)['reachable'] == 'false'
    assert float(values(status)['min_singular_value']) < 1e-3  # singular indeed
    assert 'singularity' not in status.message, status.message
    miss = newest(probe, mark, lambda m: m.id == 400, 'the miss label')
    assert 'missed by' in miss.text and 'singularity' not in miss.text
    with probe.lock:
        ids = [(m.id, m.action) for a in probe.marker_arrays[mark[2]:] for m in a.markers]
    assert (600, Marker.ADD) not in ids


def test_each_hand_that_misses_shows_its_error_at_the_tip(harness):
    tips = ('left_hand', 'right_hand')
    ik, probe = harness.start('twin_arm', tips=tips, reachability_samples=0)
    twin = Chain.from_urdf_file(REPO / 'urdf' / 'twin_arm.urdf', 'base_link', list(tips))
    probe.wait_for('the RViz view of the chain', lambda: ik._markers.view)
    mark = probe.mark()
    probe.send_point([0.3, 1.3, 0.9], tip='left_hand')  # far out of the left hand's reach
    status = probe.next_status(mark, what='the answer')
    assert values(status)['left_hand.reachable'] == 'false'
    error_mm = float(values(status)['left_hand.position_error_m']) * 1000.0
    label = newest(probe, mark, lambda m: m.id == 400, "the left hand's miss label")
    assert label.text.startswith(f'left_hand missed by {error_mm:.3g} mm\n(')  # wrapped
    assert label.color.r > 0.9 and label.color.g < 0.5
    # All of it inside twin_arm's view (under the left hand, beside it or in a corner: the
    # joint states the node published tell where the hand is).
    from ik_node.ros.rviz import views
    from ik_node.ros.rviz.camera import text_width
    state = probe.joint_states[-1]
    q = np.array([state.position[list(state.name).index(n)] for n in twin.joint_names])
    p_tip = twin.fk(q, 'left_hand')[:3, 3]
    view = views.chain_view(twin)
    at = [label.pose.position.x, label.pose.position.y, label.pose.position.z]
    (x_label, _), (x_tip, _) = view.project(np.array([at, p_tip]))
    half = view.project(np.array([at]))[0, 0] - view.project(
        np.array([at]) - 0.5 * text_width(label.text, label.scale.z) * view.basis()[1])[0, 0]
    assert abs(x_label) + half <= 1.0, (x_label, x_tip, half)


@pytest.mark.parametrize('height,projected', [(0.006, True), (-0.03, True), (0.2, False)])
def test_a_point_near_a_planar_arms_plane_is_solved_on_the_plane_and_the_status_says_so(
        harness, height, projected):
    ik, probe = harness.start('planar4', reachability_samples=0)
    mark = probe.mark()
    probe.send_point([0.5, 0.4, height])  # planar4 moves in z = 0
    status = probe.next_status(mark, what='the answer')
    v = values(status)
    assert (v['reachable'] == 'true') == projected
    if projected:
        assert float(v['planar_projection_m']) == pytest.approx(abs(height))
        assert "projected onto the chain's plane" in status.message
        target = newest(probe, mark, lambda m: m.id == 10, 'the target sphere')
        assert target.pose.position.z == pytest.approx(0.0, abs=1e-12)
    else:
        assert 'planar_projection_m' not in v and 'projected' not in status.message


def test_the_planar_projection_can_be_turned_off(harness):
    ik, probe = harness.start('planar4', reachability_samples=0,
                              **{'target_point.planar_projection': 0.0})
    mark = probe.mark()
    probe.send_point([0.5, 0.4, 0.006])
    v = values(probe.next_status(mark, what='the answer'))
    assert v['reachable'] == 'false' and 'planar_projection_m' not in v


@pytest.mark.parametrize('robot', ['leg3', 'planar4', 'arm6'])
def test_the_interactive_target_is_scaled_to_the_robot_and_a_planar_one_moves_in_its_plane(
        harness, robot):
    ik, probe = harness.start(robot, reachability_samples=0)
    server = ik._drag.server
    chain = chain_of(robot)
    assert server.scale == pytest.approx(markers.sizes_of(chain).handle_scale)
    (marker,) = [server._marker(server._tips[t]) for t in server.tips]
    modes = {c.name: c.interaction_mode for c in marker.controls}
    if robot == 'planar4':
        assert modes == {'body': InteractiveMarkerControl.MOVE_PLANE,
                         'move_u': InteractiveMarkerControl.MOVE_AXIS,
                         'move_v': InteractiveMarkerControl.MOVE_AXIS}
    else:
        assert 'move_z' in modes


def test_a_target_far_out_of_the_view_is_drawn_at_its_edge_with_the_distance_to_go(harness):
    """leg3 and a target 3 m away: the node draws it where the line from the foot towards it
    leaves leg3's view, an arrow (id 800) pointing on, the miss label saying how far on."""
    from ik_node.ros.rviz import views
    ik, probe = harness.start('leg3', reachability_samples=0)
    view = probe.wait_for('the RViz view of the chain', lambda: ik._markers.view)
    assert view == views.chain_view(chain_of('leg3'))  # the view rviz/leg3.rviz holds
    target = np.array([2.5, 1.0, -1.5])
    mark = probe.mark()
    probe.send_point(target)
    assert values(probe.next_status(mark, what='the answer'))['reachable'] == 'false'
    sphere = newest(probe, mark, lambda m: m.id == 10, 'the target sphere')
    arrow = newest(probe, mark, lambda m: m.id == 800, 'the arrow towards the target')
    label = newest(probe, mark, lambda m: m.id == 400, 'the miss label')
    at = np.array([sphere.pose.position.x, sphere.pose.position.y, sphere.pose.position.z])
    assert view.contains([at], 1.0) and not view.contains([target], 1.0)
    start, end = (np.array([p.x, p.y, p.z]) for p in arrow.points)
    np.testing.assert_allclose(start, at)
    np.testing.assert_allclose((end - start) / np.linalg.norm(end - start),
                               (target - at) / np.linalg.norm(target - at), atol=1e-9)
    further = labels.length_text(float(np.linalg.norm(target - at)))
    assert label.text.endswith(f'target {further} further on'), label.text
