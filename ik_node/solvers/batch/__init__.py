"""Batch IK: many targets of one chain in one call, arrays in and arrays out.

:func:`solve_many` answers each target as :meth:`Solver.solve <ik_node.solvers.base.Solver.
solve>` answers it one call at a time, without the per-call Python where it can: for a
``damped_jacobian`` solver on a serial chain with the compiled kernels loaded, the seed's descent
and the first restarts of every target run in one numba call (:mod:`.compiled`); the targets
that do not converge there, and every target of any other solver, are solved by ``solve()``
itself. The answer of a target is therefore ``solve()``'s, with one difference: the compiled
call has no wall-time budget, so a target that ``solve()`` would give up on after its
``timeout`` may converge here.

With the solver's collision check (``self_collision`` and collision geometry), converged answers
are checked together: the collision kernel on all of them in one compiled call, and
:meth:`CollisionChecker.is_free <ik_node.collision.check.CollisionChecker.is_free>` (the check
``solve()`` makes) where its bound is within the padding (:func:`.compiled.free_rows`); an
answer in collision goes on to the solver's collision guard, which repairs or re-solves it, as
``solve()`` hands it over after the same descents.
"""

from __future__ import annotations

import math
from typing import List, NamedTuple, Optional

import numpy as np

import ik_node.solvers.batch.compiled as compiled
from ik_node.errors import TargetError
from ik_node.solvers.input_checks import MAX_COORDINATE_M, rotation_from_input
from ik_node.solvers.batch.seed_table import ALTERNATIVES, nearest_seeds
from ik_node.solvers.results import IkStatus

#: ``BatchResult.status`` codes: the index of each status in this tuple.
STATUS_ORDER = tuple(IkStatus)
_CODE = {status: code for code, status in enumerate(STATUS_ORDER)}
#: ``BatchResult.collision``: the answer is free, in collision, or was not checked (the solver
#: checks no collision).
FREE, COLLIDING, NOT_CHECKED = 1, 0, -1
#: ``solve_many(..., seeds=NEAREST)``: each target from the nearest of a table of
#: configurations (:func:`~.seed_table.nearest_seeds`).
NEAREST = 'nearest'


class BatchResult(NamedTuple):
    """The answers of :func:`solve_many`, one row per target.

    Attributes:
        joints: (N, n) joint positions [rad or m], within the limits.
        status: (N,) int8, the index of each result's :class:`IkStatus` in
            :data:`STATUS_ORDER` (:meth:`statuses` gives them).
        reachable: (N,) bool, the measured errors within the tolerances (and, with a collision
            check, the answer free).
        position_error: (N,) FK-measured distance of the tip from the target [m].
        orientation_error: (N,) FK-measured angle to the target orientation [rad]; NaN for
            position targets.
        collision: (N,) int8: :data:`FREE`, :data:`COLLIDING` or :data:`NOT_CHECKED`.
        compiled: (N,) bool, answered by the batch kernel alone (False: by ``solve()``, or by
            the collision guard after the kernel's answer collided).
        seeds: (N, n) the start configuration of each target (clipped into the limits): the
            answer is ``solve()``'s from it.
    """

    joints: np.ndarray
    status: np.ndarray
    reachable: np.ndarray
    position_error: np.ndarray
    orientation_error: np.ndarray
    collision: np.ndarray
    compiled: np.ndarray
    seeds: np.ndarray

    def statuses(self) -> List[IkStatus]:
        """The status of each target."""
        return [STATUS_ORDER[code] for code in self.status.tolist()]


