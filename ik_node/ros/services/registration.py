"""The services beside the target stream: their own node, executor and thread.

rclpy's executors answer a service from the callback's return value, on the thread that spins
the node, and the node's events executor does not run coroutine callbacks: a solve there would
hold up every target behind it. So the services live on a node of their own,
``<node name>_services`` in the node's namespace, spun by its own single-threaded executor in
its own thread; they are created under the names the node itself resolves (``~/compute_ik`` of
``/ik_node`` is ``/ik_node/compute_ik``, remappings of the node applied). Requests are answered
one after the other, in the order they come, whatever client sent them.

The solvers are the services' own (:class:`~ik_node.services.group_solvers.GroupSolvers`),
built from the configuration in force each time the node installs a model or its obstacles
change: nothing a request does reaches the stream's solver, its jump guard, its markers or its
output. Each answer's status goes to ``/diagnostics`` as ``<node>: <service>`` (at most
:data:`STATUS_RATE_HZ` a second, and every change of level), beside the stream's status.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, Dict, Mapping, Optional

import numpy as np
import rclpy
from builtin_interfaces.msg import Time as TimeMsg
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from moveit_msgs.srv import GetCartesianPath, GetPositionFK, GetPositionIK
from rclpy.executors import SingleThreadedExecutor

from ik_node.services.error_codes import MoveItCode, ServiceError
from ik_node.services.group_solvers import GroupSolvers
from ik_node.solvers import IkResult

#: Most service statuses a second on /diagnostics (a change of level always goes out).
STATUS_RATE_HZ = 10.0
#: Seconds after a model arrives at which the configured group's solvers are built, when no
#: request has built them before (the first request then needs no build).
WARM_UP_DELAY_S = 3.0
_SPIN_PERIOD_S = 0.05
#: The interpreter's thread switch interval while the services run [s].
SWITCH_INTERVAL_S = 0.0005


class IkServices:
    """``~/compute_ik``, ``~/compute_fk`` and ``~/compute_cartesian_path`` of ``node``.

    Args:
        node: the IkNode: its name, namespace, remappings, context and logger.
        inputs: its NodeInputs (the measured joint state and TF seed and place requests).
    """

    def __init__(self, node, inputs) -> None:
        from ik_node.ros.services.cartesian_path import ComputeCartesianPath
        from ik_node.ros.services.compute_fk import ComputeFk
        from ik_node.ros.services.compute_ik import ComputeIk
        self._node, self._inputs = node, inputs
        self._logger = node.get_logger()
        self._lock = threading.Lock()
        self._pending: Optional[tuple] = None  # (config, world, group_name) to build from
        self._solvers: Optional[GroupSolvers] = None
        self._no_model = 'no robot model yet (the node waits for its description)'
        self._warm_at: Optional[float] = None
        self.host = rclpy.create_node(
            f'{node.get_name()}_services', namespace=node.get_namespace(),
            context=node.context, use_global_arguments=False, start_parameter_services=False)
        self.names: Dict[str, str] = {}
        self._handlers = ((GetPositionIK, 'compute_ik', ComputeIk(self)),
                          (GetPositionFK, 'compute_fk', ComputeFk(self)),
                          (GetCartesianPath, 'compute_cartesian_path', ComputeCartesianPath(self)))
        self._diagnostics = self.host.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self._last_status = (-1.0, None)
        self._status_name = node.get_fully_qualified_name().lstrip('/')
        self._executor = _executor(node.context)
        self._executor.add_node(self.host)
        self._running = True
        self._thread = threading.Thread(target=self._spin, name='ik_node services',
                                        daemon=True)
        self._thread.start()
        # Python threads share one interpreter lock, held by a running thread for up to the
        # switch interval (5 ms by default) before another may take it: a target arriving
        # during a service's solve would wait that long. A shorter interval bounds the wait.
        if sys.getswitchinterval() > SWITCH_INTERVAL_S:
            sys.setswitchinterval(SWITCH_INTERVAL_S)

    def _offer(self) -> None:
        """Create the services (once): a client that finds them finds a model to answer from."""
        if self.names:
            return
        for srv_type, name, handler in self._handlers:
            resolved = self._node.resolve_service_name(f'~/{name}')
            self.names[name] = resolved
            self.host.create_service(srv_type, resolved, handler)
        self._logger.info(f'MoveIt services: {", ".join(self.names.values())}')

    # --------------------------------------------------------------- the model in force
    def use_model(self, config, world: Mapping, group_name: str = '') -> None:
        """Answer from the model of ``config`` (None: no model) from the next request on; the
        first call offers the services."""
        with self._lock:
            self._pending = (config, dict(world), group_name)
            self._warm_at = time.monotonic() + WARM_UP_DELAY_S
        self._offer()

    def solvers(self) -> GroupSolvers:
        """The groups' solvers of the model in force (built here, on the services' thread).

        Raises:
            ServiceError: FAILURE while the node has no model, or its groups cannot be built.
        """
        with self._lock:
            pending, self._pending = self._pending, None
        if pending is not None:
            config, world, group_name = pending
            self._solvers = None
            if config is None:
                self._no_model = 'no robot model yet (the node waits for its description)'
            else:
                try:
                    self._solvers = GroupSolvers(config, world, group_name)
                except Exception as exc:  # a bad SRDF or URDF: said on every request
                    self._no_model = f'the services cannot use this model: {exc}'
        if self._solvers is None:
            raise ServiceError(MoveItCode.FAILURE, self._no_model)
        return self._solvers

    def measured(self, chain) -> Optional[np.ndarray]:
        """The measured joint positions of ``chain``'s joints, or None."""
        return self._inputs.measured(chain)[0]

    def lookup(self, base_link: str):
        """``lookup(frame) -> T_base_frame`` through the node's TF, or None without TF."""
        from ik_node.ros.targets import TfWarmingUp
        tf = self._inputs.frame_lookup(base_link)
        if tf is None:
            return None

        def lookup(frame: str) -> np.ndarray:
            try:
                T = tf(frame, (0, 0))
            except Exception as exc:  # TargetError from the lookup
                raise ServiceError(MoveItCode.FRAME_TRANSFORM_FAILURE, str(exc)) from None
            if isinstance(T, TfWarmingUp):
                raise ServiceError(MoveItCode.FRAME_TRANSFORM_FAILURE, T.message)
            return T
        return lookup

    # ------------------------------------------------------------------- diagnostics
    def report(self, service: str, code: int, message: str,
               result: Optional[IkResult] = None, values: Optional[Dict[str, str]] = None
               ) -> None:
        """An answer's status on ``/diagnostics`` (rate-gated; a change of level goes out)."""
        level = DiagnosticStatus.OK if code == MoveItCode.SUCCESS else (
            DiagnosticStatus.ERROR if code in _REFUSALS else DiagnosticStatus.WARN)
        now = time.monotonic()
        last_time, last_level = self._last_status
        if level == last_level and now - last_time < 1.0 / STATUS_RATE_HZ:
            return
        self._last_status = (now, level)
        status = DiagnosticStatus()
        status.level = level
        status.name = f'{self._status_name}: {service}'
        status.hardware_id = self._status_name
        status.message = f'{_code_name(code)}: {message}' if message else _code_name(code)
        pairs = {'error_code': f'{_code_name(code)} ({int(code)})', **(values or {})}
        if result is not None:
            pairs.update({'status': result.status.value,
                          'position_error_m': f'{result.position_error:.6g}',
                          'min_residual_m': '' if result.min_residual is None
                          else f'{result.min_residual:.6g}',
                          'solve_time_ms': f'{result.solve_time * 1e3:.3f}'})
            if result.orientation_error is not None:
                pairs['orientation_error_rad'] = f'{result.orientation_error:.6g}'
        status.values = [KeyValue(key=k, value=str(v)) for k, v in pairs.items()]
        msg = DiagnosticArray()
        sec, nanosec = divmod(self.host.get_clock().now().nanoseconds, 1_000_000_000)
        msg.header.stamp = TimeMsg(sec=sec, nanosec=nanosec)
        msg.status = [status]
        try:
            self._diagnostics.publish(msg)
        except Exception:  # the context shut down meanwhile
            if self._node.context.ok():
                raise

    def warn(self, text: str) -> None:
        """A warning in the node's log (at most once a second)."""
        self._logger.warning(text, throttle_duration_sec=1.0)

    # ---------------------------------------------------------------------- the thread
    def _spin(self) -> None:
        while self._running and self._node.context.ok():
            try:
                self._executor.spin_once(timeout_sec=_SPIN_PERIOD_S)
                self._warm_up()
            except Exception as exc:  # shutdown while spinning, or a bug: not the node's end
                if self._running and self._node.context.ok():
                    self._logger.error(f'services: {type(exc).__name__}: {exc}')

    def _warm_up(self) -> None:
        """Build the configured group's solvers once the model has been in force a while."""
        if self._warm_at is None or time.monotonic() < self._warm_at:
            return
        self._warm_at = None
        try:
            solvers = self.solvers()
            group = solvers.group('')
            solvers.solver(group, False)
            solvers.solver(group, True)
        except Exception as exc:  # said on the next request
            self._logger.warning(f'services: the configured group cannot be solved: {exc}')

    def close(self) -> None:
        """Stop the thread, then destroy the services' node (before the context goes)."""
        self._running = False
        self._executor.shutdown(timeout_sec=1.0)
        self._thread.join(timeout=5.0)
        self.host.destroy_node()


#: Codes of requests refused before any solve (ERROR on /diagnostics); the others are WARN.
_REFUSALS = {MoveItCode.FAILURE, MoveItCode.INVALID_GROUP_NAME, MoveItCode.INVALID_LINK_NAME,
             MoveItCode.INVALID_ROBOT_STATE, MoveItCode.INVALID_GOAL_CONSTRAINTS,
             MoveItCode.FRAME_TRANSFORM_FAILURE}


def _executor(context):
    """An events executor where this rclpy has one (it waits for work in C++), else a
    single-threaded one."""
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:
        return SingleThreadedExecutor(context=context)
    return EventsExecutor(context=context)


def _code_name(code: Any) -> str:
    try:
        return MoveItCode(int(code)).name
    except ValueError:
        return str(int(code))
