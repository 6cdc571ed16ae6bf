"""What flows into the node: targets, the measured joint state, the robot description, TF.

:class:`NodeInputs` is the node's one object for them: it follows the configuration in force
(which topics, which tips) and answers the solve's questions (the seed, a frame outside the
URDF). Each class owns its subscriptions on the node it is given and hands plain values to
callbacks; none of them solves anything.
"""

from __future__ import annotations

import math
import struct
import threading
import time
from collections import deque
from functools import partial
from typing import Callable, Deque, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
from geometry_msgs.msg import PointStamped, PoseArray, PoseStamped
from rclpy.node import Node
from rclpy.qos import (DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data)
from rclpy.serialization import deserialize_message
from rclpy.time import Time
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from ik_node.config.ros_graph import GraphConfig
from ik_node.errors import TargetError
from ik_node.model.chain import Chain, rotation_from_quat_xyzw
from ik_node.ros import target_cdr
from ik_node.ros.targets import (FrameLookup, Target, TfWarmingUp, stamp_text, target_from_point,
                                 target_from_pose, targets_from_poses)

#: How many target messages of one subscription wait to be solved, in DDS's reader queue and
#: in the node's: 50 ms of a 1 kHz stream, so a stall of the node's executor (or a burst of the
#: sender) loses none of them.
TARGET_QUEUE_DEPTH = 50
#: How long a target message may wait in the node's queue [s] and still be solved in its turn
#: while the node's executor thread is busy (:data:`TARGET_BUSY_SHARE`): the node cannot keep
#: up, and skips to the newest message of a subscription whose oldest waited longer (the ones
#: between count as skipped).
TARGET_FRESH_S = 0.02
#: How long a target message may wait in the node's queue [s] and still be solved in its turn
#: while the executor thread is not busy (the wait came from a stall or a burst, which the node
#: catches up with); a full queue (:data:`TARGET_QUEUE_DEPTH`) skips to the newest at once.
TARGET_MAX_WAIT_S = 0.1
#: The executor thread counts as busy when it spent at least this share of the last
#: :data:`TARGET_LOAD_WINDOW_S` on the CPU (its own CPU time: time the machine gave to others
#: does not count).
TARGET_BUSY_SHARE = 0.9
#: The window [s] over which the executor thread's CPU share is measured.
TARGET_LOAD_WINDOW_S = 0.25
TARGET_QOS = QoSProfile(depth=TARGET_QUEUE_DEPTH, reliability=ReliabilityPolicy.RELIABLE)
# How long after the TF listener is made a target whose transform is not there yet is kept and
# tried again, not refused: the listener's new subscriptions must be discovered by the TF
# publishers before any transform arrives. Measured with Fast DDS on one host: 20 ms once the
# node has run a few seconds, 1.3-3 s right after its start (a target sent as soon as the node
# answers).
TF_WARM_UP_S = 5.0

#: As robot_state_publisher publishes ``robot_description``: latched.
DESCRIPTION_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)


