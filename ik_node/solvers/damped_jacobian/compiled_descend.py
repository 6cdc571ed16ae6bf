"""One descent of damped least squares, compiled (:func:`_descend`) with its step: the damped
Cholesky solve, the 3 x 3 dual system of a position target, joints at a limit sitting out, the
trial step and the first step's pull along the self-motion; it mirrors
:meth:`.descent.PythonDescent.descend` step for step. Plain functions that
:func:`.compiled.compile` compiles with numba (see :mod:`.compiled`)."""

from __future__ import annotations

import math

from ik_node.kernels import linalg
from ik_node.solvers.damped_jacobian import compiled_layout as layout
from ik_node.solvers.damped_jacobian.compiled_layout import (
    CHUNK_DONE, CONVERGED, GOOD_ENOUGH, ITERATION_CAP, STUCK, _ANGLE_ERROR, _BEST_COST,
    _BOUNDED, _CENTRED, _FLOOR, _FRESH, _GOOD, _HIGH, _INVERSE_HALF, _ITERATIONS, _KEEP_BEST,
    _LAM, _LAST_BLOCKED, _LOW, _MIDDLE, _NEAR, _POSITION_ERROR, _PULL, _STALL_COST,
    _STALL_ITERATION, _STALL_NOW, _WRAPS)
from ik_node.solvers.damped_jacobian.compiled_error import _evaluate, _work_views


def _dual_solve(J, e, lam, n, L, y, x):
    """``x = J^T (J J^T + lam I)^-1 e`` (``J`` 3 x n) by Cholesky, as the generated
    ``damped_step_function(3, n)``; False if not positive definite (round-off)."""
    for a in range(3):
        for c in range(a + 1):
            s = 0.0
            for k in range(n):
                s += J[a, k] * J[c, k]
            if a == c:
                s += lam
            for k in range(c):
                s -= L[a, k] * L[c, k]
            if a == c:
                if s <= 0.0:
                    return False
                L[a, a] = math.sqrt(s)
            else:
                L[a, c] = s / L[c, c]
    for a in range(3):
        s = e[a]
        for k in range(a):
            s -= L[a, k] * y[k]
        y[a] = s / L[a, a]
    for a in range(2, -1, -1):
        s = y[a]
        for k in range(a + 1, 3):
            s -= L[k, a] * y[k]
        y[a] = s / L[a, a]
    for k in range(n):
        x[k] = J[0, k] * y[0] + J[1, k] * y[1] + J[2, k] * y[2]
    return True


def _sits_out(model, k, q, x):
    """Whether joint ``k`` is bounded, at a limit, and its step ``x[k]`` points outwards."""
    return model[k, _BOUNDED] != 0.0 and ((x[k] < 0.0 and q[k] <= model[k, _LOW]) or
                                          (x[k] > 0.0 and q[k] >= model[k, _HIGH]))


def _trial(model, n, settings, q, A, b, lam, work):
    """One damped step from ``q`` into ``work.q_new`` (as ``damped_trial_function`` of
    :mod:`ik_node.solvers.numerics.codegen`, or :func:`~.descent.trial_dual` in the dual
    system): solve, bounded joints at a limit whose step points outwards sit out (solved again
    without them),
    the step scaled to the step cap per joint, wrapped or clipped into the limits. Returns -1
    if the system is not positive definite, else the number of joints that sat out."""
    L, x, out = work.L, work.x, work.out
    dual = settings.dual != 0.0
    if dual:
        if not _dual_solve(A, b, lam, n, L, work.y, x):
            return -1
    else:
        for k in range(n):
            out[k] = 0.0
        if not linalg.damped_solve(A, b, lam, n, out, L, x):
            return -1
    blocked = 0
    for k in range(n):
        if _sits_out(model, k, q, x):
            blocked += 1
    if blocked and dual:
        Jb = work.Jb
        for k in range(n):
            out = _sits_out(model, k, q, x)
            for a in range(3):
                Jb[a, k] = 0.0 if out else A[a, k]
        if not _dual_solve(Jb, b, lam, n, L, work.y, x):
            return -1
    elif blocked:
        for k in range(n):
            out[k] = 1.0 if _sits_out(model, k, q, x) else 0.0
        if not linalg.damped_solve(A, b, lam, n, out, L, x):
            return -1
    largest = 0.0
    for k in range(n):
        largest = max(largest, abs(x[k]))
    max_step = settings.max_step
    scale = max_step / largest if largest > max_step else 1.0
    two_pi = 2.0 * math.pi
    q_new = work.q_new
    for k in range(n):
        v = q[k] + x[k] * scale
        lo, hi = model[k, _LOW], model[k, _HIGH]
        if v < lo:
            v = v + two_pi * math.ceil((lo - v) / two_pi) if model[k, _WRAPS] != 0.0 else lo
        elif v > hi:
            v = v - two_pi * math.ceil((v - hi) / two_pi) if model[k, _WRAPS] != 0.0 else hi
        q_new[k] = v
    return blocked