def solve_many(solver, positions, orientations=None, seeds=None) -> BatchResult:
    """Solve many targets of one chain with ``solver``, each as ``solver.solve`` would.

    Args:
        solver: a :class:`~ik_node.solvers.base.Solver` of a chain with one tip.
        positions: (N, 3) tip positions in the base frame [m].
        orientations: (N, 4) unit quaternions (x, y, z, w), or None for position targets.
        seeds: (N, n) start configurations, or (n,) for all, or None (the mid configuration),
            or :data:`NEAREST` (``'nearest'``: the nearest of a table of configurations, and
            where the kernel does not converge from it the next ones, :mod:`.seed_table`;
            fewer iterations; ``BatchResult.seeds`` says which); clipped into the limits.

    Returns:
        A :class:`BatchResult`.

    Raises:
        TargetError: a badly shaped array, a NaN, infinite or huge coordinate, a zero or
            non-finite quaternion, a non-finite seed (the message names the first bad row).
    """
    n = solver.chain.n
    positions = _rows(positions, 3, 'positions')
    count = len(positions)
    _check_finite(positions, 'positions', MAX_COORDINATE_M)
    quats = None
    if orientations is not None:
        quats = _rows(orientations, 4, 'orientations', count)
        _check_finite(quats, 'orientations', math.inf)
        norms = np.linalg.norm(quats, axis=1)
        bad = np.flatnonzero(~(norms >= 1e-6) | ~np.isfinite(norms))
        if len(bad):
            raise TargetError(f'orientations row {bad[0]} {quats[bad[0]].tolist()} is not a '
                              'usable quaternion (zero or too large)')
    alternatives = ()
    if seeds is None:
        seed_rows = np.broadcast_to(solver._q_mid, (count, n))
    elif isinstance(seeds, str):
        if seeds != NEAREST:
            raise TargetError(f"seeds {seeds!r}: expected an array, None or '{NEAREST}'")
        alternatives = nearest_seeds(solver, positions, quats, 1 + ALTERNATIVES)
        seed_rows, alternatives = alternatives[0], alternatives[1:]
    else:
        seed_array = np.asarray(seeds, dtype=float)
        if seed_array.ndim == 1:
            seed_array = np.broadcast_to(seed_array, (count, seed_array.shape[0]))
        seed_rows = _rows(seed_array, n, 'seeds', count)
        _check_finite(seed_rows, 'seeds', math.inf)
    seed_rows = np.ascontiguousarray(np.clip(seed_rows, solver.chain.lower, solver.chain.upper))
    result = _empty(count, n, solver, seed_rows)
    if count:
        done = _compiled(solver, positions, quats, seed_rows, result)
        for seeds_next in alternatives:  # the next table seeds, in the kernel
            _again(solver, (positions, quats, seeds_next), done, result)
        for i in np.flatnonzero(~done).tolist():
            _one(solver, i, positions, quats, seed_rows, result)
    return result


def _again(solver, targets, done: np.ndarray, result: BatchResult) -> None:
    """The targets not ``done`` through the batch kernel again from ``targets``' seeds; those
    it answers written into ``result`` (their seeds too) and marked ``done``."""
    positions, quats, seeds = targets
    rows = np.flatnonzero(~done)
    if not len(rows):
        return
    part = _empty(len(rows), solver.chain.n, solver, np.ascontiguousarray(
        np.clip(seeds[rows], solver.chain.lower, solver.chain.upper)))
    answered = _compiled(solver, positions[rows], None if quats is None else quats[rows],
                         part.seeds, part)
    for mine, theirs in zip(result, part):
        mine[rows[answered]] = theirs[answered]
    done[rows[answered]] = True


def _rows(values, width: int, name: str, count: Optional[int] = None) -> np.ndarray:
    try:
        array = np.ascontiguousarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TargetError(f'{name} is not numeric: {exc}') from exc
    if array.ndim == 1 and array.shape[0] == width and count in (None, 1):
        array = array.reshape(1, width)
    if array.ndim != 2 or array.shape[1] != width or (count is not None and
                                                       array.shape[0] != count):
        want = f'({count if count is not None else "N"}, {width})'
        raise TargetError(f'{name} has shape {array.shape}; expected {want}')
    return array


def _check_finite(array: np.ndarray, name: str, limit: float) -> None:
    ok = np.isfinite(array).all(axis=1) & (np.abs(array) <= limit).all(axis=1)
    bad = np.flatnonzero(~ok)
    if len(bad):
        raise TargetError(f'{name} row {bad[0]} {array[bad[0]].tolist()} has a NaN, infinite '
                          f'or out-of-range value (|coordinate| <= {limit:g})')


