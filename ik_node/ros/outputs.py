"""What flows out of the node: the solution (joint states or controller commands), diagnostics.

``ResultOutput`` publishes one solution in the configured form:

* ``joint_states`` — every moving joint of the URDF (the chain's solved, the others held), so
  robot_state_publisher has a transform for every link; re-published at ``publish_rate``.
* ``position_command`` — ``std_msgs/Float64MultiArray`` in ``command_joints`` order.
* ``joint_trajectory`` — one-point ``trajectory_msgs/JointTrajectory`` timed by the URDF velocity
  limits from the current (measured, else last sent) state.

Commands go out only for solved targets: never at start-up, never re-published by the timer.
"""

from __future__ import annotations

import math
import time
from typing import Callable, Dict, List, Optional, Sequence

from builtin_interfaces.msg import Duration as DurationMsg
from builtin_interfaces.msg import Time as TimeMsg
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ik_node.ros import messages as conv
from ik_node.model.chain import Chain
from ik_node.config.ros_graph import GraphConfig, UrdfJoint, command_order, held_positions, \
    trajectory_duration

#: ``/diagnostics`` is global on purpose: aggregators listen there; status names carry the
#: node's fully qualified name so namespaced nodes are told apart.
DIAGNOSTICS_TOPIC = '/diagnostics'
HEARTBEAT_PERIOD_S = 1.0


class OutputPlan:
    """Everything needed to turn a chain solution into the output message, checked up front.

    Raises (constructor):
        ConfigError: ``command_joints`` or ``hold_joint_names`` do not fit the chain/URDF.
    """

    def __init__(self, graph: GraphConfig, chain: Chain, urdf_joints: Sequence[UrdfJoint]):
        self.graph = graph
        self.chain_names = list(chain.joint_names)
        self.order = command_order(graph, self.chain_names)
        self.command_names = [self.chain_names[i] for i in self.order]
        held = held_positions(urdf_joints, self.chain_names, graph.hold)
        self.state_names = self.chain_names + list(held)
        self.held_values = [float(v) for v in held.values()]
        velocity = {j.name: j.velocity for j in urdf_joints}
        self.velocities = [velocity.get(n, math.inf) for n in self.command_names]
        # One message, refilled by joint_state(): its names are set once (rclpy validates every
        # string on assignment, which cost more than the rest of the message).
        self._joint_state = conv.joint_state_msg(self.state_names, [], TimeMsg())

    def joint_state(self, q: Sequence[float], stamp) -> JointState:
        """The JointState of ``q`` (chain order) and the held joints: the plan's one message,
        filled again; publish it before the next call (rclpy serialises it in ``publish``)."""
        msg = self._joint_state
        msg.header.stamp = stamp
        msg.position = [*(float(v) for v in q), *self.held_values]
        return msg

    def command(self, q: Sequence[float]) -> Float64MultiArray:
        msg = Float64MultiArray()
        msg.data = [float(q[i]) for i in self.order]
        return msg

    def trajectory(self, q: Sequence[float], q_now: Sequence[float]) -> JointTrajectory:
        target = [float(q[i]) for i in self.order]
        start = [float(q_now[i]) for i in self.order]
        seconds = trajectory_duration(start, target, self.velocities,
                                      self.graph.trajectory_velocity_scaling,
                                      self.graph.trajectory_min_duration)
        msg = JointTrajectory()
        msg.joint_names = list(self.command_names)
        point = JointTrajectoryPoint()
        point.positions = target
        sec = int(seconds)
        point.time_from_start = DurationMsg(sec=sec, nanosec=int(round((seconds - sec) * 1e9)))
        msg.points = [point]
        return msg


class ResultOutput:
    """The publisher of solutions, of the kind and on the topic the graph config says."""

    def __init__(self, node: Node, plan: OutputPlan, send: Callable) -> None:
        self._node, self._send = node, send
        self.plan = plan
        kind = plan.graph.output
        msg_type = {'joint_states': JointState, 'position_command': Float64MultiArray,
                    'joint_trajectory': JointTrajectory}[kind]
        self.kind, self.topic = kind, plan.graph.topic
        self._pub = node.create_publisher(msg_type, self.topic, 10)

    @property
    def steady(self) -> bool:
        """True when the timer re-publishes the current solution (joint_states only)."""
        return self.kind == 'joint_states'

    def publish(self, q: Sequence[float], q_now: Optional[Sequence[float]] = None) -> str:
        """Publish ``q`` (chain order); returns the JointState stamp as text ('' for commands).

        ``q_now`` (chain order) is where the robot is, for timing a trajectory point.
        """
        if self.kind == 'joint_states':
            stamp = self._node.get_clock().now().to_msg()
            self._send(self._pub, self.plan.joint_state(q, stamp))
            return conv.stamp_text((stamp.sec, stamp.nanosec))
        if self.kind == 'position_command':
            self._send(self._pub, self.plan.command(q))
        else:
            self._send(self._pub, self.plan.trajectory(q, q if q_now is None else q_now))
        return ''

    def destroy(self) -> None:
        self._node.destroy_publisher(self._pub)


