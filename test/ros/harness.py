"""The one harness of the ROS tests: start ik_node, talk to it over real DDS, stop cleanly.

* :class:`Ros`: an rclpy context and an executor spinning in a thread; :meth:`Ros.close` stops
  the spin before it destroys any node, then shuts the context down.
* :func:`wait_for`: the one wait loop (an optional lock, a timeout, node processes that must
  stay alive while waiting).
* :class:`Probe`: a test node talking to one ik node: publishes targets, each with a header stamp
  no earlier target had, records joint states, ``/diagnostics`` and markers, and finds the status
  that answers a target by that stamp (the node echoes it as ``target_stamp``); calls the node's
  parameter services.
* :class:`Harness` and the ``harness`` fixture: :class:`ik_node.ros.node.IkNode` in this process
  under a unique name, its outputs remapped below that name so tests never see each other.
* :func:`start_process` and :func:`stop_process`: the node as its own process
  (``python -m ik_node.node --ros-args ...``, as ``ros2 run`` starts it) and its clean end;
  :func:`start_node` and :func:`stop` for a params file and an end that must be clean;
  the ``probe_for`` fixture: probes of such a process on /ik_node's topics.
* :class:`Graph` and the ``graph`` fixture: the test side of a robot's ROS graph (targets,
  measured states, descriptions out; every topic recorded), for the reference robots
  (:data:`PANDA`, :data:`UR5`, :func:`robot_params`).
* :class:`RunningNode`: a node process with its probe, checking every joint state against the
  URDF's limits, for module-scoped nodes that many tests feed bad input.

One file, longer than the others, on purpose: every test that starts, probes or stops a node
takes it from here, so there is one way to do each and test modules never import each other.
It imports rclpy: ``conftest.py`` collects the modules that import it only where rclpy is.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pytest
import rclpy
import yaml
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import PointStamped, PoseStamped
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.srv import GetParameters, SetParameters, SetParametersAtomically
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile
from sensor_msgs.msg import JointState
from visualization_msgs.msg import MarkerArray

from ik_node import Chain
from ik_node.ros.inputs.targets import quat_xyzw_from_rotation
from urdf_limits import urdf_limits

REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 10.0
ERROR = DiagnosticStatus.ERROR
TIPS = {'leg3': 'foot', 'planar4': 'tip', 'arm6': 'tool0'}
_ids = itertools.count()


# ------------------------------------------------------------------------------------ small
def unique(prefix: str) -> str:
    """A name no other node of this test run has."""
    return f'{prefix}_{os.getpid()}_{next(_ids)}'


def values(status: DiagnosticStatus) -> Dict[str, str]:
    return {kv.key: kv.value for kv in status.values}


def positions_of(msg: JointState, names) -> np.ndarray:
    """The positions of ``names`` in a JointState, matched by joint name."""
    index = {n: i for i, n in enumerate(msg.name)}
    return np.array([msg.position[index[n]] for n in names])


def chain_of(robot: str) -> Chain:
    """The chain of a packaged serial robot (leg3, planar4, arm6)."""
    return Chain.from_urdf_file(REPO / 'urdf' / f'{robot}.urdf', 'base_link', TIPS[robot])


def random_reachable_q(chain: Chain, rng: np.random.Generator) -> np.ndarray:
    lo = np.maximum(chain.lower, -math.pi)
    hi = np.minimum(chain.upper, math.pi)
    return lo + (hi - lo) * (0.1 + 0.8 * rng.random(chain.n))


def reached_ok(status) -> bool:
    """A reached target: OK, or WARN only because the solution is fragile (near a singularity
    or a joint limit, which the status message says)."""
    return values(status).get('reachable') == 'true' and (
        status.level == DiagnosticStatus.OK or
        (status.level == DiagnosticStatus.WARN and 'fragile' in status.message))


def params_file(directory: Path, robot: str, node_name: str, **overrides) -> Path:
    """The package's config/<robot>.yaml re-keyed for ``node_name`` (a renamed node reads only
    its own key), with ``overrides`` (``'solver.param'`` keys nest under the solver)."""
    data = yaml.safe_load((REPO / 'config' / f'{robot}.yaml').read_text())
    params = data['ik_node']['ros__parameters']
    for key, value in overrides.items():
        if '.' in key:
            solver, name = key.split('.', 1)
            params.setdefault(solver, {})[name] = value
        else:
            params[key] = value
    path = directory / f'{node_name}.yaml'
    path.write_text(yaml.safe_dump({node_name: {'ros__parameters': params}}))
    return path


def stamp_text(header) -> str:
    """A header's stamp as the node writes it (``target_stamp``, ``joint_state_stamp``)."""
    return f'{header.stamp.sec}.{header.stamp.nanosec:09d}'


