"""RViz markers on ``~/markers`` (transient local): the envelope, targets, misses, warnings.

The marker contents are built in :mod:`ik_node.ros.rviz.markers` (no rclpy); this class owns the
publisher and remembers the envelope so each array carries it. A solve's markers are held
(:meth:`MarkerOutput.hold`) and published only with a status that goes out
(:meth:`MarkerOutput.publish_held`): a fast target stream does not flood RViz either.
"""

from __future__ import annotations

import threading
from typing import Callable, Dict, List, Mapping, Optional, Tuple

import numpy as np
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from visualization_msgs.msg import MarkerArray

from ik_node.ros.rviz import labels, markers, views
from ik_node.ros.rviz.camera import OrbitView, pulled_into_view
from ik_node.ros.outputs.solve_report import SolveReport
from ik_node.solvers.results import IkStatus
from ik_node.model.chain import Chain
from ik_node.model.quality import (DEFAULT_LIMIT_THRESHOLD, DEFAULT_SINGULAR_THRESHOLD,
                                   fragility_reasons, is_fragile, tip_quality)

LATCHED_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)


class MarkerOutput:
    """The node's marker publisher."""

    def __init__(self, node: Node, send: Callable) -> None:
        self._node, self._send = node, send
        self._pub = node.create_publisher(MarkerArray, '~/markers', LATCHED_QOS)
        self._envelope: Optional[markers.Envelope] = None
        self._envelope_markers: list = []  # built once per envelope, restamped per array
        self._lock = threading.Lock()
        self._held: Optional[tuple] = None
        self._sizes = markers.Sizes()
        # The RViz view of the chain in force, computed by one worker thread (a few hundred ms
        # under load: never under the node's lock): (chain, view or None until computed).
        self._view: Tuple[Optional[Chain], Optional[OrbitView]] = (None, None)
        self._view_wake = threading.Condition()
        self._view_job: Optional[Chain] = None
        self._view_worker: Optional[threading.Thread] = None
        self._thresholds = (DEFAULT_SINGULAR_THRESHOLD, DEFAULT_LIMIT_THRESHOLD)

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
        self._sizes = markers.sizes_of(chain)
        stamp = self._stamp()
        out = list(markers.delete_all(frame, stamp)) if reset else []
        self._envelope_markers = list(markers.envelope_markers(frame, stamp, self._envelope))
        out += self._envelope_markers
        self._send(self._pub, markers.marker_array(out))

    def _envelope_now(self, frame: str, stamp) -> list:
        """The envelope's markers stamped ``stamp`` (the same for every array of a chain:
        built in :meth:`envelope`, only their stamp set here)."""
        if not self._envelope_markers or self._envelope_markers[0].header.frame_id != frame:
            self._envelope_markers = list(markers.envelope_markers(frame, stamp,
                                                                   self._envelope))
        for marker in self._envelope_markers:
            marker.header.stamp = stamp
        return list(self._envelope_markers)

    def clear(self, frame: str) -> None:
        """Delete every marker (no chain)."""
        self._envelope, self._envelope_markers = None, []
        self._send(self._pub, markers.marker_array(markers.delete_all(frame, self._stamp())))

    def hold(self, report: SolveReport) -> None:
        """Keep the markers of a solve for :meth:`publish_held` (the newest replaces any held)."""
        with self._lock:
            self._held = report

    def drop_held(self) -> None:
        """Forget the held solve (its chain is gone)."""
        with self._lock:
            self._held = None

    def publish_held(self, chain: Chain, frame: str, branched: bool) -> None:
        """Publish the held solve's markers, if any (then none is held)."""
        with self._lock:
            held, self._held = self._held, None
        if held is not None:
            self.result(chain, frame, held.result, held.placed, held.standing, branched, held.q,
                        (held.collision, held.colliding_triangles))

    def set_thresholds(self, singular_threshold: float, limit_threshold: float) -> None:
        """The fragility thresholds of the node's WARN (``singular_threshold``,
        ``limit_margin_threshold`` [rad or m]): the labels warn exactly when the status does."""
        self._thresholds = (float(singular_threshold), float(limit_threshold))

    def result(self, chain: Chain, frame: str, result, placed: Mapping, standing: Mapping,
               branched: bool, q: np.ndarray, collision=({}, None)) -> None:
        """The markers of a solve: envelope, per targeted tip its target (sphere, orientation
        arrows, the line from a missing tip) and a label saying how far it missed and every
        fragility warning, and the joint rings with a label on a joint near a limit.

        Args:
            placed: the targets solved, ``(position [m], quat_xyzw or None)`` in the base
                frame by slot.
            standing: a branched chain's standing target position of every tip [m].
            collision: ``(values, triangles)`` of the collision check
                (:func:`~ik_node.solvers.collision_guard.collision_outputs`): the colliding
                pairs with their depths (``values['colliding']``...), named in the label of an
                ``in_collision`` tip, and the colliding links' hull triangles (base frame,
                (m, 3, 3) [m]), drawn magenta with a yellow outline; None: deleted.
        """
        collision_values, colliding_triangles = collision
        stamp = self._stamp()
        sizes = self._sizes
        out = self._envelope_now(frame, stamp)
        tips_T: Dict[str, np.ndarray] = chain.fk_tips(result.joint_positions)
        position_only = result.orientation_ignored or \
            all(quat is None for _, quat in placed.values())
        if branched:
            shown = [(k, tip, standing[tip], None) for k, tip in enumerate(chain.tip_links)
                     if tip in standing]
        else:
            p, quat = placed[None]
            shown = [(0, chain.tip_link, p, None if result.orientation_ignored else quat)]
        view = self._view_of(chain)
        body = body_points(chain, q)
        said: Dict[int, str] = {}  # joints near a limit, each on the first of its tips' labels
        for k, tip, p_target, quat in shown:
            tip_result = (result.tips or {}).get(tip)
            reached = tip_result.reachable if tip_result else result.reachable
            p_tip = tips_T[tip][:3, 3]
            error = tip_result.position_error if tip_result else result.position_error
            if reached:
                miss = []
            elif result.status is IkStatus.IN_COLLISION:
                miss = collision_lines(tip, collision_values, error)
            else:
                miss = labels.wrapped([labels.miss_text(
                    tip, error, _why_missed(result, tip_result),
                    None if tip_result or quat is None else result.orientation_error)])
            warnings = [f'fragile: {why}' for why in self._warnings(chain, q, tip, position_only)
                        ] if reached else []
            p_shown = shown_target(view, p_tip, p_target, sizes)
            if p_shown is not p_target:
                miss.append(labels.beyond_text(float(np.linalg.norm(p_target - p_shown))))
            out.extend(markers.target_markers(frame, stamp, k, p_shown, reached, p_tip, sizes))
            out.append(markers.beyond_marker(frame, stamp, k, p_shown, p_target, sizes))
            if not branched:
                out.extend(markers.orientation_markers(frame, stamp, k, p_shown, quat, sizes))
            limits = markers.limit_lines(chain, q, self._thresholds[1],
                                         [j for j in chain.joints_of_tip(tip) if j not in said])
            said.update(limits)
            out.extend(labels.tip_label_markers(
                frame, stamp, k, p_tip,
                labels.TipLabel('\n'.join(miss), warnings, sorted(limits.items()), body),
                sizes, p_shown, view))
        targeted = {j for _, tip, _, _ in shown for j in chain.joints_of_tip(tip)}
        out.extend(markers.joint_markers(frame, stamp, chain, q, self._thresholds[1], sizes,
                                         flagged=targeted, labelled=set(said)))
        out.append(markers.collision_marker(frame, stamp, colliding_triangles))
        out.append(markers.collision_outline_marker(frame, stamp, colliding_triangles, sizes))
        self._send(self._pub, markers.marker_array(out))

    @property
    def view(self) -> Optional[OrbitView]:
        """The RViz view far targets and labels are kept in: that of the chain in force, None
        until it is computed."""
        with self._view_wake:
            return self._view[1]

    def prepare_view(self, chain: Chain) -> None:
        """Start computing the view of ``chain`` in the background (until it is there, far
        targets and labels are drawn without it)."""
        self._view_of(chain)

    def _view_of(self, chain: Chain) -> Optional[OrbitView]:
        """The view of ``chain`` if computed, else None (and the worker asked to compute it)."""
        with self._view_wake:
            of, view = self._view
            if of is chain:
                return view
            self._view, self._view_job = (chain, None), chain
            if self._view_worker is None:
                self._view_worker = threading.Thread(target=self._compute_views,
                                                     name='rviz_view', daemon=True)
                self._view_worker.start()
            self._view_wake.notify()
        return None

    def _compute_views(self) -> None:
        """The view worker: computes the view of the newest chain asked for, then waits."""
        while True:
            with self._view_wake:
                while self._view_job is None:
                    self._view_wake.wait()
                chain, self._view_job = self._view_job, None
            try:
                view = views.chain_view(chain)
            except Exception:  # a picture never fails a solve
                view = None
            with self._view_wake:
                if self._view[0] is chain:
                    self._view = (chain, view)

    def _warnings(self, chain: Chain, q: np.ndarray, tip: str, position_only: bool) -> list:
        """A reached tip's singularity warning, as the node's WARN words it (a joint near its
        limit has its own label by its ring: said once); measured only when
        :func:`~ik_node.model.quality.is_fragile` says there is a reason."""
        try:
            if not is_fragile(chain, q, [tip], position_only, *self._thresholds):
                return []
            quality = tip_quality(chain, q, tip, position_only, *self._thresholds)
            return fragility_reasons(quality)[:1] if quality.near_singular else []
        except Exception as exc:  # a picture never fails a solve
            return [f'not measured: {type(exc).__name__}: {exc}']


