"""The ik_node node in-process, over real rclpy and DDS (no mocks).

Each test starts an :class:`ik_node.ros.node.IkNode` from one of the package's config files under a
unique name, with ``/joint_states`` and ``/diagnostics`` remapped below that name so tests never
see each other, plus a probe node that publishes targets, records what comes back and calls the
node's parameter services. Targets are made by forward kinematics of joint values chosen here,
so they are reachable by construction; what comes back is checked by FK of the received joint
positions (ik_node.Chain), never against numbers the node printed.
"""

from __future__ import annotations

import itertools
import math
import os
import threading
import time
from pathlib import Path
from typing import Callable, Dict, List

import numpy as np
import pytest
import yaml

rclpy = pytest.importorskip('rclpy')

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from geometry_msgs.msg import PointStamped, PoseStamped  # noqa: E402
from rcl_interfaces.msg import Parameter as ParameterMsg  # noqa: E402
from rcl_interfaces.msg import ParameterType, ParameterValue  # noqa: E402
from rcl_interfaces.srv import GetParameters, SetParameters  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from visualization_msgs.msg import Marker, MarkerArray  # noqa: E402

from ik_node import Chain  # noqa: E402
from ik_node.ros.node import IkNode  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 10.0
_ids = itertools.count()


def unique(prefix: str) -> str:
    return f'{prefix}_{os.getpid()}_{next(_ids)}'


def chain_of(robot: str) -> Chain:
    tips = {'leg3': 'foot', 'planar4': 'tip', 'arm6': 'tool0'}
    return Chain.from_urdf_file(REPO / 'urdf' / f'{robot}.urdf', 'base_link', tips[robot])


def params_file(tmp_path: Path, robot: str, node_name: str, **overrides) -> Path:
    """The package's config/<robot>.yaml re-keyed for ``node_name``, with ``overrides``."""
    data = yaml.safe_load((REPO / 'config' / f'{robot}.yaml').read_text())
    params = data['ik_node']['ros__parameters']
    for key, value in overrides.items():
        if '.' in key:
            solver, name = key.split('.', 1)
            params.setdefault(solver, {})[name] = value
        else:
            params[key] = value
    path = tmp_path / f'{node_name}.yaml'
    path.write_text(yaml.safe_dump({node_name: {'ros__parameters': params}}))
    return path


def reached_ok(status) -> bool:
    """A reached target: OK, or WARN only because the solution is fragile (near a singularity
    or a joint limit, which the status message says)."""
    return values(status).get('reachable') == 'true' and (
        status.level == DiagnosticStatus.OK or
        (status.level == DiagnosticStatus.WARN and 'fragile' in status.message))


