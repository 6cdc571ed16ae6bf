"""FABRIK's serial passes compiled: a whole run toward one target in one numba call.

:class:`CompiledFabrik` runs what :meth:`SerialFabrik.run
<ik_node.solvers.fabrik.serial.SerialFabrik.run>` runs (the loop of
:func:`~ik_node.solvers.fabrik.iteration.iterate` over
:class:`~ik_node.solvers.fabrik.serial.SerialPasses`) in machine code: the forward pass, the
backward pass with each joint's 'bones' or 'points' fit and its clamp into the limits, the
stretching first pass, the rebuild (FK), the extrapolation, the damped least-squares polish with
its first step's pull along the self-motion, the stall rule and the best configuration kept. The
same operations in the same order on the same floats as the Python passes, so the same
iterations and the same joints (``test/core/test_compiled_fabrik.py``).

Why one file of this size: numba compiles and caches a kernel with the helpers it calls when
they live in one module; the kernel reads side by side with ``serial.py`` and
``iteration.py``. A numba kernel takes arrays and scalars, not the frozen problem objects of the
Python path, so the chain is an array (:func:`model_of`), the settings another.

The clock stays in Python: the kernel runs at most :data:`CHUNK` iterations per call (polish
steps count as iterations, as in the Python loop; a polish started in a call finishes in it)
and :meth:`CompiledFabrik.run` starts the next call only where the iterations fit before the
deadline, judged by the pace per iteration of the calls so far (the second-slowest,
:class:`~ik_node.solvers.numerics.budget.StepPace`); the Python loop judges each iteration and
each polish step alike. A run that records its history, or whose polish meets a system that is
not positive definite (where the Python polish raises), is left to the Python passes.

:mod:`ik_node.solvers.kernels` compiles the kernel (or loads it from numba's cache) in its
background thread; until then, and where numba cannot serve, the Python passes run.
"""

from __future__ import annotations

import math
from typing import Any, Dict, NamedTuple

import numpy as np

import ik_node.solvers.kernels as kernels
from ik_node.solvers.kernels import fk, linalg
from ik_node.solvers.fabrik.iteration import (EPS_M, EXTRAPOLATE_MAX_FACTOR,
                                              EXTRAPOLATE_MIN_RATIO, POLISH_DAMPING,
                                              POLISH_DAMPING_MIN, POLISH_RATIO,
                                              POLISH_STUCK_RATIO, SLOW_STEP_RATIO2, SLOW_STEPS,
                                              TIP_FIT_WEIGHT, TWO_PI)
from ik_node.solvers.fabrik.serial import NULL_SPACE_DAMPING, SerialFabrik
from ik_node.solvers.numerics.null_space import FACTOR_MAX, STREAM_ERROR_M
from ik_node.solvers.numerics.small_matrix import mat_vec, vec_mat

# What a call of the kernel returns.
DONE = 0        # the run ended (converged, stalled or out of iterations): see the state
CHUNK_DONE = 1  # CHUNK iterations done: call again to go on
FAILED = 2      # a polish system not positive definite: the Python passes run instead

# Columns of the model array, one row per joint; row n holds the tip's offset at _T_TP.
_R_TP = 0       # 9: the joint's q = 0 rotation in its parent's frame, row-major
_T_TP = 9       # 3: its origin in the parent's frame [m]
_AXIS = 12      # 3: its hinge axis (joint frame)
_AAT = fk.AAT      # 9: Rodrigues' terms: R(q) = aa^T + cos q (I - aa^T) + sin q [a]x
_I_AAT = fk.I_AAT  # 9
_K = fk.K          # 9
(_LOWER, _UPPER, _FIT, _W_PERP) = range(42, 46)  # limits [rad]; the fit; _W_PERP: 3 columns
_W_CROSS = 48   # 3
(_CENTRED, _MIDDLE, _INVERSE_HALF) = range(51, 54)  # the pull's terms (centring_terms)
_COLUMNS = 54
# How a joint fits its angle in the backward pass (SerialFabrik.align).
BONES = 0.0         # its child bone's direction
CHILD_AND_TIP = 1.0  # 'points': its child joint and the tip
TIP_ONLY = 2.0      # 'points': the tip