def body_points(chain: Chain, q: np.ndarray, per_link: int = 6) -> np.ndarray:
    """Points [m] along the robot's links at ``q``: from each joint's origin to the next one's
    on the way to each tip and on to the tip (labels keep clear of them on the screen)."""
    origins = chain.joint_frames(q)[:, :3, 3]
    out = []
    for tip, T in chain.fk_tips(q).items():
        path = [origins[j] for j in chain.joints_of_tip(tip)] + [T[:3, 3]]
        for a, b in zip(path[:-1], path[1:]):
            out += [a + s * (b - a) for s in np.linspace(0.0, 1.0, per_link)]
    return np.array(out).reshape(-1, 3)


#: A target whose point at the view's edge is nearer to it than this [m] is drawn where it is
#: (no "target 6.11e-05 mm further on" for a tip at a target on the view's edge).
SHOWN_WHERE_IT_IS_M = 1e-3


def shown_target(view: Optional[OrbitView], p_tip: np.ndarray, p_target: np.ndarray,
                 sizes: markers.Sizes) -> np.ndarray:
    """Where a target is drawn: ``p_target`` itself (the same object) when it is inside
    ``view``, else the farthest point towards it from the tip for which it and the head of
    the arrow pointing on to it are (the view's edge)."""
    if view is None or view.contains([p_target]):
        return p_target
    step = np.asarray(p_target, dtype=float) - np.asarray(p_tip, dtype=float)
    arrow = markers.beyond_length(sizes) * step / max(float(np.linalg.norm(step)), 1e-12)
    shown, share = pulled_into_view(view, p_tip, p_target, lambda p: np.array([p, p + arrow]))
    near = float(np.linalg.norm(np.asarray(p_target, dtype=float) - shown)) < SHOWN_WHERE_IT_IS_M
    return p_target if share >= 1.0 or near else shown


#: Statuses that claim something of the target's reach: on a branched chain they belong to
#: some tip, not necessarily this one.
_REACH_CLAIMS = ('unreachable', 'joint_limited')


def collision_lines(tip: str, collision_values, position_error_m: float) -> List[str]:
    """The label of a tip whose target is reached only in collision: what collides and how
    deep (``forearm_link - obstacle table/1: 76 mm in``), and where the pose shown is not at
    the target (the best collision-free pose), how far from it."""
    pairs = [collision_values[key] for key in ('colliding', 'colliding_2')
             if collision_values.get(key)]
    lines = [f'{tip}: reached only in collision'] + (pairs or ['(pair not measured)'])
    if position_error_m >= 1e-3:
        lines.append(f'shown: a free pose {labels.length_text(position_error_m)} away')
    return lines


def _why_missed(result, tip_result) -> str:
    """Why a tip missed, claiming no more than is proven of that tip: the solve's status, but
    on a branched chain a reach claim only with the tip's own positive lower bound."""
    status = result.status.value
    if tip_result is None or status not in _REACH_CLAIMS:
        return status
    bound = tip_result.min_residual
    if bound is not None and bound > 0.0:
        return f'at least {labels.length_text(bound)} out of reach'
    return 'not reached'