def _empty(count: int, n: int, solver, seeds: np.ndarray) -> BatchResult:
    checks = _checker(solver) is not None
    return BatchResult(np.zeros((count, n)), np.zeros(count, np.int8),
                       np.zeros(count, bool), np.full(count, np.nan), np.full(count, np.nan),
                       np.full(count, FREE if checks else NOT_CHECKED, np.int8),
                       np.zeros(count, bool), seeds)


def _checker(solver):
    """The collision checker of ``solver``'s guard, or None."""
    guard = getattr(solver, '_collision', None)
    return getattr(guard, 'checker', None)


def _compiled(solver, positions, quats, seeds, result: BatchResult) -> np.ndarray:
    """The targets the batch kernel answers, written into ``result`` (those whose kernel answer
    collides through the collision guard, as in ``solve()``); returns the mask of targets
    answered."""
    done = np.zeros(len(positions), bool)
    if getattr(solver, '_collision', None) is not None and _checker(solver) is None:
        return done  # a collision hook that only notes: solve() says so per result
    orientation = quats is not None
    if not compiled.serves(solver, orientation):
        return done
    answers = compiled.run(solver, positions, quats, seeds)
    out_q, errors = answers.joints, answers.errors
    done = answers.converged.copy()
    reachable = errors[:, 0] <= solver._tol_p
    if orientation:
        reachable &= errors[:, 1] <= solver._tol_r
    done &= reachable
    checker = _checker(solver)
    if checker is not None and done.any():
        rows = np.flatnonzero(done)
        free = compiled.free_rows(checker, out_q[rows])
        for i in rows[~free].tolist():  # the guard repairs or re-solves them, as in solve()
            _guarded(solver, i, (positions, quats, seeds), (out_q[i], errors[i],
                                                            answers.iterations[i]), result)
        guarded = np.zeros(len(done), bool)
        guarded[rows[~free]] = True
    else:
        guarded = np.zeros(len(done), bool)
    rows = np.flatnonzero(done & ~guarded)
    result.joints[rows] = out_q[rows]
    result.status[rows] = _CODE[IkStatus.CONVERGED]
    result.reachable[rows] = True
    result.position_error[rows] = errors[rows, 0]
    if orientation:
        result.orientation_error[rows] = errors[rows, 1]
    result.compiled[rows] = True
    return done


def _guarded(solver, i: int, targets, answer, result: BatchResult) -> None:
    """Target ``i``, whose kernel answer ``(q, errors, iterations)`` collides, through the
    solver's collision guard as ``solve()`` hands it over after the same descents."""
    import time

    from ik_node.solvers.results import RawSolution
    positions, quats, seeds = targets
    q, errors, iterations = answer
    p_list = positions[i].tolist()
    R_target = None if quats is None else rotation_from_input(quats[i])
    seed_list = seeds[i].tolist()
    start = time.perf_counter()
    raw = RawSolution(q.tolist(), IkStatus.CONVERGED, int(iterations),
                      measured=(float(errors[0]), None if quats is None else float(errors[1])))
    first = solver._finish(raw, p_list, R_target, 0.0, False, seed_list)
    _write(solver, i, solver._collision.repair(solver, first, p_list, R_target, seed_list,
                                               start), result)


def _one(solver, i: int, positions, quats, seeds, result: BatchResult) -> None:
    """Target ``i`` by ``solver.solve``, written into ``result``."""
    quat = None if quats is None else quats[i]
    _write(solver, i, solver.solve(positions[i], quat, seeds[i]), result)


def _write(solver, i: int, answer, result: BatchResult) -> None:
    """``answer`` (an IkResult) as row ``i`` of ``result``."""
    result.joints[i] = answer.joint_positions
    result.status[i] = _CODE[answer.status]
    result.reachable[i] = answer.reachable
    result.position_error[i] = answer.position_error
    if answer.orientation_error is not None:
        result.orientation_error[i] = answer.orientation_error
    checker = _checker(solver)
    if checker is not None:
        result.collision[i] = FREE if checker.is_free(answer.joint_positions) else COLLIDING
