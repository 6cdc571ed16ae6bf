"""What the marker builders (ik_node.ros.rviz.markers) draw, without a node: light passive markers
that leave the interactive target's handles free, labels for misses and warnings, joint rings
that can be told apart, orientation arrows, and a bounded reachability map whose colours vary."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from builtin_interfaces.msg import Time
from visualization_msgs.msg import InteractiveMarkerControl, Marker

from ik_node import Chain
from ik_node.reachability import build_reachability_map, map_points
from ik_node.ros.rviz import labels, map_markers, markers
from ik_node.ros.rviz.camera import framing
from ik_node.ros.rviz.interactive import DEFAULT_SCALE_M

REPO = Path(__file__).resolve().parents[2]
ROBOTS = {'leg3': ['foot'], 'arm6': ['tool0'], 'planar4': ['tip'],
          'twin_arm': ['left_hand', 'right_hand']}
FILLED = (Marker.SPHERE, Marker.CUBE, Marker.CYLINDER, Marker.CUBE_LIST, Marker.SPHERE_LIST,
          Marker.TRIANGLE_LIST, Marker.MESH_RESOURCE)
#: A chain whose first two joints share their origin, axes crossed (a gimbal hip).
GIMBAL_URDF = """<robot name="gimbal">
  <link name="base_link"/><link name="a"/><link name="b"/><link name="c"/>
  <joint name="yaw" type="revolute"><parent link="base_link"/><child link="a"/>
    <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="pitch" type="revolute"><parent link="a"/><child link="b"/>
    <axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="roll" type="revolute"><parent link="b"/><child link="c"/>
    <origin xyz="0.3 0 0"/><axis xyz="1 0 0"/><limit lower="-1" upper="1" effort="1"
    velocity="1"/></joint>
