"""The batch kernel: many targets of one damped_jacobian solver in one numba call.

This module is the one place that binds :func:`ik_node.solvers.batch.solve_many` to the compiled
descents (:mod:`ik_node.solvers.damped_jacobian.compiled`: its entry for one solve,
``_first_pose(problem, settings, seed, descent, steps)``, and ``_descend``) and reach checks
(:mod:`ik_node.solvers.out_of_reach.compiled_reach`). For each target, :func:`_solve_batch`
runs what :meth:`DampedJacobianSolver.solve
<ik_node.solvers.damped_jacobian.solver.DampedJacobianSolver.solve>` runs first, with the same
kernels and the same numbers: the reach checks, the seed's descent, and for a pose target whose
seed's descent is stuck the solver's first restarts (the mid configuration after a descent that
ended against a limit, then the lowest-cost of each batch of the solver's restart draws) until
the solver would ask the closest-pose search whether the position is out of reach. A target
that converges there has the answer ``solve()`` gives; every other target is marked
:data:`HANDED_OVER` and ``solve_many`` hands it to ``solve()`` itself. No wall-time budget runs
here: a solve that ``solve()`` would end by its ``timeout`` first may converge here.

The kernel is compiled on first use (numba's cache on disk, ``cache=True``); numba's cache does
not see changes to the kernels it calls, so :func:`kernel` drops the cached kernel when the
source of those modules changed (a stamp of their text beside the cache).
"""

from __future__ import annotations

import hashlib
import inspect
import math
import os
import threading
from typing import Callable, NamedTuple, Optional

import numpy as np

import ik_node.kernels as kernels
from ik_node.collision import gjk
from ik_node.collision import kernel as collision_kernel
from ik_node.solvers.damped_jacobian import compiled as dj
from ik_node.solvers.out_of_reach import compiled_reach

#: Codes of :func:`_solve_batch` per target.
CONVERGED = 0
HANDED_OVER = 1
#: Iterations of one kernel call's descent: more than any iteration cap (no chunks here).
_ALL_STEPS = 1 << 40
#: A 6D solve asks the closest-pose search after this many stuck descents (the solver's
#: ``_POSITION_CHECK_AFTER``), or after two when the position lies beyond the measured reach
#: (``_POSITION_CHECK_BEYOND_REACH``); the kernel hands the target over there.
CHECK_AFTER = 8
CHECK_BEYOND_REACH = 2
#: Restart batches the kernel may use: one per restart before the check.
BATCHES = CHECK_AFTER

_lock = threading.Lock()
_kernel: Optional[Callable] = None
# The compiled _collision_bounds (False: it cannot serve) and the collision kernel it calls.
_bounds = None
_check = None

# Bound in kernel() to the compiled functions of the descents' modules.
_first_pose = None
_descend = None
_pose_cost = None
_reach_checks = None
_scratch_size = None
_new_work = None
_tip = None
_TWO_PI = 2.0 * math.pi
#: The one-solve problem of the descents' kernels (a NamedTuple numba builds per target).
_Problem = dj.Problem


def _solve_batch(chain, targets, search, out, descent):
    """Each target ``i`` as the solver starts it (the module docstring). ``chain``: ``(model,
    settings, reach, turns)``: the solver's compiled model and :class:`~.dj.DescentSettings` of this
    kind of target, its reach checks' array, and its full-turn joints (3, n: 1.0 for one, the lower
    and the upper limits), each moved to the value nearest the seed in a converged answer, as
    ``solve()`` does, and the errors measured again where one moved; ``targets``: ``(positions (N,
    3), quats (N, 4) x, y, z, w or (N, 0) for position targets, seeds (N, n))``; ``search``: ``(mid,
    restart batches, low, span, checks)`` where ``checks`` holds the position tolerance [m], then
    the stuck descents after which a target is handed over (within the measured reach, and beyond
    it: :data:`CHECK_AFTER`, :data:`CHECK_BEYOND_REACH` for the solver's answers; fewer for a
    quicker, not identical, verdict); ``out``: ``(q (N, n), code (N,), errors (N, 2), iterations
    (N,))``, written on CONVERGED (the errors: position [m] and angle [rad] by the kernel's FK at
    exactly those joints), else code HANDED_OVER; ``descent``: a :class:`~.dj.Descent` to work
    in."""
    n = descent.q.shape[0]
    work = (_new_work(n), np.empty(n))
    for i in range(targets[0].shape[0]):
        _solve_one(chain, targets, search, out, (descent, work), i)


