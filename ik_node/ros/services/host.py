"""The services' own process: ``python -m ik_node.ros.services.host`` (started by
:class:`~ik_node.ros.services.registration.IkServices`).

It reads its orders from stdin (pickled tuples: :data:`~ik_node.ros.services.registration.
Offer` once, then models) and serves ``~/compute_ik``, ``~/compute_fk`` and
``~/compute_cartesian_path`` on a node ``<node name>_services`` of its own, under the names the
node resolved. Its solvers, chains and collision checkers are its own
(:class:`~ik_node.services.group_solvers.GroupSolvers` of the model and obstacles in force), its
measured joint state is its own subscription to the node's ``state_topic``, its TF listener its
own. Each answer's status goes to ``/diagnostics`` as ``<node>: <service>`` (at most
:data:`STATUS_RATE_HZ` a second, and every change of level). It ends when stdin closes (the node
ended, however) or on a ``stop`` order; SIGINT is left to the node.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
import time
from typing import Any, Dict, Optional

import numpy as np
import rclpy
from builtin_interfaces.msg import Time as TimeMsg
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from moveit_msgs.srv import GetCartesianPath, GetPositionFK, GetPositionIK

from ik_node.ros.services.cartesian_path import ComputeCartesianPath
from ik_node.ros.services.compute_fk import ComputeFk
from ik_node.ros.services.compute_ik import ComputeIk
from ik_node.services.error_codes import MoveItCode, ServiceError
from ik_node.services.group_solvers import GroupSolvers
from ik_node.solvers import IkResult

#: Most service statuses a second on /diagnostics (a change of level always goes out).
STATUS_RATE_HZ = 10.0
#: Seconds after a model arrives at which the configured group's solvers are built, when no
#: request has built them before (the first request then needs no build).
WARM_UP_DELAY_S = 5.0
_SPIN_PERIOD_S = 0.05
#: How much lower than the node's the services' process's scheduling priority is.
NICENESS = 5


class ServiceHost:
    """The services' node, the groups' solvers of the model in force, ``/diagnostics``.

    Args:
        offer: :class:`~ik_node.ros.services.registration.Offer` (names resolved by the node).
    """

    def __init__(self, offer) -> None:
        self.offer = offer
        self._lock = threading.Lock()
        self._pending: Optional[tuple] = None  # (config, world, group_name, state) to build
        self._solvers: Optional[GroupSolvers] = None
        self._no_model = 'no robot model yet (the node waits for its description)'
        self._warm_at: Optional[float] = None
        self.node = rclpy.create_node(offer.node_name, namespace=offer.namespace,
                                      use_global_arguments=False,
                                      start_parameter_services=False)
        self._logger = self.node.get_logger()
        self._state = None  # (MeasuredState, timeout [s]) of the node's state_topic
        from ik_node.ros.inputs.tf_frames import TfFrames
        self._tf = TfFrames(self.node)
        self._diagnostics = self.node.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self._last_status = (-1.0, None)
        self.served = False

    # --------------------------------------------------------------- the model in force
    def use_model(self, config, world: Dict, group_name: str, state_topic: str,
                  state_timeout_s: float) -> None:
        """Answer from ``config``'s model (None: none) from the next request on; the first call
        creates the services."""
        with self._lock:
            self._pending = (config, dict(world), group_name)
            self._warm_at = time.monotonic() + WARM_UP_DELAY_S
        self._follow_state(state_topic, state_timeout_s)
        if not self.served:
            self.served = True
            for srv_type, name, handler in ((GetPositionIK, 'compute_ik', ComputeIk(self)),
                                            (GetPositionFK, 'compute_fk', ComputeFk(self)),
                                            (GetCartesianPath, 'compute_cartesian_path',
                                             ComputeCartesianPath(self))):
                self.node.create_service(srv_type, self.offer.names[name], handler)
            self._logger.info(f'MoveIt services: {", ".join(self.offer.names.values())}')

    def _follow_state(self, topic: str, timeout_s: float) -> None:
        from ik_node.ros.inputs.measured_state import MeasuredState
        current = self._state[0] if self._state is not None else None
        if current is not None and current.topic == topic:
            self._state = (current, timeout_s)
            return
        if current is not None:
            current.destroy()
        self._state = (MeasuredState(self.node, topic), timeout_s) if topic else None

    def solvers(self) -> GroupSolvers:
        """The groups' solvers of the model in force (built on first use).

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
        """The measured joint positions of ``chain``'s joints (fresh, clipped), or None."""
        if self._state is None:
            return None
        state, timeout_s = self._state
        q, _ = state.seed(chain.joint_names, timeout_s)
        return None if q is None else chain.clip(q)

    def lookup(self, base_link: str):
        """``lookup(frame) -> T_base_frame`` through TF, or None without tf2_ros."""
        if not self._tf.available:
            return None
        from ik_node.ros.inputs.targets import TfWarmingUp
        tf = self._tf

        def lookup(frame: str) -> np.ndarray:
            try:
                T = tf.lookup(base_link, frame, (0, 0), self.offer.tf_timeout_s)
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
        status.name = f'{self.offer.status_name}: {service}'
        status.hardware_id = self.offer.status_name
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
        sec, nanosec = divmod(self.node.get_clock().now().nanoseconds, 1_000_000_000)
        msg.header.stamp = TimeMsg(sec=sec, nanosec=nanosec)
        msg.status = [status]
        self._diagnostics.publish(msg)

    def warn(self, text: str) -> None:
        """A warning in the log (at most once a second)."""
        self._logger.warning(text, throttle_duration_sec=1.0)

    def warm_up(self) -> None:
        """Build the configured group's solvers and restart seeds once the model has been in
        force a while."""
        if self._warm_at is None or time.monotonic() < self._warm_at:
            return
        self._warm_at = None
        try:
            solvers = self.solvers()
            group = solvers.group('')
            solvers.solver(group, False)
            solvers.solver(group, True)
            solvers.near_seeds(solvers.chain(group))
        except Exception as exc:  # said on the next request
            self._logger.warning(f'the configured group cannot be solved: {exc}')

    def close(self) -> None:
        self._tf.close()
        self.node.destroy_node()


