"""Interactive IK targets: one draggable marker per tip in RViz, on ``~/target_marker``.

The server side of the protocol RViz's InteractiveMarkers display speaks, as the
interactive_markers library (2.5, Jazzy and Rolling) implements it; that library is not
installable from the registries, so this is a small re-implementation on visualization_msgs:

* ``<ns>/update`` (``InteractiveMarkerUpdate``; reliable, volatile, keep last 100 as the
  library's server and client): every change goes out as one ``UPDATE`` message (full markers,
  pose changes, erases) whose ``seq_num`` is one more than the previous update's. No
  ``KEEP_ALIVE``: the ROS 2 client ignores them and warns that servers no longer send them.
* ``<ns>/get_interactive_markers`` (``GetInteractiveMarkers``): every marker and the
  ``sequence_number`` of the last update, so a client drops the updates the answer already holds
  and then expects consecutive numbers (it starts over on a gap). Before any tip: no markers.
* ``<ns>/feedback`` (``InteractiveMarkerFeedback``; reliable, volatile, keep last 1 as the
  library's server: the newest drag wins): ``POSE_UPDATE`` (dragging) and ``MOUSE_UP``
  (released) go to ``on_target``. The server first moves its own copy of the marker there (a pose
  update, as the library does) so every client and the service agree. Bad feedback (unknown
  marker, NaN, zero quaternion) is refused with a clear error and nothing raises into the
  executor.

Markers are locked to the chain's base frame (header stamp zero): RViz follows that frame in TF
and sends feedback poses in it. A 6-DOF marker moves and rotates on all three axes; a
position-only one (position-only solver, branched chain) only moves and keeps its orientation.
The markers themselves are built in :mod:`ik_node.ros.rviz.interactive_marker_msgs`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable, Collection, Dict, List, Optional, Sequence, Tuple

import numpy as np
from rclpy.node import Node
from rclpy.qos import QoSProfile
from visualization_msgs.msg import (InteractiveMarker, InteractiveMarkerFeedback,
                                    InteractiveMarkerPose, InteractiveMarkerUpdate)
from visualization_msgs.srv import GetInteractiveMarkers

from ik_node.ros.rviz.interactive_marker_msgs import (DEFAULT_SCALE_M, IDENTITY_XYZW,
                                                      finite_floats, idle_marker,
                                                      interactive_marker, pose_from_input,
                                                      pose_msg)
from ik_node.solvers.base import ParamSpec

#: Node parameters of the interactive target (declared by the node, read where used).
INTERACTIVE_PARAMS: Dict[str, ParamSpec] = {
    'target_marker.snap_on_release': ParamSpec(
        bool, True, 'when a dragged target marker is released, move it to the pose the chain '
        'actually reached'),
}

DEFAULT_NAMESPACE = '~/target_marker'
#: interactive_markers' defaults on both sides (rclcpp::QoS(100) / QoSProfile(depth=100)).
UPDATE_QOS = QoSProfile(depth=100)
#: interactive_markers' server default (the RViz client publishes with depth 100).
FEEDBACK_QOS = QoSProfile(depth=1)

#: ``on_target(tip, position [m], quat_xyzw or None, frame_id, (sec, nanosec), released)``.
TargetCallback = Callable[[str, np.ndarray, Optional[np.ndarray], str, Tuple[int, int], bool],
                          None]


# ------------------------------------------------------------------------------------- server
@dataclass
class _Tip:
    name: str
    position: np.ndarray
    quat_xyzw: np.ndarray
    six_dof: bool
    plane_normal: Optional[np.ndarray] = None  # a planar chain's: the marker moves in the plane
    reached: Optional[bool] = None
    active: bool = True  # full handles; else its body alone (an idle tip of a branched chain)
    # The newest (position, quat_xyzw or None) a follow() left while no client listened: it is
    # normalised and applied when the tip is next read (_settle), not on every target.
    pending: Optional[tuple] = None


class InteractiveTargets:
    """Serves one interactive marker per tip and hands drags to ``on_target``.

    Thread-safe; ``on_target`` and ``on_error`` are called without the server's lock held, so
    they may call back into the server.

    Args:
        node: the node owning the publisher, service and subscription.
        namespace: the interactive markers namespace (``~/target_marker``).
        on_target: called for every accepted ``POSE_UPDATE`` and ``MOUSE_UP`` feedback with
            ``(tip, position [m], quat_xyzw or None for a position-only marker, frame_id,
            (sec, nanosec), released)``.
        on_error: called with the message of refused feedback; default: a throttled error log.
        send: ``send(publisher, msg)``; default ``publisher.publish(msg)``.
        callback_group: of the feedback subscription.
        scale: size of the markers' controls [m].
        refresh: called before ``get_interactive_markers`` answers, so the markers it serves
            include moves held back by the caller (:class:`~ik_node.ros.rviz.drag_targets.
            DragTargets` follows a stream of answers at a person's rate).
    """

    def __init__(self, node: Node, namespace: str = DEFAULT_NAMESPACE,
                 on_target: Optional[TargetCallback] = None,
                 on_error: Optional[Callable[[str], None]] = None,
                 send: Optional[Callable] = None, callback_group=None,
                 scale: float = DEFAULT_SCALE_M,
                 refresh: Optional[Callable[[], None]] = None) -> None:
        self._node = node
        self._refresh = refresh  # called before the service answers: held moves applied
        self._on_target, self._on_error = on_target, on_error
        self._send = send or (lambda publisher, msg: publisher.publish(msg))
        self.scale = float(scale)
        self._lock = threading.RLock()
        self._tips: Dict[str, _Tip] = {}
        self._frame = ''
        self._seq = 0
        self.refused = 0  # feedback messages refused so far
        self._pub = node.create_publisher(InteractiveMarkerUpdate, f'{namespace}/update',
                                          UPDATE_QOS)
        self.namespace = self._pub.topic_name[:-len('/update')]
        self._server_id = node.get_fully_qualified_name()
        self._srv = node.create_service(GetInteractiveMarkers,
                                        f'{namespace}/get_interactive_markers', self._on_get)
        self._sub = node.create_subscription(InteractiveMarkerFeedback, f'{namespace}/feedback',
                                             self._on_feedback, FEEDBACK_QOS,
                                             callback_group=callback_group)

    # ------------------------------------------------------------------------ node-facing
    def set_tips(self, base_frame: str, tips: Sequence[tuple],
                 active: Optional[Collection[str]] = None) -> None:
        """Serve a marker for each ``(tip, pose, six_dof)`` or ``(tip, pose, six_dof,
        plane_normal)``; erase the markers of other tips. ``active``: the tips that get a full
        handle set (None: all); the others get their body alone (:meth:`set_active`).

        ``pose`` is ``T_base_tip`` (4x4) or ``(position [m], quat_xyzw)`` in ``base_frame``.
        Every marker is sent in full (colour back to grey). A position-only marker takes the
        identity orientation (its move axes are those of ``base_frame``); with a
        ``plane_normal`` (a planar chain's, base frame) it moves in that plane only.

        Raises:
            ValueError: a bad pose, a zero or non-finite plane normal or a repeated tip name
                (nothing is changed).
        """
        new: Dict[str, _Tip] = {}
        for name, pose, six_dof, *plane in tips:
            if name in new:
                raise ValueError(f'tip {name!r} given twice')
            position, quat = pose_from_input(pose)
            normal = plane[0] if plane else None
            if normal is not None:
                normal = np.array(finite_floats(normal, 3, f'plane normal of tip {name!r}'))
                if float(np.linalg.norm(normal)) < 1e-9:
                    raise ValueError(f'plane normal of tip {name!r} has zero length')
                normal = normal / np.linalg.norm(normal)
            new[str(name)] = _Tip(str(name), position,
                                  quat if six_dof else IDENTITY_XYZW.copy(), bool(six_dof),
                                  normal, active=active is None or str(name) in active)
        with self._lock:
            erases = [name for name in self._tips if name not in new]
            self._tips, self._frame = new, str(base_frame)
            markers = [self._marker(t) for t in new.values()]
            if markers or erases:
                self._publish(markers=markers, erases=erases)

    def follow(self, tip: str, position, quat_xyzw=None) -> bool:
        """Move a tip's marker to a target that came another way (a topic), in the base frame.

        ``quat_xyzw`` None (a point target) or a position-only marker: the orientation is kept.
        No update goes out when the marker is already there, nor while no client subscribes to
        the updates (a client starts from ``get_interactive_markers``, which has the new pose).
        Returns True if it moved.
        """
        return self._move(tip, position, quat_xyzw)

    def follow_all(self, targets: Sequence[tuple], checked: bool = False) -> None:
        """:meth:`follow` for every ``(tip, position, quat_xyzw)`` of one solve, the clients
        listening to the updates counted once. ``checked``: the poses are targets the node
        placed (finite, a unit quaternion or None), so they are not checked again."""
        if not checked:
            targets = [(tip, *_checked_pose(position, quat_xyzw))
                       for tip, position, quat_xyzw in targets]
        with self._lock:
            listened = self._listened()
            for tip, p, q in targets:
                self._move_checked(tip, p, q, listened)

    def snap(self, tip: str, position, quat_xyzw=None) -> bool:
        """Move a tip's marker to the pose the chain reached (after a released drag)."""
        return self._move(tip, position, quat_xyzw)

    def set_reached(self, tip: str, reached: Optional[bool]) -> bool:
        """Colour a tip's marker (True green, False red, None grey); an update only on change."""
        with self._lock:
            t = self._tips.get(tip)
            if t is None or t.reached == reached:
                return False
            t.reached = reached
            if self._listened():  # else a client starts from _on_get, which has the colour
                self._publish(markers=[self._marker(t)])
            return True

    def set_active(self, active: Collection[str]) -> List[str]:
        """Give the tips in ``active`` a full handle set and every other tip its body alone (a
        small mark, still dragged by it); the markers that change go out in full. Returns the
        names of those that changed."""
        with self._lock:
            changed = [t for t in self._tips.values() if t.active != (t.name in active)]
            for t in changed:
                t.active = not t.active
            if changed and self._listened():  # else a client starts from _on_get
                self._publish(markers=[self._marker(t) for t in changed])
            return [t.name for t in changed]

    @property
    def tips(self) -> List[str]:
        with self._lock:
            return list(self._tips)

    def destroy(self) -> None:
        """Erase every marker (while the context is up) and drop the ROS entities."""
        with self._lock:
            if self._tips and self._node.context.ok():
                try:
                    self._publish(erases=list(self._tips))
                except Exception:  # shutting down: nobody is listening
                    pass
            self._tips = {}
        self._node.destroy_subscription(self._sub)
        self._node.destroy_service(self._srv)
        self._node.destroy_publisher(self._pub)

    # --------------------------------------------------------------------------- internals
    def _marker(self, t: _Tip) -> InteractiveMarker:
        self._settle(t)
        marker = interactive_marker(t.name, self._frame, t.position, t.quat_xyzw, t.six_dof,
                                    t.reached, self.scale, t.plane_normal)
        return marker if t.active else idle_marker(marker)

    def _settle(self, t: _Tip) -> None:
        """Apply the pose a follow() left pending (caller holds the lock)."""
        if t.pending is not None:
            (p, q), t.pending = t.pending, None
            self._place(t, p, q)

    def _place(self, t: _Tip, p, q) -> bool:
        """Set a tip's pose from checked float sequences (``q`` None or a position-only marker:
        the orientation is kept); True if it changed (caller holds the lock)."""
        p = np.array(p, dtype=float)
        if q is not None and t.six_dof:
            _, q = pose_from_input((p, q))
        else:
            q = t.quat_xyzw
        if np.array_equal(p, t.position) and np.array_equal(q, t.quat_xyzw):
            return False
        t.position, t.quat_xyzw = p, q
        return True

    def _publish(self, markers=(), poses=(), erases=()) -> None:
        """One UPDATE with the next sequence number (caller holds the lock, so the service
        never answers with a number whose update is not out yet)."""
        self._seq += 1
        msg = InteractiveMarkerUpdate(server_id=self._server_id, seq_num=self._seq,
                                      type=InteractiveMarkerUpdate.UPDATE)
        msg.markers, msg.poses, msg.erases = list(markers), list(poses), list(erases)
        self._send(self._pub, msg)

    def _pose_update(self, t: _Tip) -> InteractiveMarkerPose:
        self._settle(t)
        msg = InteractiveMarkerPose(name=t.name, pose=pose_msg(t.position, t.quat_xyzw))
        msg.header.frame_id = self._frame
        return msg

    def _listened(self) -> bool:
        """True while a client subscribes to the updates."""
        return self._pub.get_subscription_count() > 0

    def _move(self, tip: str, position, quat_xyzw) -> bool:
        p, q = _checked_pose(position, quat_xyzw)
        with self._lock:
            return self._move_checked(tip, p, q, self._listened())

    def _move_checked(self, tip: str, p, q, listened: bool) -> bool:
        """Move a tip's marker to a checked pose (caller holds the lock)."""
        t = self._tips.get(tip)
        if t is None:
            return False
        if not listened:
            # Nobody listening: the state is enough (a client starts from _on_get); it is
            # settled when next read, not for every target of a stream. A point target keeps
            # the orientation of a pose target still pending.
            if q is None and t.pending is not None:
                q = t.pending[1]
            t.pending = (p, q)
            return True
        self._settle(t)
        if not self._place(t, p, q):
            return False
        self._publish(poses=[self._pose_update(t)])
        return True

    def _on_get(self, request, response):
        try:
            if self._refresh is not None:
                self._refresh()
            with self._lock:
                response.sequence_number = self._seq
                response.markers = [self._marker(t) for t in self._tips.values()]
        except Exception as exc:  # never raise into the executor
            self._error(f'{self.namespace}/get_interactive_markers failed: '
                        f'{type(exc).__name__}: {exc}')
        return response

    def _on_feedback(self, fb: InteractiveMarkerFeedback) -> None:
        try:
            self._feedback(fb)
        except Exception as exc:  # a bug here, or in on_target, must not stop the executor
            self._error(f'{self.namespace}/feedback for marker {fb.marker_name!r} failed: '
                        f'{type(exc).__name__}: {exc}')

    def _feedback(self, fb: InteractiveMarkerFeedback) -> None:
        released = fb.event_type == InteractiveMarkerFeedback.MOUSE_UP
        if not released and fb.event_type != InteractiveMarkerFeedback.POSE_UPDATE:
            return  # MOUSE_DOWN, BUTTON_CLICK, MENU_SELECT: nothing to solve
        p, o = fb.pose.position, fb.pose.orientation
        position = np.array([p.x, p.y, p.z], dtype=float)
        quat = np.array([o.x, o.y, o.z, o.w], dtype=float)
        with self._lock:
            t = self._tips.get(fb.marker_name)
            if t is not None:
                self._settle(t)
            if t is None:
                known = ', '.join(sorted(self._tips)) or 'none (no robot model yet)'
                error = (f'feedback on {self.namespace}/feedback for unknown marker '
                         f'{fb.marker_name!r} ignored. Markers: {known}')
            elif not (np.all(np.isfinite(position)) and np.all(np.isfinite(quat))):
                error = (f'feedback of marker {t.name!r} ignored: the pose contains NaN or inf '
                         f'(position {position.tolist()}, orientation {quat.tolist()})')
            elif float(np.linalg.norm(quat)) < 1e-9:
                error = (f'feedback of marker {t.name!r} ignored: its orientation quaternion '
                         f'{quat.tolist()} has zero length')
            else:
                error = ''
                six_dof = t.six_dof
                quat = quat / np.linalg.norm(quat) if six_dof else t.quat_xyzw
                if fb.header.frame_id in ('', self._frame) and not (
                        np.array_equal(position, t.position) and
                        np.array_equal(quat, t.quat_xyzw)):
                    t.position, t.quat_xyzw = position, quat
                    self._publish(poses=[self._pose_update(t)])
        if error:
            self._error(error)
            return
        if self._on_target is not None:
            stamp = (int(fb.header.stamp.sec), int(fb.header.stamp.nanosec))
            self._on_target(fb.marker_name, position.copy(),
                            quat.copy() if six_dof else None, fb.header.frame_id, stamp,
                            released)

    def _error(self, message: str) -> None:
        self.refused += 1
        if self._on_error is not None:
            try:
                self._on_error(message)
                return
            except Exception:
                pass
        self._node.get_logger().error(message, throttle_duration_sec=1.0)


def _checked_pose(position, quat_xyzw) -> tuple:
    """``(position, quat_xyzw or None)`` as finite floats, or ValueError (a zero quaternion
    too)."""
    p = finite_floats(position, 3, 'marker position')
    q = None if quat_xyzw is None else finite_floats(quat_xyzw, 4, 'marker orientation')
    if q is not None and sum(v * v for v in q) < 1e-18:
        raise ValueError(f'marker orientation {list(q)} has zero length')
    return p, q