# Entries of the state array kept between calls (then the bone lengths, n + 1 of them).
(_BEGUN, _OBJ, _BEST_OBJ, _START_BEST, _LAST_PROGRESS, _SINCE_PROGRESS, _ITERATIONS,
 _STALLED, _CONVERGED, _POLISH_AFTER, _PULL) = range(11)
_STATE = 11

#: Iterations per kernel call between two looks at the clock.
CHUNK = 16


class PassSettings(NamedTuple):
    """The settings of a run of the compiled passes (:class:`.iteration.FabrikSettings` and
    the problem's flags): every field a float, so that numba types the tuple once."""

    tolerance: float = 0.0          # [m]
    max_iterations: float = 0.0
    min_improvement: float = 0.0    # [m]
    stall_iterations: float = 0.0
    extrapolate: float = 0.0        # 1.0: extrapolate a linear sequence of iterates
    polish: float = 0.0             # polish steps (0: none)
    null_gain: float = 0.0          # the pull away from the limits near a stream's seed
    stretch: float = 0.0            # 1.0: the first iteration lays the chain straight
    stuck_ends: float = 0.0         # 1.0: a stuck polish ends the run


def _scratch_size(n):
    """The floats of one run's scratch (see :func:`_run_fabrik`)."""
    return 36 * n + 9


# ------------------------------------------------------------------------ the kernel (numba)
def _place_tip(model, n, x, R):
    """The tip's position x[n] from the last joint's frame."""
    ox, oy, oz = mat_vec(fk.load9(R, n - 1), (model[n, _T_TP], model[n, _T_TP + 1],
                                            model[n, _T_TP + 2]))
    x[n, 0], x[n, 1], x[n, 2] = x[n - 1, 0] + ox, x[n - 1, 1] + oy, x[n - 1, 2] + oz


def _rebuild(model, n, q, x, R):
    """Node positions ``x`` and joint rotations ``R``: FK of ``q`` (SerialFabrik.rebuild)."""
    for i in range(n):
        R0, xi = fk.zero_frame(model, i - 1, i, x, R)
        fk.place(i, fk.turned(model, i, R0, q[i]), xi, x, R)
    _place_tip(model, n, x, R)


def _error(x, n, target):
    """The tip's distance [m] from the target (SerialPasses._error_of)."""
    dx, dy, dz = x[n, 0] - target[0], x[n, 1] - target[1], x[n, 2] - target[2]
    return math.sqrt(dx * dx + dy * dy + dz * dz)


def _clip(value, lower, upper):
    """``min(max(value, lower), upper)`` as Python evaluates it."""
    value = lower if lower > value else value
    return upper if upper < value else value


def _remainder(angle):
    """``math.remainder(angle, TWO_PI)`` to round-off (numba has no ``math.remainder``)."""
    return angle - TWO_PI * np.rint(angle / TWO_PI)


def _angle_in_limits(theta, q_old, lower, upper):
    """:func:`~ik_node.solvers.fabrik.iteration.angle_in_limits`."""
    q = theta + TWO_PI * np.rint((q_old - theta) / TWO_PI)
    if lower <= q <= upper:
        return q
    below, above = q - TWO_PI, q + TWO_PI
    below_in, above_in = lower <= below <= upper, lower <= above <= upper
    if below_in and above_in:
        return above if abs(above - q_old) < abs(below - q_old) else below
    if below_in:
        return below
    if above_in:
        return above
    d_lower = abs(_remainder(theta - lower))
    d_upper = abs(_remainder(theta - upper))
    return lower if d_lower <= d_upper else upper