class TargetSubscriptions:
    """``~/target_pose`` and ``~/target_point`` (per tip ``~/<tip>/...`` for a branched chain),
    and ``~/target_poses``: one ``geometry_msgs/PoseArray`` holding every tip's target.

    With ``wake``, messages are taken serialized and queued per subscription (at most
    :data:`TARGET_QUEUE_DEPTH`); each :meth:`drain` hands on the oldest message of every
    subscription, in the order they arrived (turning it into targets from the bytes,
    :mod:`ik_node.ros.target_cdr`, without a Python message), so a stream the solves keep up
    with is answered message by message, a burst absorbed. A subscription whose oldest message
    waited longer than :data:`TARGET_FRESH_S` while the thread that drains is busy (a stream
    faster than the solves), or longer than :data:`TARGET_MAX_WAIT_S`, or whose queue is full,
    is behind: :meth:`drain` skips to its newest message, so no backlog builds up.
    Taking a message costs a few microseconds, so a flood never builds a queue of callbacks in
    the executor in front of a parameter request. Without ``wake`` every message is converted
    and handed on as it arrives.

    Args:
        node: the node owning the subscriptions.
        callback: called with the targets of one message (one, or one per tip).
        callback_group: of the subscriptions.
        on_error: ``on_error(message, frame_id, stamp_text)`` for a message refused whole (a
            PoseArray without one pose per tip); nothing of it reaches ``callback``.
        wake: called (from the subscription's callback) when a message was kept: someone
            should :meth:`drain` soon.
        on_skipped: ``on_skipped(n)``: kept messages of ``n`` targets in all were skipped (a
            newer one of the same subscription is handed on instead).
        fresh_s, max_wait_s, busy_share: how long a kept message may wait and still be
            handed on in its turn while the draining thread is busy, and while it is not, and
            the CPU share that makes it busy (None: :data:`TARGET_FRESH_S`,
            :data:`TARGET_MAX_WAIT_S`, :data:`TARGET_BUSY_SHARE`).
    """

    def __init__(self, node: Node, callback: Callable[..., None], callback_group=None,
                 on_error: Optional[Callable[[str, str, str], None]] = None,
                 wake: Optional[Callable[[], None]] = None,
                 on_skipped: Optional[Callable[[int], None]] = None,
                 fresh_s: Optional[float] = None, max_wait_s: Optional[float] = None,
                 busy_share: Optional[float] = None) -> None:
        self._node, self._callback, self._group = node, callback, callback_group
        self._on_error = on_error
        self._fresh_s, self._max_wait_s, self._busy_share = fresh_s, max_wait_s, busy_share
        # the draining thread's CPU share: (thread, window start, its CPU time then), busy
        self._load: Tuple[int, float, float] = (0, 0.0, 0.0)
        self.busy = False
        self._wake, self._on_skipped = wake, on_skipped
        self._subs: List = []
        self._kept_lock = threading.Lock()
        # subscription -> its messages: (arrival, monotonic t, targets, type, handler, from_cdr,
        # bytes), oldest first
        self._kept: Dict[int, Deque[tuple]] = {}
        self.waiting = 0  # messages kept, in all of them
        self._arrived = 0

    def make(self, tips: Sequence[Optional[str]], tip_links: Sequence[str]) -> None:
        """(Re)create the subscriptions for ``tips`` (``[None]``: the serial chain's one tip)
        and ``~/target_poses`` for ``tip_links`` (poses in their order)."""
        self.destroy()
        names = tuple(tip_links)
        slots = tuple(tips)
        read = self._read_cdr
        self._subscribe(PoseArray, '~/target_poses',
                        lambda msg: self._on_pose_array(msg, names, slots),
                        partial(read, read=target_cdr.pose_array, hand_on=lambda frame_id,
                                stamp, poses: self._hand_on_poses(poses, frame_id, stamp,
                                                                  names, slots)),
                        len(names))
        for tip in tips:
            prefix = f'~/{tip}/' if tip else '~/'
            self._subscribe(PoseStamped, prefix + 'target_pose',
                            lambda msg, tip=tip: self._callback(target_from_pose(msg, tip)),
                            partial(read, read=target_cdr.pose_stamped,
                                    hand_on=partial(self._pose, tip)), 1)
            self._subscribe(PointStamped, prefix + 'target_point',
                            lambda msg, tip=tip: self._callback(target_from_point(msg, tip)),
                            partial(read, read=target_cdr.point_stamped,
                                    hand_on=partial(self._point, tip)), 1)

    def _subscribe(self, msg_type, topic: str, handler: Callable, from_cdr: Callable,
                   targets: int) -> None:
        """A subscription whose messages go to ``handler`` (a message) or, kept serialized,
        to ``from_cdr`` (the bytes: True if it read them, False to have them deserialized
        for ``handler``)."""
        if self._wake is None:
            self._subs.append(self._node.create_subscription(
                msg_type, topic, handler, TARGET_QOS, callback_group=self._group))
            return
        key = len(self._subs)
        kept = self._kept.setdefault(key, deque())

        def keep(data: bytes) -> None:
            now = time.monotonic()
            with self._kept_lock:
                if self._kept.get(key) is not kept:  # a message in flight when the
                    return  # subscription was replaced (new tips): it goes with it
                self._arrived += 1
                kept.append((self._arrived, now, targets, msg_type, handler, from_cdr, data))
                full = len(kept) > TARGET_QUEUE_DEPTH
                if full:
                    kept.popleft()
                else:
                    self.waiting += 1
            if full and self._on_skipped is not None:
                self._on_skipped(targets)
            self._wake()
        self._subs.append(self._node.create_subscription(
            msg_type, topic, keep, TARGET_QOS, callback_group=self._group, raw=True))

    @property
    def kept(self) -> bool:
        """True while a kept message waits for :meth:`drain` (:attr:`waiting`: how many)."""
        return self.waiting > 0

    def drain(self) -> None:
        """Hand on the oldest kept message of every subscription (their targets to
        ``callback``, a refusal to ``on_error``), in the order they arrived; of a subscription
        that is behind (see the class), its newest instead (the older ones are skipped)."""
        skipped = 0
        with self._kept_lock:
            if not self.waiting:
                return
            now = time.monotonic()
            self._measure_load(now)
            if self.waiting == 1:  # the common case: a stream the node keeps up with
                out = []
                for queue in self._kept.values():
                    if queue:
                        out.append(queue.popleft())
                        break
                self.waiting = 0
            else:
                out, skipped = self._take_oldest(now)
        if skipped and self._on_skipped is not None:
            self._on_skipped(skipped)
        for _, _, _, msg_type, handler, from_cdr, data in out:
            try:
                if not from_cdr(data):
                    handler(deserialize_message(data, msg_type))
            except Exception as exc:  # a message that does not convert must not stop the node
                if self._on_error is not None:
                    self._on_error(f'bad target message: {type(exc).__name__}: {exc}', '', '')

    def _take_oldest(self, now: float) -> Tuple[List[tuple], int]:
        """(Lock held) :meth:`drain`'s take of several kept messages: the oldest of every
        subscription, or its newest where it is behind, in the order they arrived, and how
        many targets the messages skipped held."""
        if self.busy:
            wait_s = TARGET_FRESH_S if self._fresh_s is None else self._fresh_s
        else:
            wait_s = TARGET_MAX_WAIT_S if self._max_wait_s is None else self._max_wait_s
        stale = now - wait_s
        out, skipped = [], 0
        for queue in self._kept.values():
            if not queue:
                continue
            if queue[0][1] < stale or len(queue) >= TARGET_QUEUE_DEPTH:
                while len(queue) > 1:
                    skipped += queue.popleft()[2]
                    self.waiting -= 1
            out.append(queue.popleft())
        self.waiting -= len(out)
        if len(out) > 1:
            out.sort(key=lambda item: item[0])
        return out, skipped

    def _measure_load(self, now: float) -> None:
        """Update :attr:`busy` (the draining thread spent at least the busy share of the last
        window on the CPU) when a window has passed; a window starts again in another thread."""
        thread, start, cpu0 = self._load
        ident = threading.get_ident()
        if ident != thread:
            self._load = (ident, now, time.thread_time())
            return
        if now - start >= TARGET_LOAD_WINDOW_S:
            cpu = time.thread_time()
            share = TARGET_BUSY_SHARE if self._busy_share is None else self._busy_share
            self.busy = cpu - cpu0 >= share * (now - start)
            self._load = (ident, now, cpu)

    @staticmethod
    def _read_cdr(data: bytes, read: Callable, hand_on: Callable) -> bool:
        """``hand_on(*read(data))``: True; False where ``read`` (of :mod:`target_cdr`) cannot
        read the bytes (another encapsulation, or not such a message), which rclpy then
        deserializes (and refuses with its own error)."""
        try:
            values = read(data)
        except (struct.error, UnicodeDecodeError):
            return False
        if values is None:
            return False
        hand_on(*values)
        return True

    def _point(self, tip: Optional[str], frame_id: str, stamp: Tuple[int, int], xyz) -> None:
        self._callback(Target(np.array(xyz), None, frame_id, tip, stamp))

    def _pose(self, tip: Optional[str], frame_id: str, stamp: Tuple[int, int], pose) -> None:
        self._callback(Target(np.array(pose[:3]), np.array(pose[3:]), frame_id, tip, stamp))

    def _on_pose_array(self, msg: PoseArray, names: Tuple[str, ...],
                       slots: Tuple[Optional[str], ...]) -> None:
        poses = [(p.x, p.y, p.z, o.x, o.y, o.z, o.w)
                 for p, o in ((pose.position, pose.orientation) for pose in msg.poses)]
        self._hand_on_poses(poses, msg.header.frame_id,
                            (msg.header.stamp.sec, msg.header.stamp.nanosec), names, slots)

    def _hand_on_poses(self, poses, frame_id: str, stamp: Tuple[int, int],
                       names: Tuple[str, ...], slots: Tuple[Optional[str], ...]) -> None:
        """The targets of a PoseArray's values to ``callback``, or its refusal to ``on_error``."""
        try:
            targets = targets_from_poses(poses, frame_id, stamp, names, slots)
        except TargetError as exc:
            if self._on_error is not None:
                self._on_error(f'bad target_poses: {exc}', frame_id, stamp_text(stamp))
            return
        self._callback(*targets)

    @property
    def topics(self) -> List[str]:
        return [s.topic_name for s in self._subs]

    def destroy(self) -> None:
        for sub in self._subs:
            self._node.destroy_subscription(sub)
        self._subs = []
        with self._kept_lock:
            self._kept, self.waiting = {}, 0