#: Codes of requests refused before any solve (ERROR on /diagnostics); the others are WARN.
_REFUSALS = {MoveItCode.FAILURE, MoveItCode.INVALID_GROUP_NAME, MoveItCode.INVALID_LINK_NAME,
             MoveItCode.INVALID_ROBOT_STATE, MoveItCode.INVALID_GOAL_CONSTRAINTS,
             MoveItCode.FRAME_TRANSFORM_FAILURE}


def _code_name(code: Any) -> str:
    try:
        return MoveItCode(int(code)).name
    except ValueError:
        return str(int(code))


def _read_orders(stream, orders: list, wake: threading.Event) -> None:
    """Unpickle orders from ``stream`` into ``orders`` until it closes (then a ``stop``)."""
    try:
        while True:
            orders.append(pickle.load(stream))
            wake.set()
    except Exception:  # EOF: the node is gone
        orders.append(('stop',))
        wake.set()


def main() -> int:
    """Serve until stdin closes or a ``stop`` order comes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the node ends us by closing our stdin
    try:  # where both want a core, the target stream's process gets it first
        os.nice(NICENESS)
    except OSError:
        pass
    orders: list = []
    wake = threading.Event()
    threading.Thread(target=_read_orders, args=(sys.stdin.buffer, orders, wake),
                     daemon=True).start()
    wake.wait()
    kind, offer = orders.pop(0)
    if kind != 'offer':
        return 0
    from rclpy.signals import SignalHandlerOptions
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    host = ServiceHost(offer)
    try:
        from rclpy.experimental import EventsExecutor
        executor = EventsExecutor()
    except ImportError:  # Humble, Iron, early Jazzy
        from rclpy.executors import SingleThreadedExecutor
        executor = SingleThreadedExecutor()
    executor.add_node(host.node)
    try:
        while True:
            while orders:
                order = orders.pop(0)
                if order[0] == 'stop':
                    return 0
                host.use_model(*order[1:])
            executor.spin_once(timeout_sec=_SPIN_PERIOD_S)
            host.warm_up()
    finally:
        executor.shutdown(timeout_sec=1.0)
        host.close()
        rclpy.try_shutdown()


if __name__ == '__main__':
    sys.exit(main())
