"""Each cell of a shard decided by IK: a target (cell centre, orientation) is reachable when an
IK answer reaches it within the solver's tolerances (FK-measured) and, with collisions, is free
of self-collision and of the world.

A target is tried from the mid configuration, then from ``attempts - 1`` fixed random
configurations (drawn from the spec's seed, the same for every target), each attempt a
``damped_jacobian`` solve in the batch kernel (:mod:`ik_node.solvers.batch.compiled`) cut off
after ``descents`` stuck descents. Not found is not proven unreachable (except a centre beyond
the proven reach): the held-out benchmark measures how often the verdict is wrong.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Dict, Sequence, Tuple

import numpy as np

from ik_node.capability.orientations import OrientationSet, orientation_set
from ik_node.capability.spec import (MapSpec, column_starts, grid_cells, reach_sphere,
                                     shard_bounds)
from ik_node.capability.tool import offset_length, tip_targets

_cache: Dict[str, Tuple[object, np.ndarray, OrientationSet]] = {}
_lock = threading.Lock()


def solver_for(spec: MapSpec):
    """The ``damped_jacobian`` solver of ``spec``'s chain and collision world (made once per
    process and spec)."""
    return _prepared(spec)[0]


def cells_of(spec: MapSpec) -> np.ndarray:
    """(M, 3) the voxel indices of ``spec``'s map (:func:`ik_node.capability.spec.grid_cells`)."""
    return _prepared(spec)[1]


def _prepared(spec: MapSpec):
    key = spec.key()
    with _lock:
        if key not in _cache:
            from ik_node.model.chain import Chain
            from ik_node.solvers import make_solver
            path = Path(spec.urdf_path) if spec.urdf_path else None
            if path is not None and path.is_file() and path.read_text() == spec.urdf_text:
                chain = Chain.from_urdf_file(path, spec.base_link, spec.tip_link)
            else:
                chain = Chain.from_urdf_string(spec.urdf_text, spec.base_link, spec.tip_link)
            solver = make_solver('damped_jacobian', chain, {'self_collision': spec.collisions,
                                                            'timeout': 1.0})
            if spec.collisions and spec.table_z is not None:
                solver.configure_collision(ground_z=spec.table_z)
            orientations = orientation_set(spec.directions, spec.rolls)
            centre, radius = reach_sphere(chain)
            radius += offset_length(spec.tool_offset)
            cells = grid_cells(centre, radius, spec.voxel_m, len(orientations))
            _cache[key] = (solver, cells, orientations)
        return _cache[key]


def attempt_seeds(spec: MapSpec, chain) -> np.ndarray:
    """(attempts, n) the start configurations of the attempts: the mid configuration, then
    random ones within the limits from ``spec.seed``."""
    rng = np.random.default_rng(spec.seed)
    low = np.where(np.isfinite(chain.lower), chain.lower, -np.pi)
    high = np.where(np.isfinite(chain.upper), chain.upper, np.pi)
    extra = rng.uniform(low, high, size=(spec.attempts - 1, chain.n))
    return np.vstack([chain.mid_configuration()[None, :], extra])


def decide_shard(spec: MapSpec, index: int) -> np.ndarray:
    """(cells of shard ``index``, orientations) bool: each target reached by IK.

    A shard holds whole columns of cells (one x, y); up each column, a target's first attempt
    starts from the answer to the same orientation in the cell below, where that was reached
    (an answer one voxel away converges in a few iterations), else from the mid configuration
    (always at a column's first cell); its second from the answer to the nearest orientation
    reached in the same cell, else from the first of the spec's random configurations; the
    others from the spec's random configurations. So a verdict depends on its column only: not
    on the shards' size nor on how many workers build the map."""
    solver, cells, orientations = _prepared(spec)
    bounds = shard_bounds(cells, spec.shard_cells)
    rows = cells[bounds[index]:bounds[index + 1]]
    starts = column_starts(cells)[bounds[index]:bounds[index + 1]]
    K, n = len(orientations), solver.chain.n
    quats = np.ascontiguousarray(orientations.quats_xyzw)
    seeds = attempt_seeds(spec, solver.chain)
    nearest = _nearest_orientations(orientations)
    reached = np.zeros((len(rows), K), bool)
    mid = np.ascontiguousarray(np.broadcast_to(seeds[0], (K, n)))
    first = mid
    for c, cell in enumerate(rows.tolist()):
        if starts[c]:
            first = mid
        positions = np.ascontiguousarray(np.broadcast_to(np.array(cell) * spec.voxel_m, (K, 3)))
        ok, joints = decide_targets(solver, positions, quats, [first], spec.descents,
                                    spec.tool_offset)
        pending = np.flatnonzero(~ok)
        if len(pending) and spec.attempts > 1:
            near_ok = ok[nearest[pending]]  # (P, K - 1): the nearest orientations reached?
            sibling = nearest[pending, np.argmax(near_ok, axis=1)]
            second = np.where(near_ok.any(axis=1)[:, None], joints[sibling], seeds[1])
            more, more_joints = decide_targets(solver, positions[pending], quats[pending],
                                               [second, *seeds[2:]], spec.descents,
                                               spec.tool_offset)
            ok[pending], joints[pending] = more, more_joints
        reached[c] = ok
        first = np.where(ok[:, None], joints, seeds[0])
    return reached