</robot>"""


def chain(robot: str) -> Chain:
    return Chain.from_urdf_file(REPO / 'urdf' / f'{robot}.urdf', 'base_link', ROBOTS[robot])


def stamp() -> Time:
    return Time()


def xyz(points) -> np.ndarray:
    return np.array([[p.x, p.y, p.z] for p in points])


def solve_markers(ch: Chain, q, p_targets, reached, sizes):
    """The passive markers of one solve, as MarkerOutput.result builds them."""
    out = list(markers.envelope_markers('base_link', stamp(), markers.envelope_of(ch)))
    tips_T = ch.fk_tips(q)
    for k, tip in enumerate(ch.tip_links):
        p_tip = tips_T[tip][:3, 3]
        out += markers.target_markers('base_link', stamp(), k, p_targets[k], reached, p_tip,
                                      sizes)
        out += labels.tip_label_markers(
            'base_link', stamp(), k, p_tip,
            labels.TipLabel('' if reached else 'missed', ['fragile']), sizes, p_targets[k])
    out += markers.joint_markers('base_link', stamp(), ch, q, sizes=sizes)
    return out


@pytest.mark.parametrize('robot', sorted(ROBOTS))
def test_no_passive_marker_hides_the_handles_of_the_interactive_target(robot):
    """The Interact tool grabs the first object under the cursor. The only filled markers are
    the target spheres, inside the interactive marker's body, and a planar chain's envelope
    disc, thinner than a millimetre in the chain's plane; everything else is lines or text,
    and text hangs beyond the lower move handle."""
    ch = chain(robot)
    sizes = markers.sizes_of(ch)
    rng = np.random.default_rng(11)
    for _ in range(5):
        q = rng.uniform(ch.lower, ch.upper)
        targets = [T[:3, 3] + rng.normal(0, 0.2, 3) for T in ch.fk_tips(q).values()]
        for reached in (True, False):
            for m in solve_markers(ch, q, targets, reached, sizes):
                if m.action != Marker.ADD:
                    continue
                if m.type == Marker.CYLINDER:
                    assert robot == 'planar4' and m.scale.z <= 0.001, m
                elif m.type in FILLED:
                    assert m.type == Marker.SPHERE and 10 <= m.id < 100, m
                    # The smallest body: 6-DOF cube of 0.3 scale (position-only: 0.35).
                    assert m.scale.x / 2 < 0.3 * min(sizes.handle_scale, DEFAULT_SCALE_M) / 2
                elif m.type == Marker.TEXT_VIEW_FACING and m.id // 100 in (4, 6):
                    k = m.id % 100  # clear of the tip and of the target's handles
                    for z in (ch.fk_tips(q)[ch.tip_links[k]][2, 3], targets[k][2]):
                        gap = abs(m.pose.position.z - z) - m.scale.z / 2
                        assert gap >= sizes.handle_scale - 1e-12


@pytest.mark.parametrize('robot', sorted(ROBOTS))
def test_a_spatial_envelope_is_three_great_circles_and_a_planar_one_a_thin_disc(robot):
    ch = chain(robot)
    env = markers.envelope_of(ch, tip=ch.tip_links[0])
    outer, inner = markers.envelope_markers('base_link', stamp(), env)
    assert inner.action == Marker.DELETE  # no inner bound without a solver's
    if robot == 'planar4':
        assert outer.type == Marker.CYLINDER and outer.scale.x == pytest.approx(2 * env.r_max)
        assert outer.scale.z <= 0.001
        o = outer.pose.orientation
        assert (o.x, o.y, o.z) == (0.0, 0.0, 0.0) and abs(o.w) == 1.0  # its axis: the plane's
        assert outer.pose.position.z == pytest.approx(0.0)  # the plane planar4 moves in
    else:
        assert outer.type == Marker.LINE_LIST
        radii = np.linalg.norm(xyz(outer.points) - env.center, axis=1)
        np.testing.assert_allclose(radii, env.r_max)
        assert len(outer.points) == 3 * 2 * markers.CIRCLE_SEGMENTS


def test_an_inner_bound_is_drawn_when_a_solver_knows_one():
    class Knows:
        def reach_envelope(self, tip):
            return (0.0, 0.0, -0.05), 0.1, 0.58
    env = markers.envelope_of(chain('leg3'), Knows())
    outer, inner = markers.envelope_markers('base_link', stamp(), env)
    np.testing.assert_allclose(np.linalg.norm(xyz(inner.points) - [0, 0, -0.05], axis=1), 0.1)


def test_a_missed_tip_gets_a_red_label_with_its_error_and_warnings_an_amber_one():
    sizes = markers.Sizes(0.6)
    text = labels.miss_text('right_hand', 0.0057, 'timeout')
    assert text == 'right_hand missed by 5.7 mm (timeout)'
    assert labels.miss_text('tool0', 1.25, 'unreachable', math.radians(12.5)) == \
        'tool0 missed by 1.25 m, 12.5 deg (unreachable)'
    warnings = ['fragile: near a singularity', 'fragile: knee 0.01 from its lower limit']
    p_tip = np.array([0.1, 0.2, 0.3])
    label = labels.TipLabel(text, warnings)
    miss, warn = labels.tip_label_markers('base_link', stamp(), 1, p_tip, label, sizes)
    assert (miss.id, miss.type, miss.text) == (401, Marker.TEXT_VIEW_FACING,
                                               'right_hand missed by 5.7 mm\n(timeout)')
    assert miss.color.r > 0.9 and miss.color.g < 0.5  # red
    assert (warn.id, warn.type, warn.text) == (601, Marker.TEXT_VIEW_FACING,
                                               '\n'.join(warnings))
    # Lines beyond LABEL_LINE_CHARS are broken before their bracket (a label is centred on
    # its tip: beside a tip near the screen's edge a long line runs off it).
    assert len(text) > labels.LABEL_LINE_CHARS
    assert all(len(line) <= labels.LABEL_LINE_CHARS for line in miss.text.split('\n'))
    assert warn.color.r > 0.9 and warn.color.g > 0.6 and warn.color.b < 0.3  # amber
    # Hung below the lower handle (above the target RViz draws its description): the miss's
    # two lines, then the warnings' two under them.
    pitch = labels.LINE_PITCH * sizes.text_height  # RViz's distance between lines
    assert labels.LINE_PITCH >= 1.3  # measured in RViz: multi-line blocks overlapped at 1
    miss_top = p_tip[2] - (miss.pose.position.z + 2 * pitch / 2)
    warn_top = p_tip[2] - (warn.pose.position.z + len(warnings) * pitch / 2)
    # Clear of the ends of the target's move arrows (0.9 scales from it), also seen from above.
    drop = labels.LABEL_DROP_SCALES * sizes.handle_scale
    assert labels.LABEL_DROP_SCALES >= 1.2
    assert miss_top == pytest.approx(drop)
    assert warn_top == pytest.approx(drop + 2 * pitch)
    # A target below the tip: the labels clear it too; one above changes nothing.
    low = p_tip - [0.0, 0.0, 0.2]
    miss_low, _ = labels.tip_label_markers('base_link', stamp(), 1, p_tip, label, sizes,
                                            p_target=low)
    assert miss_low.pose.position.z == pytest.approx(miss.pose.position.z - 0.2)
    miss_high, _ = labels.tip_label_markers('base_link', stamp(), 1, p_tip, label, sizes,
                                             p_target=p_tip + [0.0, 0.0, 0.2])
    assert miss_high.pose.position.z == pytest.approx(miss.pose.position.z)
    reached = labels.tip_label_markers('base_link', stamp(), 1, p_tip,
                                        labels.TipLabel('', []), sizes)
    assert [(m.id, m.action) for m in reached] == [(401, Marker.DELETE), (601, Marker.DELETE)]


def test_a_missed_target_keeps_a_line_from_the_tip_and_a_reached_one_deletes_it():
    reached = markers.target_markers('base_link', stamp(), 0, np.array([1, 2, 3.0]), True,
                                     np.array([1, 2, 3.0]))
    assert reached[0].color.g > 0.5 and reached[1].action == Marker.DELETE
    missed = markers.target_markers('base_link', stamp(), 1, np.array([1, 2, 3.0]), False,
                                    np.array([0, 0, 0.0]))
    assert missed[0].color.r > 0.5 and missed[0].id == 11
    assert missed[1].type == Marker.LINE_LIST and missed[1].id == 101
    assert [(p.x, p.y, p.z) for p in missed[1].points] == [(0, 0, 0), (1, 2, 3)]


def test_a_joint_near_its_limit_is_red_and_named_under_its_tip():
    leg = chain('leg3')
    q = np.array([1.2 - 0.01, 0.3, -0.8])  # hip_yaw 0.01 rad inside its upper limit
    lines = markers.limit_lines(leg, q, 0.05, range(leg.n))
    assert lines == {0: 'hip_yaw near its upper limit'}
    out = {(m.id, m.action): m for m in markers.joint_markers(
        'base_link', stamp(), leg, q, limit_threshold=0.05, labelled=set(lines))}
    ring = out[(200, Marker.ADD)]
    assert ring.color.r == 1.0 and ring.color.g == 0.0
    # Its line is the tip's (under the foot, where no body hides it); the others deleted.
    assert not {(500, Marker.ADD), (500, Marker.DELETE)} & set(out)
    assert (501, Marker.DELETE) in out and (502, Marker.DELETE) in out
    p_foot = leg.fk(q)[:3, 3]
    sizes = markers.sizes_of(leg)
    miss, warn, line = labels.tip_label_markers(
        'base_link', stamp(), 0, p_foot, labels.TipLabel('', [], sorted(lines.items())), sizes)
    assert (miss.action, warn.action) == (Marker.DELETE, Marker.DELETE)
    assert (line.id, line.type, line.text) == (500, Marker.TEXT_VIEW_FACING,
                                               'hip_yaw near its upper limit')
    assert line.color.r > 0.9 and line.color.g > 0.6 and line.color.b < 0.3  # amber
    drop = labels.LABEL_DROP_SCALES * sizes.handle_scale
    assert line.pose.position.z < p_foot[2] - drop  # below the foot's handles
    assert line.scale.z >= labels.MIN_TEXT_HEIGHT
    free = out[(201, Marker.ADD)]  # hip_pitch at 0.3 of +-1.6: green-yellow
    assert free.color.g == 1.0 and free.color.r < 1.0
    # The red ring is twice as wide, out of the base plate the hip yaw sits in.
    radius = np.linalg.norm(xyz(ring.points) - leg.joint_frames(q)[0, :3, 3], axis=1)
    np.testing.assert_allclose(radius, 2.0 * markers.Sizes().ring_radius)
    assert ring.scale.x == pytest.approx(2.0 * free.scale.x)


@pytest.mark.parametrize('robot', ['leg3', 'arm6', 'twin_arm', 'gimbal'])
def test_every_joint_ring_is_told_apart_from_every_other(robot, tmp_path):
    """Two rings are distinguishable when some point of one is at least three line widths from
    every point of the other (joints sharing an origin and axis plane get nested rings)."""
    if robot == 'gimbal':
        path = tmp_path / 'gimbal.urdf'
        path.write_text(GIMBAL_URDF)
        ch = Chain.from_urdf_file(path, 'base_link', 'c')
    else:
        ch = chain(robot)
    sizes = markers.sizes_of(ch)
    rng = np.random.default_rng(3)
    for _ in range(4):
        q = rng.uniform(ch.lower, ch.upper)
        rings = [xyz(m.points) for m in markers.joint_markers('base_link', stamp(), ch, q,
                                                              sizes=sizes)
                 if m.type == Marker.LINE_STRIP]
        assert len(rings) == ch.n
        for i in range(ch.n):
            for j in range(i + 1, ch.n):
                gaps = np.linalg.norm(rings[i][:, None] - rings[j][None], axis=2).min(axis=1)
                assert gaps.max() > 3 * sizes.line_width, (ch.joint_names[i], ch.joint_names[j])


def test_coincident_joints_with_one_plane_get_nested_rings(tmp_path):
    path = tmp_path / 'gimbal.urdf'
    path.write_text(GIMBAL_URDF.replace('<axis xyz="0 1 0"/>', '<axis xyz="0 0 1"/>'))
    ch = Chain.from_urdf_file(path, 'base_link', 'c')
    yaw, pitch = [xyz(m.points) for m in markers.joint_markers('base_link', stamp(), ch,
                                                                np.zeros(3))[:4:2]]
    assert np.linalg.norm(pitch, axis=1).min() > 1.4 * np.linalg.norm(yaw, axis=1).max()


def test_a_6d_target_shows_its_orientation_as_three_arrows_z_the_longest():
    from transforms3d.quaternions import quat2mat
    quat = np.array([0.2, -0.4, 0.1, 0.9]) / np.linalg.norm([0.2, -0.4, 0.1, 0.9])
    p = np.array([0.4, 0.1, 0.3])
    sizes = markers.Sizes(1.0)
    arrows = markers.orientation_markers('base_link', stamp(), 1, p, quat, sizes)
    assert [m.id for m in arrows] == [303, 304, 305]
    R = quat2mat([quat[3], *quat[:3]])
    lengths = []
    for k, m in enumerate(arrows):
        assert m.type == Marker.ARROW
        start, end = xyz(m.points)
        np.testing.assert_allclose(start, p)
        lengths.append(np.linalg.norm(end - start))
        np.testing.assert_allclose((end - start) / lengths[-1], R[:, k], atol=1e-12)
    assert lengths[2] == max(lengths) <= sizes.axes_length
    assert max(lengths) < 0.5 * sizes.handle_scale  # inside the move arrows' inner ends
    gone = markers.orientation_markers('base_link', stamp(), 1, p, None, sizes)
    assert [(m.id, m.action) for m in gone] == [(303, Marker.DELETE), (304, Marker.DELETE),
                                                (305, Marker.DELETE)]


def test_sizes_follow_the_robot_within_bounds():
    small, leg, arm, huge = (markers.Sizes(r) for r in (0.05, 0.63, 1.0, 30.0))
    assert small.text_height == 0.04 and huge.text_height == 0.06  # legible: at least 4 cm
    assert leg.target_radius < arm.target_radius
    assert markers.sizes_of(chain('leg3')).reach_m == pytest.approx(0.05 + 0.30 + 0.28)


@pytest.mark.parametrize('robot', ['leg3', 'arm6', 'planar4'])
def test_the_map_is_bounded_points_whose_colours_vary(robot):
    ch = chain(robot)
    reach_map = build_reachability_map(ch, samples=20_000, voxel_size=0.1, seed=4)
    out = map_markers.reachability_markers('base_link', stamp(), [reach_map], max_points=300)
    assert out[0].action == Marker.DELETEALL
    points, *legend = out[1:]
    assert points.type == Marker.POINTS and points.ns == f'reachability/{ch.tip_link}'
    assert 0 < len(points.points) <= 300 and len(points.colors) == len(points.points)
    assert len({(c.r, c.g) for c in points.colors}) >= 3, 'one colour for the whole map'
    spacing = map_points(reach_map, 300).spacing  # between neighbouring points
    assert points.scale.x < 0.5 * spacing  # the robot shows between them
    assert [(m.type, m.ns) for m in legend] == [(Marker.TEXT_VIEW_FACING,
                                                 map_markers.LEGEND_NAMESPACE)] * 3
    title, low, high = legend
    assert title.text == f'{ch.tip_link} reachability map'
    if reach_map.position_only:
        assert (low.text, high.text) == ('violet: at the edge of reach',
                                          'cyan: deep inside the reach')
    else:
        assert (low.text, high.text) == ('violet: few approach directions',
                                          'cyan: all approach directions')
    # Each coloured line in the colour it names: the two ends of the points' one scale.
    colours = {(c.r, c.g, c.b) for c in points.colors}
    assert (low.color.r, low.color.g, low.color.b) == map_markers.map_colour(0.0)
    assert (high.color.r, high.color.g, high.color.b) == map_markers.map_colour(1.0)
    assert all(map_markers.map_colour(0.0)[1] - 1e-9 <= g <= map_markers.map_colour(1.0)[1]
               + 1e-9 for _, g, _ in colours)
    # Legible: as large on the screen as 4.5 cm text at the view's focal distance.
    view = framing(map_points(reach_map, 300).points, 0.45, 0.785398)  # as the node frames
    depth = (np.array([title.pose.position.x, title.pose.position.y, title.pose.position.z])
             - view.eye()) @ view.basis()[0]
    assert title.scale.z * view.distance / depth >= 0.045 - 1e-9
    # No point red (red is a miss): not red-dominant, not orange.
    assert not any(c.r > max(c.g, c.b) + 0.1 for c in points.colors)
    # In a top corner of the view framing the map (none given), one line under the other, in
    # front of every point (no point hides its words).
    screen = view.project(xyz([m.pose.position for m in legend]))
    assert np.all(np.abs(screen) <= 1.0) and np.all(screen[:, 1] > 0.5)
    assert screen[0, 1] > screen[1, 1] > screen[2, 1]
    nearest = ((xyz(points.points) - view.eye()) @ view.basis()[0]).min()
    assert depth < nearest


# ------------------------------------------------------------------ the interactive target
def test_a_6dof_target_body_shows_its_axes_inside_the_move_handles():
    from ik_node.ros.rviz.interactive_marker_msgs import interactive_marker
    quat = np.array([0.0, 1.0, 0.0, 0.0])  # tool z pointing down
    im = interactive_marker('tool0', 'base_link', np.array([0.4, 0.1, 0.3]), quat, True,
                            True, scale=0.3)
    body = next(c for c in im.controls if c.name == 'body')
    centre, *arrows = body.markers
    assert centre.type == Marker.SPHERE and centre.color.g > 0.5 > centre.color.r  # reached
    assert [m.type for m in arrows] == [Marker.ARROW] * 3
    for k, m in enumerate(arrows):  # in the marker's frame: along its x, y, z
        start, end = xyz(m.points)
        np.testing.assert_allclose(start, 0.0)
        np.testing.assert_allclose(end / np.linalg.norm(end), np.eye(3)[k])
        assert np.linalg.norm(end) < 0.5 * im.scale  # the move arrows start at 0.5 scale
        assert (m.color.r, m.color.g, m.color.b) == pytest.approx(markers.AXES_RGBA[k][:3])


@pytest.mark.parametrize('normal', [[0.0, 0.0, 1.0], [0.0, 0.6, 0.8], [-1.0, 0.0, 0.0]])
def test_a_planar_chains_target_moves_in_the_plane_only(normal):
    from transforms3d.quaternions import quat2mat
    from ik_node.ros.rviz.interactive_marker_msgs import interactive_marker
    im = interactive_marker('tip', 'base_link', np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0]),
                            False, None, plane_normal=np.array(normal))
    modes = {c.name: c for c in im.controls}
    assert set(modes) == {'body', 'move_u', 'move_v'}

    def x_axis(control):
        o = control.orientation
        return quat2mat([o.w, o.x, o.y, o.z])[:, 0]
    body = modes['body']
    assert body.interaction_mode == InteractiveMarkerControl.MOVE_PLANE
    np.testing.assert_allclose(x_axis(body), normal, atol=1e-12)  # the plane's normal
    u, v = x_axis(modes['move_u']), x_axis(modes['move_v'])
    assert abs(u @ normal) < 1e-12 and abs(v @ normal) < 1e-12 and abs(u @ v) < 1e-12
    assert all(modes[n].orientation_mode == InteractiveMarkerControl.FIXED for n in modes)


# --------------------------------------------------------------------- planar point targets
def test_a_planar_chains_tip_moves_in_one_plane_and_a_spatial_ones_does_not():
    from ik_node.ros.solving.planar_targets import tip_planes
    planes = tip_planes(chain('planar4'))
    assert list(planes) == ['tip']
    np.testing.assert_allclose(np.abs(planes['tip'].normal), [0, 0, 1])
    assert planes['tip'].point[2] == pytest.approx(0.0)
    for robot in ('leg3', 'arm6', 'twin_arm'):
        assert tip_planes(chain(robot)) == {}


def test_a_point_near_the_plane_is_projected_onto_it_and_a_far_one_kept():
    from ik_node.ros.solving.planar_targets import Plane, onto_plane
    normal = np.array([0.0, 0.6, 0.8])
    plane = Plane(np.array([1.0, 2.0, 3.0]), normal)
    rng = np.random.default_rng(9)
    for _ in range(20):
        in_plane = plane.point + np.cross(normal, rng.normal(size=3))
        offset = rng.uniform(-0.08, 0.08)
        p, moved = onto_plane(in_plane + offset * normal, plane, 0.05)
        if abs(offset) <= 0.05:
            np.testing.assert_allclose(p, in_plane, atol=1e-12)
            assert moved == pytest.approx(abs(offset))
        else:
            np.testing.assert_allclose(p, in_plane + offset * normal)
            assert moved == 0.0
    p, moved = onto_plane(plane.point + 0.01 * normal, plane, 0.0)  # 0: never
    assert moved == 0.0


def test_the_points_of_all_maps_together_are_bounded_and_each_tip_has_its_own_legend_line():
    twin = chain('twin_arm')
    maps = [build_reachability_map(twin, tip, samples=20_000, voxel_size=0.1, seed=5)
            for tip in twin.tip_links]
    out = map_markers.reachability_markers('base_link', stamp(), maps, max_points=500)
    points = [m for m in out if m.type == Marker.POINTS]
    assert [m.ns for m in points] == ['reachability/left_hand', 'reachability/right_hand']
    assert sum(len(m.points) for m in points) <= 500
    # By default RViz gets at most SHOWN_POINTS (its frame rate with the map shown).
    shown = map_markers.reachability_markers('base_link', stamp(), maps)
    voxels = sum(len(m.index) for m in maps)
    assert sum(len(m.points) for m in shown if m.type == Marker.POINTS) <= \
        map_markers.SHOWN_POINTS < voxels
    legends = [m for m in out if m.type == Marker.TEXT_VIEW_FACING]
    assert [m.text for m in legends] == ['reachability map of 2 tips',
                                         'violet: at the edge of reach',
                                         'cyan: deep inside the reach']
    # One column from the top down, a line pitch apart: not on top of each other.
    at = xyz([m.pose.position for m in legends])
    assert np.all(np.diff(at[:, 2]) < 0)
    np.testing.assert_allclose(np.linalg.norm(np.diff(at, axis=0), axis=1) >=
                               labels.LINE_PITCH * legends[0].scale.z * (1 - 1e-9), True)
    # One colour scale for both hands (a colour means one thing): the same value, the same
    # colour whichever hand's map it is in; the title in grey.
    for m in points:
        assert all(map_markers.map_colour(0.0)[1] - 1e-9 <= c.g <=
                   map_markers.map_colour(1.0)[1] + 1e-9 for c in m.colors)
    assert legends[0].color.r == legends[0].color.g == legends[0].color.b


def test_idle_joints_are_not_flagged_and_rest_inside_their_limits():
    """quad12 with one foot targeted: the other legs' knees rest bent inside their limits
    (their range excludes 0), and only the targeted leg's joints may be called near a limit."""
    from ik_node.ros.solving.robot_model import rest_pose
    quad = Chain.from_urdf_file(REPO / 'urdf' / 'quad12.urdf', 'base_link',
                                ['FL_foot', 'FR_foot', 'RL_foot', 'RR_foot'])
    rest = rest_pose(quad)
    assert np.all(rest > quad.lower + 0.1) and np.all(rest < quad.upper - 0.1)
    q = quad.clip(np.zeros(quad.n))  # every knee pressed against its upper limit
    fl = set(quad.joints_of_tip('FL_foot'))
    out = markers.joint_markers('base_link', stamp(), quad, q, 0.05, flagged=fl)
    rings = [m for m in out if m.action == Marker.ADD and m.type == Marker.LINE_STRIP]
    thin = min(m.scale.x for m in rings)
    red = {m.id - markers.RING_ID for m in rings if m.scale.x > thin}  # flagged: wide
    said = markers.limit_lines(quad, q, 0.05, sorted(fl))
    assert said == {j: f'{quad.joint_names[j]} at its upper limit' for j in fl
                    if quad.joint_names[j].endswith('knee')}
    assert red == set(said)  # only the targeted leg's knee is called at its limit
    everyone = markers.joint_markers('base_link', stamp(), quad, q, 0.05)
    assert sum(m.type == Marker.LINE_STRIP and m.scale.x > thin for m in everyone) == 4


