"""The interactive target marker (``~/target_marker``): the protocol RViz speaks, over real DDS.

A client here does what RViz's InteractiveMarkers display does (interactive_markers' client):
subscribes to ``<ns>/update``, calls ``<ns>/get_interactive_markers``, drops the updates the
answer already holds, applies the rest checking that sequence numbers follow one another, and
drags by publishing ``InteractiveMarkerFeedback`` (``POSE_UPDATE`` then ``MOUSE_UP``). Dragged
poses come from forward kinematics of joint values chosen here (reachable by construction), and
the joint states the node publishes are checked by FK (ik_node.Chain), matched by joint name.

Over 450 lines on purpose: the RViz-like client (the protocol, checked at every message) and the
drag tests that use it belong together, and no other test needs that client.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Dict, List, Optional

import numpy as np
import pytest

import rclpy

from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.qos import QoSProfile
from std_msgs.msg import String
from visualization_msgs.msg import (InteractiveMarker, InteractiveMarkerControl,
                                    InteractiveMarkerFeedback, InteractiveMarkerUpdate)
from visualization_msgs.srv import GetInteractiveMarkers

from harness import (REPO, TIMEOUT_S, Harness, chain_of, positions_of,
                     random_reachable_q, unique, wait_for)
from ik_node import Chain
from ik_node.model.chain import rotation_from_quat_xyzw
from ik_node.ros.rviz.drag_targets import FOLLOW_RATE_HZ
from ik_node.ros.rviz.interactive import (INTERACTIVE_PARAMS, interactive_marker,
                                     pose_from_input)
from ik_node.ros.inputs.targets import quat_xyzw_from_rotation

MOVES = {'move_x', 'move_y', 'move_z'}
ROTATES = {'rotate_x', 'rotate_y', 'rotate_z'}


def pose_of(marker) -> tuple:
    p, o = marker.pose.position, marker.pose.orientation
    return np.array([p.x, p.y, p.z]), np.array([o.x, o.y, o.z, o.w])


def colour_of(marker: InteractiveMarker) -> str:
    c = next(m for ctl in marker.controls for m in ctl.markers).color
    return 'green' if c.g > 0.5 > c.r else 'red' if c.r > 0.5 > c.g else 'grey'


def angle_between(quat_a, quat_b) -> float:
    R = rotation_from_quat_xyzw(quat_a).T @ rotation_from_quat_xyzw(quat_b)
    return math.acos(max(-1.0, min(1.0, (np.trace(R) - 1.0) / 2.0)))


def assert_valid_for_rviz(marker: InteractiveMarker, frame: str) -> None:
    """What RViz checks (finite floats, controls present) and what the issue asks (frames,
    unit quaternions)."""
    assert marker.header.frame_id == frame
    assert marker.header.stamp.sec == 0 and marker.header.stamp.nanosec == 0  # frame-locked
    assert marker.controls, 'RViz drops the connection on a marker without controls'
    position, quat = pose_of(marker)
    assert np.all(np.isfinite(position)) and abs(np.linalg.norm(quat) - 1.0) < 1e-9
    assert math.isfinite(marker.scale) and marker.scale > 0
    for control in marker.controls:
        o = control.orientation
        assert abs(math.sqrt(o.x ** 2 + o.y ** 2 + o.z ** 2 + o.w ** 2) - 1.0) < 1e-9
        for m in control.markers:
            assert all(math.isfinite(v) for v in (m.scale.x, m.scale.y, m.scale.z, m.color.a))
            q = m.pose.orientation
            assert abs(math.sqrt(q.x ** 2 + q.y ** 2 + q.z ** 2 + q.w ** 2) - 1.0) < 1e-9


# ------------------------------------------------------------------------ the RViz-like client
class RvizLikeClient:
    """Connects to an interactive marker server as interactive_markers' client does."""

    def __init__(self, context, namespace: str):
        self.node = rclpy.create_node(unique('rviz'), context=context)
        self.namespace = namespace
        self.client_id = f'/{self.node.get_name()}/InteractiveMarkers'
        self.lock = threading.Lock()
        self.markers: Dict[str, InteractiveMarker] = {}
        self.last_seq: Optional[int] = None  # None until initialised
        self.queue: List[InteractiveMarkerUpdate] = []
        self.applied: List[InteractiveMarkerUpdate] = []
        self.errors: List[str] = []  # what would make RViz reset: never raised in a callback
        # interactive_markers' client defaults: rclcpp::QoS(100) on both.
        self.node.create_subscription(InteractiveMarkerUpdate, f'{namespace}/update',
                                      self._on_update, QoSProfile(depth=100))
        self.feedback_pub = self.node.create_publisher(
            InteractiveMarkerFeedback, f'{namespace}/feedback', QoSProfile(depth=100))
        self.service = self.node.create_client(GetInteractiveMarkers,
                                               f'{namespace}/get_interactive_markers')

    def call_service(self) -> GetInteractiveMarkers.Response:
        assert self.service.wait_for_service(timeout_sec=TIMEOUT_S), 'no marker service'
        future = self.service.call_async(GetInteractiveMarkers.Request())
        wait_for('the marker service answer', future.done)
        return future.result()

    def initialize(self) -> GetInteractiveMarkers.Response:
        """Ask for every marker; drop queued updates the answer holds, apply the newer ones."""
        response = self.call_service()
        with self.lock:
            self.markers = {m.name: m for m in response.markers}
            self.last_seq = response.sequence_number
            queued, self.queue = self.queue, []
            for msg in queued:
                if msg.seq_num > self.last_seq:
                    self._apply(msg)
        return response

    def _on_update(self, msg: InteractiveMarkerUpdate) -> None:
        with self.lock:
            if msg.type == InteractiveMarkerUpdate.KEEP_ALIVE:
                self.errors.append('KEEP_ALIVE sent: the ROS 2 client warns about it')
            elif self.last_seq is None:
                self.queue.append(msg)
            else:
                self._apply(msg)

    def _apply(self, msg: InteractiveMarkerUpdate) -> None:
        if msg.seq_num != self.last_seq + 1:
            self.errors.append(f'update {msg.seq_num} after {self.last_seq}')
        self.last_seq = msg.seq_num
        for marker in msg.markers:
            self.markers[marker.name] = marker
        for pose in msg.poses:
            if pose.name not in self.markers:
                self.errors.append(f'pose update of unknown marker {pose.name!r}')
                continue
            self.markers[pose.name].pose = pose.pose
            self.markers[pose.name].header = pose.header
        for name in msg.erases:
            self.markers.pop(name, None)
        self.applied.append(msg)

    def marker(self, name: str) -> InteractiveMarker:
        with self.lock:
            return self.markers[name]

    def drag(self, name: str, position, quat_xyzw, released: bool, frame: str = 'base_link',
             control: str = 'move_x') -> None:
        fb = InteractiveMarkerFeedback()
        fb.header.frame_id = frame
        fb.header.stamp = self.node.get_clock().now().to_msg()
        fb.client_id = self.client_id
        fb.marker_name = name
        fb.control_name = control
        fb.event_type = InteractiveMarkerFeedback.MOUSE_UP if released else \
            InteractiveMarkerFeedback.POSE_UPDATE
        p, o = fb.pose.position, fb.pose.orientation
        p.x, p.y, p.z = (float(v) for v in position)
        o.x, o.y, o.z, o.w = (float(v) for v in quat_xyzw)
        self.feedback_pub.publish(fb)


