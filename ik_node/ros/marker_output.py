"""RViz markers on ``~/markers`` (transient local): the reachable envelope, targets, misses.

The marker contents are built in :mod:`ik_node.ros.markers` (no rclpy); this class owns the
publisher and remembers the envelope so each array carries it. A solve's markers are held
(:meth:`MarkerOutput.hold`) and published only with a status that goes out
(:meth:`MarkerOutput.publish_held`): a fast target stream does not flood RViz either.
"""

from __future__ import annotations

import threading
from typing import Callable, Dict, Mapping, Optional

import numpy as np
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from visualization_msgs.msg import MarkerArray

from ik_node.ros import markers
from ik_node.model.chain import Chain

LATCHED_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)


class MarkerOutput:
    """The node's marker publisher."""

    def __init__(self, node: Node, send: Callable) -> None:
        self._node, self._send = node, send
        self._pub = node.create_publisher(MarkerArray, '~/markers', LATCHED_QOS)
        self._envelope: Optional[markers.Envelope] = None
        self._lock = threading.Lock()
        self._held: Optional[tuple] = None

    def _stamp(self):
        return self._node.get_clock().now().to_msg()

    def envelope(self, chain: Chain, solver, frame: str, reset: bool = False) -> None:
        """Compute and publish the envelope of the (first) tip of a new chain or solver.

        ``reset`` (a new chain): a DELETEALL goes first, so no marker of the old chain (a
        target of a tip that is gone, a joint that is gone) stays in RViz.
        """
        self._envelope = markers.envelope_of(chain, solver, chain.tip_link)
        if reset:
            self.drop_held()
        stamp = self._stamp()
        out = list(markers.delete_all(frame, stamp)) if reset else []
        out += markers.envelope_markers(frame, stamp, self._envelope)
        self._send(self._pub, markers.marker_array(out))

    def clear(self, frame: str) -> None:
        """Delete every marker (no chain)."""
        self._envelope = None
        self._send(self._pub, markers.marker_array(markers.delete_all(frame, self._stamp())))

    def hold(self, result, goals: Mapping, known: Mapping, q: np.ndarray) -> None:
        """Keep the markers of a solve for :meth:`publish_held` (the newest replaces any held).

        Args:
            result: the solver's result.
            goals: (position, quat_xyzw or None) in the base frame, by slot.
            known: a branched chain's last goal of every tip.
            q: the published joint positions.
        """
        with self._lock:
            self._held = (result, goals, known, q)

    def drop_held(self) -> None:
        """Forget the held solve (its chain is gone)."""
        with self._lock:
            self._held = None

    def publish_held(self, chain: Chain, frame: str, branched: bool) -> None:
        """Publish the held solve's markers, if any (then none is held)."""
        with self._lock:
            held, self._held = self._held, None
        if held is not None:
            self.result(chain, frame, *held[:3], branched, held[3])

    def result(self, chain: Chain, frame: str, result, goals: Mapping, known: Mapping,
               branched: bool, q: np.ndarray) -> None:
        """Envelope, target spheres, tip-to-target lines and joint limit margins of a solve."""
        stamp = self._stamp()
        out = list(markers.envelope_markers(frame, stamp, self._envelope))
        tips_T: Dict[str, np.ndarray] = chain.fk_tips(result.joint_positions)
        if branched:
            for k, tip in enumerate(chain.tip_links):
                if tip in known:
                    tip_result = (result.tips or {}).get(tip)
                    reached = tip_result.reachable if tip_result else result.reachable
                    out.extend(markers.target_markers(frame, stamp, k, known[tip], reached,
                                                      tips_T[tip][:3, 3]))
        else:
            p, quat = goals[None]
            out.extend(markers.target_markers(frame, stamp, 0, p, result.reachable,
                                              tips_T[chain.tip_link][:3, 3]))
            out.extend(markers.orientation_markers(frame, stamp, 0, p, None if
                                                   result.orientation_ignored else quat))
        out.extend(markers.joint_margin_markers(frame, stamp, chain, q))
        self._send(self._pub, markers.marker_array(out))