def answers(status: DiagnosticStatus, keys) -> bool:
    """True if ``status`` answers one of the targets whose stamps are ``keys``."""
    return bool(set(keys) & set(values(status).get('target_stamp', '').split(',')))


# ----------------------------------------------------------------------------------- waiting
def wait_for(what: str, predicate: Callable[[], object], lock=None, timeout: float = TIMEOUT_S,
             procs: Sequence[subprocess.Popen] = ()):
    """Poll ``predicate`` (under ``lock``) until it returns something (an array counts), fail
    after ``timeout`` [s], or at once when one of ``procs`` exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if lock is None:
            out = predicate()
        else:
            with lock:
                out = predicate()
        if isinstance(out, np.ndarray) or out:
            return out
        for proc in procs:
            if proc.poll() is not None:
                raise AssertionError(f'the node exited ({proc.returncode}) while waiting for '
                                     f'{what}:\n{output_tail(proc)}')
        time.sleep(0.01)
    raise AssertionError(f'timed out after {timeout} s waiting for {what}')


# ---------------------------------------------------------------------------- the ROS side
class Ros:
    """An rclpy context with an executor spinning in a thread; nodes are added as they come."""

    def __init__(self) -> None:
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.nodes: List = []
        self._thread: Optional[threading.Thread] = None

    def node(self, prefix: str):
        """A new plain node (unique name) spun with the others."""
        return self.add(rclpy.create_node(unique(prefix), context=self.context))

    def add(self, node):
        """Spin ``node`` (destroyed by :meth:`close`); returns it."""
        self.nodes.append(node)
        self.executor.add_node(node)
        if self._thread is None:
            self._thread = threading.Thread(target=self._spin, daemon=True)
            self._thread.start()
        return node

    def _spin(self) -> None:
        try:
            self.executor.spin()
        except Exception:  # shutdown while spinning
            pass

    def close(self) -> None:
        """Stop spinning, then destroy the nodes (none while the spin thread waits in rcl),
        then shut the context down."""
        self.executor.shutdown()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        for node in self.nodes:
            node.destroy_node()
        rclpy.try_shutdown(context=self.context)


class Stamps:
    """Header stamps that increase strictly, so each names one message."""

    def __init__(self) -> None:
        self._last_ns = 0

    def stamp(self, msg) -> str:
        """Give ``msg`` a stamp no earlier message had; returns it as ``'sec.nanosec'``."""
        ns = max(time.time_ns(), self._last_ns + 1)
        self._last_ns = ns
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(ns, 1_000_000_000)
        return stamp_text(msg.header)


def parameter(name: str, value) -> Parameter:
    """A parameter of ``value``'s type (a list of strings: a string array)."""
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return Parameter(name, Parameter.Type.STRING_ARRAY, value)
    return Parameter(name, value=value)