class Setup:
    """An ik node (harness), its probe and an initialised RViz-like client on its markers."""

    def __init__(self, harness: Harness, robot: str, **overrides):
        # A wall-time budget no loaded test machine runs out of (a solve takes ~1 ms here), so
        # whether a pose is reached never depends on timing.
        overrides.setdefault('damped_jacobian.timeout', 1.0)
        self.ik, self.probe = harness.start(robot, **overrides)
        self.client = RvizLikeClient(harness.context, f'/{self.ik.get_name()}/target_marker')
        harness.add(self.client.node)
        # Like a client that has been connected for a while: the server sees its subscription.
        wait_for('the update subscription', lambda: self.ik._drag.server._pub
                 .get_subscription_count() > 0)
        wait_for('the feedback subscription',
                 lambda: self.client.feedback_pub.get_subscription_count() > 0)
        self.client.initialize()

    def joint_state_at(self, chain: Chain, tip: str, position, quat_xyzw=None,
                       since: int = 0, tol: float = 1e-3):
        """The first joint state after ``since`` whose FK puts ``tip`` at the pose."""
        def find():
            for m in self.probe.joint_states[since:]:
                T = chain.fk(positions_of(m, chain.joint_names), tip)
                if np.linalg.norm(T[:3, 3] - position) > tol:
                    continue
                if quat_xyzw is not None and \
                        angle_between(quat_xyzw_from_rotation(T[:3, :3]), quat_xyzw) > tol:
                    continue
                return m
            return None
        return wait_for(f'joint states putting {tip} at {np.round(position, 4).tolist()}',
                        find, self.probe.lock)

    def marker_where(self, name: str, predicate, what: str):
        return wait_for(what, lambda: (m := self.client.markers.get(name)) is not None
                        and predicate(m) and m, self.client.lock)