def _forward(n, x, L, target, P):
    """The forward pass (SerialFabrik.forward): the tip on the target, every joint but the
    first pulled after it, into ``P`` (rows 1 .. n)."""
    P[n, 0], P[n, 1], P[n, 2] = target[0], target[1], target[2]
    for u in range(n - 1, 0, -1):
        px, py, pz = P[u + 1, 0], P[u + 1, 1], P[u + 1, 2]
        dx, dy, dz = x[u, 0] - px, x[u, 1] - py, x[u, 2] - pz
        norm = math.sqrt(dx * dx + dy * dy + dz * dz)
        length = L[u + 1]
        if norm < EPS_M:  # the point is on the joint: keep the old bone direction
            dx, dy, dz = x[u, 0] - x[u + 1, 0], x[u, 1] - x[u + 1, 1], x[u, 2] - x[u + 1, 2]
            norm = max(length, EPS_M)
        f = length / max(norm, EPS_M)
        P[u, 0], P[u, 1], P[u, 2] = px + dx * f, py + dy * f, pz + dz * f


def _fit_points(model, n, i, first, every, frame, nodes, P):
    """Joint i's angle moving nodes (rigidly, at their old ``x``) onto ``P``: every node below
    it with ``every``, else ``first`` and the tip (SerialFabrik._fit_points); False when they
    are all on the axis. ``frame``: the joint's ``(R0, x_i)`` (:func:`fk.zero_frame`);
    ``nodes``: ``(q, x, R)``, the configuration and its node positions and rotations."""
    R0, xi = frame
    q, x, R = nodes
    Ri = fk.load9(R, i)
    m0 = m1 = m2 = m3 = m4 = m5 = m6 = m7 = m8 = 0.0
    for v in range(i + 1, n + 1):
        if not (every or v == first or v == n):
            continue
        w = TIP_FIT_WEIGHT if v == n else 1.0
        rx, ry, rz = vec_mat((x[v, 0] - x[i, 0], x[v, 1] - x[i, 1], x[v, 2] - x[i, 2]), Ri)
        bx, by, bz = vec_mat((P[v, 0] - xi[0], P[v, 1] - xi[1], P[v, 2] - xi[2]), R0)
        rx, ry, rz = rx * w, ry * w, rz * w
        m0 += rx * bx
        m1 += rx * by
        m2 += rx * bz
        m3 += ry * bx
        m4 += ry * by
        m5 += ry * bz
        m6 += rz * bx
        m7 += rz * by
        m8 += rz * bz
    ax, ay, az = model[i, _AXIS], model[i, _AXIS + 1], model[i, _AXIS + 2]
    s = ax * (m5 - m7) + ay * (m6 - m2) + az * (m1 - m3)
    aMa = (ax * (m0 * ax + m1 * ay + m2 * az) + ay * (m3 * ax + m4 * ay + m5 * az)
           + az * (m6 * ax + m7 * ay + m8 * az))
    c = m0 + m4 + m8 - aMa
    if s * s + c * c <= EPS_M * EPS_M:
        return False
    q[i] = _angle_in_limits(math.atan2(s, c), q[i], model[i, _LOWER], model[i, _UPPER])
    return True


def _backward(model, n, q, x, R, P):
    """The backward pass (SerialFabrik.backward): from the base, fit each joint's angle,
    clamp it, rebuild (in place)."""
    for i in range(n):
        R0, xi = fk.zero_frame(model, i - 1, i, x, R)
        fit = model[i, _FIT]
        if fit == BONES:
            bx, by, bz = vec_mat((P[i + 1, 0] - xi[0], P[i + 1, 1] - xi[1],
                                  P[i + 1, 2] - xi[2]), R0)
            s = model[i, _W_CROSS] * bx + model[i, _W_CROSS + 1] * by + \
                model[i, _W_CROSS + 2] * bz
            c = model[i, _W_PERP] * bx + model[i, _W_PERP + 1] * by + model[i, _W_PERP + 2] * bz
            fitted = s * s + c * c > EPS_M * EPS_M
            if fitted:
                q[i] = _angle_in_limits(math.atan2(s, c), q[i], model[i, _LOWER],
                                        model[i, _UPPER])
        else:
            first = i + 1 if fit == CHILD_AND_TIP else n
            fitted = _fit_points(model, n, i, first, False, (R0, xi), (q, x, R), P)
        if not fitted:  # every node below
            _fit_points(model, n, i, i + 1, True, (R0, xi), (q, x, R), P)
        fk.place(i, fk.turned(model, i, R0, q[i]), xi, x, R)
    _place_tip(model, n, x, R)


