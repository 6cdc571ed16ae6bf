"""The compiled descents of damped_jacobian: Levenberg-Marquardt descents in numba.

Why one file of this size: numba compiles a kernel with the helper functions it calls, and
caches them together, when they live in one module (one entry of ``KERNEL_MODULES``); the kernel
mirrors the Python descent of :mod:`.descent` step for step, so the two are read side by side.
The Python side that drives these kernels (a chain's model, one solve's run, the budget asked
between chunks) is :mod:`.compiled_runs` (serial chains) and :mod:`.tree_runs` (trees), what
both sides share (exit codes, array layouts, the named structures) :mod:`.compiled_layout`; their
names are importable from here too.

The kernels take named structures that numba types and caches: :class:`DescentSettings` (the
settings, floats), :class:`Problem` (a chain and one target), :class:`Descent` (the arrays a
descent updates in place). One solve's entry is
``_first_pose(problem, settings, seed, descent, steps)``: the input checks and up to ``steps``
iterations of the seed's descent; a numba loop over many targets can call it as it is.
Forward kinematics and its Jacobian are the kernel library's (:mod:`ik_node.solvers.kernels.fk`).

A descent on a serial chain runs its iterations here, for a pose (6D) and for a position
target: the same FK, error, normal equations ``J^T W J`` (or, position only with six joints or
more, the 3 x 3 system ``J J^T`` of :func:`~.descent.trial_dual`), damped Cholesky step with
joints at a limit sitting out, step cap, wrapping and clipping, adaptive damping, stall test,
and a stream's rules (a small damping near the seed, the stream's stall factor, the first step's
pull along the self-motion away from the limits) as the Python loop, in machine code. Restarts,
the closest-pose search and the budget stay in Python.

The kernel is generic: a chain is passed as an array (per joint the constant 3 x 4 transform of
:class:`~ik_node.model.fast_kinematics.SerialKinematics`, its limits, kind and centring terms),
so one compiled function serves every chain. :mod:`ik_node.solvers.kernels` compiles it (or
loads it from numba's cache on disk, ``cache=True``) in a background thread; until then, and
where numba cannot serve, the Python descent does.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ik_node.solvers.kernels import fk
from ik_node.solvers.damped_jacobian import compiled_layout as layout
from ik_node.solvers.damped_jacobian.compiled_layout import (  # noqa: F401 - re-exported
    BAD_INPUT, CHUNK_DONE, CONVERGED, Descent, DescentSettings, GOOD_ENOUGH, ITERATION_CAP,
    NEED_DRAWS, NULL_SPACE_DAMPING, Problem, Restarts, STREAM_STALL_FACTOR, STUCK, TIMEOUT,
    TreeProblem, _ANGLE_ERROR, _BEST_COST, _BOUNDED, _CENTRED, _DECIDE_AT, _DRAWS, _FLOOR, _FRESH,
    _GOOD, _HIGH, _INVERSE_HALF, _IN_DESCENT, _ITERATIONS, _KEEP_BEST, _KERNELS, _LAM,
    _LAST_BLOCKED, _LOW, _MIDDLE, _NEAR, _POSITION_ERROR, _PRISMATIC, _PULL, _RESTARTS, _STALL_COST,
    _STALL_ITERATION, _STALL_NOW, _TIP_COLUMNS, _TIP_JOINTS, _TIP_ORIENTATION, _TIP_ROW,
    _TIP_WEIGHT, _TURNS, _WRAPS, available)
# The Python side of these kernels, importable from here as well.
from ik_node.solvers.damped_jacobian.compiled_runs import (  # noqa: F401 - re-exported
    CompiledDescent, DescentRun, DescentStart, RestartPlan, SerialJoints, exercise)
from ik_node.solvers.damped_jacobian.tree_runs import (  # noqa: F401 - re-exported
    TreeKernel, TreeRun, tree_kernel)

# The input checks of _first_pose: those of ik_node.solvers.input_checks (a test keeps them
# equal).
_MAX_COORDINATE = 1e6
_MAX_NORM2 = 1.7e308

class _Work(NamedTuple):
    """Scratch arrays of one kernel call, made once and reused by every evaluation."""

    F: np.ndarray        # 3 x 4: the frame so far
    G: np.ndarray        # 3 x 4: the joint's frame before its motion
    axes: np.ndarray     # n x 3: joint axes (base frame)
    origins: np.ndarray  # n x 3: joint origins (base frame)
    T: np.ndarray        # 3 x 4: the tip
    E: np.ndarray        # 3 x 3: R_target R^T
    J: np.ndarray        # 6 x n: the Jacobian
    Jb: np.ndarray       # 3 x n: the Jacobian with the columns of joints sitting out
    H2: np.ndarray       # n x n: the normal equations with joints sitting out
    g2: np.ndarray       # n
    L: np.ndarray        # n x n: a Cholesky factor
    x: np.ndarray        # n: a step
    y: np.ndarray        # 3: the dual system's solution
    r: np.ndarray        # 3: a right-hand side of the dual system
    d: np.ndarray        # n: the pull away from the limits
    q_new: np.ndarray    # n: a trial configuration
    shifted: np.ndarray  # n: the iterate moved along the self-motion


def _new_work(n):
    return _work_views(np.empty(layout.scratch_size(n)), n)


def _work_views(scratch, n):
    """The :class:`_Work` of a descent as views of ``scratch``
    (:func:`~.compiled_layout.scratch_size` floats): no allocation per kernel call."""
    sizes = (12, 12, 3 * n, 3 * n, 12, 9, 6 * n, 3 * n, n * n, n, n * n, n, 3, 3, n, n, n)
    views = []
    start = 0
    for size in sizes:
        views.append(scratch[start:start + size])
        start += size
    return _Work(views[0].reshape((3, 4)), views[1].reshape((3, 4)), views[2].reshape((n, 3)),
                 views[3].reshape((n, 3)), views[4].reshape((3, 4)), views[5].reshape((3, 3)),
                 views[6].reshape((6, n)), views[7].reshape((3, n)), views[8].reshape((n, n)),
                 views[9], views[10].reshape((n, n)), views[11], views[12], views[13],
                 views[14], views[15], views[16])


def _tip(model, n, q, work):
    """The tip's 3 x 4 transform at ``q`` into ``work.T``; each joint's axis and origin (base
    frame) into ``work.axes`` and ``work.origins`` (:func:`ik_node.solvers.kernels.fk.frames`)."""
    return fk.frames(model, n, q, work.F, work.G, work.axes, work.origins, work.T)


def _pose_cost(model, n, target, settings, q, work):
    """The cost of ``q`` as ``residuals.cost_function`` computes it (the angle by acos), which
    ranks restart candidates in the Python descent."""
    T = _tip(model, n, q, work)
    position_sq = (target[0] - T[0, 3]) ** 2 + (target[1] - T[1, 3]) ** 2 + \
        (target[2] - T[2, 3]) ** 2
    if settings.orientation == 0.0:
        return position_sq
    c = 0.0
    for a in range(3):
        for b in range(3):
            c += target[3 + 3 * a + b] * T[a, b]
    angle = math.acos(max(-1.0, min(1.0, 0.5 * (c - 1.0))))
    return position_sq + settings.w2 * angle * angle


def _rotation_vector(target, T, E, scale):
    """``scale`` times the rotation vector taking the tip's orientation (``T``) to the
    target's, and its angle [rad]: ``(angle, x, y, z)``, from the skew part and trace of
    ``E = R_target R^T`` (3 x 3 scratch); near half a turn the axis from ``(E + I) / 2 = a a^T``,
    signed by the skew part."""
    for a in range(3):
        for c in range(3):
            E[a, c] = (target[3 + 3 * a] * T[c, 0] + target[4 + 3 * a] * T[c, 1] +
                       target[5 + 3 * a] * T[c, 2])
    sx = 0.5 * (E[2, 1] - E[1, 2])
    sy = 0.5 * (E[0, 2] - E[2, 0])
    sz = 0.5 * (E[1, 0] - E[0, 1])
    c = 0.5 * (E[0, 0] + E[1, 1] + E[2, 2] - 1.0)
    sin_angle = math.sqrt(sx * sx + sy * sy + sz * sz)
    angle = math.atan2(sin_angle, c)
    if sin_angle > 1e-6:
        f = scale * angle / sin_angle
        return angle, sx * f, sy * f, sz * f
    if c > 0.0:
        return angle, scale * sx, scale * sy, scale * sz
    k = 0
    if E[1, 1] > E[k, k]:
        k = 1
    if E[2, 2] > E[k, k]:
        k = 2
    bkk = math.sqrt(max(0.5 * (E[k, k] + 1.0), 1e-300))
    ax = 0.5 * (E[0, k] + (1.0 if k == 0 else 0.0)) / bkk
    ay = 0.5 * (E[1, k] + (1.0 if k == 1 else 0.0)) / bkk
    az = 0.5 * (E[2, k] + (1.0 if k == 2 else 0.0)) / bkk
    if ax * sx + ay * sy + az * sz < 0.0:
        ax, ay, az = -ax, -ay, -az
    f = scale * angle
    return angle, ax * f, ay * f, az * f


def _evaluate(model, n, target, settings, q, A, b, work):
    """The error of ``q`` and, above the tolerances, its step system in ``A``, ``b``.

    Returns ``(cost, position error, angle error, built)``; ``A`` and ``b`` are filled when
    ``built`` (errors above the tolerances): the normal equations ``H`` (n x n, full) and ``g``,
    as ``pose_normal`` of :class:`~ik_node.model.fast_kinematics.SerialKinematics` (6D) or the
    generated normal equations (position only); or, in the dual system (``settings.dual``),
    the position Jacobian (3 x n) and the error, as ``position_residual``.
    """
    T = _tip(model, n, q, work)
    axes, origins, E, J = work.axes, work.origins, work.E, work.J
    w2, tol_p, tol_r = settings.w2, settings.tol_p, settings.tol_r
    orientation = settings.orientation != 0.0
    dx = target[0] - T[0, 3]
    dy = target[1] - T[1, 3]
    dz = target[2] - T[2, 3]
    angle = 0.0
    wx = wy = wz = 0.0
    if orientation:  # w2 times the rotation vector
        angle, wx, wy, wz = _rotation_vector(target, T, E, w2)
    position_sq = dx * dx + dy * dy + dz * dz
    position_error = math.sqrt(position_sq)
    cost = position_sq + w2 * angle * angle if orientation else position_sq
    if position_error <= tol_p and angle <= tol_r:
        return cost, position_error, angle, False
    dual = settings.dual != 0.0
    if dual:  # the position Jacobian itself is the system
        J = A
    fk.jacobian(model, n, (T[0, 3], T[1, 3], T[2, 3]), axes, origins, J, orientation)
    if dual:
        b[0], b[1], b[2] = dx, dy, dz
        return cost, position_error, angle, True
    for a in range(n):
        for c in range(a + 1):
            h = J[0, a] * J[0, c] + J[1, a] * J[1, c] + J[2, a] * J[2, c]
            if orientation:
                h += w2 * (J[3, a] * J[3, c] + J[4, a] * J[4, c] + J[5, a] * J[5, c])
            A[a, c] = h
            A[c, a] = h
        if orientation:
            b[a] = (J[0, a] * dx + J[1, a] * dy + J[2, a] * dz + J[3, a] * wx +
                    J[4, a] * wy + J[5, a] * wz)
        else:
            b[a] = J[0, a] * dx + J[1, a] * dy + J[2, a] * dz
    return cost, position_error, angle, True


def _damped_solve(H, g, lam, n, L, x):
    """``(H + lam I) x = g`` by Cholesky; False if not positive definite (round-off)."""
    for a in range(n):
        for b in range(a + 1):
            s = H[a, b] + (lam if a == b else 0.0)
            for k in range(b):
                s -= L[a, k] * L[b, k]
            if a == b:
                if s <= 0.0:
                    return False
                L[a, a] = math.sqrt(s)
            else:
                L[a, b] = s / L[b, b]
    for a in range(n):
        s = g[a]
        for k in range(a):
            s -= L[a, k] * x[k]
        x[a] = s / L[a, a]
    for a in range(n - 1, -1, -1):
        s = x[a]
        for k in range(a + 1, n):
            s -= L[k, a] * x[k]
        x[a] = s / L[a, a]
    return True


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
    L, x = work.L, work.x
    dual = settings.dual != 0.0
    if dual:
        if not _dual_solve(A, b, lam, n, L, work.y, x):
            return -1
    elif not _damped_solve(A, b, lam, n, L, x):
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
        H2, g2 = work.H2, work.g2
        for a in range(n):
            g2[a] = b[a]
            for c in range(n):
                H2[a, c] = A[a, c]
        for k in range(n):
            if _sits_out(model, k, q, x):
                for c in range(n):
                    H2[k, c] = 0.0
                    H2[c, k] = 0.0
                g2[k] = 0.0
        if not _damped_solve(H2, g2, lam, n, L, x):
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
        if not _damped_solve(A, d, mu, n, work.L, work.x):
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
                lam = max(lam * settings.lambda_down, settings.lambda_min)
        if not accepted and not shifted:  # reject; damp more (not after a spoilt pull)
            lam *= settings.lambda_up
            stuck = lam > settings.lambda_max
        if last_blocked > stall_iteration:
            window, factor = settings.stall_iterations_blocked, blocked_factor
        else:
            window, factor = settings.stall_iterations, stall_factor
        if iterations - stall_iteration >= window:
            stuck = stuck or cost - floor > factor * (stall_cost - floor)
            stall_cost, stall_iteration = cost, iterations
        if stuck:
            code = STUCK
            break
    state[_LAM], state[_ITERATIONS], state[_LAST_BLOCKED] = lam, iterations, last_blocked
    state[_STALL_COST], state[_STALL_ITERATION] = stall_cost, stall_iteration
    state[_BEST_COST], state[_STALL_NOW] = best_cost, stall_factor
    state[_POSITION_ERROR], state[_ANGLE_ERROR] = position_error, angle_error
    return code


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


# ------------------------------------------------------------------------------------ trees


def _tree_evaluate(tree, settings, x, H, g, errors, q_path, work):
    """The stacked error of every targeted tip at ``x`` (the active joints), as
    ``trees.residuals.stacked_residual`` with the normal equations of
    :class:`~.tree.TreeDampedLeastSquares`: returns the cost ``sum_k w_k^2 (|p_t - p|^2 +
    w_o^2 angle^2)``; each tip's (position error, angle error) into ``errors``; ``H = J^T J``,
    ``g = J^T e`` of the weighted stacked Jacobian into ``H`` (n x n) and ``g``; ``tree`` a
    :class:`TreeProblem`."""
    tree_model, tips, columns, targets = tree
    n = x.shape[0]
    w2 = settings.w2
    for a in range(n):
        g[a] = 0.0
        for c in range(n):
            H[a, c] = 0.0
    E, J, axes, origins = work.E, work.J, work.axes, work.origins
    cost = 0.0
    for t in range(tips.shape[0]):
        row, m = int(tips[t, _TIP_ROW]), int(tips[t, _TIP_JOINTS])
        first = int(tips[t, _TIP_COLUMNS])
        orientation = tips[t, _TIP_ORIENTATION] != 0.0
        weight2 = tips[t, _TIP_WEIGHT] * tips[t, _TIP_WEIGHT]
        for i in range(m):
            q_path[i] = x[int(columns[first + i])]
        model = tree_model[row:row + m + 1]
        T = _tip(model, m, q_path, work)
        target = targets[t]
        dx = target[0] - T[0, 3]
        dy = target[1] - T[1, 3]
        dz = target[2] - T[2, 3]
        angle = 0.0
        ox = oy = oz = 0.0
        if orientation:
            angle, ox, oy, oz = _rotation_vector(target, T, E, 1.0)
        position_sq = dx * dx + dy * dy + dz * dz
        errors[t, 0] = math.sqrt(position_sq)
        errors[t, 1] = angle
        cost += weight2 * (position_sq + w2 * angle * angle if orientation else position_sq)
        fk.jacobian(model, m, (T[0, 3], T[1, 3], T[2, 3]), axes, origins, J, True)
        for i in range(m):
            a = int(columns[first + i])
            for j in range(m):
                c = int(columns[first + j])
                h = J[0, i] * J[0, j] + J[1, i] * J[1, j] + J[2, i] * J[2, j]
                if orientation:
                    h += w2 * (J[3, i] * J[3, j] + J[4, i] * J[4, j] + J[5, i] * J[5, j])
                H[a, c] += weight2 * h
            r = J[0, i] * dx + J[1, i] * dy + J[2, i] * dz
            if orientation:
                r += w2 * (J[3, i] * ox + J[4, i] * oy + J[5, i] * oz)
            g[a] += weight2 * r
    return cost


def _tree_within(errors, tol_p, tol_r, good):
    """1 when every tip is within the tolerances, 2 when every tip's position error is within
    its ``good`` (position only, every tip bounded; -1 entries: never), else 0."""
    within = True
    enough = True
    for t in range(errors.shape[0]):
        if not (errors[t, 0] <= tol_p and errors[t, 1] <= tol_r):
            within = False
        if not errors[t, 0] <= good[t]:
            enough = False
    return 1 if within else (2 if enough else 0)


def _tree_descend(tree, active_model, settings, x, best_x, good, state, steps):
    """Up to ``steps`` iterations of one descent of :class:`~.tree.TreeDampedLeastSquares`
    from ``x`` (the active joints, updated in place; ``best_x`` as the best configuration):
    its loop, with ``active_model`` the active joints' limits and kinds (the columns of a
    serial model; ``tree`` a :class:`TreeProblem`). Returns CONVERGED, GOOD_ENOUGH, STUCK,
    ITERATION_CAP or CHUNK_DONE."""
    tips = tree.tips
    n = x.shape[0]
    work = _new_work(n)
    A, At = np.empty((n, n)), np.empty((n, n))
    b, bt = np.empty(n), np.empty(n)
    errors, t_errors = np.empty((tips.shape[0], 2)), np.empty((tips.shape[0], 2))
    q_path = np.empty(n)
    cost = _tree_evaluate(tree, settings, x, A, b, errors, q_path, work)
    best_cost = state[_BEST_COST]
    iterations = int(state[_ITERATIONS])
    if state[_FRESH] != 0.0:
        lam = settings.damping
        if cost < best_cost:
            best_cost = cost
            best_x[:] = x
        stall_cost, stall_iteration = cost, iterations
        state[_FRESH] = 0.0
    else:
        lam = state[_LAM]
        stall_cost, stall_iteration = state[_STALL_COST], int(state[_STALL_ITERATION])
    last_blocked = int(state[_LAST_BLOCKED])
    floor = state[_FLOOR]
    tol_p, tol_r = settings.tol_p, settings.tol_r
    max_iterations = int(settings.max_iterations)
    code = CHUNK_DONE
    taken = 0
    while True:
        within = _tree_within(errors, tol_p, tol_r, good)
        if within == 1:
            code = CONVERGED
            break
        if within == 2:
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
        blocked = _trial(active_model, n, settings, x, A, b, lam, work)
        if blocked > 0:
            last_blocked = iterations
        accepted = False
        if blocked >= 0:
            t_cost = _tree_evaluate(tree, settings, work.q_new, At, bt, t_errors, q_path, work)
            if t_cost < cost:
                accepted = True
                x[:] = work.q_new
                cost = t_cost
                A, At = At, A
                b, bt = bt, b
                errors, t_errors = t_errors, errors
                if cost < best_cost:
                    best_cost = cost
                    best_x[:] = x
                lam = max(lam * settings.lambda_down, settings.lambda_min)
        if not accepted:
            lam *= settings.lambda_up
            stuck = lam > settings.lambda_max
        window = (settings.stall_iterations_blocked if last_blocked > stall_iteration
                  else settings.stall_iterations)
        if iterations - stall_iteration >= window:
            stuck = stuck or cost - floor > settings.stall_factor * (stall_cost - floor)
            stall_cost, stall_iteration = cost, iterations
        if stuck:
            code = STUCK
            break
    state[_LAM], state[_ITERATIONS], state[_LAST_BLOCKED] = lam, iterations, last_blocked
    state[_STALL_COST], state[_STALL_ITERATION] = stall_cost, stall_iteration
    state[_BEST_COST] = best_cost
    return code


def _tree_cost(tree, settings, x):
    """The stacked cost of ``x`` (:func:`_tree_evaluate`), for restart candidates."""
    n = x.shape[0]
    return _tree_evaluate(tree, settings, x, np.empty((n, n)), np.empty(n),
                          np.empty((tree.tips.shape[0], 2)), np.empty(n), _new_work(n))


_HELPERS = ('_first_descent', '_work_views', '_new_work', '_tip',
            '_pose_cost', '_rotation_vector', '_evaluate', '_damped_solve', '_dual_solve',
            '_sits_out', '_trial', '_null_space_shift', '_tree_evaluate', '_tree_within')


def compile() -> None:
    """Compile the kernels (or load them from numba's cache on disk) and run each once on a
    small chain; :mod:`ik_node.solvers.kernels` calls it in its loading thread."""
    if not _KERNELS:
        fk.compile()
        layout.compile()
        import numba
        jit = numba.njit(cache=True, nogil=True)
        # The helpers first: the functions calling them see the compiled ones.
        namespace = globals()
        for name in _HELPERS:
            namespace[name] = jit(namespace[name])
        kernels_ = {'descend': jit(_descend), 'lowest_cost': jit(_lowest_cost),
                    'cost': jit(_cost), 'tree_descend': jit(_tree_descend),
                    'tree_cost': jit(_tree_cost)}
        namespace['_descend'] = kernels_['descend']  # as _first_pose calls it
        kernels_['first_pose'] = jit(_first_pose)
        kernels_['descend_restarts'] = jit(_descend_restarts)
        exercise(kernels_)
        _KERNELS.update(kernels_)