def fk_pose(chain: Chain, q, tip: Optional[str] = None):
    T = chain.fk(q, tip)
    return T[:3, 3], quat_xyzw_from_rotation(T[:3, :3])


# ------------------------------------------------------------------------- messages (no ROS)
def test_six_dof_marker_moves_and_rotates_on_three_axes_position_only_marker_only_moves():
    p, quat = np.array([0.1, 0.2, 0.3]), np.array([0.0, 0.0, 0.0, 1.0])
    six = interactive_marker('tool0', 'base_link', p, quat, six_dof=True)
    names = {c.name: c.interaction_mode for c in six.controls}
    assert set(names) == {'body'} | MOVES | ROTATES
    assert all(names[n] == InteractiveMarkerControl.MOVE_AXIS for n in MOVES)
    assert all(names[n] == InteractiveMarkerControl.ROTATE_AXIS for n in ROTATES)
    three = interactive_marker('foot', 'base_link', p, quat, six_dof=False)
    modes = {c.name: c.interaction_mode for c in three.controls}
    assert set(modes) == {'body'} | MOVES
    assert modes['body'] == InteractiveMarkerControl.MOVE_3D
    for marker in (six, three):
        assert_valid_for_rviz(marker, 'base_link')


def test_marker_colour_says_reached():
    p, quat = np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0])
    assert colour_of(interactive_marker('a', 'b', p, quat, True, None)) == 'grey'
    assert colour_of(interactive_marker('a', 'b', p, quat, True, True)) == 'green'
    assert colour_of(interactive_marker('a', 'b', p, quat, False, False)) == 'red'


def test_pose_input_takes_a_transform_or_a_pair_and_refuses_bad_values():
    T = np.eye(4)
    T[:3, 3] = [1.0, 2.0, 3.0]
    p, q = pose_from_input(T)
    assert p.tolist() == [1.0, 2.0, 3.0] and abs(q[3]) == pytest.approx(1.0)
    p, q = pose_from_input(([0, 0, 0], [0, 0, 0, 2.0]))
    assert q.tolist() == [0.0, 0.0, 0.0, 1.0]
    for bad in (([0, 0], [0, 0, 0, 1]), ([0, 0, math.nan], [0, 0, 0, 1]),
                ([0, 0, 0], [0, 0, 0, 0]), 'pose'):
        with pytest.raises(ValueError):
            pose_from_input(bad)


def test_snap_on_release_is_a_bool_parameter_defaulting_to_true():
    spec = INTERACTIVE_PARAMS['target_marker.snap_on_release']
    assert spec.type is bool and spec.default is True


# ----------------------------------------------------------------------------- over DDS
@pytest.mark.slow
@pytest.mark.parametrize('robot,tip,six_dof', [('arm6', 'tool0', True), ('leg3', 'foot', False)])
def test_service_serves_one_marker_per_tip_at_the_current_tip_pose(harness, robot, tip, six_dof):
    s = Setup(harness, robot)
    response = s.client.call_service()
    assert [m.name for m in response.markers] == [tip]
    marker = response.markers[0]
    assert_valid_for_rviz(marker, 'base_link')
    controls = {c.name for c in marker.controls}
    assert controls == ({'body'} | MOVES | (ROTATES if six_dof else set()))
    chain = chain_of(robot)
    position, quat = pose_of(marker)
    expected_p, expected_q = fk_pose(chain, chain.clip(np.zeros(chain.n)))
    assert np.allclose(position, expected_p, atol=1e-9)
    if six_dof:
        assert angle_between(quat, expected_q) < 1e-9
    assert colour_of(marker) == 'grey'
    assert s.client.errors == []