# ----------------------------------------------------------------------------------- probe
class Probe:
    """A test node: publishes targets to one ik node, records its outputs, sets its parameters."""

    def __init__(self, context, ik_name: str, ns: str, tips=(None,)):
        self.node = rclpy.create_node(unique('probe'), context=context)
        self.ik_name = ik_name
        self.lock = threading.Lock()
        self.sent: List[str] = []  # header stamps of the targets sent, 'sec.nanosec'
        self._last_ns = 0
        self.joint_states: List[JointState] = []
        self.diagnostics: List[DiagnosticStatus] = []
        self.marker_arrays: List[MarkerArray] = []
        n = self.node
        n.create_subscription(JointState, f'{ns}/joint_states', self._on_js, 100)
        n.create_subscription(DiagnosticArray, f'{ns}/diagnostics', self._on_diag, 100)
        from rclpy.qos import DurabilityPolicy, QoSProfile
        n.create_subscription(MarkerArray, f'/{ik_name}/markers', self._on_markers,
                              QoSProfile(depth=10, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self.point_pubs, self.pose_pubs = {}, {}
        for tip in tips:
            prefix = f'/{ik_name}/{tip}/' if tip else f'/{ik_name}/'
            self.point_pubs[tip] = n.create_publisher(PointStamped, prefix + 'target_point', 10)
            self.pose_pubs[tip] = n.create_publisher(PoseStamped, prefix + 'target_pose', 10)
        self.set_client = n.create_client(SetParameters, f'/{ik_name}/set_parameters')
        self.get_client = n.create_client(GetParameters, f'/{ik_name}/get_parameters')

    def _on_js(self, msg):
        with self.lock:
            self.joint_states.append(msg)

    def _on_diag(self, msg):
        with self.lock:
            self.diagnostics.extend(s for s in msg.status if s.name == f'{self.ik_name}: ik')

    def _on_markers(self, msg):
        with self.lock:
            self.marker_arrays.append(msg)

    # ----------------------------------------------------------------------------- waiting
    def wait_for(self, what: str, predicate: Callable[[], object], timeout: float = TIMEOUT_S):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                out = predicate()
            if out:
                return out
            time.sleep(0.01)
        raise AssertionError(f'timed out after {timeout} s waiting for {what}')

    def wait_connected(self):
        """Until the node's joint states arrive and it subscribes to every target topic."""
        self.wait_for('first joint state', lambda: self.joint_states)
        pubs = list(self.point_pubs.values()) + list(self.pose_pubs.values())
        self.wait_for('target subscriptions',
                      lambda: all(p.get_subscription_count() > 0 for p in pubs))
        self.wait_for('first diagnostics', lambda: self.diagnostics)

    def mark(self):
        """Counts of what was received so far, to wait for what comes after."""
        with self.lock:
            return (len(self.joint_states), len(self.diagnostics), len(self.marker_arrays),
                    len(self.sent))

    def next_status(self, mark, predicate=lambda s: True, what='a diagnostic status'):
        """The first status after ``mark`` that ``predicate`` accepts and, when targets were sent
        since ``mark``, that answers one of them: the node echoes a target's header stamp as
        ``target_stamp``, so heartbeats and answers to earlier targets never match."""
        def answers(s) -> bool:
            sent = set(self.sent[mark[-1]:])
            return not sent or bool(sent & set(values(s).get('target_stamp', '').split(',')))
        return self.wait_for(what, lambda: next(
            (s for s in self.diagnostics[mark[1]:] if answers(s) and predicate(s)), None))

    def stamp(self, msg) -> None:
        """Give ``msg`` a header stamp no earlier target of this probe had, and remember it."""
        ns = max(time.time_ns(), self._last_ns + 1)
        self._last_ns = ns
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(ns, 1_000_000_000)
        self.sent.append(f'{msg.header.stamp.sec}.{msg.header.stamp.nanosec:09d}')

    def next_result(self, mark, solve_count_before: int):
        """The first status after ``mark`` reporting a solve newer than ``solve_count_before``."""
        return self.next_status(
            mark, lambda s: s.level != DiagnosticStatus.ERROR and
            int(values(s).get('solve_count') or 0) > solve_count_before, 'a solve result')

    def joint_state_at(self, chain: Chain, target, since: int, tol: float = 1e-3):
        """The first joint state after index ``since`` whose FK tip is within ``tol`` of target."""
        target = np.asarray(target, dtype=float)

        def find():
            for m in self.joint_states[since:]:
                if not set(chain.joint_names) <= set(m.name):
                    continue
                tip = chain.fk(positions_of(m, chain.joint_names))[:3, 3]
                if np.linalg.norm(tip - target) < tol:
                    return m
            return None
        return self.wait_for(f'a joint state putting the tip at {target.tolist()}', find)

    def last_solve_count(self) -> int:
        with self.lock:
            counts = [int(values(s).get('solve_count') or 0) for s in self.diagnostics]
        return max(counts, default=0)

    # ---------------------------------------------------------------------------- sending
    def send_point(self, xyz, frame_id: str = 'base_link', tip=None):
        msg = PointStamped()
        msg.header.frame_id = frame_id
        msg.point.x, msg.point.y, msg.point.z = (float(v) for v in xyz)
        self.stamp(msg)
        self.point_pubs[tip].publish(msg)

    def send_pose(self, xyz, quat_xyzw, frame_id: str = 'base_link', tip=None):
        msg = PoseStamped()
        msg.header.frame_id = frame_id
        p, o = msg.pose.position, msg.pose.orientation
        p.x, p.y, p.z = (float(v) for v in xyz)
        o.x, o.y, o.z, o.w = (float(v) for v in quat_xyzw)
        self.stamp(msg)
        self.pose_pubs[tip].publish(msg)

    # ------------------------------------------------------------------------- parameters
    def _call(self, client, request):
        assert client.wait_for_service(timeout_sec=TIMEOUT_S), 'parameter service not up'
        future = client.call_async(request)
        self.wait_for('parameter service reply', future.done)
        return future.result()

    def set_params(self, **params):
        request = SetParameters.Request()
        request.parameters = [ParameterMsg(name=k.replace('__', '.'), value=param_value(v))
                              for k, v in params.items()]
        return self._call(self.set_client, request).results

    def get_param(self, name: str):
        request = GetParameters.Request()
        request.names = [name]
        value = self._call(self.get_client, request).values[0]
        return {ParameterType.PARAMETER_STRING: value.string_value,
                ParameterType.PARAMETER_DOUBLE: value.double_value,
                ParameterType.PARAMETER_INTEGER: value.integer_value,
                ParameterType.PARAMETER_BOOL: value.bool_value}.get(value.type)


def param_value(v) -> ParameterValue:
    if isinstance(v, bool):
        return ParameterValue(type=ParameterType.PARAMETER_BOOL, bool_value=v)
    if isinstance(v, int):
        return ParameterValue(type=ParameterType.PARAMETER_INTEGER, integer_value=v)
    if isinstance(v, float):
        return ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=v)
    if isinstance(v, list):
        return ParameterValue(type=ParameterType.PARAMETER_STRING_ARRAY, string_array_value=v)
    return ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=v)


