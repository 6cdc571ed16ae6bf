"""The ROS 2 node ``ik_node``: targets in, joint states, diagnostics and markers out.

The one module of the package that imports rclpy. Everything that can be written without it
lives beside it: configuration in :mod:`ik_node.config`, message conversions, target handling
and diagnostics in :mod:`ik_node.conversions`, markers in :mod:`ik_node.markers`.

Targets: a subscription callback (keep-last depth 1) stores its target as the newest pending
one; if no solve is running it solves right there (lowest latency: no hand-over to another
thread), then keeps solving the newest pending target until none is left. With a
multi-threaded executor, targets arriving during a solve only replace the pending one (counted
as skipped), so no backlog builds up however fast targets stream. A lock keeps a solve, the
timer and a parameter change from overlapping.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PointStamped, PoseStamped
from rcl_interfaces.msg import (FloatingPointRange, IntegerRange, ParameterDescriptor,
                                ParameterType, SetParametersResult)
from rclpy.exceptions import ParameterException
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from visualization_msgs.msg import MarkerArray

from ik_node import conversions as conv
from ik_node import markers
from ik_node.config import (CHAIN_KEYS, NODE_PARAMS, STRING_PARAMS, TIP_LINKS_DESCRIPTION,
                            build_chain, build_solver, canonical_updates, config_from_flat)
from ik_node.errors import IkError, TargetError
from ik_node.solvers import SOLVERS, ParamSpec

try:  # Humble and later
    from rclpy.executors import ExternalShutdownException
except ImportError:  # pragma: no cover
    class ExternalShutdownException(Exception):  # type: ignore[no-redef]
        """Stand-in for rclpy versions without it."""

HEARTBEAT_PERIOD_S = 1.0
_INT64_MAX = 2 ** 63 - 1


class IkNode(Node):
    """Live IK: subscribes to targets, publishes ``/joint_states``, ``/diagnostics``, markers.

    Args:
        node_name: ROS node name (default ``ik_node``).
        **kwargs: passed to :class:`rclpy.node.Node` (``context``, ``parameter_overrides``,
            ``cli_args``, ...).

    Raises:
        IkError: the configuration in the parameters is invalid (bad URDF, unknown solver...).
    """

    def __init__(self, node_name: str = 'ik_node', **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        self._lock = threading.RLock()
        self._names = self._declare_parameters()
        self._check_overrides()
        fixes = canonical_updates({name: self._param_value(name) for name in self._names})
        if fixes:  # store what is in force: solver ' FABRIK ' in a file is kept as 'fabrik'
            self.set_parameters([_parameter(k, v) for k, v in fixes.items()])
        self._flat = {name: value for name in self._names
                      if (value := self._param_value(name)) is not None}
        config = config_from_flat(self._flat, source='parameters')
        chain = build_chain(config)
        self._config, self._chain, self._solver = config, chain, build_solver(config, chain)
        self._reset_state()
        self._solve_count = 0
        self._last_diag: Optional[DiagnosticArray] = None
        self._last_diag_time = -math.inf
        self._gate = conv.DiagnosticsGate(config.diagnostics_rate)
        self._force_diag = True

        self._joint_pub = self.create_publisher(JointState, '/joint_states', 10)
        self._diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self._marker_pub = self.create_publisher(
            MarkerArray, '~/markers',
            QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                       durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self._target_qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE)
        self._subs: List[Any] = []
        self._targets = conv.LatestTargets()
        self._solving = threading.Lock()
        self._target_group = ReentrantCallbackGroup()
        self._make_subscriptions()
        self._timer = self.create_timer(1.0 / config.publish_rate, self._on_timer)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        if hasattr(self, 'add_pre_set_parameters_callback'):  # rclpy Jazzy and later
            self.add_pre_set_parameters_callback(self._canonical_parameters)

        self._publish_joint_state()
        self._publish_envelope()
        self._publish_status(conv.OK, lambda: 'waiting for a target',
                             lambda: {**conv.error_values(config.solver, '', 0, 0,
                                                          'waiting for a target'),
                                      'status': 'idle'}, force=True)
        self.get_logger().info(
            f'{self._model_name()}: {config.base_link} -> {", ".join(config.tip_links)} '
            f'({chain.n} joints), solver {config.solver}; targets on '
            f'{", ".join(getattr(s, "topic_name", "?") for s in self._subs)}')

    # ------------------------------------------------------------------------- parameters
    def _declare_parameters(self) -> List[str]:
        names = []
        for name, (default, description) in STRING_PARAMS.items():
            extra = f' One of: {", ".join(sorted(SOLVERS))}' if name == 'solver' else ''
            self.declare_parameter(name, default, ParameterDescriptor(
                type=ParameterType.PARAMETER_STRING, description=description + extra))
            names.append(name)
        descriptor = ParameterDescriptor(type=ParameterType.PARAMETER_STRING_ARRAY,
                                         description=TIP_LINKS_DESCRIPTION)
        try:  # declared by type: no value until set (an empty list cannot carry its type)
            self.declare_parameter('tip_links', Parameter.Type.STRING_ARRAY, descriptor)
        except (TypeError, AttributeError):  # rclpy without typed declarations: [''] = none
            self.declare_parameter('tip_links', [''], descriptor)
        names.append('tip_links')
        for name, spec in NODE_PARAMS.items():
            self._declare_spec(name, spec)
            names.append(name)
        for solver_name in sorted(SOLVERS):
            for param, spec in SOLVERS[solver_name].param_specs().items():
                self._declare_spec(f'{solver_name}.{param}', spec)
                names.append(f'{solver_name}.{param}')
        return names

    def _declare_spec(self, name: str, spec: ParamSpec) -> None:
        """Declare a parameter from a :class:`ParamSpec`: type, range, unit in the description."""
        unit = f' [{spec.unit}]' if spec.unit else ''
        d = ParameterDescriptor(description=f'{spec.description}{unit}',
                                additional_constraints=f'valid: {spec.range_text()}')
        if spec.type is float:
            d.type = ParameterType.PARAMETER_DOUBLE
            d.floating_point_range = [FloatingPointRange(
                from_value=float(spec.min if spec.min is not None else -sys.float_info.max),
                to_value=float(spec.max if spec.max is not None else sys.float_info.max),
                step=0.0)]
            # A YAML file saying `rate: 20` gives an integer; take it as the number it is.
            override = self._parameter_overrides.get(name)
            if override is not None and override.type_ == Parameter.Type.INTEGER:
                self._parameter_overrides[name] = Parameter(name, Parameter.Type.DOUBLE,
                                                            float(override.value))
        elif spec.type is int:
            d.type = ParameterType.PARAMETER_INTEGER
            d.integer_range = [IntegerRange(
                from_value=int(spec.min if spec.min is not None else -_INT64_MAX),
                to_value=int(spec.max if spec.max is not None else _INT64_MAX), step=0)]
        elif spec.type is bool:
            d.type = ParameterType.PARAMETER_BOOL
        elif spec.type in (list, tuple):  # a list of numbers, e.g. fabrik.weights
            d.type = ParameterType.PARAMETER_DOUBLE_ARRAY
            override = self._parameter_overrides.get(name)
            if override is not None and override.type_ == Parameter.Type.INTEGER_ARRAY:
                self._parameter_overrides[name] = Parameter(
                    name, Parameter.Type.DOUBLE_ARRAY, [float(v) for v in override.value])
            # An empty default cannot carry its type: declare the type, leave the value unset.
            default = list(spec.default) if spec.default else Parameter.Type.DOUBLE_ARRAY
            self.declare_parameter(name, default, d)
            return
        else:
            d.type = ParameterType.PARAMETER_STRING
        self.declare_parameter(name, spec.default, d)

    def _check_overrides(self) -> None:
        """Refuse parameters given for this node that it does not have (typos)."""
        unknown = sorted(n for n in self._parameter_overrides
                         if not self.has_parameter(n) and not n.startswith('qos_overrides.'))
        if unknown:
            raise IkError(f'unknown parameters {", ".join(unknown)}. Valid parameters: '
                          f'{", ".join(self._names)}')

    def _param_value(self, name: str) -> Any:
        try:
            value = self.get_parameter(name).value
        except Exception:  # an uninitialized parameter (tip_links unset) raises
            return None
        return _plain(value)

    def _canonical_parameters(self, params: List[Parameter]) -> List[Parameter]:
        """Pre-set callback: string values set in their canonical form (config.canonical_value),
        so the value stored is the value in force."""
        fixes = canonical_updates({p.name: _plain(p.value) for p in params
                                   if p.name in self._names})
        return [_parameter(p.name, fixes[p.name]) if p.name in fixes else p for p in params]

    def _on_set_parameters(self, params: List[Parameter]) -> SetParametersResult:
        updates = {p.name: _plain(p.value) for p in params if p.name in self._names}
        if not updates:
            return SetParametersResult(successful=True)
        fixes = canonical_updates(updates)  # only without a pre-set callback (before Jazzy)
        if fixes:
            return SetParametersResult(successful=False, reason='refused: ' + '; '.join(
                f'{k} = {updates[k]!r} is not in canonical form: set {v!r}'
                for k, v in fixes.items()))
        flat = {k: v for k, v in {**self._flat, **updates}.items() if v is not None}
        with self._lock:
            try:
                config = config_from_flat(flat, source='refused')
                rebuild = any(k in updates for k in CHAIN_KEYS) and \
                    config.chain_source() != self._config.chain_source()
                chain = build_chain(config) if rebuild else self._chain
                solver = build_solver(config, chain)
            except IkError as exc:
                return SetParametersResult(successful=False, reason=str(exc))
            except Exception as exc:  # a bug in a solver's constructor must not kill the node
                return SetParametersResult(successful=False,
                                           reason=f'refused: {type(exc).__name__}: {exc}')
            old = self._config
            self._flat = flat
            self._config, self._chain, self._solver = config, chain, solver
            if rebuild:
                self._reset_state()
            self._gate = conv.DiagnosticsGate(config.diagnostics_rate)
            self._force_diag = True
        if config.publish_rate != old.publish_rate:
            self.destroy_timer(self._timer)
            self._timer = self.create_timer(1.0 / config.publish_rate, self._on_timer)
        if rebuild and config.tip_links != old.tip_links:
            self._make_subscriptions()
        if rebuild:
            self._publish_joint_state()
        self._publish_envelope()
        self.get_logger().info(f'parameters set: {", ".join(sorted(updates))}')
        return SetParametersResult(successful=True)

    # ---------------------------------------------------------------------------- targets
    def _reset_state(self) -> None:
        chain = self._chain
        self._q = chain.clip(np.zeros(chain.n))
        self._output = (list(chain.joint_names), self._q)  # what /joint_states shows
        self._known: Dict[str, np.ndarray] = {}  # branched: last target of every tip
        self._markers_due = None  # (result, goals, known) of a solve whose markers are unsent

    def _make_subscriptions(self) -> None:
        for sub in self._subs:
            self.destroy_subscription(sub)
        self._subs = []
        tips = self._config.tip_links if self._config.branched else (None,)
        for tip in tips:
            prefix = f'~/{tip}/' if tip else '~/'
            self._subs.append(self.create_subscription(
                PoseStamped, prefix + 'target_pose',
                lambda msg, tip=tip: self._on_target(conv.target_from_pose(msg, tip)),
                self._target_qos, callback_group=self._target_group))
            self._subs.append(self.create_subscription(
                PointStamped, prefix + 'target_point',
                lambda msg, tip=tip: self._on_target(conv.target_from_point(msg, tip)),
                self._target_qos, callback_group=self._target_group))

    def _on_target(self, target: conv.Target) -> None:
        """Store the newest target; solve pending targets unless another callback already is."""
        self._targets.put(target.tip, target)
        while self._targets.pending and self._solving.acquire(blocking=False):
            try:
                while True:
                    batch = self._targets.take()
                    if not batch:
                        break
                    try:
                        self._solve_pending(batch)
                    except Exception as exc:  # a bug must not stop the node
                        if self.context.ok():
                            self._report_error(f'internal error: {type(exc).__name__}: {exc}',
                                               '')
            finally:
                self._solving.release()

    def _solve_pending(self, batch: Dict[Optional[str], conv.Target]) -> None:
        with self._lock:
            config, chain, solver = self._config, self._chain, self._solver
            goals = {}
            for tip, target in batch.items():
                try:
                    goals[tip] = conv.target_in_base(target, chain, self._q)
                except TargetError as exc:
                    where = f' for tip {tip}' if tip else ''
                    self._report_error(f'bad target{where}: {exc}', target.frame_id)
            if not goals:
                return
            frame = ', '.join(sorted({batch[t].frame_id or config.base_link for t in goals}))
            try:
                if config.branched:
                    self._known.update({tip: p for tip, (p, _) in goals.items()})
                    result = solver.solve(targets=dict(self._known), seed=self._q)
                else:
                    p, quat = goals[None]
                    result = solver.solve(p, quat, seed=self._q)
                q = conv.check_publishable(chain, result.joint_positions)
            except IkError as exc:
                self._report_error(f'target refused: {exc}', frame)
                return
            except Exception as exc:
                self._report_error(f'solver {config.solver} failed: {type(exc).__name__}: {exc}',
                                   frame)
                return
            self._q = q
            self._output = (list(chain.joint_names), q)
            self._solve_count += 1
            count = self._solve_count
            self._markers_due = (result, goals, dict(self._known))
        self._publish_joint_state()
        skipped = self._targets.skipped
        published = self._publish_status(
            conv.result_level(result), lambda: conv.result_summary(result, config.solver),
            lambda: conv.result_values(result, config.solver, frame, skipped, count))
        if published:
            self._publish_target_markers()

    def _report_error(self, message: str, frame: str) -> None:
        self.get_logger().error(message, throttle_duration_sec=1.0)
        solver, skipped, count = self._config.solver, self._targets.skipped, self._solve_count
        self._publish_status(conv.ERROR, lambda: message,
                             lambda: conv.error_values(solver, frame, skipped, count, message))

    # ---------------------------------------------------------------------------- outputs
    def _send(self, publisher, msg) -> None:
        """Publish; a publish racing with shutdown (SIGINT/SIGTERM mid-callback) is dropped."""
        try:
            publisher.publish(msg)
        except Exception:
            if self.context.ok():
                raise

    def _stamp(self):
        return self.get_clock().now().to_msg()

    def _publish_joint_state(self) -> None:
        names, q = self._output
        self._send(self._joint_pub, conv.joint_state_msg(names, q, self._stamp()))

    def _publish_status(self, level: bytes, message: Callable[[], str],
                        values: Callable[[], Dict[str, str]], force: bool = False) -> bool:
        """Publish a status now if the rate gate lets it through, else hold it for the timer.

        ``message`` and ``values`` are built only when needed (most solves of a fast stream
        are not reported individually).
        """
        hardware_id = self._hardware_id()

        def build():
            return conv.diagnostic_status(f'{self.get_name()}: ik', hardware_id, level,
                                          message(), values())
        with self._lock:
            force = force or self._force_diag
            send = self._gate.offer(time.monotonic(), level, build, force)
            if send:
                self._force_diag = False
        if send:
            self._send_status(build())
        return send

    def _send_status(self, status) -> None:
        msg = conv.diagnostic_array(status, self._stamp())
        self._last_diag, self._last_diag_time = msg, time.monotonic()
        self._send(self._diag_pub, msg)

    def _on_timer(self) -> None:
        self._publish_joint_state()
        now = time.monotonic()
        with self._lock:
            held = self._gate.flush(now)
        for build in held:
            self._send_status(build())
        if held:
            self._publish_target_markers()  # those of the result whose status was held
        if not held and self._last_diag is not None \
                and now - self._last_diag_time >= HEARTBEAT_PERIOD_S:
            self._send_status(self._last_diag.status[0])  # heartbeat for diagnostic monitors

    def _publish_envelope(self) -> None:
        """Publish the reachable envelope of the (first) tip and remember it for later arrays."""
        with self._lock:
            chain, solver, frame = self._chain, self._solver, self._config.base_link
            self._envelope = markers.envelope_of(chain, solver, chain.tip_link)
        self._send(self._marker_pub, markers.marker_array(
            markers.envelope_markers(frame, self._stamp(), self._envelope)))

    def _publish_target_markers(self) -> None:
        """Markers of the newest solve not shown yet: envelope, target spheres, miss lines."""
        with self._lock:
            due, self._markers_due = self._markers_due, None
            chain, frame, branched = self._chain, self._config.base_link, self._config.branched
        if due is None:
            return
        result, goals, known = due
        stamp = self._stamp()
        out = list(markers.envelope_markers(frame, stamp, self._envelope))
        tips_T = chain.fk_tips(result.joint_positions)
        if branched:
            for k, tip in enumerate(chain.tip_links):
                if tip in known:
                    tip_result = (result.tips or {}).get(tip)
                    reached = tip_result.reachable if tip_result else result.reachable
                    out.extend(markers.target_markers(frame, stamp, k, known[tip], reached,
                                                      tips_T[tip][:3, 3]))
        else:
            p, _ = goals[None]
            out.extend(markers.target_markers(frame, stamp, 0, p, result.reachable,
                                              tips_T[chain.tip_link][:3, 3]))
        self._send(self._marker_pub, markers.marker_array(out))

    def _hardware_id(self) -> str:
        return f'{self._model_name()}: {self._config.base_link} -> ' \
               f'{", ".join(self._config.tip_links)}'

    def _model_name(self) -> str:
        return self._config.urdf_file or 'robot_description'

    # --------------------------------------------------------------------------- shutdown
def _plain(value: Any) -> Any:
    """A parameter value as plain Python: arrays (array.array, tuples) become lists."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    return list(value)


