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
from typing import Dict, NamedTuple, Optional, Sequence, Tuple

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
            _cache[key] = (solver, cells, orientations, wrist_sphere(chain, spec.urdf_text))
        return _cache[key]


class WristSphere(NamedTuple):
    """A proven bound on pose targets from the chain's wrist.

    The origin of the second-last joint's child link (on that joint's axis: it does not move
    with that joint) stays within ``radius`` of ``centre``, the bound of the chain up to that
    link. In the tip frame it lies on a circle about the last joint's axis: centre ``point``,
    the axis ``axis`` (unit), radius ``circle`` (every angle of the last joint taken, its limits
    not: a looser bound).
    """

    centre: np.ndarray
    radius: float
    point: np.ndarray
    axis: np.ndarray
    circle: float


def wrist_sphere(chain, urdf_text: str) -> Optional[WristSphere]:
    """The :class:`WristSphere` of a chain, or None (a prismatic joint at the wrist, fewer
    than three joints, a chain not read from a URDF)."""
    from ik_node.model.chain import Chain
    if chain.n < 3 or any(j.type == 'prismatic' for j in chain.joints[-2:]):
        return None
    last, wrist = chain.joints[-1], chain.joints[-2]
    try:
        arm = Chain.from_urdf_string(urdf_text, chain.base_link, wrist.child_link)
        q = chain.mid_configuration()
        tip_inv = np.linalg.inv(chain.fk(q))
        last_frame = tip_inv @ chain.link_transform(last.child_link, q)
        wrist_point = (tip_inv @ chain.link_transform(wrist.child_link, q))[:3, 3]
    except Exception:  # the bound is an optimisation: without it every target gets IK
        return None
    axis = last_frame[:3, :3] @ np.asarray(last.axis, float)
    axis /= np.linalg.norm(axis)
    along = float((wrist_point - last_frame[:3, 3]) @ axis)
    point = last_frame[:3, 3] + along * axis
    centre, radius = reach_sphere(arm)
    return WristSphere(centre, radius, point, axis, float(np.linalg.norm(wrist_point - point)))


def wrist_of(solver) -> Optional[WristSphere]:
    """The :class:`WristSphere` of a solver made by :func:`solver_for` (None for another)."""
    with _lock:
        for entry in _cache.values():
            if entry[0] is solver:
                return entry[3]
    return None


def beyond_wrist_reach(solver, wrist: Optional[WristSphere], positions: np.ndarray,
                       quats: np.ndarray, tool: Sequence[float] = ()) -> np.ndarray:
    """(N,) bool: the pose targets (the tool's, with ``tool``) proven out of reach: every
    place their wrist point may take is beyond the wrist's reach by more than the solver's
    tolerances allow."""
    if wrist is None:
        return np.zeros(len(positions), bool)
    from ik_node.capability.orientations import rotations_from_quats
    p_tip, q_tip = tip_targets(positions, quats, tool)
    R = rotations_from_quats(q_tip)
    w = wrist.centre - (p_tip + R @ wrist.point)
    axis = R @ wrist.axis
    along = np.sum(w * axis, axis=1)
    across = np.linalg.norm(w - along[:, None] * axis, axis=1)
    nearest = np.sqrt(along ** 2 + (across - wrist.circle) ** 2)
    arm = float(np.linalg.norm(wrist.point)) + wrist.circle
    margin = solver.params['position_tolerance'] + \
        solver.params['orientation_tolerance'] * arm + 1e-9
    return nearest > wrist.radius + margin


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
    solver, cells, orientations, wrist = _prepared(spec)
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
        hopeless = beyond_wrist_reach(solver, wrist, positions, quats, spec.tool_offset)
        ok, joints = np.zeros(K, bool), np.zeros((K, n))
        if not hopeless.all():
            ask = np.flatnonzero(~hopeless)
            ok[ask], joints[ask] = decide_targets(solver, positions[ask], quats[ask],
                                                  [first[ask]], spec.descents, spec.tool_offset)
        pending = np.flatnonzero(~ok & ~hopeless)
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
