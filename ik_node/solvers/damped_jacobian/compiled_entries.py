"""The entries of the compiled descents of :mod:`.compiled` for one solve: its start in one
call (:func:`_first_pose`: the input checks and the seed's first chunk), the plain restarts
(:func:`_descend_restarts`), the cost of configurations (:func:`_lowest_cost`, :func:`_cost`).
Plain functions that :func:`.compiled.compile` compiles with numba."""

from __future__ import annotations

import math

import numpy as np

from ik_node.solvers.damped_jacobian.compiled_layout import (
    BAD_INPUT, CHUNK_DONE, CONVERGED, NEED_DRAWS, STUCK, _BEST_COST, _DECIDE_AT, _DRAWS,
    _FLOOR, _FRESH, _GOOD, _HIGH, _IN_DESCENT, _ITERATIONS, _KEEP_BEST, _LAST_BLOCKED, _LOW,
    _NEAR, _PULL, _RESTARTS, _TURNS, _WRAPS)
from ik_node.solvers.damped_jacobian.compiled_descend import _descend
from ik_node.solvers.damped_jacobian.compiled_error import _new_work, _pose_cost


# The input checks of _first_pose: those of ik_node.solvers.input_checks (a test keeps them
# equal).
_MAX_COORDINATE = 1e6
_MAX_NORM2 = 1.7e308


def _first_pose(problem, settings, seed, descent, steps):
    """The start of a solve in one call (the kernels' entry for one solve: a :class:`Problem`,
    :class:`DescentSettings`, the seed and a :class:`Descent` to work in): the checks of
    ``solve`` on the target position
    (3 finite values within ``MAX_COORDINATE_M``), the quaternion of a pose target (x, y, z, w:
    finite, not zero; normalised into the rotation of ``rotation_from_input``, the target's;
    empty for a position target) and the seed (finite, clipped into the limits: ``q`` and
    ``best_q``), then up to ``steps`` iterations of the seed's descent as
    :meth:`.compiled_runs.DescentRun.descend` starts it (``floor`` the squared proven
    residual). Returns BAD_INPUT for an input the checks refuse, else :func:`_descend`'s code;
    on CONVERGED ``state[_TURNS]`` says whether a full-turn joint ended more than half a turn
    from its seed."""
    model, position, quat, floor = problem
    target = descent.target
    n = descent.q.shape[0]
    if position.shape[0] != 3 or (quat.shape[0] != 4 and quat.shape[0] != 0) or \
            seed.shape[0] != n:
        return BAD_INPUT
    for k in range(3):
        if not -_MAX_COORDINATE <= position[k] <= _MAX_COORDINATE:  # (a NaN fails)
            return BAD_INPUT
        target[k] = position[k]
    if quat.shape[0] == 0:  # a position target
        return _first_descent(model, settings, seed, floor, descent, steps)
    x, y, z, w = quat[0], quat[1], quat[2], quat[3]
    norm2 = x * x + y * y + z * z + w * w
    if not norm2 <= _MAX_NORM2:
        return BAD_INPUT
    norm = math.sqrt(norm2)
    if norm < 1e-6:
        return BAD_INPUT
    x, y, z, w = x / norm, y / norm, z / norm, w / norm
    target[3] = 1.0 - 2.0 * (y * y + z * z)
    target[4] = 2.0 * (x * y - w * z)
    target[5] = 2.0 * (x * z + w * y)
    target[6] = 2.0 * (x * y + w * z)
    target[7] = 1.0 - 2.0 * (x * x + z * z)
    target[8] = 2.0 * (y * z - w * x)
    target[9] = 2.0 * (x * z - w * y)
    target[10] = 2.0 * (y * z + w * x)
    target[11] = 1.0 - 2.0 * (x * x + y * y)
    return _first_descent(model, settings, seed, floor, descent, steps)


