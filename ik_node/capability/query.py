"""Questions a capability map answers: is this pose reachable (forward, in batches), and where
may the base stand so that these task poses are (inverse: base placement).

Forward: a pose's cell is the voxel holding its position and its orientation bin
(:func:`~ik_node.capability.orientations.orientation_bins`). A uniform cell (:mod:`.uniform`)
answers for the pose; a mixed one is decided by IK at query time (or is uncertain); a position
outside the map's cells is beyond the proven reach. Base placement: every base pose of a floor
grid (x, y, yaw; the base at a fixed height) takes the task poses into its frame and counts the
share in uniformly reachable cells (what it claims) and in mixed ones; the best are ranked, and
:func:`verify_placements` checks the top ones by real IK of every task pose.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np

from ik_node.capability.orientations import orientation_bins, rotations_from_quats
from ik_node.capability.storage import CapabilityMap
from ik_node.errors import TargetError

class CellLookup:
    """The row of each voxel of a map in a dense volume over the cells' box (built once)."""

    def __init__(self, capability: CapabilityMap):
        cells = capability.cells
        self.voxel_m = capability.voxel_m
        if len(cells):
            self.low = cells.min(axis=0)
            shape = cells.max(axis=0) - self.low + 1
        else:
            self.low, shape = np.zeros(3, np.int64), np.ones(3, np.int64)
        self.shape = shape
        self.rows = np.full(tuple(shape.tolist()), -1, np.int64)
        if len(cells):
            self.rows[tuple((cells - self.low).T)] = np.arange(len(cells))

    def rows_of(self, positions: np.ndarray) -> np.ndarray:
        """(...,) the map row of each position's voxel, -1 outside the map."""
        index = np.floor(positions * (1.0 / self.voxel_m) + 0.5).astype(np.int64) - self.low
        sx, sy, sz = self.shape.tolist()
        ix, iy, iz = index[..., 0], index[..., 1], index[..., 2]
        inside = (ix >= 0) & (ix < sx) & (iy >= 0) & (iy < sy) & (iz >= 0) & (iz < sz)
        flat = np.where(inside, (ix * sy + iy) * sz + iz, 0)
        return np.where(inside, self.rows.ravel()[flat], -1)