def _null_space_shift(model, n, settings, q, A, cost, work):
    """``q`` moved along the self-motion away from the limits into ``work.shifted``, as
    ``PythonDescent.null_space_shift``: ``d`` from ``limit_pull``, projected by
    ``mu (H + mu I)^-1 d`` or ``d - J+ J d``. False when the projection fails (round-off)."""
    d, shifted = work.d, work.shifted
    scale = settings.null_gain * math.sqrt(cost)
    factor_max = settings.factor_max
    for k in range(n):
        d[k] = 0.0
        if model[k, _CENTRED] != 0.0:
            x = (q[k] - model[k, _MIDDLE]) * model[k, _INVERSE_HALF]
            factor = x / max(1.0 - x * x, 1e-12)
            d[k] = -scale * max(-factor_max, min(factor, factor_max))
    if settings.dual == 0.0:  # A = H
        trace = 0.0
        for k in range(n):
            trace += A[k, k]
        mu = settings.null_damping * max(trace / n, 1e-12)
        for k in range(n):
            work.out[k] = 0.0
        if not linalg.damped_solve(A, d, mu, n, work.out, work.L, work.x):
            return False
        for k in range(n):
            shifted[k] = q[k] + mu * work.x[k]
        return True
    r = work.r  # A = J, 3 x n
    trace = 0.0
    for a in range(3):
        s = 0.0
        for k in range(n):
            s += A[a, k] * d[k]
            trace += A[a, k] * A[a, k]
        r[a] = s
    mu = settings.null_damping * max(trace / 3.0, 1e-12)
    if not _dual_solve(A, r, mu, n, work.L, work.y, work.x):
        return False
    for k in range(n):
        shifted[k] = q[k] + d[k] - work.x[k]
    return True