def _stretch(model, n, q, x, R, L, target, P):
    """The backward pass with the chain laid straight from its first joint to the target
    (SerialFabrik.stretch)."""
    ox, oy, oz = x[0, 0], x[0, 1], x[0, 2]
    dx, dy, dz = target[0] - ox, target[1] - oy, target[2] - oz
    norm = max(math.sqrt(dx * dx + dy * dy + dz * dz), EPS_M)
    dx, dy, dz = dx / norm, dy / norm, dz / norm
    reach = 0.0
    for v in range(n + 1):
        if v:
            reach += L[v]
        P[v, 0], P[v, 1], P[v, 2] = ox + reach * dx, oy + reach * dy, oz + reach * dz
    _backward(model, n, q, x, R, P)


def _polish(model, n, nodes, target, step, trial, work):
    """Up to ``steps`` damped least-squares steps on the tip's position Jacobian, the first
    with the pull ``pull`` along the self-motion (SerialPasses.polish); the number taken, or
    -1 where the Python polish raises. ``nodes``: ``(q, x, R)`` (updated in place); ``step``:
    ``(steps, pull, tolerance)``; ``trial``: ``(x_try, R_try, q_try)``; ``work``: ``(cols, dq,
    free, d, r)``."""
    q, x, R = nodes
    steps, pull, tolerance = step
    x_try, R_try, q_try = trial
    cols, dq, free, d, r = work
    tx, ty, tz = target[0], target[1], target[2]
    ex, ey, ez = tx - x[n, 0], ty - x[n, 1], tz - x[n, 2]
    obj = ex * ex + ey * ey + ez * ez
    damping, taken, slow = POLISH_DAMPING, 0, 0
    while taken < steps:
        taken += 1
        for i in range(n):
            ax, ay, az = mat_vec(fk.load9(R, i), (model[i, _AXIS], model[i, _AXIS + 1],
                                                model[i, _AXIS + 2]))
            rx, ry, rz = x[n, 0] - x[i, 0], x[n, 1] - x[i, 1], x[n, 2] - x[i, 2]
            cols[i, 0] = ay * rz - az * ry
            cols[i, 1] = az * rx - ax * rz
            cols[i, 2] = ax * ry - ay * rx
        for k in range(n):
            free[k] = 1.0
            dq[k] = 0.0
        for _ in range(3):  # freeze joints the step pushes past a limit
            if not linalg.damped_step(cols, free, ex, ey, ez, damping, dq):
                return -1
            pressed = False
            for k in range(n):
                if free[k] != 0.0 and ((q[k] <= model[k, _LOWER] and dq[k] < 0.0) or
                                       (q[k] >= model[k, _UPPER] and dq[k] > 0.0)):
                    free[k] = 0.0
                    pressed = True
            if not pressed:
                break
            some_free = False
            for k in range(n):
                if free[k] != 0.0:
                    some_free = True
            if not some_free:
                for k in range(n):
                    dq[k] = 0.0
                break
        if pull > 0.0 and n > 3:  # limit_pull, projected on the free joints' null space
            for k in range(n):
                pulled = 0.0
                if model[k, _CENTRED] != 0.0:
                    offset = (q[k] - model[k, _MIDDLE]) * model[k, _INVERSE_HALF]
                    factor = offset / max(1.0 - offset * offset, 1e-12)
                    pulled = -pull * max(-FACTOR_MAX, min(factor, FACTOR_MAX))
                d[k] = pulled if free[k] != 0.0 else 0.0
            j0 = j1 = j2 = trace = 0.0
            for k in range(n):
                j0 += cols[k, 0] * d[k]
                j1 += cols[k, 1] * d[k]
                j2 += cols[k, 2] * d[k]
                trace += cols[k, 0] * cols[k, 0] + cols[k, 1] * cols[k, 1] + \
                    cols[k, 2] * cols[k, 2]
            if linalg.damped_step(cols, free, j0, j1, j2,
                            NULL_SPACE_DAMPING * max(trace / 3, 1e-12), r):
                for k in range(n):
                    dq[k] = dq[k] + d[k] - r[k]
        pull = 0.0
        for k in range(n):
            q_try[k] = _clip(q[k] + dq[k], model[k, _LOWER], model[k, _UPPER])
        _rebuild(model, n, q_try, x_try, R_try)
        dx, dy, dz = tx - x_try[n, 0], ty - x_try[n, 1], tz - x_try[n, 2]
        obj_try = dx * dx + dy * dy + dz * dz
        if obj_try < obj:
            slow = slow + 1 if obj_try > SLOW_STEP_RATIO2 * obj else 0
            q[:] = q_try
            x[:] = x_try
            R[:] = R_try
            ex, ey, ez, obj = dx, dy, dz, obj_try
            damping = max(damping * 0.1, POLISH_DAMPING_MIN)
        else:
            slow += 1
            damping *= 10.0
        if math.sqrt(obj) <= tolerance or slow >= SLOW_STEPS:
            break
    return taken