def _parameter(name: str, value: Any) -> Parameter:
    """A string or string-list parameter (typed: an empty list stays a string array)."""
    if isinstance(value, (list, tuple)):
        return Parameter(name, Parameter.Type.STRING_ARRAY, list(value))
    return Parameter(name, Parameter.Type.STRING, value)


def _shutdown() -> None:
    try_shutdown = getattr(rclpy, 'try_shutdown', None)
    if try_shutdown is not None:
        try_shutdown()
    elif rclpy.ok():
        rclpy.shutdown()


def main(args: Optional[List[str]] = None) -> int:
    """Entry point of the ``ik_node`` executable. Returns the exit status."""
    try:
        rclpy.init(args=args)
    except Exception as exc:  # rcl refuses the arguments, e.g. a malformed --params-file
        print(f'ik_node: cannot start: {" ".join(str(exc).split())}', file=sys.stderr)
        return 2
    node = None
    status = 0
    try:
        node = IkNode()
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except IkError as exc:
        print(f'ik_node: {exc}', file=sys.stderr)
        status = 2
    except ParameterException as exc:
        print(f'ik_node: bad parameter: {exc}', file=sys.stderr)
        status = 2
    finally:
        if node is not None:
            node.destroy_node()
        _shutdown()
    return status


if __name__ == '__main__':
    sys.exit(main())
