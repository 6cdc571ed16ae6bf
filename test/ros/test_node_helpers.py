"""The node's pure-Python helpers (ik_node.ros.inputs.targets, outputs.status_format,
latest_targets, outputs.status_rate_gate, rviz.markers), without rclpy.init."""

import math
import threading
from pathlib import Path

import numpy as np
import pytest

from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import PointStamped, PoseStamped
from visualization_msgs.msg import Marker

from ik_node import Chain, TargetError, make_solver
from ik_node.ros.inputs.targets import Target, target_from_point, target_from_pose, target_in_base
from ik_node.ros.outputs import status_format
from ik_node.ros.outputs.solution_output import check_publishable, joint_state_msg
from ik_node.ros.rviz import markers
from ik_node.ros.inputs.latest_targets import LatestTargets
from ik_node.ros.outputs.status_rate_gate import StatusRateGate
from ik_node.model.chain import rotation_from_quat_xyzw

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def leg():
    return Chain.from_urdf_file(REPO / 'urdf' / 'leg3.urdf', 'base_link', 'foot')


# ----------------------------------------------------------------------------------- targets
def test_pose_and_point_messages_become_targets_in_ros_quaternion_order():
    pose = PoseStamped()
    pose.header.frame_id = 'hip_link'
    pose.pose.position.x, pose.pose.position.y, pose.pose.position.z = 1.0, 2.0, 3.0
    o = pose.pose.orientation
    o.x, o.y, o.z, o.w = 0.1, 0.2, 0.3, 0.9
    t = target_from_pose(pose, 'tip')
    assert t.position.tolist() == [1.0, 2.0, 3.0]
    assert t.quat_xyzw.tolist() == [0.1, 0.2, 0.3, 0.9]
    assert (t.frame_id, t.tip) == ('hip_link', 'tip')
    point = PointStamped()
    point.point.z = -0.5
    t = target_from_point(point)
    assert t.quat_xyzw is None and t.position.tolist() == [0.0, 0.0, -0.5] and t.frame_id == ''


def test_target_in_base_frame_is_unchanged(leg):
    for frame in ('', 'base_link'):
        p, quat = target_in_base(Target(np.array([0.1, 0.2, -0.3]), None, frame), leg,
                                      np.zeros(3))
        assert p.tolist() == [0.1, 0.2, -0.3] and quat is None


def test_target_in_a_link_frame_uses_the_current_joint_positions(leg):
    # thigh_link: hip_pitch's frame, 0.05 m below the base, turned by yaw then pitch.
    yaw, pitch = 0.5, -0.3
    p_thigh = np.array([0.0, 0.0, -0.3])  # the knee
    p, quat = target_in_base(Target(p_thigh, np.array([0, 0, 0, 1.0]), 'thigh_link'),
                                  leg, np.array([yaw, pitch, 0.7]))
    # Hand computation: the knee is 0.3 m along the thigh, pitched about the yawed y axis.
    horizontal = -0.3 * math.sin(pitch)
    expected = [horizontal * math.cos(yaw), horizontal * math.sin(yaw),
                -0.05 - 0.3 * math.cos(pitch)]
    assert p == pytest.approx(expected, abs=1e-12)
    # Orientation: identity in the thigh frame is the thigh frame's rotation in the base.
    R = rotation_from_quat_xyzw(quat)
    Rz = np.array([[math.cos(yaw), -math.sin(yaw), 0], [math.sin(yaw), math.cos(yaw), 0],
                   [0, 0, 1]])
    Ry = np.array([[math.cos(pitch), 0, math.sin(pitch)], [0, 1, 0],
                   [-math.sin(pitch), 0, math.cos(pitch)]])
    assert np.allclose(R, Rz @ Ry, atol=1e-12)