def _run_fabrik(model, settings, target, q, best_q, state, scratch, chunk):
    """FABRIK toward ``target`` (x, y, z [m]) from ``q``: :func:`~.iteration.iterate` over
    the serial passes, at most ``chunk`` iterations more in this call. A first call (state
    ``_BEGUN`` 0) starts from ``q``; a later one goes on from the state it left. ``q`` is the
    iterate, ``best_q`` the best configuration (the run's answer, once DONE). Returns DONE,
    CHUNK_DONE or FAILED."""
    n = q.shape[0]
    R = scratch[0:9 * n].reshape((n, 9))
    R_try = scratch[9 * n:18 * n].reshape((n, 9))
    start = 18 * n
    x = scratch[start:start + 3 * n + 3].reshape((n + 1, 3))
    start += 3 * n + 3
    x_try = scratch[start:start + 3 * n + 3].reshape((n + 1, 3))
    start += 3 * n + 3
    P = scratch[start:start + 3 * n + 3].reshape((n + 1, 3))
    start += 3 * n + 3
    cols = scratch[start:start + 3 * n].reshape((n, 3))
    start += 3 * n
    q_before = scratch[start:start + n]
    q_try = scratch[start + n:start + 2 * n]
    dq = scratch[start + 2 * n:start + 3 * n]
    free = scratch[start + 3 * n:start + 4 * n]
    d = scratch[start + 4 * n:start + 5 * n]
    r = scratch[start + 5 * n:start + 6 * n]
    L = state[_STATE:_STATE + n + 1]
    tolerance, min_improvement = settings.tolerance, settings.min_improvement
    max_iterations = int(settings.max_iterations)
    stall_iterations, polish = int(settings.stall_iterations), int(settings.polish)
    extrapolate, stretching = settings.extrapolate != 0.0, settings.stretch != 0.0
    stuck_ends = settings.stuck_ends != 0.0
    _rebuild(model, n, q, x, R)  # (x and R are always FK of q)
    if state[_BEGUN] == 0.0:
        L[0] = 0.0
        for v in range(1, n + 1):
            dx, dy, dz = x[v, 0] - x[v - 1, 0], x[v, 1] - x[v - 1, 1], x[v, 2] - x[v - 1, 2]
            L[v] = math.sqrt(dx * dx + dy * dy + dz * dz)
        obj = _error(x, n, target)
        state[_PULL] = settings.null_gain * obj if obj <= STREAM_ERROR_M else 0.0
        best_q[:] = q
        state[_OBJ] = state[_BEST_OBJ] = state[_START_BEST] = state[_LAST_PROGRESS] = obj
        state[_SINCE_PROGRESS] = state[_ITERATIONS] = state[_STALLED] = 0.0
        state[_POLISH_AFTER] = 0.0
        state[_CONVERGED] = 1.0 if obj <= tolerance else 0.0
        state[_BEGUN] = 1.0
    obj, best_obj, start_best = state[_OBJ], state[_BEST_OBJ], state[_START_BEST]
    last_progress, pull = state[_LAST_PROGRESS], state[_PULL]
    since_progress, iterations = int(state[_SINCE_PROGRESS]), int(state[_ITERATIONS])
    polish_after = int(state[_POLISH_AFTER])
    converged, stalled = state[_CONVERGED] != 0.0, False
    stop_at = iterations + chunk
    code = DONE
    while not converged and iterations < max_iterations:
        if iterations >= stop_at:
            code = CHUNK_DONE
            break
        iterations += 1
        q_before[:] = q
        obj_before = obj
        if stretching and iterations == 1:
            _stretch(model, n, q, x, R, L, target, P)
        else:
            _forward(n, x, L, target, P)
            _backward(model, n, q, x, R, P)
        obj = _error(x, n, target)
        if extrapolate and 0.0 < obj < obj_before and iterations > 1:
            rho = obj / obj_before
            if rho > EXTRAPOLATE_MIN_RATIO:  # remaining distance of a linear sequence
                factor = min(rho / (1.0 - rho), EXTRAPOLATE_MAX_FACTOR)
                for k in range(n):
                    q_try[k] = _clip(q[k] + factor * (q[k] - q_before[k]), model[k, _LOWER],
                                     model[k, _UPPER])
                _rebuild(model, n, q_try, x_try, R_try)
                obj_try = _error(x_try, n, target)
                if obj_try < obj:
                    q[:] = q_try
                    x[:] = x_try
                    R[:] = R_try
                    obj = obj_try
        if (polish > 0 and iterations >= polish_after and obj > 0.0 and
                obj >= POLISH_RATIO * obj_before and iterations < max_iterations):
            taken = _polish(model, n, (q, x, R), target,
                            (min(polish, max_iterations - iterations), pull, tolerance),
                            (x_try, R_try, q_try), (cols, dq, free, d, r))
            if taken < 0:
                return FAILED
            pull = 0.0
            iterations += taken
            obj_polished = _error(x, n, target)
            stuck = obj_polished > POLISH_STUCK_RATIO * obj
            if obj_polished > POLISH_RATIO * obj:  # no help here: let FABRIK work a while
                polish_after = iterations + stall_iterations
            obj = obj_polished
            if stuck and min_improvement > 0.0 and stuck_ends and not stretching:
                if obj < best_obj:
                    best_q[:] = q
                    best_obj = obj
                start_best = min(start_best, obj)
                last_progress = start_best + min_improvement
                since_progress = stall_iterations - 1
        if obj < best_obj:
            best_q[:] = q
            best_obj = obj
        converged = obj <= tolerance
        start_best = min(start_best, obj)
        if start_best < last_progress - min_improvement:
            last_progress, since_progress = start_best, 0
            continue
        since_progress += 1
        if since_progress < stall_iterations or converged:
            continue
        stalled = True  # a serial run does not restart: the caller's search takes over
        break
    if converged:
        best_q[:] = q
        best_obj = obj
    state[_OBJ], state[_BEST_OBJ], state[_START_BEST] = obj, best_obj, start_best
    state[_LAST_PROGRESS], state[_PULL] = last_progress, pull
    state[_SINCE_PROGRESS], state[_ITERATIONS] = since_progress, iterations
    state[_POLISH_AFTER] = polish_after
    state[_CONVERGED] = 1.0 if converged else 0.0
    state[_STALLED] = 1.0 if stalled else 0.0
    return code