def test_a_hand_of_a_branched_chain_is_called_unreachable_only_on_its_own_bound():
    from ik_node.ros.rviz.marker_output import _why_missed
    from ik_node.solvers.base import IkStatus, TipResult

    class Result:
        def __init__(self, status):
            self.status = status
    unreachable, timeout = Result(IkStatus.UNREACHABLE), Result(IkStatus.TIMEOUT)
    assert _why_missed(unreachable, None) == 'unreachable'  # a serial chain: the solve's claim
    assert _why_missed(unreachable, TipResult(False, 0.0038, None)) == 'not reached'
    assert _why_missed(unreachable, TipResult(False, 0.0038, 0.0)) == 'not reached'
    assert _why_missed(unreachable, TipResult(False, 0.563, 0.561)) == \
        'at least 561 mm out of reach'
    assert _why_missed(Result(IkStatus.JOINT_LIMITED), TipResult(False, 0.01)) == 'not reached'
    assert _why_missed(timeout, TipResult(False, 0.0057)) == 'timeout'


def reads_as_reach_or_miss(c) -> bool:
    """A colour a user takes for reached (green) or missed (red): one channel well above both
    others, the red or the green one."""
    return (c.r > max(c.g, c.b) + 0.3) or (c.g > max(c.r, c.b) + 0.3)