# ------------------------------------------------------------------------------- the probe
class Probe:
    """A test node talking to the ik node ``ik_name``: publishes targets, records its outputs,
    sets and reads its parameters.

    Args:
        ros: the context and executor to live in.
        ik_name: the ik node's name (its ``~/`` topics and services are below it).
        joint_states: the topic its joint states are on.
        diagnostics: the topic its statuses are on (only statuses named by it are kept).
        tips: target topics per tip (``(None,)``: the serial chain's one set).
        process: the node's process, if it is one: a wait fails at once when it exits.

    Attributes:
        timeout: how long a wait lasts by default [s].
    """

    def __init__(self, ros: Ros, ik_name: str, joint_states: str = '/joint_states',
                 diagnostics: str = '/diagnostics', tips=(None,),
                 process: Optional[subprocess.Popen] = None) -> None:
        self.ros, self.ik_name, self.process = ros, ik_name, process
        self.node = rclpy.create_node(unique('probe'), context=ros.context)
        self.base = 'base_link'  # the frame of targets sent without one
        self.timeout = TIMEOUT_S
        self.lock = threading.Lock()
        self.sent: List[str] = []  # header stamps of the targets sent, 'sec.nanosec'
        self._stamps = Stamps()
        self.joint_states: List[JointState] = []
        self.diagnostics: List[DiagnosticStatus] = []
        self.marker_arrays: List[MarkerArray] = []
        n = self.node
        n.create_subscription(JointState, joint_states, self._on_js, 100)
        n.create_subscription(DiagnosticArray, diagnostics, self._on_diag, 100)
        n.create_subscription(MarkerArray, f'/{ik_name}/markers', self._on_markers,
                              QoSProfile(depth=10, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self.point_pubs, self.pose_pubs = {}, {}
        for tip in tips:
            prefix = f'/{ik_name}/{tip}/' if tip else f'/{ik_name}/'
            self.point_pubs[tip] = n.create_publisher(PointStamped, prefix + 'target_point', 10)
            self.pose_pubs[tip] = n.create_publisher(PoseStamped, prefix + 'target_pose', 10)
        self.set_client = n.create_client(SetParameters, f'/{ik_name}/set_parameters')
        self.atomic_client = n.create_client(SetParametersAtomically,
                                             f'/{ik_name}/set_parameters_atomically')
        self.get_client = n.create_client(GetParameters, f'/{ik_name}/get_parameters')
        ros.add(n)

    def _on_js(self, msg: JointState) -> None:
        with self.lock:
            self.joint_states.append(msg)

    def _on_diag(self, msg: DiagnosticArray) -> None:
        with self.lock:
            self.diagnostics.extend(s for s in msg.status if s.name == f'{self.ik_name}: ik')

    def _on_markers(self, msg: MarkerArray) -> None:
        with self.lock:
            self.marker_arrays.append(msg)

    # ----------------------------------------------------------------------------- waiting
    def wait_for(self, what: str, predicate: Callable[[], object],
                 timeout: Optional[float] = None):
        """:func:`wait_for` under the probe's lock (the node's process must stay alive)."""
        procs = () if self.process is None else (self.process,)
        return wait_for(what, predicate, self.lock, self.timeout if timeout is None else timeout,
                        procs)

    def wait_connected(self) -> None:
        """Until the node's joint states arrive and it subscribes to every target topic."""
        self.wait_for('first joint state', lambda: self.joint_states)
        pubs = list(self.point_pubs.values()) + list(self.pose_pubs.values())
        self.wait_for('target subscriptions',
                      lambda: all(p.get_subscription_count() > 0 for p in pubs))
        self.wait_for('first diagnostics', lambda: self.diagnostics)

    def mark(self) -> Tuple[int, int, int, int]:
        """Counts of what was received and sent so far, to wait for what comes after:
        (joint states, statuses, marker arrays, targets sent)."""
        with self.lock:
            return (len(self.joint_states), len(self.diagnostics), len(self.marker_arrays),
                    len(self.sent))

    def next_status(self, mark, predicate=lambda s: True, what='a diagnostic status'):
        """The first status after ``mark`` that ``predicate`` accepts and, when targets were sent
        since ``mark``, that answers one of them: the node echoes a target's header stamp as
        ``target_stamp``, so heartbeats and answers to earlier targets never match."""
        def answering(s) -> bool:
            sent = self.sent[mark[-1]:]
            return not sent or answers(s, sent)
        return self.wait_for(what, lambda: next(
            (s for s in self.diagnostics[mark[1]:] if answering(s) and predicate(s)), None))

    def next_result(self, mark, solve_count_before: int):
        """The first status after ``mark`` reporting a solve newer than ``solve_count_before``."""
        return self.next_status(
            mark, lambda s: s.level != ERROR and
            int(values(s).get('solve_count') or 0) > solve_count_before, 'a solve result')

    def next_result_or_error(self, mark, count_before: int):
        """The first status after ``mark``: an ERROR, or a solve newer than ``count_before``."""
        return self.next_status(mark, lambda s: s.level == ERROR or
                                int(values(s).get('solve_count') or 0) > count_before,
                                'a result or an error')

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

    def current_q(self) -> np.ndarray:
        """The positions of the newest joint state."""
        with self.lock:
            return np.array(self.joint_states[-1].position, dtype=float)

    # ---------------------------------------------------------------------------- sending
    def stamp(self, msg) -> None:
        """Give ``msg`` a header stamp no earlier target of this probe had, and remember it."""
        self.sent.append(self._stamps.stamp(msg))

    def send_point(self, xyz, frame_id: Optional[str] = None, tip=None) -> None:
        msg = PointStamped()
        msg.header.frame_id = self.base if frame_id is None else frame_id
        msg.point.x, msg.point.y, msg.point.z = (float(v) for v in xyz)
        self.stamp(msg)
        self.point_pubs[tip].publish(msg)

    def send_pose(self, xyz, quat_xyzw, frame_id: Optional[str] = None, tip=None) -> None:
        msg = PoseStamped()
        msg.header.frame_id = self.base if frame_id is None else frame_id
        p, o = msg.pose.position, msg.pose.orientation
        p.x, p.y, p.z = (float(v) for v in xyz)
        o.x, o.y, o.z, o.w = (float(v) for v in quat_xyzw)
        self.stamp(msg)
        self.pose_pubs[tip].publish(msg)

    # ------------------------------------------------------------------------- parameters
    def _call(self, client, request):
        assert client.wait_for_service(timeout_sec=self.timeout), 'parameter service not up'
        future = client.call_async(request)
        self.wait_for('a parameter service reply', future.done)
        return future.result()

    def set_params(self, **params):
        """Set parameters (``solver__param`` for ``solver.param``) one by one in one call; the
        list of SetParametersResult."""
        request = SetParameters.Request()
        request.parameters = [parameter(k.replace('__', '.'), v).to_parameter_msg()
                              for k, v in params.items()]
        return self._call(self.set_client, request).results

    def set_param(self, name: str, value):
        """Set one parameter; the SetParametersResult."""
        return self.set_params(**{name.replace('.', '__'): value})[0]

    def set_atomically(self, **params):
        """Set parameters all at once (``solver__param`` for ``solver.param``); the result."""
        request = SetParametersAtomically.Request()
        request.parameters = [parameter(k.replace('__', '.'), v).to_parameter_msg()
                              for k, v in params.items()]
        return self._call(self.atomic_client, request).result

    def get_param(self, name: str):
        """A parameter's value as plain Python (None when it has none)."""
        request = GetParameters.Request()
        request.names = [name]
        value = self._call(self.get_client, request).values[0]
        return Parameter.from_parameter_msg(ParameterMsg(name=name, value=value)).value


# --------------------------------------------------------------------- the node in-process
class Harness:
    """IkNodes in this process, each with a probe, on one :class:`Ros`."""

    def __init__(self, ros: Ros, tmp_path: Path) -> None:
        self.ros, self.tmp_path = ros, tmp_path
        self.context = ros.context

    def start(self, robot: str, tips=(None,), node_class=None, **overrides):
        """Start an ik node on config/<robot>.yaml (plus overrides) and a probe; spin both.
        ``node_class``: IkNode (None) or a subclass. Returns ``(ik, probe)`` once the probe
        hears the node."""
        name, ik = self.start_alone(robot, node_class, **overrides)
        ns = f'/{name}'
        probe = Probe(self.ros, name, joint_states=f'{ns}/joint_states',
                      diagnostics=f'{ns}/diagnostics', tips=tips)
        probe.wait_connected()
        return ik, probe

    def start_alone(self, robot: str, node_class=None, **overrides):
        """An ik node (``node_class``: IkNode or a subclass) on config/<robot>.yaml (plus
        overrides) under a unique name, its joint states and diagnostics remapped below that
        name, without a probe (the test brings its own client). Returns ``(name, ik)``."""
        name = unique('ik')
        ns = f'/{name}'
        ik = self.start_node(name, [
            '--ros-args', '--params-file',
            str(params_file(self.tmp_path, robot, name, **overrides)),
            '-r', f'/joint_states:={ns}/joint_states', '-r', f'/diagnostics:={ns}/diagnostics'],
            node_class)
        return name, ik

    def start_urdf(self, path: Path, base_link: str, tip_link: str, solver: str,
                   like: str = 'arm6'):
        """An ik node and its probe on the URDF at ``path`` (the rest of config/<like>.yaml).
        Returns ``(chain, ik, probe)``."""
        ik, probe = self.start(like, urdf_file=str(path), base_link=base_link,
                               tip_link=tip_link, solver=solver)
        return Chain.from_urdf_file(path, base_link, tip_link), ik, probe

    def start_from_text(self, text: str, name: str = 'ik_node'):
        """An IkNode named ``name`` from a parameters file holding ``text``, spun."""
        path = self.tmp_path / f'{unique("params")}.yaml'
        path.write_text(text)
        return self.start_node(name, ['--ros-args', '--params-file', str(path)])

    def start_node(self, name: str, cli_args: Sequence[str], node_class=None):
        """An IkNode (or ``node_class``) named ``name`` with ``cli_args`` (``--ros-args ...``),
        spun."""
        from ik_node.ros.node import IkNode
        return self.ros.add((node_class or IkNode)(node_name=name, context=self.ros.context,
                                                   cli_args=list(cli_args)))

    def add(self, node):
        """Spin another node of the test (an RViz-like client...)."""
        return self.ros.add(node)


@pytest.fixture
def harness(tmp_path):
    """A :class:`Harness`; every node is destroyed and the context shut down afterwards."""
    ros = Ros()
    try:
        yield Harness(ros, tmp_path)
    finally:
        ros.close()


@pytest.fixture
def ros():
    """A :class:`Ros` for probes of node processes; closed afterwards."""
    r = Ros()
    try:
        yield r
    finally:
        r.close()


# ---------------------------------------------------------------------- the node a process
def process_env(env_extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """This environment with the checkout first on PYTHONPATH, unbuffered output."""
    env = dict(os.environ, **(env_extra or {}))
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(REPO), env.get('PYTHONPATH', '')]))
    env['PYTHONUNBUFFERED'] = '1'
    return env


