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

import math
from typing import List, NamedTuple, Optional, Sequence

import numpy as np

import ik_node.capability.compiled_placement as compiled_placement
from ik_node.capability.orientations import orientation_bins, rotations_from_quats
from ik_node.capability.storage import ALL, MIXED, NONE, CapabilityMap
from ik_node.errors import ConfigError, TargetError

#: Most base poses a placement grid may have.
MAX_BASE_POSES = 5_000_000


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
    stuck descents."""

    attempts: int = 8
    descents: int = 4
    seed: int = 0


class Verdicts(NamedTuple):
    """The forward answer per pose.

    Attributes:
        verdict: (N,) int8: :data:`REACHABLE`, :data:`UNREACHABLE` or :data:`UNCERTAIN` (a mixed
            cell and no solver to decide it).
        by_ik: (N,) bool: the pose's cell is mixed and it was decided at query time: by IK,
            or out of reach by the wrist's proven bound
            (:func:`~ik_node.capability.decide.beyond_wrist_reach`).
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
    # Proven out of reach (the wrist's bound): no IK needed.
    ask = ask[~beyond_wrist_reach(solver, wrist_of(solver), positions, quats,
                                  capability.tool_offset)]
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


class PlacementGrid(NamedTuple):
    """Base poses on the floor: x and y ranges [m] (start, stop inclusive, step), yaw step
    [rad] over a full turn, and the base's height [m] in the task poses' frame."""

    x: tuple = (-1.0, 1.0, 0.05)
    y: tuple = (-1.0, 1.0, 0.05)
    yaw_step: float = math.radians(10.0)
    z: float = 0.0

    def axes(self):
        """The x values, y values and yaws [m, m, rad]."""
        values = []
        for name, (start, stop, step) in (('x', self.x), ('y', self.y)):
            if not (math.isfinite(start) and math.isfinite(stop) and math.isfinite(step) and
                    step > 0 and stop >= start):
                raise ConfigError(f'placement grid {name}: {start}:{stop}:{step} is not a range '
                                  '(start <= stop, step > 0, finite)')
            values.append(start + step * np.arange(int(math.floor((stop - start) / step + 1e-9))
                                                   + 1))
        if not (math.isfinite(self.yaw_step) and self.yaw_step > 0):
            raise ConfigError(f'placement yaw step {self.yaw_step} rad: give a step > 0')
        yaws = self.yaw_step * np.arange(int(math.ceil(2 * math.pi / self.yaw_step - 1e-9)))
        if not math.isfinite(self.z):
            raise ConfigError(f'placement height {self.z} is not finite')
        total = len(values[0]) * len(values[1]) * len(yaws)
        if total > MAX_BASE_POSES:
            raise ConfigError(f'the placement grid has {total:,} base poses; at most '
                              f'{MAX_BASE_POSES:,}: use larger steps or a smaller area')
        return values[0], values[1], yaws


class Placement(NamedTuple):
    """One base pose: the share of task poses in uniformly reachable cells of the map (what
    it claims), and the share in mixed cells (reachable or not)."""

    x: float
    y: float
    yaw: float
    share: float
    mixed: float = 0.0


class PlacementScan(NamedTuple):
    """Every base pose of a grid and its shares: ``shares[t, i, j]`` (task poses in uniformly
    reachable cells) and ``mixed[t, i, j]`` (in mixed cells) for the base at ``(xs[i], ys[j])``
    turned by ``yaws[t]``."""

    xs: np.ndarray
    ys: np.ndarray
    yaws: np.ndarray
    shares: np.ndarray
    mixed: np.ndarray

    def best(self, top: int) -> List[Placement]:
        """The ``top`` base poses, highest share first, then the most in mixed cells (ties:
        the grid's order)."""
        flat, mixed = self.shares.ravel(), self.mixed.ravel()
        order = np.lexsort((np.arange(len(flat)), -mixed, -flat))[:top]
        return self._placements(order)

    def most_possible(self, top: int) -> List[Placement]:
        """The ``top`` base poses with the most task poses possibly reachable (in uniformly
        reachable or mixed cells), then the most uniformly reachable."""
        flat, mixed = self.shares.ravel(), self.mixed.ravel()
        order = np.lexsort((np.arange(len(flat)), -flat, -(flat + mixed)))[:top]
        return self._placements(order)

    def _placements(self, order: np.ndarray) -> List[Placement]:
        flat, mixed = self.shares.ravel(), self.mixed.ravel()
        t, i, j = np.unravel_index(order, self.shares.shape)
        return [Placement(float(self.xs[a]), float(self.ys[b]), float(self.yaws[c]),
                          float(flat[k]), float(mixed[k]))
                for a, b, c, k in zip(i.tolist(), j.tolist(), t.tolist(), order.tolist())]