@pytest.mark.parametrize('six_dof', [True, False])
def test_the_targets_handles_and_axes_are_coloured_apart_from_reach_and_miss(six_dof):
    from ik_node.ros.rviz.interactive_marker_msgs import interactive_marker
    im = interactive_marker('tool0', 'base_link', np.zeros(3), np.array([0, 0, 0, 1.0]),
                            six_dof, reached=False, scale=0.25)
    handles = [(ctl.name, m) for ctl in im.controls if ctl.name != 'body' for m in ctl.markers]
    names = {ctl.name for ctl in im.controls if ctl.name != 'body'}
    assert {name for name, _ in handles} == names  # every control draws its own handles
    assert not any(reads_as_reach_or_miss(m.color) for _, m in handles)
    arrows = [m for name, m in handles if name.startswith('move')]
    assert all(m.type == Marker.ARROW and max(abs(p.x) for p in m.points) <= 0.9 * 0.25 + 1e-12
               for m in arrows)
    axes = markers.orientation_markers('base_link', stamp(), 0, np.zeros(3),
                                       [0.0, 0.0, 0.0, 1.0])
    assert not any(reads_as_reach_or_miss(m.color) for m in axes)
    assert reads_as_reach_or_miss(markers.target_markers(
        'base_link', stamp(), 0, np.zeros(3), False, np.ones(3))[0].color)  # the miss does