def start_process(*ros_args: str, python_args: Sequence[str] = ('-m', 'ik_node.node'),
                  env_extra: Optional[Dict[str, str]] = None,
                  log: Optional[Path] = None) -> subprocess.Popen:
    """``python -m ik_node.node --ros-args *ros_args`` from the checkout.

    Output: pipes (text) read by :func:`stop_process`, or with ``log`` one file for both
    (module-scoped nodes that live through many tests; :func:`output_tail` reads it).
    """
    command = [sys.executable, *python_args, '--ros-args', *ros_args]
    if log is None:
        return subprocess.Popen(command, cwd=REPO, env=process_env(env_extra),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = open(log, 'w')
    proc = subprocess.Popen(command, cwd=REPO, env=process_env(env_extra), stdout=out,
                            stderr=subprocess.STDOUT)
    proc.log_path, proc.log_file = log, out
    return proc


@contextlib.contextmanager
def node_process(*ros_args: str):
    """A node process (:func:`start_process`) for the block; stopped by SIGINT afterwards, and
    then it must have ended cleanly (status 0, no traceback)."""
    proc = start_process(*ros_args)
    try:
        yield proc
    finally:
        status, _, err = stop_process(proc)
    assert status == 0 and 'Traceback' not in err, err


def output_tail(proc: subprocess.Popen, lines: int = 30) -> str:
    """The last lines a node process wrote (its log file, else its stderr once it exited)."""
    log = getattr(proc, 'log_path', None)
    if log is not None:
        proc.log_file.flush()
        return '\n'.join(Path(log).read_text().splitlines()[-lines:])
    if proc.poll() is not None and proc.stderr is not None:
        return proc.communicate()[1]
    return ''


def stop_process(proc: subprocess.Popen, sig=signal.SIGINT, timeout: float = 15.0,
                 send: bool = True) -> Tuple[int, str, str]:
    """Signal the node (unless ``send`` is False) and return (exit status, stdout, stderr);
    kill it if it hangs (AssertionError)."""
    if send and proc.poll() is None:
        proc.send_signal(sig)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f'node did not exit within {timeout} s of {sig!r}: {err}') from None
    finally:
        if getattr(proc, 'log_file', None) is not None:
            proc.log_file.close()
    return proc.returncode, out or '', err or ''


