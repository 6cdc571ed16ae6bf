"""The solution out of the node: joint states or controller commands.

``SolutionOutput`` publishes one solution in the configured form:

* ``joint_states`` — every moving joint of the URDF (the chain's solved, the others held), so
  robot_state_publisher has a transform for every link; re-published at ``publish_rate``.
* ``position_command`` — ``std_msgs/Float64MultiArray`` in ``command_joints`` order.
* ``joint_trajectory`` — one-point ``trajectory_msgs/JointTrajectory`` timed by the URDF velocity
  limits from the current (measured, else last sent) state.

Commands go out only for solved targets: never at start-up, never re-published by the timer.
Every publish of the node goes through a :data:`Send` from :func:`send_unless_shut_down`.
"""

from __future__ import annotations

import math
import struct
import time
from typing import Any, Callable, Optional, Sequence, Tuple

import numpy as np
from builtin_interfaces.msg import Duration as DurationMsg
from builtin_interfaces.msg import Time as TimeMsg
from rclpy.clock import JumpThreshold
from rclpy.node import Node
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ik_node.config.ros_graph import GraphConfig, command_order, held_positions
from ik_node.errors import TargetError
from ik_node.model.chain import LIMIT_TOLERANCE, Chain
from ik_node.model.urdf_joints import UrdfJoint, trajectory_duration
from ik_node.ros.inputs.targets import stamp_text
from ik_node.solvers.input_checks import FLOAT64

#: ``send(publisher, msg)``: how the node's parts publish.
Send = Callable[[Any, Any], None]


def send_unless_shut_down(context) -> Send:
    """A :data:`Send` that drops a publish racing with shutdown (SIGINT/SIGTERM mid-callback)
    and raises any other failure."""
    def send(publisher, msg) -> None:
        try:
            publisher.publish(msg)
        except Exception:
            if context.ok():
                raise
    return send


def check_publishable(chain: Chain, q: np.ndarray) -> np.ndarray:
    """``q`` as a float array if it is finite and within the joint limits, else TargetError."""
    if type(q) is not np.ndarray or q.dtype is not FLOAT64 or q.shape != (chain.n,):
        q = np.asarray(q, dtype=float).reshape(-1)
        if q.shape != (chain.n,):
            raise TargetError(f'joint vector has {q.size} values; the chain has {chain.n} '
                              'joints')
    values = q.tolist()  # plain floats: for a handful of joints numpy's per-call cost dominates
    # A finite sum proves every value finite (an overflowing sum takes the value-by-value check)
    if not math.isfinite(sum(values)) and not all(math.isfinite(v) for v in values):
        raise TargetError(f'solution contains NaN or inf: {values}')
    lower, upper = chain.limits_with_tolerance
    for v, lo, hi in zip(values, lower, upper):
        if not lo <= v <= hi:
            bad = [f'{n}={v:.6g} not in [{lo:.6g}, {hi:.6g}]' for n, v, lo, hi in
                   zip(chain.joint_names, values, chain.lower, chain.upper)
                   if not lo - LIMIT_TOLERANCE <= v <= hi + LIMIT_TOLERANCE]
            raise TargetError(f'solution outside the joint limits: {", ".join(bad)}')
    return q


def joint_state_msg(names: Sequence[str], q: Sequence[float], stamp) -> JointState:
    """A ``sensor_msgs/JointState`` with names and positions [rad or m] (no velocity/effort)."""
    msg = JointState()
    msg.header.stamp = stamp
    msg.name = list(names)
    msg.position = [float(v) for v in q]
    return msg


class JointStateCdr:
    """A ``sensor_msgs/JointState`` of fixed joint names, serialized once (CDR, by rclpy); each
    answer writes its stamp and positions into a copy of those bytes, which the publisher sends
    as they are. Converting the message to C and serializing it again for every answer (every
    name string included) costs more than the rest of the publish.

    :meth:`of` finds the positions in rclpy's serialization of a probe message and checks that
    filled bytes deserialize to the message they stand for, else returns None (then the
    message itself is published).
    """

    _ORDERS = {b'\x00\x01': '<', b'\x00\x00': '>'}  # plain CDR, little / big endian

    def __init__(self, template: bytes, order: str, count: int, at: int) -> None:
        self._stamp = struct.Struct(order + 'iI')
        self._positions = struct.Struct(f'{order}{count}d')
        self._at = at
        # the message ends with the empty velocity and effort sequences: two counts
        self._template = template[:at + self._positions.size + 8]

    @classmethod
    def of(cls, names: Sequence[str]) -> Optional['JointStateCdr']:
        """The serialized JointState of ``names``, or None where rclpy's serialization is not
        one this class can fill (then the message is published)."""
        names = list(names)
        probe = [1.0 + 0.25 * k for k in range(len(names))]
        stamp = TimeMsg(sec=1_700_000_001, nanosec=123_456_789)
        template = serialize_message(joint_state_msg(names, probe, stamp))
        order = cls._ORDERS.get(template[:2])
        if order is None:
            return None
        at = template.find(struct.pack(f'{order}{len(names)}d', *probe))
        if at < 0 or struct.unpack_from(order + 'iI', template, 4) != (stamp.sec, stamp.nanosec):
            return None
        cdr = cls(template, order, len(names), at)
        q = [-0.5 - 0.125 * k for k in range(len(names))]
        try:
            msg = deserialize_message(cdr.data(12, 345, q), JointState)
        except Exception:
            return None
        if list(msg.name) != names or list(msg.position) != q or msg.velocity or \
                msg.effort or (msg.header.stamp.sec, msg.header.stamp.nanosec) != (12, 345) \
                or msg.header.frame_id:
            return None
        return cdr

    def data(self, sec: int, nanosec: int, positions: Sequence[float]) -> bytes:
        """The message stamped ``(sec, nanosec)`` with ``positions`` [rad or m], serialized."""
        buffer = bytearray(self._template)
        self._stamp.pack_into(buffer, 4, sec, nanosec)
        self._positions.pack_into(buffer, self._at, *positions)
        return bytes(buffer)