# ------------------------------------------------------------- everything in the robot's view
def view_chain(robot: str) -> Chain:
    import yaml
    params = yaml.safe_load((REPO / 'config' / f'{robot}.yaml').read_text())[
        'ik_node']['ros__parameters']
    return Chain.from_urdf_file(REPO / 'urdf' / params['urdf_file'], params['base_link'],
                                params.get('tip_links') or [params['tip_link']])


def text_in_view(view, m, fill=1.0) -> bool:
    """Whether all of a text marker (its estimated extent) lands inside ``view``."""
    from ik_node.ros.rviz.camera import text_corners, text_width
    lines = len(m.text.split('\n'))
    corners = text_corners(view, [m.pose.position.x, m.pose.position.y, m.pose.position.z],
                           text_width(m.text, m.scale.z), lines * labels.LINE_PITCH * m.scale.z)
    return view.contains(corners, fill)


@pytest.mark.parametrize('robot', ['leg3', 'arm6', 'planar4', 'twin_arm', 'quad12'])
def test_a_target_far_out_of_reach_is_drawn_at_the_views_edge_with_its_label_in_view(robot):
    """A target 2-5 m out in any direction from a tip in view: its sphere, the miss line's end,
    the arrow towards it and the miss label (saying how much further the target is) are inside
    the robot's shipped view; the sphere is on the line from the tip to the target, the arrow
    points at it. Drawn where they are (the target itself), the sphere and its label leave the
    view."""
    from ik_node.ros.rviz import views
    from ik_node.ros.rviz.marker_output import shown_target
    ch = view_chain(robot)
    view = views.chain_view(ch)
    sizes = markers.sizes_of(ch)
    rng = np.random.default_rng(21)
    outside = checked = 0
    while checked < 20:
        q = rng.uniform(np.maximum(ch.lower, -3.0), np.minimum(ch.upper, 3.0))
        k = int(rng.integers(len(ch.tip_links)))
        p_tip = ch.fk_tips(q)[ch.tip_links[k]][:3, 3]
        if not view.contains([p_tip]):
            continue  # the view frames the reach near the robot: a tip may stretch past it
        checked += 1
        direction = rng.normal(size=3)
        p_target = p_tip + rng.uniform(2.0, 5.0) * direction / np.linalg.norm(direction)
        miss = labels.wrapped([labels.miss_text(ch.tip_links[k], 1.234, 'unreachable')])
        p_shown = shown_target(view, p_tip, p_target, sizes)
        if p_shown is not p_target:
            miss.append(labels.beyond_text(float(np.linalg.norm(p_target - p_shown))))
        sphere, line = markers.target_markers('base_link', stamp(), k, p_shown, False, p_tip,
                                              sizes)
        arrow = markers.beyond_marker('base_link', stamp(), k, p_shown, p_target, sizes)
        label, _ = labels.tip_label_markers('base_link', stamp(), k, p_tip,
                                             labels.TipLabel('\n'.join(miss), []), sizes,
                                             p_shown, view)
        at = [sphere.pose.position.x, sphere.pose.position.y, sphere.pose.position.z]
        assert view.contains([at, *xyz(line.points), *xyz(arrow.points)], 1.0), robot
        assert text_in_view(view, label), (robot, label.text)
        # On the way from the tip to the target; the arrow from there towards the target.
        along = (np.asarray(at) - p_tip) @ (p_target - p_tip) / np.sum((p_target - p_tip) ** 2)
        np.testing.assert_allclose(np.asarray(at), p_tip + along * (p_target - p_tip),
                                   atol=1e-9)
        if not view.contains([p_target], 1.0):
            outside += 1
            assert arrow.action == Marker.ADD and arrow.type == Marker.ARROW
            start, end = xyz(arrow.points)
            towards = (end - start) / np.linalg.norm(end - start)
            unit = (p_target - start) / np.linalg.norm(p_target - start)
            np.testing.assert_allclose(towards, unit, atol=1e-9)
            rest = labels.length_text(float(np.linalg.norm(p_target - np.asarray(at))))
            assert label.text.split('\n')[-1] == f'target {rest} further on'
    assert outside >= 6  # drawn where they are, these targets would be out of the view