def drag_and_release(s: Setup, chain: Chain, tip: str, q_from, q_to, six_dof: bool):
    """POSE_UPDATE half way, then MOUSE_UP at FK(q_to); both are checked on the joint states."""
    for q, released in ((0.5 * (np.asarray(q_from) + q_to), False), (q_to, True)):
        position, quat = fk_pose(chain, q, tip)
        since = len(s.probe.joint_states)
        s.client.drag(tip, position, quat, released)
        s.joint_state_at(chain, tip, position, quat if six_dof else None, since)
    return position, quat


@pytest.mark.slow
@pytest.mark.parametrize('robot,tip,six_dof', [('arm6', 'tool0', True), ('leg3', 'foot', False)])
def test_dragging_the_marker_brings_the_tip_to_the_dragged_pose(harness, robot, tip, six_dof):
    s = Setup(harness, robot)
    chain = chain_of(robot)
    rng = np.random.default_rng(13)
    q_from = chain.clip(np.zeros(chain.n))
    for _ in range(2):
        q_to = random_reachable_q(chain, rng)
        position, quat = drag_and_release(s, chain, tip, q_from, q_to, six_dof)
        # The marker's update follows the joint state: awaited, then checked in full.
        marker = s.marker_where(tip, lambda m, p=position: colour_of(m) == 'green' and
                                np.linalg.norm(pose_of(m)[0] - p) < 1e-3,
                                'a green marker snapped to the reached pose')
        got_p, got_q = pose_of(marker)
        assert np.linalg.norm(got_p - position) < 1e-3  # snapped to the reached pose
        if six_dof:
            assert angle_between(got_q, quat) < 1e-3
        else:  # a position-only marker keeps its orientation whatever the feedback says
            assert np.allclose(got_q, [0.0, 0.0, 0.0, 1.0])
        q_from = q_to
    with s.client.lock:
        assert s.client.errors == []
        seqs = [m.seq_num for m in s.client.applied]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))


def test_marker_turns_red_for_an_unreachable_drag_and_snaps_to_the_pose_reached(harness):
    s = Setup(harness, 'arm6')
    chain = chain_of('arm6')
    far = np.array([3.0, 0.0, 0.5])  # beyond the arm's ~1 m reach
    since = len(s.probe.joint_states)
    s.client.drag('tool0', far, [0.0, 0.0, 0.0, 1.0], released=True)
    marker = s.marker_where('tool0', lambda m: colour_of(m) == 'red', 'a red marker')
    # Snapped on release: the marker shows where the tip went, not the unreachable drag.
    js = wait_for('a joint state after the drag', lambda: s.probe.joint_states[since:],
                  s.probe.lock)[-1]
    reached_p, reached_q = fk_pose(chain, positions_of(js, chain.joint_names))
    marker = s.marker_where(
        'tool0', lambda m: np.linalg.norm(pose_of(m)[0] - reached_p) < 1e-6,
        'the marker snapped to the reached pose')
    assert np.linalg.norm(pose_of(marker)[0] - far) > 1.0
    # And green again for a reachable drag.
    q = random_reachable_q(chain, np.random.default_rng(3))
    drag_and_release(s, chain, 'tool0', positions_of(js, chain.joint_names), q, True)
    s.marker_where('tool0', lambda m: colour_of(m) == 'green', 'a green marker again')
    assert s.client.errors == []


def test_without_snap_on_release_the_marker_stays_where_it_was_dropped(harness):
    s = Setup(harness, 'leg3', **{'target_marker.snap_on_release': False})
    far = np.array([0.0, 0.0, -3.0])
    s.client.drag('foot', far, [0.0, 0.0, 0.0, 1.0], released=True)
    s.marker_where('foot', lambda m: colour_of(m) == 'red', 'a red marker')
    assert np.allclose(pose_of(s.client.marker('foot'))[0], far)


def test_marker_follows_targets_sent_on_the_topics(harness):
    s = Setup(harness, 'arm6')
    chain = chain_of('arm6')
    q = random_reachable_q(chain, np.random.default_rng(3))
    position, quat = fk_pose(chain, q)
    s.probe.send_pose(position, quat)
    marker = s.marker_where('tool0', lambda m: np.allclose(pose_of(m)[0], position, atol=1e-9),
                            'the marker at the topic target')
    assert angle_between(pose_of(marker)[1], quat) < 1e-6
    s.marker_where('tool0', lambda m: colour_of(m) == 'green', 'a green marker')
    # A point target moves the marker and keeps its orientation.
    s.probe.send_point(position + [0.0, 0.0, 0.01])
    marker = s.marker_where('tool0', lambda m: abs(pose_of(m)[0][2] - position[2] - 0.01) < 1e-9,
                            'the marker at the point target')
    assert angle_between(pose_of(marker)[1], quat) < 1e-3
    assert s.client.errors == []