class MeasuredState:
    """The robot's measured joint positions from a ``sensor_msgs/JointState`` topic.

    Messages may carry any subset of joints, and other joints: positions are merged by name,
    each with the time it arrived. :meth:`seed` answers with the chain's joints when every one of
    them is known and fresh.
    """

    def __init__(self, node: Node, topic: str) -> None:
        self._node = node
        self._lock = threading.Lock()
        self._positions: Dict[str, Tuple[float, float]] = {}  # name -> (position, monotonic t)
        self.topic = topic
        self._sub = node.create_subscription(JointState, topic, self._on_state,
                                             qos_profile_sensor_data)

    def _on_state(self, msg: JointState) -> None:
        now = time.monotonic()
        with self._lock:
            for name, value in zip(msg.name, msg.position):
                if math.isfinite(value):
                    self._positions[name] = (float(value), now)

    def seed(self, joint_names: Sequence[str], timeout_s: float
             ) -> Tuple[Optional[np.ndarray], str]:
        """``(q, note)``: the measured positions of ``joint_names`` or None, and why not.

        ``note`` is ``'measured'`` when q is given, else what is missing or stale.
        """
        now = time.monotonic()
        with self._lock:
            known = [self._positions.get(n) for n in joint_names]
        missing = [n for n, k in zip(joint_names, known) if k is None]
        if missing:
            return None, (f'no measured state yet for {", ".join(missing)} on {self.topic}'
                          if len(missing) < len(joint_names) else
                          f'no measured state yet on {self.topic}')
        age = now - min(t for _, t in known)
        if age > timeout_s:
            return None, f'measured state on {self.topic} is stale ({age:.2f} s > {timeout_s} s)'
        return np.array([v for v, _ in known], dtype=float), 'measured'

    def destroy(self) -> None:
        self._node.destroy_subscription(self._sub)