def _first_descent(model, settings, seed, floor, descent, steps):
    """:func:`_first_pose` once the target is in ``descent.target``: the seed checked and
    clipped, the first chunk of its descent, whether a full-turn joint turned."""
    q, best_q, state = descent.q, descent.best_q, descent.state
    n = q.shape[0]
    for k in range(n):
        v = seed[k]
        if not math.isfinite(v):
            return BAD_INPUT
        lo, hi = model[k, _LOW], model[k, _HIGH]
        if v < lo:
            v = lo
        elif v > hi:
            v = hi
        q[k] = v
        best_q[k] = v
    state[_ITERATIONS], state[_LAST_BLOCKED], state[_NEAR] = 0.0, -1.0, -1.0
    state[_FLOOR], state[_GOOD], state[_BEST_COST] = floor, -1.0, math.inf
    state[_KEEP_BEST], state[_PULL], state[_FRESH], state[_TURNS] = 1.0, 1.0, 1.0, 0.0
    code = _descend(model, settings, descent, steps)
    if code == CONVERGED:
        for k in range(n):
            if model[k, _WRAPS] != 0.0:
                d = min(max(seed[k], model[k, _LOW]), model[k, _HIGH]) - q[k]
                if not -math.pi <= d <= math.pi:
                    state[_TURNS] = 1.0
    return code


def _descend_restarts(model, settings, restarts, descent, steps):
    """The descent from ``descent.q`` (begun as :meth:`.compiled_runs.DescentRun.descend`
    begins it) and, each time a descent is stuck while ``state[_RESTARTS]`` is below
    ``state[_DECIDE_AT]``, a restart as the solver's loop makes it: the lowest-cost
    (:func:`_pose_cost`, the first of equals) of the candidates
    ``low + span * batches[state[_DRAWS]]``, then its descent; up to ``steps``
    iterations per call. Returns CONVERGED, GOOD_ENOUGH or ITERATION_CAP from a descent, STUCK
    for a stuck descent at ``state[_DECIDE_AT]`` restarts (the solver's loop decides what
    follows), CHUNK_DONE (call again to go on) or NEED_DRAWS (call again with more batches).
    ``restarts``: the :class:`Restarts` candidates."""
    batches, low, span = restarts
    target, q, state = descent.target, descent.q, descent.state
    n = q.shape[0]
    candidate = np.empty(n)
    work = _new_work(n)
    left = steps
    while True:
        if state[_IN_DESCENT] != 0.0:
            before = state[_ITERATIONS]
            code = _descend(model, settings, descent, left)
            left -= int(state[_ITERATIONS] - before)
            if code != STUCK:
                return code
            state[_IN_DESCENT] = 0.0
        restarts = state[_RESTARTS]
        if restarts >= state[_DECIDE_AT]:
            return STUCK
        if left <= 0:
            return CHUNK_DONE
        b = int(state[_DRAWS])
        if b >= batches.shape[0]:
            return NEED_DRAWS
        best, best_cost = 0, math.inf
        for c in range(batches.shape[1]):
            for k in range(n):
                candidate[k] = low[k] + span[k] * batches[b, c, k]
            cost = _pose_cost(model, n, target, settings, candidate, work)
            if cost < best_cost:
                best, best_cost = c, cost
        for k in range(n):
            q[k] = low[k] + span[k] * batches[b, best, k]
        state[_RESTARTS], state[_DRAWS] = restarts + 1.0, b + 1.0
        state[_NEAR], state[_PULL], state[_FRESH], state[_IN_DESCENT] = 0.0, 0.0, 1.0, 1.0


def _lowest_cost(model, settings, target, candidates):
    """The index of the candidate configuration (a row) of lowest cost (the first of
    equals)."""
    n = candidates.shape[1]
    work = _new_work(n)
    best, best_cost = 0, math.inf
    for k in range(candidates.shape[0]):
        cost = _pose_cost(model, n, target, settings, candidates[k], work)
        if cost < best_cost:
            best, best_cost = k, cost
    return best


def _cost(model, settings, target, q):
    """The cost of ``q`` (:func:`_pose_cost`)."""
    n = q.shape[0]
    return _pose_cost(model, n, target, settings, q, _new_work(n))