@pytest.mark.parametrize('position,quat,frame,words', [
    ([math.nan, 0, 0], None, '', 'NaN'),
    ([0, math.inf, 0], None, '', 'inf'),
    ([1e9, 0, 0], None, '', 'beyond'),
    ([0, 0, 0], [0, 0, 0, 0], '', 'zero length'),
    ([0, 0, 0], [math.nan, 0, 0, 1], '', 'NaN'),
    ([0, 0, 0], None, 'world', 'world'),
])
def test_bad_targets_raise_target_error_naming_the_problem(leg, position, quat, frame, words):
    target = Target(np.array(position, dtype=float),
                         None if quat is None else np.array(quat, dtype=float), frame)
    with pytest.raises(TargetError, match=words):
        target_in_base(target, leg, np.zeros(3))


def test_unknown_frame_error_lists_the_links(leg):
    with pytest.raises(TargetError, match='Available links: .*shin_link'):
        target_in_base(Target(np.zeros(3), None, 'map'), leg, np.zeros(3))


def test_latest_targets_keeps_only_the_newest_and_counts_the_rest():
    box = LatestTargets()
    for k in range(5):
        box.put(None, Target(np.array([k, 0.0, 0.0]), None, ''))
    box.put('left', Target(np.array([9.0, 0.0, 0.0]), None, ''))
    assert box.skipped == 4
    taken = box.take()
    assert taken[None].position[0] == 4.0 and taken['left'].position[0] == 9.0
    assert box.take() == {}


def test_a_target_put_back_never_overtakes_a_newer_one_of_its_slots():
    """What the node does with a target kept while TF warms up: put back all or nothing, and
    nothing once a newer target came into any of its slots (even if that one was solved)."""
    box = LatestTargets()
    box.put('left', Target(np.array([1.0, 0.0, 0.0]), None, 'world'))
    box.put('right', Target(np.array([2.0, 0.0, 0.0]), None, 'world'))
    kept, arrivals = box.take_counted()
    assert arrivals == {'left': 1, 'right': 1}
    assert box.put_back(kept, arrivals) and box.take() == kept  # nothing newer: back in
    box.put('right', Target(np.array([3.0, 0.0, 0.0]), None, ''))
    assert box.take()['right'].position[0] == 3.0  # the newer one, solved
    assert not box.put_back(kept, arrivals) and not box.pending  # the kept pair is dropped
    assert box.skipped == 2


def test_latest_targets_is_safe_across_threads():
    box = LatestTargets()

    def producer(slot):
        for k in range(2000):
            box.put(slot, Target(np.array([k, 0.0, 0.0]), None, ''))
    threads = [threading.Thread(target=producer, args=(slot,)) for slot in ('a', 'b')]
    for t in threads:
        t.start()
    taken = 0
    while any(t.is_alive() for t in threads) or box.pending:
        taken += len(box.take())
    for t in threads:
        t.join()
    # Every target put was either taken or counted as skipped, none lost or double counted.
    assert taken + box.skipped == 4000
    assert not box.pending


# ------------------------------------------------------------------------------ joint states
def test_check_publishable_refuses_nan_and_out_of_limit_values(leg):
    assert check_publishable(leg, [0.1, 0.2, 0.3]).tolist() == [0.1, 0.2, 0.3]
    with pytest.raises(TargetError, match='NaN'):
        check_publishable(leg, [math.nan, 0.0, 0.0])
    with pytest.raises(TargetError, match='knee=3 not in'):
        check_publishable(leg, [0.0, 0.0, 3.0])  # knee limit is 2.6
    with pytest.raises(TargetError, match='3 joints'):
        check_publishable(leg, [0.0, 0.0])


def test_joint_state_message_carries_names_and_positions():
    msg = joint_state_msg(['a', 'b'], np.array([1.5, -2.0]), stamp())
    assert list(msg.name) == ['a', 'b'] and list(msg.position) == [1.5, -2.0]


@pytest.mark.parametrize('names', [['a'], ['hip', 'knee'], ['FL_hip', 'FL_thigh', 'FL_calf'] * 4,
                                   ['j1', 'joint_two', 'ü'], [f'arm_joint_{k}' for k in range(7)]])
