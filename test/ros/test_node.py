"""The ik_node node in-process, over real rclpy and DDS (no mocks).

Each test starts an :class:`ik_node.ros.node.IkNode` from one of the package's config files under a
unique name, with ``/joint_states`` and ``/diagnostics`` remapped below that name so tests never
see each other, plus a probe node that publishes targets, records what comes back and calls the
node's parameter services. Targets are made by forward kinematics of joint values chosen here,
so they are reachable by construction; what comes back is checked by FK of the received joint
positions (ik_node.Chain), never against numbers the node printed.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from diagnostic_msgs.msg import DiagnosticStatus
from rcl_interfaces.msg import ParameterType
from rcl_interfaces.srv import GetParameters
from visualization_msgs.msg import Marker

from harness import (REPO, answers, chain_of, positions_of, random_reachable_q,
                     reached_ok, stamp_text, values)
from ik_node import Chain


# ------------------------------------------------------------------------------------ tests
ROBOTS = [('leg3', 'analytic_hip_knee'), ('planar4', 'fabrik'), ('arm6', 'damped_jacobian')]


def test_joint_states_flow_at_the_steady_rate_before_any_target(harness):
    ik, probe = harness.start('leg3', publish_rate=20.0)
    probe.wait_for('three joint states', lambda: len(probe.joint_states) >= 3)
    with probe.lock:
        first = list(probe.joint_states[:3])
    for msg in first:
        assert list(msg.name) == ['hip_yaw', 'hip_pitch', 'knee']
        # Initial state: every joint at 0 (inside the leg's limits), i.e. the leg hangs straight.
        assert np.allclose(msg.position, [0.0, 0.0, 0.0])
    assert probe.last_solve_count() == 0
    # Before the first target the status says the node is idle: OK, not an error.
    probe.wait_for('a diagnostic status', lambda: probe.diagnostics)
    with probe.lock:
        first_status = probe.diagnostics[0]
    assert first_status.level == DiagnosticStatus.OK
    assert values(first_status)['status'] == 'idle'


@pytest.mark.slow
@pytest.mark.parametrize('robot,solver', ROBOTS, ids=[r for r, _ in ROBOTS])
def test_point_and_pose_targets_are_reached_by_fk(harness, robot, solver):
    ik, probe = harness.start(robot)
    chain = chain_of(robot)
    rng = np.random.default_rng(7)
    count = 0
    for kind in ('point', 'pose', 'point'):
        q_true = random_reachable_q(chain, rng)
        T = chain.fk(q_true)
        mark = probe.mark()
        if kind == 'point':
            probe.send_point(T[:3, 3])
        else:
            import transforms3d
            w, x, y, z = transforms3d.quaternions.mat2quat(T[:3, :3])
            probe.send_pose(T[:3, 3], (x, y, z, w))
        status = probe.next_result(mark, count)
        count = int(values(status)['solve_count'])
        v = values(status)
        assert v['solver'] == solver
        assert reached_ok(status), (status.message, v)
        assert v['reachable'] == 'true'
        msg = probe.joint_state_at(chain, T[:3, 3], mark[0])
        q = positions_of(msg, chain.joint_names)
        assert chain.within_limits(q)
        if kind == 'pose' and solver == 'damped_jacobian':
            R = chain.fk(q)[:3, :3]
            angle = math.acos(max(-1.0, min(1.0, 0.5 * (np.trace(R.T @ T[:3, :3]) - 1.0))))
            assert angle < 1e-2
            assert v['orientation_ignored'] == 'false'
        if kind == 'pose' and solver != 'damped_jacobian':
            assert v['orientation_ignored'] == 'true'  # position-only solvers say so


def test_unreachable_target_warns_and_publishes_the_best_effort(harness):
    ik, probe = harness.start('leg3')
    chain = chain_of('leg3')
    mark = probe.mark()
    probe.send_point([0.0, 0.0, -2.0])
    status = probe.next_result(mark, 0)
    v = values(status)
    assert status.level == DiagnosticStatus.WARN
    assert v['reachable'] == 'false'
    # Hip pitch is 0.05 m below the base; thigh + shin = 0.58 m: the foot stops 1.37 m short.
    assert float(v['min_residual_m']) == pytest.approx(1.37, abs=1e-6)
    msg = probe.wait_for('a joint state', lambda: (probe.joint_states[mark[0]:] or [None])[-1])
    q = positions_of(msg, chain.joint_names)
    assert np.all(np.isfinite(q)) and chain.within_limits(q)
    foot = chain.fk(q)[:3, 3]
    assert np.linalg.norm(foot - [0.0, 0.0, -2.0]) == pytest.approx(1.37, abs=1e-3)
    markers = probe.wait_for('target markers', lambda: next(
        (a for a in probe.marker_arrays[mark[2]:] if any(m.id == 10 for m in a.markers)), None))
    by_id = {m.id: m for m in markers.markers}
    assert by_id[10].color.r > 0.5 and by_id[10].color.g < 0.5  # red: not reached
    assert by_id[100].type == Marker.LINE_LIST and len(by_id[100].points) == 2
    # The miss line runs from the foot towards the target, to the target or the view's edge.
    a, b = (np.array([p.x, p.y, p.z]) for p in by_id[100].points)
    assert np.linalg.norm(a - foot) == pytest.approx(0.0, abs=1e-3)
    towards = (b - a) / np.linalg.norm(b - a)
    assert towards == pytest.approx((np.array([0.0, 0.0, -2.0]) - foot) / 1.37, abs=1e-3)
    assert 0 < np.linalg.norm(b - a) <= 1.37 + 1e-6


def test_reached_target_marker_is_green_and_envelope_is_shown(harness):
    ik, probe = harness.start('planar4')
    mark = probe.mark()
    probe.send_point([0.5, 0.5, 0.0])
    probe.next_result(mark, 0)
    markers = probe.wait_for('target markers', lambda: next(
        (a for a in probe.marker_arrays[mark[2]:] if any(m.id == 10 for m in a.markers)), None))
    by_id = {m.id: m for m in markers.markers}
    assert by_id[10].color.g > 0.5 and by_id[10].color.r < 0.5
    assert (by_id[10].pose.position.x, by_id[10].pose.position.y) == pytest.approx((0.5, 0.5))
    assert by_id[100].action == Marker.DELETE
    # The planar arm's reach: a disc of radius 0.35 + 0.30 + 0.25 + 0.20 m.
    assert by_id[0].type == Marker.CYLINDER
    assert by_id[0].scale.x == pytest.approx(2 * 1.10)


def send_bad(probe, kind: str):
    if kind == 'nan_point':
        probe.send_point([float('nan'), 0.0, -0.4])
    elif kind == 'inf_pose':
        probe.send_pose([0.1, float('inf'), -0.4], (0, 0, 0, 1))
    elif kind == 'zero_quaternion':
        probe.send_pose([0.1, 0.0, -0.4], (0, 0, 0, 0))
    elif kind == 'nan_quaternion':
        probe.send_pose([0.1, 0.0, -0.4], (float('nan'), 0, 0, 1))
    elif kind == 'huge':
        probe.send_point([1e12, 0.0, 0.0])
    elif kind == 'unknown_frame':
        probe.send_point([0.1, 0.0, -0.4], frame_id='no_such_link')


BAD = {'nan_point': 'nan', 'inf_pose': 'inf', 'zero_quaternion': 'zero length',
       'nan_quaternion': 'nan', 'huge': 'beyond', 'unknown_frame': 'no_such_link'}


@pytest.mark.slow
def test_bad_targets_give_an_error_and_no_joint_state(harness):
    ik, probe = harness.start('leg3', publish_rate=50.0)
    chain = chain_of('leg3')
    good_q = np.array([0.3, 0.4, -0.8])
    mark = probe.mark()
    probe.send_point(chain.fk(good_q)[:3, 3])
    status = probe.next_result(mark, 0)
    solves = int(values(status)['solve_count'])
    q_before = positions_of(probe.joint_state_at(chain, chain.fk(good_q)[:3, 3], mark[0], 1e-4),
                            chain.joint_names)
    for kind, words in BAD.items():
        mark = probe.mark()
        send_bad(probe, kind)
        error = probe.next_status(mark, lambda s: s.level == DiagnosticStatus.ERROR,
                                  f'an ERROR status for {kind}')
        assert words in error.message.lower(), (kind, error.message)
        assert int(values(error)['solve_count']) == solves
        # Joint states keep flowing at the steady rate, unchanged by the bad target.
        probe.wait_for('more joint states',
                       lambda n=mark[0]: len(probe.joint_states) > n + 3)
        with probe.lock:
            after = [positions_of(m, chain.joint_names) for m in probe.joint_states[mark[0]:]]
        assert all(np.array_equal(q, q_before) for q in after), kind
    # The node still solves: the next good target is solve number solves + 1.
    mark = probe.mark()
    probe.send_point(chain.fk(np.array([-0.2, 0.2, -0.5]))[:3, 3])
    status = probe.next_result(mark, solves)
    assert int(values(status)['solve_count']) == solves + 1


def test_target_in_another_link_frame_is_transformed_by_the_current_pose(harness):
    ik, probe = harness.start('leg3')
    chain = chain_of('leg3')
    q1 = np.array([0.7, 0.3, -0.6])
    mark = probe.mark()
    probe.send_point(chain.fk(q1)[:3, 3])
    probe.next_result(mark, 0)
    msg = probe.joint_state_at(chain, chain.fk(q1)[:3, 3], mark[0], 1e-4)
    yaw = positions_of(msg, chain.joint_names)[0]
    # hip_link is the base turned by hip_yaw about z (no offset): p_base = Rz(yaw) p_hip.
    p_hip = np.array([0.2, 0.1, -0.45])
    c, s = math.cos(yaw), math.sin(yaw)
    p_base = np.array([c * p_hip[0] - s * p_hip[1], s * p_hip[0] + c * p_hip[1], p_hip[2]])
    mark = probe.mark()
    probe.send_point(p_hip, frame_id='hip_link')
    status = probe.next_result(mark, 1)
    assert reached_ok(status), status.message
    assert values(status)['target_frame'] == 'hip_link'
    probe.joint_state_at(chain, p_base, mark[0], 1e-4)


def test_solver_switched_at_runtime_reports_the_new_solver(harness):
    ik, probe = harness.start('leg3')
    chain = chain_of('leg3')
    (result,) = probe.set_params(solver='damped_jacobian')
    assert result.successful, result.reason
    assert probe.get_param('solver') == 'damped_jacobian'
    mark = probe.mark()
    target = chain.fk(np.array([0.2, -0.3, 0.9]))[:3, 3]
    probe.send_point(target)
    status = probe.next_result(mark, 0)
    assert values(status)['solver'] == 'damped_jacobian'
    assert reached_ok(status), status.message
    (result,) = probe.set_params(solver='fabrik', fabrik__max_iterations=500)[:1]
    assert result.successful, result.reason
    mark = probe.mark()
    probe.send_point(chain.fk(np.array([-0.2, 0.3, -0.9]))[:3, 3])
    assert values(probe.next_result(mark, 1))['solver'] == 'fabrik'


@pytest.mark.slow
@pytest.mark.parametrize('name,value,words', [
    ('fabrik.max_iterations', 0, ['fabrik.max_iterations', '0', '1']),
    ('damped_jacobian.damping', -1.0, ['damped_jacobian.damping', '-1']),
    ('publish_rate', 0.0, ['publish_rate', '0']),
    ('solver', 'nope', ['nope', 'analytic_hip_knee', 'damped_jacobian', 'fabrik']),
    ('tip_link', 'no_such_link', ['no_such_link', 'foot']),
    ('analytic_hip_knee.branch', 'sideways', ['sideways', 'forward', 'backward']),
    ('urdf_file', 'no_such.urdf', ['no_such.urdf', 'leg3.urdf']),
])
def test_invalid_parameter_is_refused_with_a_reason_and_the_old_value_kept(harness, name, value,
                                                                            words):
    ik, probe = harness.start('leg3')
    old = probe.get_param(name)
    (result,) = probe.set_params(**{name.replace('.', '__'): value})
    assert not result.successful
    for word in words:
        assert word in result.reason, (word, result.reason)
    assert probe.get_param(name) == old


def test_solver_that_does_not_fit_the_chain_is_refused(harness):
    ik, probe = harness.start('planar4')
    (result,) = probe.set_params(solver='analytic_hip_knee')
    assert not result.successful
    assert 'analytic_hip_knee' in result.reason and 'joint4' in result.reason
    assert probe.get_param('solver') == 'fabrik'
    mark = probe.mark()
    probe.send_point([0.4, 0.6, 0.0])
    assert values(probe.next_result(mark, 0))['solver'] == 'fabrik'


def test_changing_the_tip_link_rebuilds_the_chain(harness):
    ik, probe = harness.start('planar4')
    (result,) = probe.set_params(tip_link='link3')  # joint3's frame: a 3-joint arm
    assert result.successful, result.reason
    # joint_states carries every moving joint of the URDF: the chain's first, in chain order,
    # then joint4, now outside the chain, held at 0.
    js = probe.wait_for('joint states', lambda: probe.joint_states[-1])
    assert list(js.name) == ['joint1', 'joint2', 'joint3', 'joint4']
    short = Chain.from_urdf_file(REPO / 'urdf' / 'planar4.urdf', 'base_link', 'link3')
    target = short.fk(np.array([0.3, 0.5, -0.4]))[:3, 3]
    mark = probe.mark()
    probe.send_point(target)
    probe.next_result(mark, 0)
    probe.joint_state_at(short, target, mark[0])


def test_a_burst_of_targets_is_answered_one_by_one_in_order(harness, monkeypatch):
    # A burst the node solves in order, none skipped, while its messages are fresh (here: for
    # an hour, so the machine's load cannot make them stale).
    from geometry_msgs.msg import PointStamped
    from ik_node.ros.inputs import target_flow, target_subscriptions
    monkeypatch.setattr(target_flow, 'TARGET_FRESH_S', 3600.0)
    ik, probe = harness.start('leg3')
    chain = chain_of('leg3')
    rng = np.random.default_rng(11)
    targets = [chain.fk(random_reachable_q(chain, rng))[:3, 3] for _ in range(30)]
    pub = probe.node.create_publisher(PointStamped, f'/{probe.ik_name}/target_point',
                                      target_subscriptions.TARGET_QOS)
    probe.wait_for('the burst publisher to match', lambda: pub.get_subscription_count())
    mark = probe.mark()
    for p in targets:  # back to back, faster than the node answers
        msg = PointStamped()
        msg.header.frame_id = probe.base
        msg.point.x, msg.point.y, msg.point.z = (float(v) for v in p)
        probe.stamp(msg)
        pub.publish(msg)
    probe.wait_for('the status of the 30th solve', lambda: any(
        int(values(s).get('solve_count') or 0) >= len(targets)
        for s in probe.diagnostics[mark[1]:]))
    # Every target's answer, in the order they were sent (a joint state reaching each one).
    with probe.lock:
        states = list(probe.joint_states[mark[0]:])
        statuses = list(probe.diagnostics[mark[1]:])
    reached = [min(k for k, t in enumerate(targets) if np.linalg.norm(
        chain.fk(positions_of(js, chain.joint_names))[:3, 3] - t) < 1e-3)
        for js in states if any(np.linalg.norm(
            chain.fk(positions_of(js, chain.joint_names))[:3, 3] - t) < 1e-3 for t in targets)]
    assert sorted(set(reached)) == list(range(len(targets)))
    assert [k for i, k in enumerate(reached) if i == 0 or k != reached[i - 1]] == \
        list(range(len(targets)))  # in order (the timer re-publishes the latest between)
    assert max(int(values(s).get('solve_count') or 0) for s in statuses) == len(targets)
    assert all(int(values(s).get('skipped_targets') or 0) == 0 for s in statuses)


@pytest.mark.slow
def test_streamed_targets_end_at_the_newest(harness):
    ik, probe = harness.start('planar4')
    chain = chain_of('planar4')
    t = np.linspace(0.0, 1.0, 500)
    path = np.stack([0.5 + 0.3 * np.cos(3 * t), 0.3 * np.sin(3 * t), 0 * t], axis=1)
    mark = probe.mark()
    for p in path:
        probe.send_point(p)
        time.sleep(0.001)
    last = path[-1]
    probe.joint_state_at(chain, last, mark[0])
    # The newest target's status comes after its joint state (the rate gate may hold it for the
    # timer, never drop it): every joint state after it re-publishes the newest answer.
    newest_key = probe.sent[-1]
    probe.wait_for('the status answering the newest target', lambda: any(
        answers(s, [newest_key]) for s in probe.diagnostics[mark[1]:]))
    with probe.lock:
        newest = probe.joint_states[-1]
        counts = [int(values(s)['solve_count']) for s in probe.diagnostics[mark[1]:]
                  if values(s).get('solve_count')]
        skipped = [int(values(s)['skipped_targets']) for s in probe.diagnostics[mark[1]:]
                   if values(s).get('skipped_targets')]
    # The node ends at the newest target and never solved more targets than were sent.
    assert np.linalg.norm(chain.fk(positions_of(newest, chain.joint_names))[:3, 3] - last) < 1e-3
    assert 0 < max(counts) <= len(path)
    assert all(s >= 0 for s in skipped)


def test_robot_description_parameter_replaces_the_urdf_file(harness):
    xml = (REPO / 'urdf' / 'planar4.urdf').read_text()
    ik, probe = harness.start('planar4', robot_description=xml, urdf_file='',
                              tip_link='link2')
    js = probe.wait_for('joint states', lambda: probe.joint_states[-1])
    # The chain's joints first, then the URDF's other moving joints held at 0 (within limits).
    assert list(js.name) == ['joint1', 'joint2', 'joint3', 'joint4']
    assert list(js.position[2:]) == [0.0, 0.0]


def test_an_integer_for_a_double_parameter_is_taken_as_the_number_then_range_checked(harness):
    """``ros2 param set /ik_node damped_jacobian.timeout 1`` sends an INTEGER: accepted and
    stored as the double 1.0; ``fabrik.position_tolerance -1`` is refused by the range check
    (not by rclpy's type check)."""
    ik, probe = harness.start('leg3')
    (result,) = probe.set_params(damped_jacobian__timeout=1)
    assert result.successful, result.reason
    request = GetParameters.Request()
    request.names = ['damped_jacobian.timeout']
    value = probe._call(probe.get_client, request).values[0]
    assert value.type == ParameterType.PARAMETER_DOUBLE and value.double_value == 1.0
    (result,) = probe.set_params(fabrik__position_tolerance=-1)
    assert not result.successful
    assert 'Wrong parameter type' not in result.reason, result.reason
    assert 'range' in result.reason.lower() or 'position_tolerance' in result.reason, result.reason
    assert probe.get_param('fabrik.position_tolerance') == pytest.approx(1e-4)


def test_a_subclass_sees_every_target_kept_and_every_answer_through_the_hooks(harness):
    from ik_node.ros.node import IkNode
    kept, answered = [], []

    class Observed(IkNode):
        def on_target_kept(self) -> None:
            kept.append(1)

        def on_answered(self, target_stamps, joint_state_stamp, result) -> None:
            answered.append((target_stamps, joint_state_stamp, bool(result.reachable)))

    ik, probe = harness.start('leg3', node_class=Observed, reachability_samples=0)
    chain = chain_of('leg3')
    rng = np.random.default_rng(13)
    received = []
    for _ in range(3):
        target = chain.fk(random_reachable_q(chain, rng))[:3, 3]
        mark = probe.mark()
        probe.send_point(target)
        received.append(probe.joint_state_at(chain, target, mark[0]))
    # One kept message and one answer per target, in order: each answer names its target's
    # stamp and the stamp of the joint state that carried it.
    assert len(kept) == 3
    assert [a[0] for a in answered] == probe.sent
    assert [a[1] for a in answered] == [stamp_text(m.header) for m in received]
    assert all(a[2] for a in answered)