_KERNELS: Dict[str, Any] = {}
_HELPERS = ('mat_vec', 'vec_mat', '_place_tip', '_rebuild', '_error', '_clip', '_remainder',
            '_angle_in_limits', '_forward', '_fit_points', '_backward', '_stretch',
            '_polish')


def compile() -> None:  # noqa: A001 - the kernel modules' entry point is named so
    """Compile the kernel (or load it from numba's cache on disk) and run it once;
    :mod:`ik_node.solvers.kernels` calls it in its loading thread."""
    if not _KERNELS:
        fk.compile()
        linalg.compile()
        kernel = kernels.jitted(globals(), _HELPERS, ('_run_fabrik',))['_run_fabrik']
        _exercise(kernel)
        _KERNELS['run'] = kernel


def _exercise(kernel) -> None:
    """Run the kernel once on a made-up 4-joint arm (every kind of fit, a stretch, the polish
    and its pull), so that numba compiles (or loads) it now, not in a solve."""
    n = 4
    model = np.zeros((n + 1, _COLUMNS))
    for i in range(n + 1):
        model[i, _R_TP:_R_TP + 9] = np.eye(3).ravel()
        model[i, _T_TP] = 0.0 if i == 0 else 0.2
    for i in range(n):
        axis = np.array([0.0, 0.0, 1.0]) if i != 1 else np.array([0.0, 1.0, 0.0])
        model[i, _AXIS:_AXIS + 3] = axis
        aaT = np.outer(axis, axis)
        model[i, _AAT:_AAT + 9] = aaT.ravel()
        model[i, _I_AAT:_I_AAT + 9] = (np.eye(3) - aaT).ravel()
        model[i, _K:_K + 9] = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]],
                                        [-axis[1], axis[0], 0.0]]).ravel()
        model[i, _LOWER], model[i, _UPPER] = -2.0, 2.0
        model[i, _FIT] = (CHILD_AND_TIP, TIP_ONLY, BONES, BONES)[i]
        model[i, _W_PERP], model[i, _W_CROSS + 1] = 0.2, 0.2
        model[i, _CENTRED], model[i, _INVERSE_HALF] = 1.0, 0.5
    settings = PassSettings(tolerance=1e-5, max_iterations=20.0, min_improvement=1e-9,
                            stall_iterations=5.0, extrapolate=1.0, polish=10.0, null_gain=0.5,
                            stuck_ends=1.0)
    state = np.zeros(_STATE + n + 1)
    scratch = np.zeros(_scratch_size(n))
    for stretch, target in ((0.0, (0.5, 0.3, 0.1)), (1.0, (2.0, 0.0, 0.0))):
        state[_BEGUN] = 0.0
        kernel(model, settings._replace(stretch=stretch), np.array(target), np.full(n, 0.1),
               np.zeros(n), state, scratch, CHUNK)


