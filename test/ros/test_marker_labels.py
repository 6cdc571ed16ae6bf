"""Where the node's labels stand: near the robot in 3D (inside the box its view frames, grown by
0.6 of its reach: the labels stand a little in front of the links around the tip), whole inside
the robot's view, for the packaged robots and the vendors' UR5e
with an obstacle around its target (a real node over DDS for the latter)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import transforms3d
import yaml
from builtin_interfaces.msg import Time
from visualization_msgs.msg import Marker

from harness import params_file, unique, values, Probe
from ik_node import Chain
from ik_node.ros.rviz import labels, sizes, views
from ik_node.ros.rviz.camera import text_corners, text_width

REPO = Path(__file__).resolve().parents[2]
#: A label stands at most this share of the robot's reach outside the box its view frames
#: (0.3 of it towards the camera: labels.IN_FRONT_SHARE).
MARGIN_SHARE = 0.6


def packaged_chain(robot: str) -> Chain:
    params = yaml.safe_load((REPO / 'config' / f'{robot}.yaml').read_text())[
        'ik_node']['ros__parameters']
    return Chain.from_urdf_file(REPO / 'urdf' / params['urdf_file'], params['base_link'],
                                params.get('tip_links') or [params['tip_link']])


def position(m: Marker) -> np.ndarray:
    return np.array([m.pose.position.x, m.pose.position.y, m.pose.position.z])


def framed_box(chain: Chain) -> tuple:
    """``(low, high)`` corners [m] of the box of what the chain's view frames."""
    points = views.framed_points(chain)
    return points.min(axis=0), points.max(axis=0)


def outside_box(box: tuple, m: Marker) -> float:
    """How far [m] the label ``m`` stands outside ``box`` (:func:`framed_box`)."""
    low, high = box
    p = position(m)
    return float(np.max(np.maximum(low - p, p - high)))


def depth(view, p) -> float:
    """Distance [m] of ``p`` in front of the camera, along its line of sight."""
    forward, _, _ = view.basis()
    return float((np.asarray(p, dtype=float) - view.eye()) @ forward)


def whole_in_view(view, m: Marker) -> bool:
    lines = m.text.count('\n') + 1
    return view.contains(text_corners(view, position(m), text_width(m.text, m.scale.z),
                                      lines * labels.LINE_PITCH * m.scale.z), 1.0)


COLLISION_LABEL = labels.TipLabel(
    'tool0: reached only in collision\nwrist_2_link - obstacle ball: 114 mm in\n'
    'wrist_1_link - obstacle ball: 14 mm in\nshown: a free pose 445 mm away',
    ['fragile: near a singularity'], [(0, 'shoulder near its upper limit')])


@pytest.mark.parametrize('robot', ['leg3', 'arm6', 'planar4', 'twin_arm', 'quad12', 'ur5e'])
def test_a_long_label_stands_near_the_robot_and_whole_in_its_view(robot, collision_robot):
    """A collision label (four long lines, a warning and a limit line) for tips and targets
    all over the view: below, beside or above the tip, or in a corner at the robot's depth;
    never farther than 0.6 of the reach outside the framed box (a corner in front of the robot,
    near the camera, would be), and all of its text inside the view."""
    chain = (Chain.from_urdf_file(collision_robot('ur5e.urdf'), 'base_link', 'tool0')
             if robot == 'ur5e' else packaged_chain(robot))
    size, view, box = sizes.sizes_of(chain), views.chain_view(chain), framed_box(chain)
    tip = chain.tip_links[0]
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(150):
        q = rng.uniform(np.maximum(chain.lower, -3.0), np.minimum(chain.upper, 3.0))
        p_tip = chain.fk_tips(q)[tip][:3, 3]
        p_target = p_tip + rng.normal(scale=0.25 * size.reach_m, size=3)
        if chain.motion_plane(tip) is not None:
            p_target[2] = p_tip[2]
        if not view.contains([p_target], 0.9):
            continue
        for m in labels.tip_label_markers('base_link', Time(), 0, p_tip, COLLISION_LABEL, size,
                                          p_target, view):
            if m.action == Marker.DELETE:
                continue
            assert outside_box(box, m) <= MARGIN_SHARE * size.reach_m, (m.text, position(m))
            assert whole_in_view(view, m), (m.text, view.project(position(m)))
            # in front of the links around the tip (RViz hides text behind a mesh)
            behind = max(depth(view, p_tip), depth(view, p_target), view.distance)
            assert depth(view, position(m)) <= behind - 0.2 * size.reach_m, m.text
            checked += 1
    assert checked >= 150


