"""Start configurations for batch IK: the nearest of a small table of configurations.

``solve_many(..., seeds='nearest')`` starts each target from a configuration of a fixed table
(:data:`TABLE_SIZE` configurations drawn once per solver from a fixed random stream, and only
collision-free ones where the solver checks collisions) instead of the mid configuration: of the
:data:`CANDIDATES` table entries whose tip positions lie nearest the target's grid cell, the
one of lowest cost by the solver's measure (squared position error plus the orientation
weight squared times the squared angle; the position alone for a position target). A descent
from there needs fewer iterations, and with a collision model its answer collides less often.
Where the batch kernel does not converge from that seed, ``solve_many`` tries the cell's other
candidates in turn (:data:`ALTERNATIVES`) in the kernel before handing the target to
``solve()`` from the first.

The table's tips are binned on a grid over their bounding box (at most :data:`GRID_CELLS`
cells along its longest side); each cell keeps the indices of the entries nearest its centre,
so a lookup is one cell and a few candidates, in numpy for all targets at once. The table is
made on the first ``'nearest'`` call for a solver and kept while the solver lives.
"""

from __future__ import annotations

import math
import threading
import weakref
from typing import NamedTuple

import numpy as np

from ik_node.model.chain import full_turn_joints
from ik_node.solvers.batch.compiled import free_rows

#: Configurations in a table.
TABLE_SIZE = 4096
#: Table entries each grid cell keeps (its nearest by tip position).
CANDIDATES = 16
#: Further candidates the batch kernel tries for a target it does not converge on (all of
#: the cell's others).
ALTERNATIVES = CANDIDATES - 1
#: Cells along the longest side of the table tips' bounding box.
GRID_CELLS = 20
#: The random stream the table is drawn from (fixed: the same table in every process).
TABLE_STREAM = 20240601

_tables: 'weakref.WeakKeyDictionary' = weakref.WeakKeyDictionary()
_lock = threading.Lock()


class SeedTable(NamedTuple):
    """Configurations, their tip poses, and the grid of nearest candidates."""

    q: np.ndarray          # (M, n) configurations within the limits
    positions: np.ndarray  # (M, 3) their tip positions [m]
    rotations: np.ndarray  # (M, 3, 3) their tip rotations
    origin: np.ndarray     # (3,) the grid's lower corner [m]
    cell: float            # the grid's cell size [m]
    shape: np.ndarray      # (3,) cells per axis
    grid: np.ndarray       # (cells, CANDIDATES) indices into q, nearest each cell's centre


def table_for(solver) -> SeedTable:
    """The seed table of ``solver`` (made on first use, kept while the solver lives)."""
    with _lock:
        table = _tables.get(solver)
        if table is None:
            table = _make(solver)
            _tables[solver] = table
    return table


def nearest_seeds(solver, positions: np.ndarray, quats=None, count: int = 1) -> np.ndarray:
    """For each target the ``count`` lowest-cost of its grid cell's candidates, lowest first
    (the module docstring).

    Args:
        solver: the solver (its chain, limits, orientation weight, collision check).
        positions: (N, 3) target positions [m], finite.
        quats: (N, 4) target orientations (x, y, z, w; not zero), or None for position targets.

        count: how many per target (at most :data:`CANDIDATES`).

    Returns:
        (count, N, n) start configurations within the limits.
    """
    table = table_for(solver)
    cell = np.floor((positions - table.origin) / table.cell).astype(np.int64)
    cell = np.clip(cell, 0, table.shape - 1)
    index = (cell[:, 0] * table.shape[1] + cell[:, 1]) * table.shape[2] + cell[:, 2]
    candidates = table.grid[index]                              # (N, K)
    cost = ((table.positions[candidates] - positions[:, None, :]) ** 2).sum(axis=2)
    if quats is not None:
        trace = np.einsum('nkab,nab->nk', table.rotations[candidates], _rotations(quats))
        angle = np.arccos(np.clip(0.5 * (trace - 1.0), -1.0, 1.0))
        weight = float(solver.params.get('orientation_weight', 1.0))
        cost += weight * weight * angle * angle
    order = np.argsort(cost, axis=1, kind='stable')[:, :count]          # (N, count)
    best = np.take_along_axis(candidates, order, axis=1)
    return np.ascontiguousarray(table.q[best.T])


def _rotations(quats: np.ndarray) -> np.ndarray:
    """(N, 3, 3) rotations of (N, 4) quaternions x, y, z, w (normalised here)."""
    x, y, z, w = (quats / np.linalg.norm(quats, axis=1)[:, None]).T
    return np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
                     2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
                     2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
                    axis=1).reshape(-1, 3, 3)


def _box(solver):
    """Where table configurations are drawn: the limits, full-turn joints within half a turn
    of the mid configuration, unbounded prismatic joints within 1 m of it."""
    chain = solver.chain
    mid = np.asarray(solver._q_mid, dtype=float)
    low, high = chain.lower.astype(float).copy(), chain.upper.astype(float).copy()
    for k in full_turn_joints(chain):
        low[k], high[k] = max(low[k], mid[k] - math.pi), min(high[k], mid[k] + math.pi)
    low = np.where(np.isfinite(low), low, mid - 1.0)
    high = np.where(np.isfinite(high), high, mid + 1.0)
    return low, high


def _make(solver) -> SeedTable:
    chain = solver.chain
    low, high = _box(solver)
    rng = np.random.default_rng(TABLE_STREAM)
    guard = getattr(solver, '_collision', None)
    checker = getattr(guard, 'checker', None)
    q = rng.uniform(low, high, size=(TABLE_SIZE if checker is None else 4 * TABLE_SIZE,
                                     chain.n))
    if checker is not None:
        free = q[free_rows(checker, q)]
        q = free[:TABLE_SIZE] if len(free) >= CANDIDATES else q[:TABLE_SIZE]
    poses = np.array([chain.fk(row) for row in q])
    positions = np.ascontiguousarray(poses[:, :3, 3])
    rotations = np.ascontiguousarray(poses[:, :3, :3])
    lower, upper = positions.min(axis=0), positions.max(axis=0)
    cell = max(float((upper - lower).max()) / GRID_CELLS, 1e-6)
    shape = np.maximum(np.ceil((upper - lower) / cell).astype(np.int64), 1)
    axes = [lower[a] + cell * (np.arange(shape[a]) + 0.5) for a in range(3)]
    centres = np.stack(np.meshgrid(*axes, indexing='ij'), axis=-1).reshape(-1, 3)
    k = min(CANDIDATES, len(q))
    grid = np.empty((len(centres), k), np.int64)
    for start in range(0, len(centres), 256):  # (256, M) distances at a time
        d = ((centres[start:start + 256, None, :] - positions[None]) ** 2).sum(axis=2)
        grid[start:start + 256] = np.argpartition(d, k - 1, axis=1)[:, :k]
    return SeedTable(np.ascontiguousarray(q), positions, rotations, lower, cell, shape, grid)