class DescriptionListener:
    """URDF XML from a ``std_msgs/String`` topic (transient local, as robot_state_publisher)."""

    def __init__(self, node: Node, topic: str, callback: Callable[[str], None]) -> None:
        self._node = node
        self.topic = topic
        self._sub = node.create_subscription(String, topic, lambda msg: callback(msg.data),
                                             DESCRIPTION_QOS)

    def destroy(self) -> None:
        self._node.destroy_subscription(self._sub)


def tf_available() -> bool:
    """True where tf2_ros can be imported (every ROS 2 install; not the pip wheels)."""
    try:
        import tf2_ros  # noqa: F401
    except ImportError:
        return False
    return True


def _spin_until_shutdown(executor) -> None:
    """The TF listener's thread: spin until :meth:`TfFrames.close` shuts ``executor`` down (or
    the context ends: rclpy's ExternalShutdownException, and any error of a shutdown while
    spinning, end the thread quietly)."""
    try:
        executor.spin()
    except Exception:
        pass


class TfFrames:
    """Places frames outside the URDF in the chain's base frame through TF.

    The listener is made only when the first target names such a frame (targets in the base
    frame or a link of the URDF never need TF): until then the node does not subscribe to
    ``/tf`` and ``/tf_static``, which on a real robot carry the whole TF stream. The listener's
    subscriptions are spun in a thread of their own, by an executor of the node's own context
    (tf2_ros's ``spin_thread`` makes one of the default context, which fails for a node of
    another): a lookup waits up to ``tf_timeout`` while that thread keeps the buffer filling,
    which the node's own executor could not while it runs the waiting callback.

    Until :data:`TF_WARM_UP_S` after the listener is made, a lookup that fails returns
    :class:`~ik_node.ros.targets.TfWarmingUp` instead of raising :class:`TargetError`: the
    buffer stays empty until DDS has matched the new subscriptions with the TF publishers, and
    the node keeps such a target and tries it again (without blocking its executor) instead of
    refusing a transform that is being published.

    :meth:`close` stops that thread and drops the subscriptions before the node is destroyed and
    the context shut down (tf2_ros releases without ros2/geometry2 #930 end their own thread
    there with an ``ExternalShutdownException`` traceback).

    Without tf2_ros (a pip install) every lookup is refused with a message saying so.
    """

    def __init__(self, node: Node) -> None:
        self._node = node
        self._buffer = self._listener = None
        self._made_at = -math.inf
        self._executor = self._thread = None
        self._lock = threading.Lock()
        try:
            import tf2_ros
        except ImportError:
            self._tf2 = None
            return
        self._tf2 = tf2_ros

    @property
    def available(self) -> bool:
        """True where tf2_ros can be imported."""
        return self._tf2 is not None

    @property
    def listening(self) -> bool:
        """True once a listener exists (a target named a frame outside the URDF)."""
        return self._listener is not None

    def _buffer_listening(self):
        """The buffer, its listener made on first use."""
        with self._lock:
            if self._buffer is None:
                from rclpy.executors import SingleThreadedExecutor
                buffer = self._tf2.Buffer()
                self._listener = self._tf2.TransformListener(buffer, self._node,
                                                             spin_thread=False)
                executor = SingleThreadedExecutor(context=self._node.context)
                executor.add_node(self._node)
                self._thread = threading.Thread(target=_spin_until_shutdown, args=(executor,),
                                                name='ik_node_tf', daemon=True)
                self._executor = executor
                self._thread.start()
                self._buffer = buffer
                self._made_at = time.monotonic()
            return self._buffer

    def close(self) -> None:
        """Stop the listener's thread and drop its subscriptions (before the node is destroyed
        and the context shut down); a lookup after this makes a new listener."""
        with self._lock:
            listener, self._listener, self._buffer = self._listener, None, None
            executor, thread = self._executor, self._thread
            self._executor = self._thread = None
        if listener is None:
            return
        if executor is not None:
            executor.shutdown()
        if thread is not None:
            thread.join(timeout=5.0)
        listener.unregister()

    def lookup(self, base_frame: str, frame: str, stamp: Tuple[int, int],
               timeout_s: float) -> Union[np.ndarray, TfWarmingUp]:
        """``T_base_frame`` (4x4) at ``stamp`` (the latest transform for a zero stamp), or
        :class:`~ik_node.ros.targets.TfWarmingUp` when there is no transform yet within
        :data:`TF_WARM_UP_S` of the listener's start.

        Raises:
            TargetError: tf2_ros missing, a frame TF does not know, no transform in time.
        """
        if self._tf2 is None:
            raise TargetError(f'target frame {frame!r} is not a link of the URDF, and frames '
                              'outside the URDF need tf2_ros (source a ROS 2 install); send the '
                              'target in a link frame of the URDF')
        buffer = self._buffer_listening()
        when = Time() if stamp == (0, 0) else Time(seconds=stamp[0], nanoseconds=stamp[1])
        from rclpy.duration import Duration
        try:
            tf = buffer.lookup_transform(base_frame, frame, when,
                                         timeout=Duration(seconds=timeout_s))
        except Exception as exc:  # tf2 raises LookupException, ExtrapolationException, ...
            message = (f'no TF transform from {frame!r} to {base_frame!r} at '
                       f'{stamp_text(stamp)}: {type(exc).__name__}: '
                       f'{" ".join(str(exc).split())}')
            if time.monotonic() < self._made_at + TF_WARM_UP_S:
                return TfWarmingUp(message)
            raise TargetError(message) from None
        t, r = tf.transform.translation, tf.transform.rotation
        T = np.eye(4)
        T[:3, :3] = rotation_from_quat_xyzw([r.x, r.y, r.z, r.w])
        T[:3, 3] = [t.x, t.y, t.z]
        if not np.all(np.isfinite(T)):
            raise TargetError(f'the TF transform from {frame!r} to {base_frame!r} is not finite')
        return T