@pytest.mark.parametrize('robot', ['leg3', 'arm6', 'twin_arm', 'quad12'])
def test_every_label_is_inside_the_robots_view_wherever_the_tip_is(robot):
    """Miss and warning labels and the lines of joints near a limit under a tip anywhere in
    the view are entirely inside it (moved across the screen when centred on their tip they
    would run over its edge)."""
    from ik_node.ros.rviz import views
    ch = view_chain(robot)
    view = views.chain_view(ch)
    sizes = markers.sizes_of(ch)
    rng = np.random.default_rng(8)
    text = labels.miss_text(ch.tip_links[0], 0.563, 'at least 561 mm out of reach')
    for _ in range(25):
        q = rng.uniform(np.maximum(ch.lower, -3.0), np.minimum(ch.upper, 3.0))
        for k, tip in enumerate(ch.tip_links):
            p_tip = ch.fk_tips(q)[tip][:3, 3]
            if not view.contains([p_tip]):
                continue  # the view frames the reach near the robot
            limits = sorted(markers.limit_lines(ch, q, 0.3, ch.joints_of_tip(tip)).items())
            label = labels.TipLabel(text, ['fragile: near a singularity'], limits)
            for m in labels.tip_label_markers('base_link', stamp(), k, p_tip, label, sizes,
                                               p_tip, view):
                if m.action == Marker.ADD and fits(view, m):
                    assert text_in_view(view, m), (robot, m.text, m.pose.position)