def _solve_one(chain, targets, search, out, scratch, i):
    """Target ``i`` of :func:`_solve_batch` (``scratch``: its descent and work arrays)."""
    model, settings, reach = chain[0], chain[1], chain[2]
    positions, quats, seeds = targets
    descent = scratch[0]
    q, state = descent.q, descent.state
    tol_p = search[4][0]
    orientation = quats.shape[1] == 4
    out[1][i] = HANDED_OVER
    bound, gap = _reach_checks(reach, positions[i])
    if not bound <= 0.0 or (not orientation and not gap <= tol_p):
        return  # out of reach, proven or measured: the solver's closest-pose search
    code = _first_pose(_Problem(model, positions[i], quats[i], 0.0), settings, seeds[i],
                       descent, _ALL_STEPS)
    if code == dj.STUCK and orientation and state[dj._NEAR] == 0.0:
        code = _restarts(chain, search, scratch, seeds[i], gap)
    if code == dj.CONVERGED:
        out[1][i] = CONVERGED
        for k in range(q.shape[0]):
            out[0][i, k] = q[k]
        out[2][i, 0] = state[dj._POSITION_ERROR]
        out[2][i, 1] = state[dj._ANGLE_ERROR] if orientation else math.nan
        out[3][i] = state[dj._ITERATIONS]
        if _nearest_turns(out[0][i], seeds[i], chain[3]):
            _measure(model, descent.target, out[0][i], scratch[1][0], out[2][i], orientation)


def _nearest_turns(q, seed, turns):
    """``q`` with each full-turn joint moved by whole turns to the value nearest its seed, as
    :func:`ik_node.model.chain.nearest_turns` does; ``turns`` (3, n): 1.0 for a full-turn
    joint, the lower and the upper limits. Returns whether a joint moved."""
    moved = False
    for k in range(q.shape[0]):
        v = q[k]
        d = seed[k] - v
        if turns[0, k] == 0.0 or -math.pi <= d <= math.pi:
            continue
        m = round(d / _TWO_PI)
        while m != 0:
            candidate = v + m * _TWO_PI
            if turns[1, k] <= candidate <= turns[2, k]:
                q[k] = candidate
                moved = True
                break
            m += 1 if m < 0 else -1
    return moved


def _measure(model, target, q, work, errors, orientation):
    """The position [m] and angle [rad] errors of ``q`` against ``target`` (the descents'
    layout: position, then the rotation row-major) into ``errors``, by the kernels' FK and the
    angle as :func:`ik_node.solvers.input_checks.rotation_error` computes it."""
    T = _tip(model, q.shape[0], q, work)
    dx, dy, dz = T[0, 3] - target[0], T[1, 3] - target[1], T[2, 3] - target[2]
    errors[0] = math.sqrt(dx * dx + dy * dy + dz * dz)
    if not orientation:
        return
    # R = R_actual^T R_target: its trace, then for small angles its skew part.
    c = 0.5 * (_r(T, target, 0, 0) + _r(T, target, 1, 1) + _r(T, target, 2, 2) - 1.0)
    if c > 0.99:
        sx = _r(T, target, 2, 1) - _r(T, target, 1, 2)
        sy = _r(T, target, 0, 2) - _r(T, target, 2, 0)
        sz = _r(T, target, 1, 0) - _r(T, target, 0, 1)
        errors[1] = math.asin(min(1.0, 0.5 * math.sqrt(sx * sx + sy * sy + sz * sz)))
    else:
        errors[1] = math.acos(max(-1.0, min(1.0, c)))


def _r(T, target, a, b):
    """Entry ``(a, b)`` of ``R^T R_target`` (``R`` the rotation of ``T``)."""
    return T[0, a] * target[3 + b] + T[1, a] * target[6 + b] + T[2, a] * target[9 + b]