def model_of(fabrik: SerialFabrik) -> np.ndarray:
    """The model array of a serial chain's passes: per joint its geometry, limits, fit and
    pull terms (the columns above); row n the tip's offset."""
    n = fabrik.n
    model = np.zeros((n + 1, _COLUMNS))
    for i in range(n):
        row = model[i]
        row[_R_TP:_R_TP + 9] = fabrik.R_tp[i]
        row[_T_TP:_T_TP + 3] = fabrik.t_tp[i]
        row[_AXIS:_AXIS + 3] = fabrik.axes[i]
        row[_AAT:_AAT + 9] = fabrik.aaT[i]
        row[_I_AAT:_I_AAT + 9] = fabrik.I_aaT[i]
        row[_K:_K + 9] = fabrik.K[i]
        row[_LOWER], row[_UPPER] = fabrik.lower[i], fabrik.upper[i]
        align = fabrik.align[i]
        if align[0] == 'bones':
            row[_FIT] = BONES
            row[_W_PERP:_W_PERP + 3] = align[1]
            row[_W_CROSS:_W_CROSS + 3] = align[2]
        else:  # 'points': [child, tip] or [tip] (SerialFabrik.__init__)
            row[_FIT] = CHILD_AND_TIP if list(align[1]) == [i + 1, n] else TIP_ONLY
            if list(align[1]) not in ([i + 1, n], [n]):
                raise ValueError(f'joint {i} fits nodes {align[1]}: not a serial fit')
    for k, middle, inverse_half in fabrik.centring:
        model[k, _CENTRED], model[k, _MIDDLE], model[k, _INVERSE_HALF] = \
            1.0, middle, inverse_half
    model[n, _T_TP:_T_TP + 3] = fabrik.t_tip
    return model