# ------------------------------------------------ a reference robot's graph, node a process
#: Reference robots read in place from ../shared/robots: (URDF file, base link, tip link).
PANDA = ('panda.urdf', 'panda_link0', 'panda_hand_tcp')
UR5 = ('ur5.urdf', 'base_link', 'tool0')
GRAPH_TIMEOUT_S = 20.0


def write_params(tmp_path: Path, name: str, params: dict) -> Path:
    """``params`` as a params file for any node name (``/**``); its path."""
    path = tmp_path / f'{name}.yaml'
    path.write_text(yaml.safe_dump({'/**': {'ros__parameters': params}}))
    return path


def start_node(params: Path, *extra: str) -> subprocess.Popen:
    """The node as its own process on the params file ``params`` (:func:`start_process`)."""
    return start_process('--params-file', str(params), *extra)


def stop(proc: subprocess.Popen) -> str:
    """End the node with SIGINT: it must exit 0 without a traceback; its stderr."""
    code, _, err = stop_process(proc)
    assert code == 0, err
    assert 'Traceback' not in err, err
    return err


class Graph:
    """The test side of the graph: publishes targets, states and descriptions; records outputs.

    Lives on the shared harness's :class:`Ros` (spun in a thread, closed after the test).
    """

    def __init__(self, ros: Ros) -> None:
        self.context = ros.context
        self.node = ros.node('graph_probe')
        self.lock = threading.Lock()
        self.received: Dict[str, List] = {}
        self.pubs: Dict[str, object] = {}
        self._stamps = Stamps()

    def listen(self, msg_type, topic: str, qos=10) -> List:
        out = self.received.setdefault(topic, [])

        def on_msg(msg):
            with self.lock:
                out.append(msg)
        self.node.create_subscription(msg_type, topic, on_msg, qos)
        return out

    def diagnostics(self, name: str) -> List:
        out = self.received.setdefault(f'diag:{name}', [])

        def on_msg(msg):
            with self.lock:
                out.extend(s for s in msg.status if s.name == f'{name}: ik')
        self.node.create_subscription(DiagnosticArray, '/diagnostics', on_msg, 100)
        return out

    def publisher(self, msg_type, topic: str, qos=10):
        if topic not in self.pubs:
            self.pubs[topic] = self.node.create_publisher(msg_type, topic, qos)
        return self.pubs[topic]

    def wait_for(self, what: str, predicate, timeout: float = GRAPH_TIMEOUT_S, procs=()):
        return wait_for(what, predicate, self.lock, timeout, procs)

    def stamp(self, msg) -> str:
        return self._stamps.stamp(msg)

    def send_pose(self, topic: str, frame: str, T: np.ndarray) -> str:
        msg = PoseStamped()
        msg.header.frame_id = frame
        p, o = msg.pose.position, msg.pose.orientation
        p.x, p.y, p.z = (float(v) for v in T[:3, 3])
        o.x, o.y, o.z, o.w = (float(v) for v in quat_xyzw_from_rotation(T[:3, :3]))
        key = self.stamp(msg)
        self.publisher(PoseStamped, topic).publish(msg)
        return key

    def send_point(self, topic: str, frame: str, p) -> str:
        msg = PointStamped()
        msg.header.frame_id = frame
        msg.point.x, msg.point.y, msg.point.z = (float(v) for v in p)
        key = self.stamp(msg)
        self.publisher(PointStamped, topic).publish(msg)
        return key

    def answer(self, diags: List, key: str, procs=()):
        """The status answering the target stamped ``key``."""
        return self.wait_for(f'the answer to target {key}', lambda: next(
            (s for s in diags if answers(s, [key])), None), procs=procs)