def check_poses(poses) -> np.ndarray:
    """(N, 7) float poses ``x y z qx qy qz qw`` [m], or :class:`TargetError` naming the bad row."""
    try:
        poses = np.asarray(poses, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TargetError(f'poses are not numeric: {exc}') from None
    if poses.ndim != 2 or poses.shape[1] != 7:
        raise TargetError(f'poses have shape {poses.shape}; expected (N, 7): x y z qx qy qz qw')
    finite = np.isfinite(poses).all(axis=1)
    norms = np.linalg.norm(poses[:, 3:], axis=1)
    bad = np.flatnonzero(~finite | ~(norms > 1e-6))
    if len(bad):
        raise TargetError(f'pose {bad[0]} {poses[bad[0]].tolist()}: a NaN, infinite value or '
                          'zero quaternion')
    return poses


class QueryIk(NamedTuple):
    """How a forward query decides a pose of a mixed cell by IK: from the mid configuration,
    then ``attempts - 1`` random ones (drawn from ``seed``), each cut off after ``descents``
    stuck descents. All poses of a batch take each start together (one call of the batch
    kernel per start, for the poses not yet reached). Many starts of one descent each find
    about as many poses as fewer starts with restarts (the restarts' draws add little that
    a fresh start does not), at under half the cost of a pose IK does not reach."""

    attempts: int = 12
    descents: int = 1
    seed: int = 0


class Verdicts(NamedTuple):
    """The forward answer per pose.

    Attributes:
        verdict: (N,) int8: :data:`REACHABLE`, :data:`UNREACHABLE` or :data:`UNCERTAIN` (a mixed
            cell and no solver to decide it).
        by_ik: (N,) bool: the pose's cell is mixed and it was decided at query time: by IK,
            or out of reach by a proven bound (the wrist's:
            :func:`~ik_node.capability.decide.beyond_wrist_reach`; the arm's lateral offset:
            :mod:`~ik_node.capability.axis_offset`).
        joints: (N, n) the IK answer of each pose decided reachable by IK (NaN elsewhere), or
            None where no IK ran.
    """

    verdict: np.ndarray
    by_ik: np.ndarray
    joints: Optional[np.ndarray] = None

    @property
    def reachable(self) -> np.ndarray:
        """(N,) bool: reachable."""
        return self.verdict == REACHABLE

    @property
    def uncertain(self) -> np.ndarray:
        """(N,) bool: neither verdict (a mixed cell, not decided by IK)."""
        return self.verdict == UNCERTAIN


REACHABLE, UNREACHABLE, UNCERTAIN = 1, 0, -1


def reachable(capability: CapabilityMap, poses, lookup: Optional[CellLookup] = None,
              solver=None, ik: Optional[QueryIk] = None) -> Verdicts:
    """The verdict on each pose ``x y z qx qy qz qw`` (the tool's, in the base frame).

    A pose in a uniform cell gets the cell's verdict; a position beyond the map's cells is
    beyond the proven reach; a pose in a mixed cell is decided by IK with ``solver`` (the map's
    chain and collision world: :func:`ik_node.capability.decide.solver_for`; ``ik`` says how
    hard it tries) unless the wrist's bound proves it out of reach, or is :data:`UNCERTAIN`
    without a solver.
    """
    poses = check_poses(poses)
    lookup = lookup or CellLookup(capability)
    rows = lookup.rows_of(poses[:, :3])
    bins = orientation_bins(capability.orientations, rotations_from_quats(poses[:, 3:]))
    verdict = np.full(len(poses), UNREACHABLE, np.int8)
    mixed = np.zeros(len(poses), bool)
    inside = np.flatnonzero(rows >= 0)
    verdict[inside] = capability.reached[rows[inside], bins[inside]]
    mixed[inside] = capability.mixed[rows[inside], bins[inside]]
    if not mixed.any():
        return Verdicts(verdict, mixed)
    if solver is None:
        verdict[mixed] = UNCERTAIN
        return Verdicts(verdict, np.zeros(len(poses), bool))
    from ik_node.capability.decide import beyond_wrist_reach, decide_targets, wrist_of
    ik = ik or QueryIk()
    ask = np.flatnonzero(mixed)
    positions = np.ascontiguousarray(poses[ask, :3])
    quats = poses[ask, 3:] / np.linalg.norm(poses[ask, 3:], axis=1, keepdims=True)
    # Proven out of reach (the wrist's bound, the arm's lateral offset): no IK needed.
    from ik_node.capability.axis_offset import inside_axis_offset
    ask = ask[~beyond_wrist_reach(solver, wrist_of(solver), positions, quats,
                                  capability.tool_offset) &
              ~inside_axis_offset(solver, positions, quats, capability.tool_offset)]
    quats = poses[ask, 3:] / np.linalg.norm(poses[ask, 3:], axis=1, keepdims=True)
    verdict[mixed] = UNREACHABLE
    joints = np.full((len(poses), solver.chain.n), np.nan)
    if len(ask):
        found, answers = decide_targets(
            solver, np.ascontiguousarray(poses[ask, :3]), np.ascontiguousarray(quats),
            query_seeds(solver.chain, ik), ik.descents, capability.tool_offset)
        verdict[ask] = np.where(found, REACHABLE, UNREACHABLE)
        joints[ask[found]] = answers[found]
    return Verdicts(verdict, mixed, joints)


def query_seeds(chain, ik: QueryIk) -> np.ndarray:
    """(attempts, n) the start configurations of query-time IK: mid, then random ones."""
    rng = np.random.default_rng(ik.seed)
    low = np.where(np.isfinite(chain.lower), chain.lower, -np.pi)
    high = np.where(np.isfinite(chain.upper), chain.upper, np.pi)
    return np.vstack([chain.mid_configuration()[None, :],
                      rng.uniform(low, high, size=(max(ik.attempts, 1) - 1, chain.n))])