def test_a_stream_of_targets_moves_the_marker_at_a_persons_rate_to_the_newest_target(harness):
    # 100 point targets sent back to back, answered in well under a second: the client sees
    # the marker move at most FOLLOW_RATE_HZ times a second (plus the node's timer, which
    # shows the answer held last), and it ends at the newest target.
    s = Setup(harness, 'arm6', publish_rate=20.0)
    chain = chain_of('arm6')
    base = fk_pose(chain, random_reachable_q(chain, np.random.default_rng(5)))[0]
    points = [base + [0.0, 0.0, 0.0005 * k] for k in range(100)]
    with s.client.lock:
        before = len(s.client.applied)
    start = time.monotonic()
    for p in points:
        s.probe.send_point(p)
    s.marker_where('tool0', lambda m: np.allclose(pose_of(m)[0], points[-1], atol=1e-9),
                   'the marker at the newest target')
    span = time.monotonic() - start
    with s.client.lock:
        moves = sum(1 for msg in s.client.applied[before:] if msg.poses)
    assert 1 <= moves <= span * (FOLLOW_RATE_HZ + 20.0) + 2, (moves, span)
    assert s.client.errors == []


def error_after(s: Setup, mark, text: str) -> DiagnosticStatus:
    return s.probe.next_status(mark, lambda st: st.level == DiagnosticStatus.ERROR and
                               text in st.message, f'an error saying {text!r}')


def test_bad_feedback_is_refused_with_an_error_and_the_next_good_drag_is_solved(harness):
    s = Setup(harness, 'arm6')
    chain = chain_of('arm6')
    cases = [('no_such_marker', [0.3, 0.1, 0.4], [0, 0, 0, 1],
              "unknown marker 'no_such_marker' ignored. Markers: tool0"),
             ('tool0', [0.3, math.nan, 0.4], [0, 0, 0, 1], "marker 'tool0' ignored: the pose "
              'contains NaN'),
             ('tool0', [0.3, 0.1, 0.4], [0, 0, 0, 0], 'quaternion [0.0, 0.0, 0.0, 0.0] has zero '
              'length')]
    for name, position, quat, text in cases:
        mark = s.probe.mark()
        s.client.drag(name, position, quat, released=True)
        error_after(s, mark, text)
    assert s.ik._drag.server.refused == 3
    q = random_reachable_q(chain, np.random.default_rng(11))
    drag_and_release(s, chain, 'tool0', chain.clip(np.zeros(chain.n)), q, True)
    assert s.client.errors == []


def test_service_before_any_robot_model_answers_no_markers_then_the_markers_come(harness):
    name = unique('ik')
    topic = f'/{name}/robot_description'
    ik = harness.start_node(name, [
        '--ros-args', '-p', f'description_topic:={topic}', '-p', 'base_link:=base_link',
        '-p', 'tip_link:=foot', '-r', f'/joint_states:=/{name}/joint_states',
        '-r', f'/diagnostics:=/{name}/diagnostics'])
    client = RvizLikeClient(harness.context, f'/{name}/target_marker')
    harness.add(client.node)
    wait_for('the update subscription', lambda: ik._drag.server._pub.get_subscription_count())
    response = client.initialize()
    assert list(response.markers) == []
    # The URDF arrives: the marker appears in an update.
    pub = client.node.create_publisher(String, topic, QoSProfile(
        depth=1, durability=rclpy.qos.DurabilityPolicy.TRANSIENT_LOCAL))
    pub.publish(String(data=(REPO / 'urdf' / 'leg3.urdf').read_text()))
    wait_for('the foot marker', lambda: 'foot' in client.markers, client.lock)
    assert_valid_for_rviz(client.marker('foot'), 'base_link')
    assert client.errors == []