def _nearest_orientations(orientations: OrientationSet) -> np.ndarray:
    """(K, K - 1): per orientation bin the others, nearest (by rotation angle) first."""
    R = orientations.rotations
    cosines = np.einsum('aij,bij->ab', R, R)  # trace(R_a^T R_b) = 1 + 2 cos(angle)
    np.fill_diagonal(cosines, -np.inf)
    return np.argsort(-cosines, axis=1, kind='stable')[:, :-1]


def decide_targets(solver, positions: np.ndarray, quats: np.ndarray, seeds,
                   descents: int, tool: Sequence[float] = ()) -> Tuple[np.ndarray, np.ndarray]:
    """Each pose target decided by IK: reached (within tolerance, and free where ``solver``
    checks collisions) from one of ``seeds`` in turn (each an (n,) start for every target or an
    (N, n) start per target), each attempt cut off after ``descents`` stuck descents. Without
    the compiled kernels, ``solver.solve`` decides each attempt. With a ``tool`` offset
    (:mod:`.tool`) the targets are the tool's poses: IK reaches the tip poses that put it there.

    Returns:
        ``(reached (N,) bool, joints (N, n))``: the answers of reached targets (else zeros).
    """
    from ik_node.solvers.batch import compiled
    positions, quats = tip_targets(positions, quats, tool)
    count, n = len(positions), solver.chain.n
    reached = np.zeros(count, bool)
    answers = np.zeros((count, n))
    checker = getattr(getattr(solver, '_collision', None), 'checker', None)
    kernel = compiled.serves(solver, True)
    tol_p, tol_r = solver.params['position_tolerance'], solver.params['orientation_tolerance']
    for seed in seeds:
        pending = np.flatnonzero(~reached)
        if not len(pending):
            break
        seed = np.asarray(seed, dtype=float)
        seed_rows = np.ascontiguousarray(seed[pending] if seed.ndim == 2 else
                                         np.broadcast_to(seed, (len(pending), n)))
        if kernel:
            found = compiled.run(solver, positions[pending], quats[pending], seed_rows,
                                 descents, min(descents, compiled.CHECK_BEYOND_REACH))
            ok = found.converged & (found.errors[:, 0] <= tol_p) & (found.errors[:, 1] <= tol_r)
            joints = found.joints
        else:
            results = [solver.solve(positions[i], quats[i], seed_rows[k])
                       for k, i in enumerate(pending.tolist())]
            ok = np.array([r.reachable for r in results], bool)
            joints = np.array([r.joint_positions for r in results])
        if checker is not None and ok.any():
            hit = np.flatnonzero(ok)
            ok[hit] = checker.free_mask(joints[hit])
        reached[pending[ok]] = True
        answers[pending[ok]] = joints[ok]
    return reached, answers


#: What a shard task returns: its index, its packed verdicts, orientations, seconds.
ShardAnswer = Tuple[int, np.ndarray, int, float]


def shard_task(spec: MapSpec, index: int) -> ShardAnswer:
    """Compute shard ``index`` of ``spec`` (in a worker process or a Ray task)."""
    start = time.perf_counter()
    reached = decide_shard(spec, index)
    return index, np.packbits(reached, axis=1), reached.shape[1], time.perf_counter() - start


def map_solver(meta) -> Tuple[object, str]:
    """``(solver, '')``: the solver of the map with ``meta`` (its chain, collision world) when
    the robot description it was built from is found unchanged (its sha256 is in the map), else
    ``(None, why not)``."""
    from ik_node.capability.spec import spec_of_map
    path = Path(meta.get('urdf_path') or '')
    if not meta.get('urdf_path') or not path.is_file():
        return None, 'the robot description the map was built from is not found'
    spec = spec_of_map(meta, path.read_text(), str(path))
    if spec.description_hash != meta['description_sha256']:
        return None, f'{path} changed since the map was built'
    return solver_for(spec), ''
