"""The node on the vendors' UR5e with its collision meshes (the reference robots,
``IK_NODE_ROBOTS_DIR``; skipped when absent), over real rclpy and DDS: a target reachable only
in collision is answered ``in_collision`` with the pair named and the colliding links drawn,
~/obstacles are checked, a bad obstacle message is refused while the node keeps answering, and
a controller output never receives a command that collides."""

from __future__ import annotations

import numpy as np
import pytest
import transforms3d

pytest.importorskip('fcl')
pytest.importorskip('trimesh')

from diagnostic_msgs.msg import DiagnosticStatus
from std_msgs.msg import Float64MultiArray
from visualization_msgs.msg import Marker, MarkerArray

from harness import Probe, params_file, unique, values
from ik_node import Chain


def start_ur5e(harness, collision_robot, **overrides):
    path = collision_robot('ur5e.urdf')
    ik, probe = harness.start('arm6', urdf_file=str(path), base_link='base_link',
                              tip_link='tool0', solver='damped_jacobian', **overrides)
    return Chain.from_urdf_file(path, 'base_link', 'tool0'), ik, probe


def pose_of(chain, q):
    T = chain.fk(np.asarray(q, dtype=float))
    w, x, y, z = transforms3d.quaternions.mat2quat(T[:3, :3])
    return T[:3, 3].tolist(), [x, y, z, w]


def test_a_target_reachable_only_in_collision_is_answered_in_collision(harness,
                                                                       collision_robot):
    chain, ik, probe = harness.start_urdf(collision_robot('ur5e.urdf'), 'base_link',
                                              'tool0', 'damped_jacobian')
    mark = probe.mark()
    probe.send_pose(*pose_of(chain, [0.0, -1.57, 2.9, 0.0, 0.0, 0.0]))
    v = values(probe.next_result(mark, 0))
    assert v['status'] == 'in_collision' and v['reachable'] == 'false'
    assert ' mm in' in v['message'] and v['closest_pair']
    markers = probe.wait_for('the collision highlight', lambda: next(
        (a for a in probe.marker_arrays[mark[2]:] if any(m.id == 700 for m in a.markers)),
        None))
    (highlight,) = [m for m in markers.markers if m.id == 700]
    assert highlight.type == Marker.TRIANGLE_LIST and len(highlight.points) > 0
    # an outline over it, in a colour RViz's default link red does not hide
    (outline,) = [m for m in markers.markers if m.id == 701]
    assert outline.type == Marker.LINE_LIST and len(outline.points) > 0
    assert outline.color.g > 0.5 and highlight.color.b > 0.5
    # the label names the pair and its depth, never a miss; the status a key per pair
    (label,) = [m for m in markers.markers if m.id == 400 and m.action == Marker.ADD]
    assert 'reached only in collision' in label.text and ' mm in' in label.text, label.text
    assert 'missed by' not in label.text
    assert ' mm in' in v['colliding'] and v['colliding'].split(':')[0] in label.text, v
    # a collision-free pose: reached, the distance to the closest pair positive
    mark = probe.mark()
    probe.send_pose(*pose_of(chain, [0.0, -1.57, 0.0, -1.57, 0.0, 0.0]))
    v = values(probe.next_result(mark, 1))
    assert v['reachable'] == 'true' and float(v['min_distance_m']) > 0.0


def test_obstacles_on_the_topic_are_checked_and_a_bad_one_is_refused(harness,
                                                                     collision_robot):
    chain, ik, probe = harness.start_urdf(collision_robot('ur5e.urdf'), 'base_link',
                                              'tool0', 'damped_jacobian')
    q = [0.0, -1.57, 0.0, -1.57, 0.0, 0.0]
    elbow = chain.link_transform('forearm_link', np.array(q))[:3, 3]
    publisher = probe.node.create_publisher(MarkerArray, f'/{probe.ik_name}/obstacles', 10)
    ball = Marker(type=Marker.SPHERE, ns='test', id=1)
    ball.pose.position.x, ball.pose.position.y, ball.pose.position.z = elbow.tolist()
    ball.pose.orientation.w = 1.0
    ball.scale.x = ball.scale.y = ball.scale.z = 0.1
    bad = Marker(type=Marker.ARROW, ns='test', id=2)
    mark = probe.mark()
    publisher.publish(MarkerArray(markers=[bad]))
    error = probe.next_status(mark, lambda s: s.level == DiagnosticStatus.ERROR, 'an error')
    assert 'obstacles' in error.message and 'test/2' in error.message
    probe.wait_for('the obstacle taken', lambda: ik.model.solver._collision.checker.world
                   .obstacles or (publisher.publish(MarkerArray(markers=[ball])) and None))
    mark = probe.mark()
    probe.send_pose(*pose_of(chain, q))
    v = values(probe.next_result(mark, 0))
    if v['reachable'] == 'false':  # only the pose through the ball reaches it: said so
        assert v['status'] == 'in_collision' and 'test/1' in v['message']
    answer = probe.wait_for('a joint state', lambda: (probe.joint_states[mark[0]:] or [None])[-1])
    names = list(answer.name)
    q_answer = np.array([answer.position[names.index(n)] for n in chain.joint_names])
    assert not np.allclose(q_answer, q, atol=1e-3)  # never the pose through the obstacle