def values(status: DiagnosticStatus) -> Dict[str, str]:
    return {kv.key: kv.value for kv in status.values}


def positions_of(msg: JointState, names) -> np.ndarray:
    index = {n: i for i, n in enumerate(msg.name)}
    return np.array([msg.position[index[n]] for n in names])


# ---------------------------------------------------------------------------------- fixture
def try_shutdown(context) -> None:
    """Shut a context down unless already done."""
    rclpy.try_shutdown(context=context)


class Harness:
    def __init__(self, context, tmp_path):
        self.context, self.tmp_path = context, tmp_path
        self.executor = SingleThreadedExecutor(context=context)
        self.nodes = []
        self.thread = None

    def start(self, robot: str, tips=(None,), **overrides):
        """Start an ik node on config/<robot>.yaml (plus overrides) and a probe; spin both."""
        name = unique('ik')
        ns = f'/{name}'
        args = ['--ros-args', '--params-file', str(params_file(self.tmp_path, robot, name,
                                                                **overrides)),
                '-r', f'/joint_states:={ns}/joint_states', '-r', f'/diagnostics:={ns}/diagnostics']
        ik = IkNode(node_name=name, context=self.context, cli_args=args)
        self.nodes.append(ik)
        probe = Probe(self.context, name, ns, tips)
        self.nodes.append(probe.node)
        for n in (ik, probe.node):
            self.executor.add_node(n)
        if self.thread is None:
            self.thread = threading.Thread(target=self._spin, daemon=True)
            self.thread.start()
        probe.wait_connected()
        return ik, probe

    def _spin(self):
        try:
            self.executor.spin()
        except Exception:  # shutdown while spinning
            pass

    def close(self):
        self.executor.shutdown()
        if self.thread is not None:
            self.thread.join(timeout=5.0)
        for n in self.nodes:
            n.destroy_node()


@pytest.fixture
def harness(tmp_path):
    context = rclpy.Context()
    rclpy.init(context=context)
    h = Harness(context, tmp_path)
    try:
        yield h
    finally:
        h.close()
        try_shutdown(context)


# ------------------------------------------------------------------------------------ tests
ROBOTS = [('leg3', 'analytic_hip_knee'), ('planar4', 'fabrik'), ('arm6', 'damped_jacobian')]


def random_reachable_q(chain: Chain, rng: np.random.Generator) -> np.ndarray:
    lo = np.maximum(chain.lower, -math.pi)
    hi = np.minimum(chain.upper, math.pi)
    return lo + (hi - lo) * (0.1 + 0.8 * rng.random(chain.n))


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
    assert by_id[100].points[1].z == pytest.approx(-2.0)


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
    time.sleep(0.3)
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
