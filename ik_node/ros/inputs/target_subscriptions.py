"""The target topics: ``~/target_pose``, ``~/target_point`` (per tip for a branched chain) and
``~/target_poses``, their messages kept serialized until the node drains them.
"""

from __future__ import annotations

import struct
import threading
import time
from collections import deque
from functools import partial
from typing import Callable, Deque, Dict, List, Optional, Sequence, Tuple

import numpy as np
from geometry_msgs.msg import PointStamped, PoseArray, PoseStamped
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message

from ik_node.errors import TargetError
from ik_node.ros.inputs import target_cdr
from ik_node.ros.inputs.target_flow import TargetFlow
from ik_node.ros.inputs.targets import (Target, stamp_text, target_from_point, target_from_pose,
                                        targets_from_poses)

#: How many target messages of one subscription wait to be solved, in DDS's reader queue and
#: in the node's: 50 ms of a 1 kHz stream, so a stall of the node's executor (or a burst of the
#: sender) loses none of them.
TARGET_QUEUE_DEPTH = 50
TARGET_QOS = QoSProfile(depth=TARGET_QUEUE_DEPTH, reliability=ReliabilityPolicy.RELIABLE)


class TargetSubscriptions:
    """``~/target_pose`` and ``~/target_point`` (per tip ``~/<tip>/...`` for a branched chain),
    and ``~/target_poses``: one ``geometry_msgs/PoseArray`` holding every tip's target.

    With ``wake``, messages are taken serialized and queued per subscription (at most
    :data:`TARGET_QUEUE_DEPTH`); each :meth:`drain` hands on the oldest message of every
    subscription, in the order they arrived (turning it into targets from the bytes,
    :mod:`ik_node.ros.inputs.target_cdr`, without a Python message), so a stream the solves
    keep up with is answered message by message, a burst absorbed. A subscription whose oldest
    message waited too long (the :class:`~ik_node.ros.inputs.target_flow.TargetFlow` policy: a
    stream faster than the solves, or a long stall), or whose queue is full, is behind:
    :meth:`drain` skips to its newest message, so no backlog builds up.
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
        flow: how long a kept message may wait and still be handed on in its turn (None: a
            :class:`~ik_node.ros.inputs.target_flow.TargetFlow` of the default times).
    """

    def __init__(self, node: Node, callback: Callable[..., None], callback_group=None,
                 on_error: Optional[Callable[[str, str, str], None]] = None,
                 wake: Optional[Callable[[], None]] = None,
                 on_skipped: Optional[Callable[[int], None]] = None,
                 flow: Optional[TargetFlow] = None) -> None:
        self._node, self._callback, self._group = node, callback, callback_group
        self._on_error = on_error
        self._flow = TargetFlow() if flow is None else flow
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
    def busy(self) -> bool:
        """True while the draining thread counts as busy (:class:`TargetFlow`)."""
        return self._flow.busy

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
            self._flow.measure(now)
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
        stale = self._flow.stale_before(now)
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
