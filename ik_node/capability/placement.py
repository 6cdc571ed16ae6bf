"""Inverse queries of a capability map: where may the base stand so that these task poses are
reachable (base placement).

Every base pose of a floor grid (x, y, yaw; the base at a fixed height) takes the task poses
into its frame and counts the share in uniformly reachable cells (what the map alone claims)
and in mixed ones (:func:`placement_scan`, one numba call). :func:`base_placement` ranks them;
with the map's solver the best candidates have their task poses in mixed cells decided by IK,
as a forward query decides them (:func:`~ik_node.capability.query.reachable`).
:func:`place_base` (:mod:`.placement_answer`) adds the verification by IK of every task pose.
"""

from __future__ import annotations

import math
from typing import List, NamedTuple, Optional, Sequence

import numpy as np

import ik_node.capability.compiled_placement as compiled_placement
from ik_node.capability.orientations import orientation_bins, rotations_from_quats
from ik_node.capability.query import CellLookup, check_poses, reachable
from ik_node.capability.storage import ALL, MIXED, NONE, CapabilityMap
from ik_node.errors import ConfigError

#: Most base poses a placement grid may have.
MAX_BASE_POSES = 5_000_000


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
    decided = decide_candidates(capability, check_poses(poses), scan, solver,
                                (grid or PlacementGrid()).z, max(top, CANDIDATES))
    return [p for p, _ in decided[:top]]


def decide_candidates(capability: CapabilityMap, poses: np.ndarray, scan: PlacementScan,
                      solver, z: float = 0.0, count: int = CANDIDATES):
    """The ``count`` base poses of ``scan`` with the most task poses possibly reachable, their
    task poses in mixed cells decided by IK (:func:`reachable`), best first (the share then
    reachable; ties: the scan's order). Returns ``[(placement, verdicts)]``: ``placement.share``
    the share reachable, ``verdicts`` the :class:`~ik_node.capability.query.Verdicts` of the
    task poses in the base's frame."""
    lookup = CellLookup(capability)
    decided = []
    for p in scan.most_possible(count):
        answer = reachable(capability, task_in_base(poses, p, z), lookup, solver)
        decided.append((p._replace(share=float(answer.reachable.mean()), mixed=0.0), answer))
    order = sorted(range(len(decided)), key=lambda k: (-decided[k][0].share, k))
    return [decided[k] for k in order]


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
    """The share of ``poses`` real IK reaches from each base pose (:func:`reached_from`)."""
    poses = check_poses(poses)
    return [float(reached_from(solver, poses, p, z, seeds, tool)[0].mean()) if len(poses)
            else 0.0 for p in placements]


def reached_from(solver, poses: np.ndarray, placement: Placement, z: float = 0.0,
                 seeds: int = 32, tool: Sequence[float] = (), ask: Optional[np.ndarray] = None):
    """Which of ``poses`` (checked, in the floor's frame) real IK reaches from a base pose:
    ``solve_many``'s kernel with the solver's collision check, each pose from the mid
    configuration, then from ``seeds - 1`` random ones, up to 8 descents each (a denser search
    than the map's). ``tool``: the map's tool offset (:attr:`CapabilityMap.tool_offset`): the
    poses are the tool's. ``ask``: (N,) bool, the poses to try (default: all).

    Returns:
        ``(reached (N,) bool, joints (N, n))``: the answers of reached poses (NaN elsewhere).
    """
    from ik_node.capability.decide import decide_targets
    chain = solver.chain
    rng = np.random.default_rng(0)
    low = np.where(np.isfinite(chain.lower), chain.lower, -np.pi)
    high = np.where(np.isfinite(chain.upper), chain.upper, np.pi)
    seed_rows = np.vstack([chain.mid_configuration()[None, :],
                           rng.uniform(low, high, size=(seeds - 1, chain.n))])
    rows = np.flatnonzero(np.ones(len(poses), bool) if ask is None else ask)
    reached, joints = np.zeros(len(poses), bool), np.full((len(poses), chain.n), np.nan)
    if len(rows):
        local = task_in_base(poses[rows], placement, z)
        found, answers = decide_targets(solver, np.ascontiguousarray(local[:, :3]),
                                        np.ascontiguousarray(local[:, 3:]), seed_rows, 8, tool)
        reached[rows[found]] = True
        joints[rows[found]] = answers[found]
    return reached, joints