class NodeInputs:
    """Everything the node reads: target topics, measured state, robot description topic, TF.

    Args:
        node: the node owning the subscriptions.
        on_target: called with the :class:`~ik_node.ros.targets.Target` s of every target
            message received (one, or every tip's from ``~/target_poses``).
        on_description: called with the URDF XML of every ``robot_description`` message.
        callback_group: of the target subscriptions (reentrant: a target may be taken while
            another callback solves).
        on_error: ``on_error(message, frame_id, stamp_text)`` for a target message refused
            whole on arrival.
        wake, on_skipped: as :class:`TargetSubscriptions` takes them (with ``wake``, target
            messages are kept serialized until :attr:`target_messages` drains them).
    """

    def __init__(self, node: Node, on_target: Callable[..., None],
                 on_description: Callable[[str], None], callback_group=None,
                 on_error: Optional[Callable[[str, str, str], None]] = None,
                 wake: Optional[Callable[[], None]] = None,
                 on_skipped: Optional[Callable[[int], None]] = None) -> None:
        self._node, self._on_description = node, on_description
        self._targets = TargetSubscriptions(node, on_target, callback_group, on_error, wake,
                                            on_skipped)
        self._tips: Optional[Tuple[Optional[str], ...]] = None
        self._tip_links: Tuple[str, ...] = ()
        self._tf = TfFrames(node)
        self._state: Optional[MeasuredState] = None
        self._description: Optional[DescriptionListener] = None
        self._state_timeout_s = 0.0
        self._tf_timeout_s = 0.0
        self._lookup: Optional[tuple] = None  # (base frame, timeout, the lookup) made last

    def follow(self, graph: GraphConfig, has_model: bool) -> None:
        """Create, replace or drop the measured-state and description subscriptions as
        ``graph`` says; the description topic is read only while the parameters give no model
        (``has_model`` False)."""
        self._state_timeout_s, self._tf_timeout_s = graph.state_timeout, graph.tf_timeout
        have_state = self._state.topic if self._state is not None else ''
        if graph.state_topic != have_state:
            if self._state is not None:
                self._state.destroy()
            self._state = MeasuredState(self._node, graph.state_topic) \
                if graph.state_topic else None
        want_topic = '' if has_model else graph.description_topic
        if want_topic != self.description_topic:
            if self._description is not None:
                self._description.destroy()
            self._description = DescriptionListener(self._node, want_topic,
                                                    self._on_description) \
                if want_topic else None

    def subscribe_targets(self, tips: Sequence[str], branched: bool) -> None:
        """Target subscriptions for the tips (one set per tip for a branched chain, else the
        chain's one set); kept when the tips do not change."""
        wanted = tuple(tips) if branched else (None,)
        if wanted != self._tips or tuple(tips) != self._tip_links:
            self._targets.make(wanted, tips)
            self._tips, self._tip_links = wanted, tuple(tips)

    @property
    def target_messages(self) -> TargetSubscriptions:
        """The target subscriptions, whose kept messages the node drains (the same object for
        the node's life; its subscriptions follow :meth:`subscribe_targets`)."""
        return self._targets

    @property
    def target_topics(self) -> List[str]:
        """The topics targets are read from."""
        return self._targets.topics

    @property
    def description_topic(self) -> str:
        """The topic the robot description is read from ('' when not read)."""
        return self._description.topic if self._description is not None else ''

    def measured(self, chain: Chain) -> Tuple[Optional[np.ndarray], str]:
        """``(q, note)``: the measured joint positions of ``chain`` clipped into its limits, or
        None with the reason the last solution seeds instead."""
        if self._state is None:
            return None, 'last solution'
        q, note = self._state.seed(chain.joint_names, self._state_timeout_s)
        return (None, f'last solution ({note})') if q is None else (chain.clip(q), note)

    @property
    def tf_listening(self) -> bool:
        """True once the TF listener exists (a target named a frame outside the URDF)."""
        return self._tf.listening

    def close(self) -> None:
        """Stop what runs beside the node's executor (the TF listener's thread): call before the
        node is destroyed."""
        self._tf.close()

    def frame_lookup(self, base_frame: str) -> Optional[FrameLookup]:
        """``lookup(frame, stamp) -> T_base_frame`` (or :class:`~ik_node.ros.targets.TfWarmingUp`)
        through TF, None without tf2_ros."""
        if not self._tf.available:
            return None
        made = self._lookup
        if made is None or made[0] != base_frame or made[1] != self._tf_timeout_s:
            tf, timeout_s = self._tf, self._tf_timeout_s
            made = self._lookup = (base_frame, timeout_s, lambda frame, stamp: tf.lookup(
                base_frame, frame, stamp, timeout_s))
        return made[2]
