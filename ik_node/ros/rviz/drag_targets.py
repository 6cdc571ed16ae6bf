"""Drags in RViz become targets: the node's interactive markers, one per tip.

A drag of a tip's marker becomes a :class:`~ik_node.ros.targets.Target` like a topic one, and
each solve moves, colours and (on release) snaps the markers. The marker server itself (the
protocol RViz speaks) is :class:`ik_node.ros.rviz.interactive.InteractiveTargets`, owned here.
"""

from __future__ import annotations

from typing import Callable, Dict, Optional

import numpy as np
from rclpy.node import Node

from ik_node.config.node_config import IkConfig
from ik_node.model.chain import Chain
from ik_node.ros.rviz import markers
from ik_node.ros.solve_report import SolveReport
from ik_node.ros.targets import Target, quat_xyzw_from_rotation
from ik_node.ros.rviz.interactive import InteractiveTargets
from ik_node.ros.outputs.solution_output import Send


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
        self.server = InteractiveTargets(node, on_target=self._on_drag, send=send,
                                         on_error=on_error, callback_group=callback_group)

    def set_robot(self, config: IkConfig, chain: Chain, q: np.ndarray,
                  six_dof: bool) -> None:
        """Serve a marker at each tip of ``chain`` at ``q`` (``six_dof``: they also rotate),
        its handles scaled to the robot; a planar chain's tip moves in its plane only."""
        self._branched = config.branched
        tips_T = chain.fk_tips(q)
        self.server.scale = markers.sizes_of(chain).handle_scale
        self.server.set_tips(config.base_link,
                             [(tip, tips_T[tip], six_dof, markers.planar_normal(chain, tip))
                              for tip in config.tip_links])

    def clear(self) -> None:
        """No robot model: no markers, drags ignored."""
        self._branched = None
        self.server.set_tips('', [])

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
        self._on_target(target)

    def show(self, config: IkConfig, report: SolveReport) -> None:
        """Markers after a solve: follow the targets, colour by reached, and snap a released
        marker to the pose reached (``target_marker.snap_on_release``).

        Args:
            config: the configuration the solve ran under.
            report: the solve (a branched chain's markers of every tip with a standing target
                are all coloured).
        """
        server, chain, result, q = self.server, report.chain, report.result, report.q
        server.follow_all([(tip or config.tip_link, placed.position, placed.quat_xyzw)
                           for tip, placed in report.targets.items()], checked=True)
        tips = result.tips or {}
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