def test_ur5e_with_an_obstacle_labels_the_pair_near_the_robot_in_its_view(harness,
                                                                         collision_robot):
    """The vendors' UR5e, a ball around a pose target: the published label names the pairs
    and their depth, stands near the robot and whole inside the view the node and
    ik.launch.py give RViz; the colliding links are drawn with an outline."""
    pytest.importorskip('fcl')
    pytest.importorskip('trimesh')
    path = collision_robot('ur5e.urdf')
    chain = Chain.from_urdf_file(path, 'base_link', 'tool0')
    name = unique('ik')
    harness.start_node(name, ['--ros-args', '--params-file', str(params_file(
        harness.tmp_path, 'arm6', name, urdf_file=str(path), base_link='base_link',
        tip_link='tool0', solver='damped_jacobian',
        **{'collision.obstacles': 'ball sphere 0.4 0.1 0.33 0.08'})),
        '-r', f'/diagnostics:=/{name}/diagnostics', '-r', f'/joint_states:=/{name}/js'])
    probe = Probe(harness.ros, name, joint_states=f'/{name}/js',
                  diagnostics=f'/{name}/diagnostics')
    probe.wait_connected()
    down = transforms3d.quaternions.axangle2quat([1.0, 0.0, 0.0], np.pi)  # w, x, y, z
    down_xyzw = [down[1], down[2], down[3], down[0]]
    mark = probe.mark()
    probe.send_pose([0.4, 0.1, 0.5], down_xyzw)  # above the ball: free
    v = values(probe.next_result(mark, 0))
    assert v['reachable'] == 'true', v
    mark = probe.mark()
    probe.send_pose([0.4, 0.1, 0.3], down_xyzw)  # inside it
    v = values(probe.next_result(mark, int(v['solve_count'])))
    assert v['status'] == 'in_collision', v

    def label():
        for array in reversed(probe.marker_arrays[mark[2]:]):
            found = [m for m in array.markers if m.id == labels.MISS_LABEL_ID and
                     m.action == Marker.ADD and 'collision' in m.text]
            if found:
                return found[0], array
        return None
    (m, array) = probe.wait_for('the collision label', label)
    assert 'reached only in collision' in m.text and 'obstacle ball' in m.text
    assert ' mm in' in m.text and 'missed by' not in m.text
    reach = sizes.sizes_of(chain).reach_m
    assert outside_box(framed_box(chain), m) <= MARGIN_SHARE * reach, position(m)
    assert whole_in_view(views.chain_view(chain), m), m.text
    outline = [o for o in array.markers if o.id == 701 and o.action == Marker.ADD]
    assert outline and outline[0].type == Marker.LINE_LIST and outline[0].points


def test_a_label_with_no_room_below_or_beside_stays_off_the_robots_body():
    """leg3's foot stretched towards a target out of reach near the bottom of its view: no
    room below the foot or beside it; above it is the leg itself, so the label goes
    elsewhere (a corner of the view), none of the leg behind its text on the screen."""
    from ik_node import make_solver
    from ik_node.ros.rviz.marker_output import body_points
    leg = packaged_chain('leg3')
    target = np.array([0.515, 0.104, -0.588])
    q = make_solver('analytic_hip_knee', leg).solve(target).joint_positions
    view, size = views.chain_view(leg), sizes.sizes_of(leg)
    body = body_points(leg, q)
    label = labels.TipLabel('foot missed by 172 mm\n(unreachable)', [], (), body)
    (m,) = [m for m in labels.tip_label_markers('base_link', Time(), 0, leg.fk(q)[:3, 3], label,
                                                 size, target, view) if m.action == Marker.ADD]
    box = view.project(text_corners(view, position(m), text_width(m.text, m.scale.z),
                                    2 * labels.LINE_PITCH * m.scale.z))
    low, high = box.min(axis=0), box.max(axis=0)
    screen = view.project(body)
    assert not np.any(np.all((screen >= low) & (screen <= high), axis=1))
    assert whole_in_view(view, m)