def test_serialized_joint_state_deserializes_to_the_message_it_stands_for(names):
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import JointState
    from ik_node.ros.outputs.solution_output import JointStateCdr
    cdr = JointStateCdr.of(names)
    assert cdr is not None  # plain CDR: the bytes are filled, not the message
    rng = np.random.default_rng(len(names))
    for sec, nanosec in ((0, 0), (1_764_000_000, 999_999_999), (12, 345)):
        q = rng.uniform(-4.0, 4.0, len(names)).tolist()
        msg = deserialize_message(cdr.data(sec, nanosec, q), JointState)
        assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (sec, nanosec)
        assert list(msg.name) == names and list(msg.position) == q
        assert list(msg.velocity) == [] and list(msg.effort) == [] and msg.header.frame_id == ''


def test_serialized_diagnostics_deserialize_to_the_statuses_they_stand_for():
    from builtin_interfaces.msg import Time
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.serialization import deserialize_message
    from ik_node.ros.outputs.status_cdr import DiagnosticArrayCdr
    writer = DiagnosticArrayCdr.probe()
    assert writer is not None  # plain CDR: the arrays are written, not the messages
    rng = np.random.default_rng(7)
    letters = list('abcdefgh_:. 0123456789') + ['ü', '€', '→']
    levels = (DiagnosticStatus.OK, DiagnosticStatus.WARN, DiagnosticStatus.ERROR)

    def text():  # every length modulo the alignment, multi-byte characters among them
        return ''.join(rng.choice(letters, size=int(rng.integers(0, 13))))
    for _ in range(40):
        statuses = [status_format.diagnostic_status(
            text(), text(), levels[int(rng.integers(3))], text(),
            {f'{text()}{k}': text() for k in range(int(rng.integers(0, 9)))})
            for _ in range(int(rng.integers(1, 6)))]
        sec, nanosec = int(rng.integers(0, 2**31)), int(rng.integers(0, 10**9))
        msg = deserialize_message(writer.data(statuses, sec, nanosec), DiagnosticArray)
        assert msg == status_format.diagnostic_array(statuses, Time(sec=sec, nanosec=nanosec))
        assert [dict((kv.key, kv.value) for kv in s.values) for s in msg.status] == \
            [dict(s.values) for s in statuses]
        assert [s.name for s in msg.status] == [s.name for s in statuses]


# ------------------------------------------------------------------------------- diagnostics
def test_result_values_have_every_documented_key(leg):
    result = make_solver('analytic_hip_knee', leg).solve([0.1, 0.05, -0.45], [0, 0, 0, 1])
    v = status_format.result_values(result, 'analytic_hip_knee', 'base_link', 3, 7)
    for key in ('solver', 'reachable', 'position_error_m', 'orientation_error_rad',
                'min_residual_m', 'iterations', 'solve_time_ms', 'status', 'target_frame',
                'skipped_targets', 'orientation_ignored', 'message', 'solve_count'):
        assert key in v, key
    assert (v['reachable'], v['orientation_ignored'], v['skipped_targets'], v['solve_count']) \
        == ('true', 'true', '3', '7')
    assert status_format.result_level(result) == DiagnosticStatus.OK
    assert 'orientation ignored' in status_format.result_summary(result, 'analytic_hip_knee')


def test_unreachable_result_is_warn_and_error_values_keep_the_keys(leg):
    result = make_solver('analytic_hip_knee', leg).solve([0.0, 0.0, -2.0])
    assert status_format.result_level(result) == DiagnosticStatus.WARN
    assert 'not reached' in status_format.result_summary(result, 'analytic_hip_knee')
    err = status_format.error_values('fabrik', 'x', 0, 2, 'bad target: NaN')
    assert set(status_format.result_values(result, 'a', 'b', 0, 0)) <= set(err)
    assert err['status'] == 'error' and err['message'] == 'bad target: NaN'


