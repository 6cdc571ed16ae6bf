"""A target's way from its message to the solver: checked, placed in the base frame, kept while
TF warms up, moved onto a planar chain's plane, merged with the other tips' standing targets,
and seeded.

The names of a target on its way, in order:

1. :class:`~ik_node.ros.inputs.targets.Target`: as received (a topic message or a drag), by slot (a
   tip; None for a serial chain's one tip). The node queues the newest of each slot in a
   :class:`~ik_node.ros.inputs.latest_targets.LatestTargets` and hands what it takes to
   :meth:`TargetPipeline.prepare`.
2. :class:`~ik_node.ros.inputs.targets.TargetInBase`: checked and placed in the chain's base
   frame (:func:`~ik_node.ros.inputs.targets.target_in_base`), a point target near a planar
   chain's plane moved onto it (:mod:`ik_node.ros.solving.planar_targets`). A
   :class:`SolveInput` holds those of one solve with the seed. A bad target is reported and
   left out; a target whose TF frame has no transform yet while the TF listener is new
   (:class:`~ik_node.ros.inputs.targets.TfWarmingUp`) is kept and put back into the queue
   every :data:`TF_RETRY_S` until the transform comes.
3. The standing targets: a branched chain solves for every tip's newest target at once, the
   ones of this solve and the earlier ones of the other tips (:meth:`TargetPipeline.solve`).

The solver's answer then goes back to the node (:mod:`ik_node.ros.node`), which checks and
publishes it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable, Dict, Mapping, Optional, Union

import numpy as np
from rclpy.node import Node

from ik_node.errors import TargetError
from ik_node.model.chain import Chain
from ik_node.ros.solving import planar_targets
from ik_node.ros.inputs.node_inputs import NodeInputs
from ik_node.ros.inputs.latest_targets import LatestTargets
from ik_node.ros.solving.robot_model import RobotModel
from ik_node.ros.inputs.targets import Target, TargetInBase, TfWarmingUp, stamps_of, target_in_base
from ik_node.solvers.base import IkResult

#: How often a target kept for a new TF listener's first transforms is tried again [s].
TF_RETRY_S = 0.1

#: ``report_error(message, frame_id, target_stamp)``: a refused target, for the diagnostics.
ReportError = Callable[[str, str, str], None]


@dataclass  # made for every solve: not frozen, which costs more to build
class SolveInput:
    """The targets of one solve, placed, with the seed.

    Attributes:
        targets: the targets to solve, in the base frame, by slot.
        seed: the joint positions the solver starts from (chain order) [rad or m].
        measured: the measured joint positions clipped into the limits, None when the last
            solution seeds instead.
        seed_note: where the seed came from (``measured``, or why the last solution).
        frame: the frames the targets were given in, comma-separated (the base link for none).
        stamps: the targets' stamps, comma-separated.
    """

    targets: Dict[Optional[str], TargetInBase]
    seed: np.ndarray
    measured: Optional[np.ndarray]
    seed_note: str
    frame: str
    stamps: str


class TargetPipeline:
    """Turns targets taken from the queue into the solver's input and answer.

    Args:
        node: reads ``target_point.planar_projection`` and runs the TF retry timer.
        inputs: the node's inputs: the measured state (the seed) and the TF lookup.
        queue: the target queue, into which targets kept for TF go back.
        report_error: receives every refused target.
        resume: solves what is pending in ``queue`` (the node's drain), called when kept
            targets go back into it.

    The caller holds the node's lock around :meth:`use_chain`, :meth:`prepare` and
    :meth:`solve`; the retry timer takes this object's own lock.
    """

    def __init__(self, node: Node, inputs: NodeInputs, queue: LatestTargets,
                 report_error: ReportError, resume: Callable[[], None]) -> None:
        self._node, self._inputs, self._queue = node, inputs, queue
        self._report_error, self._resume = report_error, resume
        self._planes: Dict[str, planar_targets.Plane] = {}  # planar tips: their plane
        self._standing: Dict[str, TargetInBase] = {}  # branched: every tip's newest target
        #: A branched chain's standing target position of every tip [m], as of the last solve
        #: (a new dict for each solve; empty for a serial chain).
        self.standing: Dict[str, np.ndarray] = {}
        self._lock = threading.Lock()  # the kept targets and the retry timer
        self._kept: Dict[Optional[str], Target] = {}  # waiting for TF's first transforms
        self._kept_arrivals: Dict[Optional[str], int] = {}
        self._retry_timer = None

    def use_chain(self, chain: Chain) -> None:
        """A new chain: its planes; the standing and kept targets (of the old chain) dropped."""
        self._planes = planar_targets.tip_planes(chain)
        self._standing, self.standing = {}, {}
        with self._lock:
            self._kept, self._kept_arrivals = {}, {}

    # ------------------------------------------------------------------- 1. targets -> placed
    def prepare(self, targets: Mapping[Optional[str], Target],
                arrivals: Mapping[Optional[str], int], model: RobotModel,
                q_last: np.ndarray) -> Optional[SolveInput]:
        """The solver's input for ``targets`` (by slot, as taken from the queue with their
        ``arrivals``), or None when nothing is left to solve: every target refused (each
        reported), or all kept until TF has the transform one of them needs."""
        chain, config = model.chain, model.config
        measured, seed_note = self._inputs.measured(chain)
        seed = q_last if measured is None else measured
        placed = self._place(targets, chain, seed, config.base_link, config.tip_link)
        if isinstance(placed, TfWarmingUp):
            self._keep(targets, arrivals)
            return None
        if not placed:
            return None
        if len(placed) == 1:  # a serial chain's target: no set to sort, one stamp
            (one,) = placed.values()
            target = one.target
            frame, stamps = target.frame_id or config.base_link, target.stamp_text
        else:
            frame = ', '.join(sorted({t.target.frame_id or config.base_link
                                      for t in placed.values()}))
            stamps = stamps_of(t.target for t in placed.values())
        return SolveInput(placed, seed, measured, seed_note, frame, stamps)

    def _place(self, targets: Mapping[Optional[str], Target], chain: Chain, q: np.ndarray,
               base_link: str, tip_link: str
               ) -> Union[Dict[Optional[str], TargetInBase], TfWarmingUp]:
        """Every target placed in the base frame (``q``: the joint positions that place a
        target given in a link frame), or the first :class:`TfWarmingUp` met. A bad target is
        reported (ERROR naming its stamp) and left out, with every other target of its message
        when it came in one for all tips (``~/target_poses``: nothing of it is solved); a point
        target near a planar chain's plane is moved onto it."""
        lookup = self._inputs.frame_lookup(base_link)
        placed: Dict[Optional[str], TargetInBase] = {}
        refused_stamps = set()
        max_distance = None  # read once, for the first point target on a planar chain
        for tip, target in targets.items():
            if target.index is not None and target.stamp in refused_stamps:
                continue
            try:
                in_base = target_in_base(target, chain, q, lookup)
            except TargetError as exc:
                if target.index is None:
                    where = f' for tip {tip}' if tip else ''
                    self._report_error(f'bad target{where}: {exc}', target.frame_id,
                                       target.stamp_text)
                    continue
                refused_stamps.add(target.stamp)
                self._report_error(f'bad target_poses: pose {target.index} (tip '
                                   f'{tip or chain.tip_link}): {exc}; nothing of this message '
                                   'is solved', target.frame_id, target.stamp_text)
                continue
            if isinstance(in_base, TfWarmingUp):
                return in_base
            p, quat = in_base
            moved = 0.0
            plane = self._planes.get(tip or tip_link)
            if quat is None and plane is not None:
                if max_distance is None:
                    max_distance = float(self._node.get_parameter(planar_targets.PARAM).value)
                p, moved = planar_targets.onto_plane(p, plane, max_distance)
            placed[tip] = TargetInBase(target, p, quat, moved)
        if not refused_stamps:
            return placed
        return {tip: t for tip, t in placed.items()
                if t.target.index is None or t.target.stamp not in refused_stamps}

    # ------------------------------------------------------------ kept while TF warms up
    def _keep(self, targets: Mapping[Optional[str], Target],
              arrivals: Mapping[Optional[str], int]) -> None:
        """Keep ``targets`` to try again in :data:`TF_RETRY_S`: the TF listener is new and DDS
        has not brought its first transforms yet. The node goes on solving other targets
        meanwhile; a newer target of any of their slots drops them."""
        with self._lock:
            self._kept.update(targets)
            self._kept_arrivals.update(arrivals)
            if self._retry_timer is None:
                self._retry_timer = self._node.create_timer(TF_RETRY_S, self._retry_kept)

    def _retry_kept(self) -> None:
        """The timer of :meth:`_keep`: the kept targets back into the queue (unless newer ones
        came), then solved."""
        with self._lock:
            if self._retry_timer is not None:
                self._node.destroy_timer(self._retry_timer)
                self._retry_timer = None
            targets, arrivals = self._kept, self._kept_arrivals
            self._kept, self._kept_arrivals = {}, {}
        if targets and self._queue.put_back(targets, arrivals):
            self._resume()

    # ------------------------------------------------------------ 3. placed -> the answer
    def solve(self, model: RobotModel, job: SolveInput) -> IkResult:
        """The solver's result for ``job``; a branched chain solves for the standing target of
        every tip, the new ones included."""
        if model.config.branched:
            self._standing.update(job.targets)
            self.standing = {tip: t.position for tip, t in self._standing.items()}
            return model.solver.solve(  # each tip's solver_target, inline
                targets={tip: t.position if t.quat_xyzw is None else (t.position, t.quat_xyzw)
                         for tip, t in self._standing.items()},
                seed=job.seed)
        target = job.targets[None]
        return model.solver.solve(target.position, target.quat_xyzw, seed=job.seed)