def _restarts(chain, search, scratch, seed, gap):
    """The solver's restarts after a stuck seed's descent of a pose target: the mid
    configuration first when that descent ended against a limit (and the seed is not the mid
    one), else the lowest-cost candidate of the next batch of restart draws; until a descent
    converges or ends otherwise than stuck, or the solver would ask the closest-pose search.
    Returns the last descent's code."""
    model, settings = chain[0], chain[1]
    mid, batches, low, span, checks = search
    descent, (pose_work, candidate) = scratch
    target, q, state = descent.target, descent.q, descent.state
    n = q.shape[0]
    mid_next = False
    for k in range(n):
        if min(max(seed[k], model[k, dj._LOW]), model[k, dj._HIGH]) != mid[k]:
            mid_next = True
    check_after = int(checks[1])
    restarts = 0
    draws = 0
    descent_start = 0.0
    code = dj.STUCK
    while code == dj.STUCK:
        if restarts + 1 == int(checks[2]) and gap > checks[0]:
            check_after = int(checks[2])
        if restarts + 1 >= check_after or draws >= batches.shape[0]:
            break
        restarts += 1
        if mid_next and state[dj._LAST_BLOCKED] >= descent_start:
            for k in range(n):
                q[k] = mid[k]
        else:
            best, best_cost = 0, math.inf
            for c in range(batches.shape[1]):
                for k in range(n):
                    candidate[k] = low[k] + span[k] * batches[draws, c, k]
                cost = _pose_cost(model, n, target, settings, candidate, pose_work)
                if cost < best_cost:
                    best, best_cost = c, cost
            for k in range(n):
                q[k] = low[k] + span[k] * batches[draws, best, k]
            draws += 1
        mid_next = False
        descent_start = state[dj._ITERATIONS]
        state[dj._NEAR], state[dj._PULL], state[dj._FRESH] = 0.0, 0.0, 1.0
        code = _descend(model, settings, descent, _ALL_STEPS)
    return code


def _collision_bounds(Q, floats, ints, work, pad, out):
    """The collision kernel's smallest bound of each row of ``Q`` into ``out``
    (:func:`ik_node.collision.kernel.check_kernel`; its arguments the checker's)."""
    for r in range(Q.shape[0]):
        out[r] = _check(Q[r], floats, ints, work, pad)


def free_rows(checker, Q: np.ndarray) -> np.ndarray:
    """``checker.is_free`` of each row of ``Q`` (k, n), C-contiguous: the collision kernel
    on every row in one compiled call, and ``is_free`` itself only for the rows whose smallest
    bound is within the padding (or all rows where the checker has a world)."""
    bounds = _bounds_kernel(checker)
    free = np.zeros(len(Q), bool)
    if bounds is not None and len(Q) and checker.world.empty:
        smallest = np.empty(len(Q))
        with checker._lock:  # the kernel's work arrays are the checker's
            bounds(Q, *checker._kernel_args, smallest)
        free = smallest > checker.padding
    for i in np.flatnonzero(~free).tolist():
        free[i] = checker.is_free(Q[i])
    return free


def _bounds_kernel(checker) -> Optional[Callable]:
    """The compiled :func:`_collision_bounds` for ``checker``'s kernel, or None (no kernel,
    or it would not compile)."""
    global _bounds, _check
    if _bounds is None:
        if getattr(checker, '_kernel', None) is None:
            return None
        with _lock:
            try:
                import numba
                _check = checker._kernel
                bounds = numba.njit(cache=True, nogil=True)(_collision_bounds)
                _drop_stale_cache([bounds], (collision_kernel, gjk), 'ik_node_batch_collision')
                with checker._lock:  # compiled (or loaded) and tried once
                    bounds(np.zeros((1, checker.model.chain.n)), *checker._kernel_args,
                           np.empty(1))
                _bounds = bounds
            except Exception:  # a collision kernel it cannot call: is_free serves
                _bounds = False
    return _bounds or None


def _sources_stamp(modules) -> str:
    """A hash of the text of this module and of the kernel ``modules`` it calls."""
    digest = hashlib.sha256()
    for module in tuple(modules) + (inspect.getmodule(_solve_batch),):
        with open(module.__file__, 'rb') as handle:
            digest.update(handle.read())
    return digest.hexdigest()


def kernel() -> Optional[Callable]:
    """The compiled :func:`_solve_batch` (compiled or loaded from cache on first call, which
    waits for the solver kernels), or None where the compiled path cannot serve."""
    global _kernel, _first_pose, _descend, _pose_cost, _reach_checks, _scratch_size, _new_work, \
        _tip
    if _kernel is not None:
        return _kernel
    if not kernels.available() or not kernels.wait():
        return None
    with _lock:
        if _kernel is None:
            import numba
            _first_pose = dj._KERNELS['first_pose']
            _descend = dj._KERNELS['descend']
            _pose_cost = dj._pose_cost
            _scratch_size, _new_work, _tip = dj.layout.scratch_size, dj._new_work, dj._tip
            _reach_checks = compiled_reach._KERNELS['reach_checks']
            jit = numba.njit(cache=True, nogil=True)
            namespace = globals()
            # The helpers first: callers see them.
            for name in ('_nearest_turns', '_r', '_measure', '_restarts', '_solve_one'):
                namespace[name] = jit(namespace[name])
            jitted = jit(_solve_batch)
            _drop_stale_cache([namespace[name] for name in ('_nearest_turns', '_measure',
                                                            '_restarts', '_solve_one')] + [jitted],
                              _kernel_sources(), 'ik_node_batch')
            _kernel = jitted
    return _kernel