def test_a_best_found_answer_says_so_in_its_values_and_summary():
    arm = Chain.from_urdf_file(Path(__file__).resolve().parents[2] / 'urdf' / 'arm6.urdf',
                               'base_link', 'tool0')
    far = [3.0, 0.5, 0.2]  # beyond the reach: proven, so the excess is bounded
    # the closest-pose search cut short by the iteration cap
    cut = make_solver('damped_jacobian', arm, {'max_iterations': 1}).solve(far)
    assert cut.best_found and cut.excess_bound is not None
    assert status_format.result_values(cut, 'damped_jacobian', 'b', 0, 0)['best_found'] == 'true'
    summary = status_format.result_summary(cut, 'damped_jacobian')
    assert 'not shown to be the closest' in summary and f'{cut.excess_bound:.3g} m' in summary
    full = make_solver('damped_jacobian', arm, {'timeout': 30.0}).solve(far)
    assert not full.best_found
    assert status_format.result_values(full, 'damped_jacobian', 'b', 0, 0)['best_found'] == 'false'
    assert 'not shown to be the closest' not in status_format.result_summary(full,
                                                                              'damped_jacobian')


def test_diagnostics_gate_limits_the_rate_but_lets_errors_and_changes_through():
    gate = StatusRateGate(10.0)  # one per 0.1 s
    assert gate.offer(0.0, status_format.OK, 'a')
    assert not gate.offer(0.01, status_format.OK, 'b')
    assert not gate.offer(0.02, status_format.OK, 'c')
    assert gate.flush(0.05) == []            # too early
    assert gate.flush(0.11) == ['c']         # the newest held one
    assert gate.flush(0.5) == []             # nothing held any more
    assert gate.offer(0.51, status_format.WARN, 'd')  # level change: at once
    assert gate.offer(0.52, status_format.ERROR, 'e')  # error: at once
    assert gate.offer(0.53, status_format.OK, 'f', force=True)
    assert gate.offer(0.70, status_format.OK, 'g')    # period elapsed


def test_diagnostics_gate_bounds_a_stream_that_alternates_good_and_bad_targets():
    gate = StatusRateGate(10.0)  # urgent statuses at most one per 0.01 s
    ok, error = status_format.OK, status_format.ERROR
    sent = [t for t in range(1000)  # a target every 0.1 ms, every fifth one bad, for 0.1 s
            if gate.offer(t * 1e-4, error if t % 5 == 4 else ok, t)]
    assert 5 <= len(sent) <= 11  # not 400 changes of level and 200 errors
    assert gate.held is not None and gate.held[0] == error  # an error gives way to errors only
    assert not gate.offer(0.1002, ok, 'newer ok')
    assert gate.held[1] != 'newer ok'
    assert gate.flush(0.1003) == []                   # too early for an urgent one
    [item] = gate.flush(0.1 + gate.urgent_gap)        # the held error, after the urgent gap
    assert item == 999 - (999 - 4) % 5                # the newest bad target's status
    assert gate.offer(0.2, error, 'e1') and not gate.offer(0.2001, error, 'e2')


# ----------------------------------------------------------------------------------- markers
def test_envelope_of_the_planar_arm_is_a_disc_of_the_total_length():
    chain = Chain.from_urdf_file(REPO / 'urdf' / 'planar4.urdf', 'base_link', 'tip')
    env = markers.envelope_of(chain)
    assert env.r_max == pytest.approx(0.35 + 0.30 + 0.25 + 0.20)
    assert env.r_min == 0.0 and np.allclose(np.abs(env.normal), [0, 0, 1])
    (outer, inner) = markers.envelope_markers('base_link', stamp(), env)
    assert outer.type == Marker.CYLINDER and outer.scale.x == pytest.approx(2.2)
    assert inner.action == Marker.DELETE


def test_envelope_of_the_leg_is_a_sphere_and_a_solver_can_refine_it(leg):
    env = markers.envelope_of(leg)
    assert env.normal is None and env.r_max == pytest.approx(0.05 + 0.30 + 0.28)

    class Knows:
        def reach_envelope(self, tip):
            return (0.0, 0.0, -0.05), 0.1, 0.58
    env = markers.envelope_of(leg, Knows())
    assert (env.r_min, env.r_max) == (0.1, 0.58)
    outer, inner = markers.envelope_markers('base_link', stamp(), env)
    assert outer.type == inner.type == Marker.LINE_LIST  # great circles: lines, not a shell
    radii = [math.dist((p.x, p.y, p.z), (0.0, 0.0, -0.05)) for p in inner.points]
    assert radii == pytest.approx([0.1] * len(radii))


def stamp():
    from builtin_interfaces.msg import Time
    return Time()