def fits(view, m) -> bool:
    """Whether a text marker is narrower than the view's share FILL at its depth (a long
    label near the camera is not: it cannot be kept inside)."""
    from ik_node.ros.rviz.camera import FILL, text_corners, text_width
    at = [m.pose.position.x, m.pose.position.y, m.pose.position.z]
    box = view.project(text_corners(view, at, text_width(m.text, m.scale.z), m.scale.z))
    return float(box[:, 0].max() - box[:, 0].min()) <= 2.0 * FILL


def handle_ends(p_target: np.ndarray, scale: float) -> np.ndarray:
    """The farthest points the interactive target's handles reach: its move arrows' tips (0.9
    scales out along any axis: a sphere of them bounds every orientation)."""
    rng = np.random.default_rng(3)
    d = rng.normal(size=(400, 3))
    d /= np.linalg.norm(d, axis=1)[:, None]
    return np.asarray(p_target) + 0.95 * scale * d


@pytest.mark.parametrize('robot', ['planar4', 'leg3', 'arm6', 'quad12'])
def test_labels_are_clear_of_the_handles_on_the_screen_also_in_a_view_from_high_above(robot):
    """A tip's labels (miss, warnings, a joint's limit) are drawn clear of its target's
    handles on the screen (below them, or beside or above them where the view ends below), in
    the robot's view (planar4's looks down from 0.9 rad) and in one from 1.2 rad above."""
    from ik_node.ros.rviz import views
    from ik_node.ros.rviz.camera import OrbitView, text_corners, text_width
    ch = view_chain(robot)
    sizes = markers.sizes_of(ch)
    shipped = views.chain_view(ch)
    steep = OrbitView(shipped.focal, shipped.distance, 1.2, shipped.yaw)
    rng = np.random.default_rng(11)
    tip = ch.tip_links[0]
    label = labels.TipLabel(labels.miss_text(tip, 0.25, 'unreachable'), ['fragile: x'],
                            [(0, 'joint near its upper limit')])
    checked = 0
    for view in (shipped, steep):
        for _ in range(12):
            q = rng.uniform(np.maximum(ch.lower, -3.0), np.minimum(ch.upper, 3.0))
            p_tip = ch.fk_tips(q)[tip][:3, 3]
            if not view.contains([p_tip], 0.45):
                continue  # near the view's edge labels are moved inside it, maybe over a handle
            p_target = p_tip + rng.normal(scale=0.1, size=3)
            if ch.planar_normal(tip) is not None:
                p_target[2] = p_tip[2]
            ends = view.project(handle_ends(p_target, sizes.handle_scale))
            (left, low), (right, high) = ends.min(axis=0), ends.max(axis=0)
            for m in labels.tip_label_markers('base_link', stamp(), 0, p_tip, label, sizes,
                                               p_target, view):
                at = [m.pose.position.x, m.pose.position.y, m.pose.position.z]
                lines = m.text.count('\n') + 1
                box = view.project(text_corners(view, at, text_width(m.text, m.scale.z),
                                                lines * labels.LINE_PITCH * m.scale.z))
                clear = (box[:, 1].max() <= low + 1e-9 or box[:, 1].min() >= high - 1e-9 or
                         box[:, 0].max() <= left + 1e-9 or box[:, 0].min() >= right - 1e-9)
                assert clear, (robot, m.text, box, (left, low, right, high))
                checked += 1
    assert checked >= 30