def _kernel_sources() -> tuple:
    """The modules whose compiled functions this kernel calls, inlined or not: damped_jacobian's
    kernel modules and their helpers, the reach checks and the kernel library."""
    import importlib
    names = [f'ik_node.solvers.damped_jacobian.{m}' for m in (
        'compiled', 'compiled_descend', 'compiled_entries', 'compiled_error', 'compiled_layout')]
    names += ['ik_node.solvers.out_of_reach.compiled_reach', 'ik_node.kernels.fk',
              'ik_node.kernels.linalg', 'ik_node.kernels.small_matrix']
    return tuple(importlib.import_module(name) for name in names)


def _drop_stale_cache(functions, modules, name: str) -> None:
    """Empty numba's on-disk index of each of the jitted ``functions`` (of this module) when
    the kernel ``modules`` they call changed since they were cached (numba checks only this
    module's own file); the stamp of those sources is kept beside the cache as ``name``."""
    caches = [getattr(f, '_cache', None) for f in functions]
    path = getattr(caches[0], 'cache_path', None)
    if path is None:
        return
    stamp = _sources_stamp(modules)
    stamp_file = os.path.join(path, name + '.stamp')
    try:
        with open(stamp_file) as handle:
            if handle.read() == stamp:
                return
    except OSError:
        pass
    try:
        for cache in caches:
            cache.flush()
        os.makedirs(path, exist_ok=True)
        with open(stamp_file, 'w') as handle:
            handle.write(stamp)
    except OSError:  # a read-only install: numba recompiles in memory when it must
        pass


class KernelAnswers(NamedTuple):
    """What :func:`run` returns, one row per target."""

    converged: np.ndarray    # (N,) bool: CONVERGED in the kernel
    joints: np.ndarray       # (N, n): the answers of converged rows [rad or m]
    errors: np.ndarray       # (N, 2): their position [m] and angle [rad] errors (NaN: none)
    iterations: np.ndarray   # (N,) int64


def serves(solver, orientation: bool) -> bool:
    """Whether the batch kernel can answer targets of this kind for ``solver`` now (a
    damped_jacobian solver whose one-call start serves; loads the kernel)."""
    first = getattr(solver, '_first', None)
    return first is not None and kernel() is not None and first.serves(orientation)


def run(solver, positions: np.ndarray, quats: Optional[np.ndarray], seeds: np.ndarray,
        check_within: int = CHECK_AFTER, check_beyond: int = CHECK_BEYOND_REACH
        ) -> KernelAnswers:
    """:func:`_solve_batch` on ``solver``'s chain and settings (``serves`` must be true):
    ``positions`` (N, 3), ``quats`` (N, 4) x, y, z, w or None, ``seeds`` (N, n) within the
    limits, all C-contiguous float64."""
    first = solver._first
    orientation = quats is not None
    count = len(positions)
    out_q = np.zeros((count, solver.chain.n))
    codes = np.full(count, HANDED_OVER, np.int64)
    errors = np.full((count, 2), np.nan)
    iterations = np.zeros(count, np.int64)
    low, span, _ = solver._restart_box
    checks = np.array([solver._tol_p, check_within, check_beyond], dtype=float)
    n = solver.chain.n
    descent = dj.Descent(np.zeros(12), np.empty(n), np.empty(n), np.zeros(dj.layout._STATE),
                         np.empty(dj.layout.scratch_size(n)))
    turns = np.zeros((3, n))
    turns[0, list(solver._turn_joints)] = 1.0
    turns[1], turns[2] = solver.chain.lower, solver.chain.upper
    kernel()((first.model, first.settings[orientation], solver._compiled_reach.reach, turns),
             (positions, quats if orientation else np.empty((count, 0)), seeds),
             (np.asarray(solver._mid, dtype=float), solver._draws.upto(BATCHES), low, span,
              checks), (out_q, codes, errors, iterations), descent)
    return KernelAnswers(codes == CONVERGED, out_q, errors, iterations)
