"""What the node does with its interactive markers (mixed into :class:`ik_node.ros.node.IkNode`):
a drag of a tip's marker becomes a target like a topic one, and each solve moves, colours and
(on release) snaps the markers. The marker server itself is :mod:`ik_node.ros.interactive`.
"""

from __future__ import annotations

import numpy as np

from ik_node.ros import messages as conv


class InteractiveHooks:
    """What the node does with its interactive markers (mixed into
    :class:`ik_node.ros.node.IkNode`):
    drags become targets, solves move and colour the markers."""

    def _on_marker_target(self, tip: str, position, quat_xyzw, frame_id: str, stamp,
                          released: bool) -> None:
        """A drag of a tip's interactive marker: solved as a topic target (newest wins)."""
        model = self._model
        if model is None:
            return
        slot = tip if model.config.branched else None
        target = conv.Target(np.asarray(position, dtype=float),
                             None if quat_xyzw is None else np.asarray(quat_xyzw, dtype=float),
                             frame_id, slot, stamp)
        if released:
            self._released[slot] = target
        self._on_target(target)

    def _show_on_interactive(self, model, batch, goals, result, q) -> None:
        """Interactive markers after a solve: follow the targets, colour by reached, and snap
        a released marker to the pose reached (``target_marker.snap_on_release``)."""
        config = model.config
        for tip, (p, quat) in goals.items():
            self._interactive.follow(tip or config.tip_link, p, quat)
        tips = result.tips or {}
        for tip in goals if not config.branched else self._known:
            name = tip or config.tip_link
            self._interactive.set_reached(
                name, tips[name].reachable if name in tips else result.reachable)
        snap = self.get_parameter('target_marker.snap_on_release').value
        for tip in goals:
            if self._released.get(tip) is batch[tip]:
                del self._released[tip]
                if snap:
                    T = model.chain.fk(q, tip or config.tip_link)
                    self._interactive.snap(tip or config.tip_link, T[:3, 3],
                                           conv.quat_xyzw_from_rotation(T[:3, :3]))