class DiagnosticsOutput:
    """``/diagnostics``: rate-gated statuses, held ones flushed by the timer, a 1 s heartbeat."""

    def __init__(self, node: Node, send: Callable, rate_hz: float) -> None:
        self._node, self._send = node, send
        self._pub = node.create_publisher(DiagnosticArray, DIAGNOSTICS_TOPIC, 10)
        self.gate = conv.DiagnosticsGate(rate_hz)
        self.force = True
        self._last: Optional[DiagnosticArray] = None
        self._last_time = -math.inf

    def set_rate(self, rate_hz: float) -> None:
        self.gate = conv.DiagnosticsGate(rate_hz)
        self.force = True

    def offer(self, level: bytes, build: Callable, force: bool = False) -> bool:
        """Send ``build()`` now if the gate lets it through, else hold it. Caller holds the lock."""
        force = force or self.force
        send = self.gate.offer(time.monotonic(), level, build, force)
        if send:
            self.force = False
        return send

    def send(self, status) -> None:
        msg = conv.diagnostic_array(status, self._node.get_clock().now().to_msg())
        self._last, self._last_time = msg, time.monotonic()
        self._send(self._pub, msg)

    def flush(self) -> List:
        """Held builders whose time has come (caller holds the lock)."""
        return self.gate.flush(time.monotonic())

    def heartbeat(self) -> None:
        """Re-send the last status when nothing went out for a second (diagnostic monitors)."""
        if self._last is not None and time.monotonic() - self._last_time >= HEARTBEAT_PERIOD_S:
            self.send(self._last.status[0])


class StatusReports:
    """Publishing and reporting for the node (mixed into :class:`ik_node.ros.node.IkNode`): every
    publish goes through :meth:`_send`, every status through the rate gate of ``self._diag``."""

    def _send(self, publisher, msg) -> None:
        """Publish; a publish racing with shutdown (SIGINT/SIGTERM mid-callback) is dropped."""
        try:
            publisher.publish(msg)
        except Exception:
            if self.context.ok():
                raise

    def _status(self, level: bytes, message: str, values: Dict[str, str]):
        return conv.diagnostic_status(f'{self.get_fully_qualified_name().lstrip("/")}: ik',
                                      self._hardware_id(), level, message, values)

    def _offer(self, level: bytes, message: Callable[[], str],
               values: Callable[[], Dict[str, str]], force: bool = False) -> bool:
        """Publish a status now if the rate gate lets it through, else hold it for the timer.

        ``message`` and ``values`` are built only when needed (most solves of a fast stream
        are not reported individually).
        """
        def build():
            return self._status(level, message(), values())
        with self._lock:
            send = self._diag.offer(level, build, force)
        if send:
            self._diag.send(build())
        return send

    def _report_error(self, message: str, frame: str, target_stamp: str = '',
                      force: bool = False) -> None:
        self.get_logger().error(message, throttle_duration_sec=1.0)
        solver, skipped, count = self._config.solver, self._targets.skipped, self._solve_count
        self._offer(conv.ERROR, lambda: message,
                    lambda: conv.error_values(solver, frame, skipped, count, message,
                                              target_stamp), force)

    def _report_waiting(self, target_stamp: str = '', force: bool = False) -> None:
        """WARN: no robot model yet (a target, if any, is refused)."""
        topic = self._graph.description_topic
        message = f'waiting for robot_description on {topic}' + \
            (': target refused' if target_stamp else '')
        if target_stamp:
            self.get_logger().warning(message, throttle_duration_sec=2.0)
        values = {**conv.error_values(self._config.solver, '', self._targets.skipped,
                                      self._solve_count, message, target_stamp),
                  'status': 'waiting'}
        self._offer(conv.WARN, lambda: message, lambda: values, force)

    def _hardware_id(self) -> str:
        if self._model is None:
            return f'{self._model_name()}: waiting'
        config = self._model.config
        return f'{self._model_name()}: {config.base_link} -> {", ".join(config.tip_links)}'

    def _model_name(self) -> str:
        return self._config.urdf_file or 'robot_description'