@pytest.fixture
def graph(ros):
    return Graph(ros)


def robot_params(shared_robot, robot, **extra) -> dict:
    """Parameters of a reference robot (:data:`PANDA`, :data:`UR5`) from ../shared/robots."""
    name, base, tip = robot
    return {'urdf_file': str(shared_robot(name)), 'base_link': base, 'tip_link': tip,
            'solver': 'damped_jacobian', **extra}


@pytest.fixture
def probe_for(ros):
    """Probes on /ik_node's default topics (a node process started by the test), spun on the
    ``ros`` fixture; cleaned up afterwards."""
    def make(tips=(None,)) -> Probe:
        return Probe(ros, 'ik_node', tips=tips)
    return make


# ---------------------------------------------- a node process checked at every joint state
RUNNING_TIMEOUT_S = 15.0
#: Joint positions whose FK targets :meth:`RunningNode.solve_valid` is given between bad inputs.
LEG_QS = [[0.06 * k - 0.6, 0.3 - 0.05 * k, -0.4 - 0.08 * k] for k in range(20)]
ARM_QS = [[0.3 + 0.07 * k, -1.2 + 0.05 * k, 1.4 - 0.06 * k, -1.0, 1.1, 0.2 * k]
          for k in range(20)]


class RunningNode(Probe):
    """An ik_node subprocess (the shared harness's :func:`start_process`) and the probe in this
    process that talks to it; every joint state received is checked against the chain's
    limits."""

    def __init__(self, robot: str, directory: Path, python_args=('-m', 'ik_node.node'),
                 **overrides):
        self.robot = robot
        self.name = unique(f'ik_rel_{robot}')
        self.known_chains: Dict[tuple, tuple] = {}
        self.bad_joint_states: List[str] = []
        self.log_path = directory / f'{self.name}.log'
        self.proc = start_process(
            '-r', f'__node:={self.name}', '-r', f'/joint_states:=/{self.name}/joint_states',
            '--params-file', str(params_file(directory, robot, self.name, **overrides)),
            python_args=python_args, log=self.log_path)
        self.use_chain((REPO / 'urdf' / f'{robot}.urdf').read_text(), 'base_link', TIPS[robot])
        self.ros = Ros()
        super().__init__(self.ros, self.name, joint_states=f'/{self.name}/joint_states',
                         process=self.proc)
        self.base = self.chain.base_link  # Probe's constructor set its default
        self.timeout = RUNNING_TIMEOUT_S
        self.wait_for('the first joint state', lambda: self.joint_states)
        self.wait_for('the target subscriptions',
                      lambda: self.point_pubs[None].get_subscription_count() > 0 and
                      self.pose_pubs[None].get_subscription_count() > 0)
        self.wait_for('the first diagnostics', lambda: self.diagnostics)

    def use_chain(self, xml: str, base: str, tip: str) -> None:
        """Expect the chain of ``xml`` from now on (call it before switching the node to it).

        Joint states of any chain used so far stay valid (the node's switch and this call
        race), each checked against the limits of the chain its names belong to.
        """
        chain = Chain.from_urdf_string(xml, base, tip)
        lower, upper = urdf_limits(xml, chain.joint_names)
        with getattr(self, 'lock', threading.Lock()):  # no lock before the probe exists
            self.known_chains[tuple(chain.joint_names)] = (chain, lower, upper)
            self.xml, self.base, self.chain = xml, base, chain

    # ------------------------------------------------------------------------- callbacks
    def _on_js(self, msg: JointState):
        problem = self.check_joint_state(msg)
        with self.lock:
            self.joint_states.append(msg)
            if problem:
                self.bad_joint_states.append(problem)

    def check_joint_state(self, msg: JointState) -> Optional[str]:
        """Why ``msg`` is not a valid joint state of the current chain, or None."""
        names = tuple(msg.name)
        if names not in self.known_chains:
            return f'names {list(names)} are not the joints of a chain in use'
        chain, lower, upper = self.known_chains[names]
        q = np.array(msg.position, dtype=float)
        if q.shape != (chain.n,) or not np.all(np.isfinite(q)):
            return f'non-finite or wrong-length positions {list(msg.position)}'
        if np.any(q < lower - 1e-9) or np.any(q > upper + 1e-9):
            return f'positions {q.tolist()} outside [{lower}, {upper}]'
        return None

    # --------------------------------------------------------------------------- helpers
    def log_tail(self, lines: int = 30) -> str:
        return output_tail(self.proc, lines)

    def assert_alive(self):
        assert self.proc.poll() is None, f'node died:\n{self.log_tail()}'
        with self.lock:
            assert not self.bad_joint_states, self.bad_joint_states[:3]

    def expect_error(self, mark, words) -> DiagnosticStatus:
        """The first ERROR status after ``mark``; it must contain every one of ``words``."""
        status = self.next_status(mark, lambda s: s.level == ERROR, 'an ERROR diagnostic')
        text = (status.message + ' ' + values(status).get('message', '')).lower()
        for word in words:
            assert word.lower() in text, (word, status.message)
        assert values(status).get('status') == 'error'
        return status

    def expect_unchanged_since(self, mark, q_before: np.ndarray):
        with self.lock:
            after = [np.array(m.position) for m in self.joint_states[mark[0]:]]
        for q in after:
            np.testing.assert_array_equal(q, q_before)

    def solve_valid(self, q_known, tol: float = 1e-3) -> np.ndarray:
        """Send FK(q_known) as a point target (again every 0.5 s, as a stream would, so an
        iterative solver continues from its last answer) until a joint state reaches it and an
        OK diagnostic says so; that joint vector."""
        target = self.chain.fk(np.asarray(q_known, dtype=float))[:3, 3]
        mark, count = self.mark(), self.last_solve_count()
        deadline = time.monotonic() + RUNNING_TIMEOUT_S
        q = None
        while q is None:
            self.send_point(target)
            try:
                q = self.wait_for(f'a joint state reaching {target.tolist()}',
                                  lambda: self._reaching(target, mark[0], tol), timeout=0.5)
            except AssertionError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise
        self.next_status(mark, lambda s: reached_ok(s)
                         and int(values(s).get('solve_count') or 0) > count,
                         'an OK diagnostic')
        self.settle()
        self.assert_alive()
        return q

    def _reaching(self, target, since: int, tol: float):
        for m in self.joint_states[since:]:
            q = np.array(m.position, dtype=float)
            if list(m.name) == self.chain.joint_names and \
                    np.linalg.norm(self.chain.fk(q)[:3, 3] - target) < tol:
                return q
        return None

    def settle(self, joint_states: int = 3):
        """Until the steady re-publish has shown ``joint_states`` more joint states."""
        with self.lock:
            since = len(self.joint_states)
        self.wait_for(f'{joint_states} more joint states',
                      lambda: len(self.joint_states) >= since + joint_states)

    def close(self):
        try:
            stop_process(self.proc, signal.SIGINT, timeout=10)
        except AssertionError:  # it hung and was killed: the test said what it needed
            pass
        finally:
            self.ros.close()