def _descend(model, settings, descent, steps):
    """Up to ``steps`` iterations of one descent from ``descent.q`` (updated in place, as
    ``best_q`` when a configuration of lower cost than the best is found and
    ``state[_KEEP_BEST]``; a :class:`Descent`, its target set).

    The loop of ``descent.PythonDescent.descend``; ``state`` carries the damping, iteration
    counts, stall reference, best cost and the stream's rules between calls. At the start of a
    descent (``state[_FRESH]``) the damping, the stream's rules (``state[_NEAR]`` -1: near when
    the cost of ``q`` is within the stream's) and the stall reference are set here. Returns the
    code CONVERGED, GOOD_ENOUGH, STUCK, ITERATION_CAP or CHUNK_DONE (call again with the state
    returned to go on).
    """
    target, q, best_q, state, scratch = descent
    n = q.shape[0]
    work = _work_views(scratch, n)
    rows = 3 if settings.dual != 0.0 else n
    start = layout.work_size(n)
    A = scratch[start:start + rows * n].reshape((rows, n))
    At = scratch[start + rows * n:start + 2 * rows * n].reshape((rows, n))
    b = scratch[start + 2 * rows * n:start + 2 * rows * n + rows]
    bt = scratch[start + 2 * rows * n + rows:start + 2 * rows * n + 2 * rows]
    tol_p, tol_r = settings.tol_p, settings.tol_r
    cost, position_error, angle_error, built = _evaluate(model, n, target, settings, q, A, b,
                                                         work)
    keep_best = state[_KEEP_BEST] != 0.0
    best_cost = state[_BEST_COST]
    iterations = int(state[_ITERATIONS])
    pull = False
    if state[_FRESH] != 0.0:
        lam = settings.damping
        if state[_NEAR] < 0.0:
            state[_NEAR] = 1.0 if cost <= settings.stream_cost else 0.0
        stall_factor = settings.stall_factor
        if state[_NEAR] > 0.0:
            # A stream's step: a small damping lets a descent near a singularity converge.
            lam = min(lam, max(cost, settings.lambda_min))
            stall_factor = settings.stream_stall
            pull = state[_PULL] != 0.0 and settings.null_space != 0.0
        if cost < best_cost and keep_best:
            best_cost = cost
            best_q[:] = q
        stall_cost, stall_iteration = cost, iterations
        state[_FRESH] = 0.0
    else:
        lam, stall_factor = state[_LAM], state[_STALL_NOW]
        stall_cost, stall_iteration = state[_STALL_COST], int(state[_STALL_ITERATION])
    # The stall factor of a window in which joints at a limit sat out (a stream's: its own).
    blocked_factor = stall_factor if state[_NEAR] > 0.0 else settings.stall_factor_blocked
    last_blocked = int(state[_LAST_BLOCKED])
    floor, good_enough = state[_FLOOR], state[_GOOD]
    max_iterations = int(settings.max_iterations)
    code = CHUNK_DONE
    taken = 0
    while True:
        if position_error <= tol_p and angle_error <= tol_r:
            code = CONVERGED
            break
        if position_error <= good_enough:
            code = GOOD_ENOUGH
            break
        if iterations >= max_iterations:
            code = ITERATION_CAP
            break
        if taken >= steps:
            break
        iterations += 1
        taken += 1
        stuck = False
        shifted = False
        if pull:
            pull = False
            shifted = _null_space_shift(model, n, settings, q, A, cost, work)
        blocked = _trial(model, n, settings, work.shifted if shifted else q, A, b, lam, work)
        if blocked > 0:
            last_blocked = iterations
        accepted = False
        if blocked >= 0:
            t_cost, t_position, t_angle, t_built = _evaluate(model, n, target, settings,
                                                             work.q_new, At, bt, work)
            if t_cost < cost:
                accepted = True
                q[:] = work.q_new
                cost, position_error, angle_error = t_cost, t_position, t_angle
                if t_built:  # the trial's system becomes the iterate's
                    A, At = At, A
                    b, bt = bt, b
                if cost < best_cost and keep_best:
                    best_cost = cost
                    best_q[:] = q
        if accepted or not shifted:  # a rejected step damps more (not after a spoilt pull)
            lam, stuck = _next_damping(settings, lam, accepted)
        stalls, stall_cost, stall_iteration = _stall_rule(
            settings, (iterations, last_blocked, cost, floor), (stall_cost, stall_iteration),
            (blocked_factor, stall_factor))
        if stuck or stalls:
            code = STUCK
            break
    _keep_descent(state, (lam, iterations, last_blocked), (stall_cost, stall_iteration),
                  best_cost)
    state[_STALL_NOW] = stall_factor
    state[_POSITION_ERROR], state[_ANGLE_ERROR] = position_error, angle_error
    return code


def _next_damping(settings, lam, accepted):
    """The damping after a trial step, and whether the descent is stuck: lowered after an
    accepted step; raised after a rejected one, stuck once past ``lambda_max``."""
    if accepted:
        return max(lam * settings.lambda_down, settings.lambda_min), False
    lam *= settings.lambda_up
    return lam, lam > settings.lambda_max


def _stall_rule(settings, progress, stall, factors):
    """The stall rule after an iteration: ``(stalls, stall_cost, stall_iteration)``, whether
    the window just closed lowered the cost above ``floor`` too little, and the next window's
    reference. ``progress``: ``(iterations, last_blocked, cost, floor)``; ``stall``: the
    window's reference ``(stall_cost, stall_iteration)``; ``factors``: the stall factors of a
    window in which joints at a limit sat out and of one in which none did."""
    iterations, last_blocked, cost, floor = progress
    stall_cost, stall_iteration = stall
    if last_blocked > stall_iteration:
        window, factor = settings.stall_iterations_blocked, factors[0]
    else:
        window, factor = settings.stall_iterations, factors[1]
    if iterations - stall_iteration >= window:
        return cost - floor > factor * (stall_cost - floor), cost, iterations
    return False, stall_cost, stall_iteration


def _keep_descent(state, counts, stall, best_cost):
    """What the next call of a descent goes on from: ``counts`` ``(lam, iterations,
    last_blocked)``, the stall window's reference ``stall`` and the best cost."""
    state[_LAM], state[_ITERATIONS], state[_LAST_BLOCKED] = counts
    state[_STALL_COST], state[_STALL_ITERATION] = stall
    state[_BEST_COST] = best_cost