def test_quad12s_map_legend_stands_in_a_corner_of_its_view_clear_of_the_robot():
    """One legend for the four feet's maps: a title and what each end of the one colour scale
    means, all inside the view, none over the body, the legs or the feet at rest."""
    from ik_node.ros.solving.robot_model import rest_pose
    from ik_node.ros.rviz import views
    from ik_node.ros.rviz.camera import text_corners, text_width
    quad = view_chain('quad12')
    view = views.chain_view(quad)
    maps = [build_reachability_map(quad, tip, samples=4000, voxel_size=0.05, seed=2)
            for tip in quad.tip_links]
    out = map_markers.reachability_markers('base_link', stamp(), maps, max_points=800,
                                           view=view)
    legends = [m for m in out if m.type == Marker.TEXT_VIEW_FACING]
    assert [m.text for m in legends] == ['reachability map of 4 tips',
                                         'violet: at the edge of reach',
                                         'cyan: deep inside the reach']
    # No map point under the legend's words (RViz draws text under points behind it).
    shown = view.project(np.vstack([xyz(m.points) for m in out if m.type == Marker.POINTS]))
    for m in legends:
        box = view.project(text_corners(view, [m.pose.position.x, m.pose.position.y,
                                               m.pose.position.z],
                                        text_width(m.text, m.scale.z), m.scale.z))
        low, high = box.min(axis=0), box.max(axis=0)
        assert not np.any(np.all((shown >= low) & (shown <= high), axis=1)), m.text
    q = rest_pose(quad)
    body = np.vstack([quad.joint_frames(q)[:, :3, 3],
                      [T[:3, 3] for T in quad.fk_tips(q).values()]])
    # The body's outline on screen: every point between two of its joints or feet.
    hull = view.project(np.vstack([a + s * (b - a) for a in body for b in body
                                   for s in np.linspace(0.0, 1.0, 5)]))
    for m in legends:
        assert text_in_view(view, m), m.text
        box = view.project(text_corners(view, [m.pose.position.x, m.pose.position.y,
                                                m.pose.position.z],
                                        text_width(m.text, m.scale.z), m.scale.z))
        low, high = box.min(axis=0), box.max(axis=0)
        over = np.all((hull >= low) & (hull <= high), axis=1)
        assert not over.any(), (m.text, hull[over][:3])


def test_an_idle_tip_gets_a_small_grabbable_mark_not_a_full_handle_set():
    """An idle tip of a branched chain: its body alone (dragged by it, in 3D or in a planar
    chain's plane), no move arrows or rings, no description over the robot."""
    from ik_node.ros.rviz.interactive_marker_msgs import idle_marker, interactive_marker
    for normal in (None, np.array([0.0, 0.0, 1.0])):
        full = interactive_marker('FL_foot', 'base_link', np.zeros(3), np.array([0, 0, 0, 1.0]),
                                  False, reached=True, scale=0.2, plane_normal=normal)
        assert len(full.controls) > 1 and full.description
        mark = idle_marker(full)
        assert [c.name for c in mark.controls] == ['body'] and mark.description == ''
        body = mark.controls[0]
        assert body.interaction_mode in (InteractiveMarkerControl.MOVE_3D,
                                         InteractiveMarkerControl.MOVE_PLANE)
        assert body.always_visible and body.markers[0].type == Marker.SPHERE
        assert body.markers[0].scale.x <= 0.35 * 0.2 + 1e-12  # small: a third of the scale
