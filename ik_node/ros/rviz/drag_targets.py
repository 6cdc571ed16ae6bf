"""Drags in RViz become targets: the node's interactive markers, one per tip.

A drag of a tip's marker becomes a :class:`~ik_node.ros.inputs.targets.Target` like a topic one, and
the solves move, colour and (on release) snap the markers. The marker server itself (the
protocol RViz speaks) is :class:`ik_node.ros.rviz.interactive.InteractiveTargets`, owned here.

A branched chain's tips just targeted (a drag released, a topic target) get the full handle
set; the others a small mark, dragged by it (:meth:`InteractiveTargets.set_active`).

The markers are for a person: a stream of answers moves them at most :data:`FOLLOW_RATE_HZ`
times a second, to the newest targets (the answers in between are held, not lost: the node's
timer and the marker service apply the newest). The answer to a released drag is shown at once.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Dict, FrozenSet, Optional, Tuple

import numpy as np
from rclpy.node import Node

from ik_node.config.node_config import IkConfig
from ik_node.model.chain import Chain
from ik_node.ros.rviz.sizes import sizes_of
from ik_node.ros.outputs.solve_report import SolveReport
from ik_node.ros.inputs.targets import Target, quat_xyzw_from_rotation
from ik_node.ros.rviz.interactive import InteractiveTargets
from ik_node.ros.outputs.solution_output import Send


#: How often a stream of answers moves and colours the markers [Hz] (a person reads them).
FOLLOW_RATE_HZ = 30.0


class DragTargets:
    """Serves a draggable marker per tip and hands each drag on as a target.

    Args:
        node: the node owning the marker server (and its ``target_marker.snap_on_release``
            parameter, read at each release).
        on_target: receives every drag as a target (the node's target callback).
        on_error: receives the message of refused feedback.
        send: how to publish.
        callback_group: of the feedback subscription.
    """

    def __init__(self, node: Node, on_target: Callable[[Target], None],
                 on_error: Callable[[str], None], send: Send, callback_group=None) -> None:
        self._node, self._on_target = node, on_target
        self._branched: Optional[bool] = None  # None: no robot model, drags are ignored
        self._released: Dict[Optional[str], Target] = {}  # dropped markers, to snap
        # Tips whose marker the mouse holds (a frozenset rebound, never changed in place: the
        # feedback and the solves run on different threads).
        self._dragging: FrozenSet[str] = frozenset()
        self._lock = threading.Lock()  # the held answer
        self._follow: Dict[str, Tuple[np.ndarray, Optional[np.ndarray]]] = {}  # held moves
        self._held: Optional[Tuple[IkConfig, SolveReport]] = None  # the newest answer held
        self._next_show = 0.0  # monotonic [s]: when a stream's answer is shown again
        self.server = InteractiveTargets(node, on_target=self._on_drag, send=send,
                                         on_error=on_error, callback_group=callback_group,
                                         refresh=self.flush)

    def set_robot(self, config: IkConfig, chain: Chain, q: np.ndarray,
                  six_dof: bool) -> None:
        """Serve a marker at each tip of ``chain`` at ``q`` (``six_dof``: they also rotate),
        its handles scaled to the robot; a planar chain's tip moves in its plane only."""
        self._branched = config.branched
        self._drop_held()
        tips_T = chain.fk_tips(q)
        self.server.scale = sizes_of(chain).handle_scale
        self._dragging = frozenset()
        self.server.set_tips(config.base_link,
                             [(tip, tips_T[tip], six_dof, chain.planar_normal(tip))
                              for tip in config.tip_links],
                             active=set() if config.branched else None)

    def clear(self) -> None:
        """No robot model: no markers, drags ignored."""
        self._branched = None
        self._drop_held()
        self.server.set_tips('', [])

    def _drop_held(self) -> None:
        with self._lock:
            self._follow, self._held = {}, None

    def _on_drag(self, tip: str, position, quat_xyzw, frame_id: str, stamp,
                 released: bool) -> None:
        """A drag of a tip's interactive marker: solved as a topic target (newest wins)."""
        branched = self._branched
        if branched is None:
            return
        slot = tip if branched else None
        target = Target(np.asarray(position, dtype=float),
                             None if quat_xyzw is None else np.asarray(quat_xyzw, dtype=float),
                             frame_id, slot, stamp)
        if released:
            self._released[slot] = target
            self._dragging = self._dragging - {tip}
        else:
            self._dragging = self._dragging | {tip}
        self._on_target(target)

    def show(self, config: IkConfig, report: SolveReport) -> None:
        """Markers after a solve: follow the targets, colour by reached, and snap a released
        marker to the pose reached (``target_marker.snap_on_release``); within
        ``1 / FOLLOW_RATE_HZ`` of the last answer shown, held for :meth:`flush` instead (an
        answer to a released drag is shown at once).

        Args:
            config: the configuration the solve ran under.
            report: the solve (a branched chain's markers of every tip with a standing target
                are all coloured).
        """
        with self._lock:
            follow = self._follow
            for tip, placed in report.targets.items():
                name, quat = tip or config.tip_link, placed.quat_xyzw
                if quat is None and name in follow:  # a point target keeps a held pose's
                    quat = follow[name][1]
                follow[name] = (placed.position, quat)
            now = time.monotonic()
            if not self._released and now < self._next_show:
                self._held = (config, report)
                return
            self._next_show = now + 1.0 / FOLLOW_RATE_HZ
            self._follow, self._held = {}, None
        self._show(config, report, follow)

    def flush(self) -> None:
        """Show the newest answer held back by :meth:`show` (the node's timer; the marker
        service before it answers)."""
        with self._lock:
            if self._held is None:
                return
            (config, report), follow = self._held, self._follow
            self._follow, self._held = {}, None
            self._next_show = time.monotonic() + 1.0 / FOLLOW_RATE_HZ
        self._show(config, report, follow)

    def _show(self, config: IkConfig, report: SolveReport,
              follow: Dict[str, Tuple[np.ndarray, Optional[np.ndarray]]]) -> None:
        server, chain, result, q = self.server, report.chain, report.result, report.q
        server.follow_all([(name, p, quat) for name, (p, quat) in follow.items()],
                          checked=True)
        tips = result.tips or {}
        if config.branched:  # the handles go to the tips just targeted, never mid-drag
            targeted = {tip or config.tip_link for tip in report.targets}
            if targeted and not targeted & self._dragging:
                server.set_active(targeted)
        for tip in report.targets if not config.branched else report.standing:
            name = tip or config.tip_link
            server.set_reached(name, tips[name].reachable if name in tips else result.reachable)
        if not self._released:
            return
        for tip, placed in report.targets.items():
            if self._released.get(tip) is placed.target:
                del self._released[tip]
                if self._node.get_parameter('target_marker.snap_on_release').value:
                    T = chain.fk(q, tip or config.tip_link)
                    server.snap(tip or config.tip_link, T[:3, 3],
                                quat_xyzw_from_rotation(T[:3, :3]))