def test_a_stream_is_checked_for_collisions_only_where_a_status_or_markers_show_it(
        harness, collision_robot, monkeypatch):
    # The collision values and the colliding links are for a person: measured when a status
    # or a marker array goes out (at their rates), not for every answer of a stream.
    # The node solves every target it gets however loaded the machine (the messages stay
    # fresh and all fit its queue; the burst may lose a few on the way), and statuses go out
    # at 1 Hz: the stream's answers come faster than the statuses and their markers unless
    # the solves took a quarter of a minute.
    import ik_node.ros.solve_loop as solve_loop
    from ik_node.ros.inputs import target_flow, target_subscriptions
    monkeypatch.setattr(target_flow, 'TARGET_FRESH_S', 3600.0)
    monkeypatch.setattr(target_flow, 'TARGET_MAX_WAIT_S', 3600.0)
    monkeypatch.setattr(target_subscriptions, 'TARGET_QUEUE_DEPTH', 100_000)
    calls = []
    inner = solve_loop.collision_outputs

    def counted(*args, **kwargs):
        calls.append(1)
        return inner(*args, **kwargs)
    monkeypatch.setattr(solve_loop, 'collision_outputs', counted)
    chain, ik, probe = start_ur5e(harness, collision_robot, diagnostics_rate=1.0)
    q0 = np.array([0.0, -1.57, 0.0, -1.57, 0.0, 0.0])
    mark = probe.mark()
    count_before = probe.last_solve_count()
    n = 60
    for k in range(n):
        probe.send_pose(*pose_of(chain, q0 + 0.002 * k))
    last = pose_of(chain, q0 + 0.002 * (n - 1))[0]
    probe.joint_state_at(chain, last, mark[0])
    v = values(probe.next_result(mark, count_before))
    assert float(v['min_distance_m']) > 0.0  # the status still carries the check
    answered = ik._status.solve_count - count_before
    with probe.lock:
        shown = sum(1 for s in probe.diagnostics[mark[1]:] if 'solve_count' in values(s)) + \
            len(probe.marker_arrays[mark[2]:])
    assert answered >= n // 2 and 1 <= len(calls) <= shown < answered, \
        (answered, len(calls), shown)


def test_a_controller_is_never_sent_a_pose_that_collides_and_the_status_names_the_pair(
        harness, collision_robot):
    # A ball around the target and around the arm's rest pose (the first seed): every pose
    # that reaches the target has the wrist in the ball, and no restart is allowed, so the
    # answer collides. The jump guard is off: the collision hold stands on its own.
    path = collision_robot('ur5e.urdf')
    chain = Chain.from_urdf_file(path, 'base_link', 'tool0')
    q_target = np.array([0.0, 0.0, 0.0, 0.0, 0.3, 0.0])
    tip_rest, tip_target = chain.fk(np.zeros(6))[:3, 3], chain.fk(q_target)[:3, 3]
    centre = 0.5 * (tip_rest + tip_target)
    assert np.linalg.norm(tip_rest - tip_target) < 0.1
    ball = 'ball sphere {} {} {} 0.15'.format(*centre.tolist())
    name = unique('ik')
    ik = harness.start_node(name, ['--ros-args', '--params-file', str(params_file(
        harness.tmp_path, 'arm6', name, urdf_file=str(path), base_link='base_link',
        tip_link='tool0', solver='damped_jacobian', output='position_command',
        jump_guard='off', damped_jacobian={'collision_restarts': 0},
        **{'collision.obstacles': ball})), '-r', f'/diagnostics:=/{name}/diagnostics'])
    probe = Probe(harness.ros, name, joint_states=f'/{name}/joint_states',
                  diagnostics=f'/{name}/diagnostics')
    probe.wait_for('the target subscription',
                   lambda: probe.pose_pubs[None].get_subscription_count() > 0)
    probe.wait_for('first diagnostics', lambda: probe.diagnostics)
    commands = []
    probe.node.create_subscription(Float64MultiArray, '/forward_position_controller/commands',
                                   lambda m: commands.append(np.array(m.data)), 10)
    checker = ik.model.solver._collision.checker
    assert checker.world.obstacles
    mark = probe.mark()
    probe.send_pose(*pose_of(chain, q_target))
    status = probe.next_status(mark, lambda s: s.level == DiagnosticStatus.ERROR, 'a hold')
    v = values(status)
    assert 'collision guard: held the last command' in status.message, status.message
    assert 'obstacle ball' in v['collision_hold'] and ' mm in' in v['collision_hold'], v
    assert v['status'] == 'in_collision' and v['jump_guard'] == 'hold', v
    # A free target far from the ball is commanded: the output works, and no command so far
    # collides.
    q_free = np.array([1.5, -1.57, 0.0, -1.57, 0.0, 0.0])
    mark = probe.mark()
    probe.send_pose(*pose_of(chain, q_free))
    v = values(probe.next_result(mark, int(v.get('solve_count') or 0)))
    assert v['reachable'] == 'true', v
    probe.wait_for('a command', lambda: commands)
    names = list(chain.joint_names)
    assert len(names) == len(commands[0])
    for q in list(commands):
        assert checker.is_free(q), checker.report(q).message()
    assert np.linalg.norm(chain.fk(commands[-1])[:3, 3] - chain.fk(q_free)[:3, 3]) < 1e-3