def placement_scan(capability: CapabilityMap, poses, grid: Optional[PlacementGrid] = None,
                   compiled: bool = True) -> PlacementScan:
    """The share of ``poses`` (``x y z qx qy qz qw`` in the floor's frame) in uniformly
    reachable cells of the map, and the share in mixed cells, from every base pose of ``grid``.
    ``compiled``: the scan in one numba call where numba serves (False: numpy)."""
    poses = check_poses(poses)
    grid = grid or PlacementGrid()
    xs, ys, yaws = grid.axes()
    lookup = CellLookup(capability)
    R_world = rotations_from_quats(poses[:, 3:])
    orientations = capability.orientations
    X, Y = np.meshgrid(xs, ys, indexing='ij')
    bases = np.stack([X.ravel(), Y.ravel()], axis=1)  # (B, 2)
    verdicts = np.ascontiguousarray(capability.verdicts).ravel()
    width = capability.reached.shape[1]
    bins = np.empty((len(yaws), len(poses)), np.int64)
    for t, yaw in enumerate(yaws.tolist()):
        c, s = math.cos(yaw), math.sin(yaw)
        Rz_T = np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]])
        bins[t] = orientation_bins(orientations, Rz_T @ R_world)
    shares = np.empty((2, len(yaws), len(bases)))
    kernel = compiled_placement.kernel() if compiled else None
    if kernel is not None:
        kernel((lookup.rows.ravel(), lookup.low, lookup.shape, 1.0 / lookup.voxel_m),
               (verdicts, width), (np.ascontiguousarray(poses[:, :3]), bins),
               (bases, yaws, float(grid.z)), shares)
    else:
        for t, yaw in enumerate(yaws.tolist()):
            c, s = math.cos(yaw), math.sin(yaw)
            dx = poses[None, :, 0] - bases[:, None, 0]
            dy = poses[None, :, 1] - bases[:, None, 1]
            local = np.stack([c * dx + s * dy, c * dy - s * dx,
                              np.broadcast_to(poses[None, :, 2] - grid.z, dx.shape)], axis=-1)
            rows = lookup.rows_of(local)  # (B, J)
            cell = np.where(rows >= 0, verdicts[np.maximum(rows, 0) * width + bins[t]], NONE)
            shares[0, t] = (cell == ALL).mean(axis=1) if len(poses) else 0.0
            shares[1, t] = (cell == MIXED).mean(axis=1) if len(poses) else 0.0
    shape = (len(yaws), len(xs), len(ys))
    return PlacementScan(xs, ys, yaws, shares[0].reshape(shape), shares[1].reshape(shape))


#: Base poses whose mixed task poses :func:`base_placement` decides by IK (at least ``top``).
CANDIDATES = 20


def base_placement(capability: CapabilityMap, poses, grid: Optional[PlacementGrid] = None,
                   top: int = 10, compiled: bool = True, solver=None) -> List[Placement]:
    """The ``top`` base poses of ``grid`` ranked by the share of ``poses`` (``x y z qx qy qz
    qw`` in the floor's frame) in uniformly reachable cells of the map, then by the share in
    mixed cells (:func:`placement_scan`). With ``solver`` (the map's:
    :func:`ik_node.capability.decide.map_solver`), the :data:`CANDIDATES` base poses with the
    most task poses possibly reachable have their task poses in mixed cells decided by IK, as a
    forward query does (:func:`reachable`), and are ranked by the share then reachable."""
    scan = placement_scan(capability, poses, grid, compiled)
    if solver is None:
        return scan.best(top)
    poses = check_poses(poses)
    z = (grid or PlacementGrid()).z
    lookup = CellLookup(capability)
    decided = []
    for p in scan.most_possible(max(top, CANDIDATES)):
        answer = reachable(capability, task_in_base(poses, p, z), lookup, solver)
        decided.append(p._replace(share=float(answer.reachable.mean()), mixed=0.0))
    order = sorted(range(len(decided)), key=lambda k: (-decided[k].share, k))
    return [decided[k] for k in order[:top]]


def task_in_base(poses: np.ndarray, placement: Placement, z: float = 0.0) -> np.ndarray:
    """(N, 7) the task poses in the frame of a base at ``placement``."""
    from ik_node.capability.orientations import quats_from_rotations
    c, s = math.cos(placement.yaw), math.sin(placement.yaw)
    Rz_T = np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]])
    p = (poses[:, :3] - np.array([placement.x, placement.y, z])) @ Rz_T.T
    R = Rz_T @ rotations_from_quats(poses[:, 3:])
    return np.hstack([p, quats_from_rotations(R)])


def verify_placements(solver, poses, placements: List[Placement], z: float = 0.0,
                      seeds: int = 32, tool: Sequence[float] = ()) -> List[float]:
    """The share of ``poses`` real IK reaches from each base pose (``solve_many`` with the
    solver's collision check; each pose from the mid configuration, then from ``seeds - 1``
    random ones, up to 8 descents each: a denser search than the map's). ``tool``: the map's
    tool offset (:attr:`CapabilityMap.tool_offset`): the poses are the tool's."""
    from ik_node.capability.decide import decide_targets
    poses = check_poses(poses)
    rng = np.random.default_rng(0)
    chain = solver.chain
    low = np.where(np.isfinite(chain.lower), chain.lower, -np.pi)
    high = np.where(np.isfinite(chain.upper), chain.upper, np.pi)
    seed_rows = np.vstack([chain.mid_configuration()[None, :],
                           rng.uniform(low, high, size=(seeds - 1, chain.n))])
    shares = []
    for placement in placements:
        local = task_in_base(poses, placement, z)
        reached, _ = decide_targets(solver, np.ascontiguousarray(local[:, :3]),
                                    np.ascontiguousarray(local[:, 3:]), seed_rows, 8, tool)
        shares.append(float(reached.mean()) if len(reached) else 0.0)
    return shares