def test_branched_chain_has_a_position_only_marker_per_hand_handles_on_the_dragged_one(
        harness):
    """Before any target each hand is a small mark (its body, dragged by it); the hand dragged
    and released gets the move arrows, the other stays a mark."""
    s = Setup(harness, 'twin_arm', tips=('left_hand', 'right_hand'))
    response = s.client.call_service()
    assert sorted(m.name for m in response.markers) == ['left_hand', 'right_hand']
    for marker in response.markers:
        assert_valid_for_rviz(marker, 'base_link')
        assert {c.name for c in marker.controls} == {'body'}
        body = marker.controls[0]
        assert body.interaction_mode == InteractiveMarkerControl.MOVE_3D and body.markers
    chain = Chain.from_urdf_file(REPO / 'urdf' / 'twin_arm.urdf', 'base_link',
                                 ['left_hand', 'right_hand'])
    q = random_reachable_q(chain, np.random.default_rng(2))
    position = chain.fk(q, 'left_hand')[:3, 3]
    since = len(s.probe.joint_states)
    s.client.drag('left_hand', position, [0.0, 0.0, 0.0, 1.0], released=True)
    s.joint_state_at(chain, 'left_hand', position, None, since)
    s.marker_where('left_hand', lambda m: colour_of(m) == 'green', 'a green left hand')
    s.marker_where('left_hand', lambda m: {c.name for c in m.controls} == {'body'} | MOVES,
                   'the left hand with its move arrows')
    assert {c.name for c in s.client.marker('right_hand').controls} == {'body'}
    assert s.client.errors == []


def test_switching_to_a_position_only_solver_takes_the_rotate_controls_away(harness):
    s = Setup(harness, 'arm6')
    (result,) = s.probe.set_params(solver='fabrik')
    assert result.successful, result.reason
    marker = s.marker_where('tool0', lambda m: not {c.name for c in m.controls} & ROTATES,
                            'a move-only marker')
    assert {c.name for c in marker.controls} == {'body'} | MOVES
    assert_valid_for_rviz(marker, 'base_link')
    assert s.client.errors == []


def test_changing_the_tip_link_erases_the_old_marker_and_serves_the_new_one(harness):
    s = Setup(harness, 'planar4')
    assert list(s.client.markers) == ['tip']
    (result,) = s.probe.set_params(tip_link='link3')
    assert result.successful, result.reason
    wait_for('only the link3 marker', lambda: list(s.client.markers) == ['link3'], s.client.lock)
    with s.client.lock:
        assert any('tip' in m.erases for m in s.client.applied)
        assert s.client.errors == []
    # The service agrees with the updates.
    assert [m.name for m in s.client.call_service().markers] == ['link3']


def test_with_no_client_listening_the_service_serves_the_newest_topic_target(harness):
    # While nobody subscribes to the updates the server keeps a followed target unsettled
    # (it is checked and stored, normalised when next read): a client that connects later gets
    # the newest target's pose from the service, the orientation of a pose target kept by a
    # later point target.
    ik, probe = harness.start('arm6', **{'damped_jacobian.timeout': 1.0})
    assert ik._drag.server._pub.get_subscription_count() == 0
    chain = chain_of('arm6')
    rng = np.random.default_rng(21)
    q = random_reachable_q(chain, rng)
    position, quat = fk_pose(chain, q)
    probe.send_pose(position, -np.asarray(quat) * 3.0)  # same rotation, not normalised
    wait_for('the answer to the pose target', lambda: any(
        np.linalg.norm(chain.fk(positions_of(m, chain.joint_names))[:3, 3] - position) < 1e-4
        for m in probe.joint_states), probe.lock)
    point = fk_pose(chain, random_reachable_q(chain, rng))[0]
    probe.send_point(point)
    wait_for('the answer to the point target', lambda: any(
        np.linalg.norm(chain.fk(positions_of(m, chain.joint_names))[:3, 3] - point) < 1e-4
        for m in probe.joint_states), probe.lock)
    assert ik._drag.server._tips['tool0'].pending is not None  # the deferred path was taken
    client = RvizLikeClient(harness.context, f'/{ik.get_name()}/target_marker')
    harness.add(client.node)
    (marker,) = client.call_service().markers
    got_position, got_quat = pose_of(marker)
    assert np.allclose(got_position, point, atol=1e-9)
    assert angle_between(got_quat, quat) < 1e-6
    assert abs(np.linalg.norm(got_quat) - 1.0) < 1e-9
    assert_valid_for_rviz(marker, 'base_link')