class Stamps:
    """The node clock's time as ``(sec, nanosec)``, read cheaply: the system clock (what the
    node's clock reads without simulated time) unless ROS time is active (``use_sim_time`` and
    a ``/clock``), then the node's clock. A callback of the clock follows every switch between
    the two, so an answer's stamp costs no rclpy ``Time`` object.
    """

    def __init__(self, node: Node) -> None:
        self._clock = node.get_clock()
        self._sim = False
        # on_clock_change: called when ROS time is activated or deactivated
        self._jump = self._clock.create_jump_callback(
            JumpThreshold(min_forward=None, min_backward=None, on_clock_change=True),
            post_callback=self._on_jump)
        self._sim = bool(getattr(self._clock, 'ros_time_is_active', False))

    def _on_jump(self, _jump) -> None:
        self._sim = bool(getattr(self._clock, 'ros_time_is_active', False))

    def now(self) -> Tuple[int, int]:
        """The clock's time now: ``(sec, nanosec)``."""
        if self._sim:
            return self._clock.now().seconds_nanoseconds()
        return divmod(time.time_ns(), 1_000_000_000)

    def close(self) -> None:
        """Drop the clock's callback."""
        if self._jump is not None:
            self._jump.unregister()
            self._jump = None


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
        self._joint_state = joint_state_msg(self.state_names, [], TimeMsg())
        self._joint_state_cdr = JointStateCdr.of(self.state_names)

    def joint_state(self, q: Sequence[float], stamp) -> JointState:
        """The JointState of ``q`` (chain order) and the held joints: the plan's one message,
        filled again; publish it before the next call (rclpy serialises it in ``publish``)."""
        msg = self._joint_state
        msg.header.stamp = stamp
        msg.position = [*(float(v) for v in q), *self.held_values]
        return msg

    def joint_state_data(self, q: Sequence[float], sec: int, nanosec: int):
        """:meth:`joint_state` stamped ``(sec, nanosec)``, serialized (bytes, as rclpy would
        serialize that message) where :class:`JointStateCdr` serves, else the message."""
        cdr = self._joint_state_cdr
        if cdr is None:
            return self.joint_state(q, TimeMsg(sec=sec, nanosec=nanosec))
        return cdr.data(sec, nanosec, [*q, *self.held_values])

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

    def __init__(self, node: Node, plan: OutputPlan, send: Send) -> None:
        self._node, self._send = node, send
        self.plan = plan
        kind = plan.graph.output
        msg_type = {'joint_states': JointState, 'position_command': Float64MultiArray,
                    'joint_trajectory': JointTrajectory}[kind]
        self.kind, self.topic = kind, plan.graph.topic
        self._pub = node.create_publisher(msg_type, self.topic, 10)
        self._stamps = Stamps(node) if kind == 'joint_states' else None

    @property
    def steady(self) -> bool:
        """True when the timer re-publishes the current solution (joint_states only)."""
        return self.kind == 'joint_states'

    def publish(self, q: Sequence[float], q_now: Optional[Sequence[float]] = None) -> str:
        """Publish ``q`` (chain order); returns the JointState stamp as text ('' for commands).

        ``q_now`` (chain order) is where the robot is, for timing a trajectory point.
        """
        if self.kind == 'joint_states':
            sec, nanosec = self._stamps.now()
            self._send(self._pub, self.plan.joint_state_data(q, sec, nanosec))
            return stamp_text((sec, nanosec))
        if self.kind == 'position_command':
            self._send(self._pub, self.plan.command(q))
        else:
            self._send(self._pub, self.plan.trajectory(q, q if q_now is None else q_now))
        return ''

    def destroy(self) -> None:
        if self._stamps is not None:
            self._stamps.close()
        self._node.destroy_publisher(self._pub)


class SolutionOutput:
    """The node's solution output: a :class:`ResultOutput` for the plan in force, replaced when
    a new plan changes the kind or the topic of the output.

    Before the first plan (no robot model yet) nothing is published.
    """

    def __init__(self, node: Node, send: Send) -> None:
        self._node, self._send = node, send
        self._output: Optional[ResultOutput] = None
        #: The output in force (``joint_states``, ``position_command``, ``joint_trajectory``;
        #: '' before the first plan).
        self.kind = ''

    def use(self, plan: OutputPlan) -> None:
        """Publish by ``plan`` from now on (a new publisher only for a new kind or topic)."""
        current = self._output
        if current is not None and current.kind == plan.graph.output and \
                current.topic == plan.graph.topic:
            current.plan = plan
            return
        # The new publisher first: when it cannot be made (a topic name rclpy refuses), the
        # old one stays in force rather than a destroyed one
        new = ResultOutput(self._node, plan, self._send)
        if current is not None:
            current.destroy()
        self._output, self.kind = new, new.kind

    @property
    def topic(self) -> str:
        return self._output.topic if self._output is not None else ''

    @property
    def steady(self) -> bool:
        """True when the timer re-publishes the current solution (joint_states only)."""
        return self._output is not None and self._output.steady

    def publish(self, q: Sequence[float], q_now: Optional[Sequence[float]] = None) -> str:
        """Publish ``q`` (chain order); returns the JointState stamp as text ('' for commands).

        ``q_now`` (chain order) is where the robot is, for timing a trajectory point.
        """
        return self._output.publish(q, q_now)

