"""FABRIK's serial run compiled: a whole run toward one target in one numba call.

:func:`_run_fabrik` runs what :meth:`SerialFabrik.run
<ik_node.solvers.fabrik.serial.SerialFabrik.run>` runs (the loop of
:func:`~ik_node.solvers.fabrik.iteration.iterate` over
:class:`~ik_node.solvers.fabrik.serial.SerialPasses`) in machine code: the passes of
:mod:`.compiled_passes` (forward, backward, stretch, rebuild), the extrapolation, the damped
least-squares polish with its first step's pull along the self-motion, the stall rule and the
best configuration kept. The same operations in the same order on the same floats as the Python
passes, so the same iterations and the same joints (``test/core/test_compiled_fabrik.py``).

A numba kernel takes arrays and scalars, not the frozen problem objects of the Python path, so
the chain is an array (:func:`model_of`), the settings a :class:`PassSettings`. The kernel runs
at most :data:`CHUNK` iterations per call; the clock stays in Python
(:class:`~ik_node.solvers.fabrik.compiled_runs.CompiledFabrik`).

:mod:`ik_node.kernels` compiles the kernel (or loads it from numba's cache) in its
background thread; until then, and where numba cannot serve, the Python passes run.
"""

from __future__ import annotations

import math
from typing import Any, Dict, NamedTuple

import numpy as np

import ik_node.kernels as kernels
from ik_node.kernels import fk, linalg
from ik_node.solvers.fabrik import compiled_passes as passes
from ik_node.solvers.fabrik import compiled_steps as steps
# The model's layout (compiled_passes), read here by the polish and the pull.
from ik_node.solvers.fabrik.compiled_passes import (_AXIS, _CENTRED, _COLUMNS, _FIT,
                                                    _INVERSE_HALF, _LOWER, _MIDDLE, _T_TP,
                                                    _UPPER, _W_CROSS, _W_PERP, BONES,
                                                    CHILD_AND_TIP, TIP_ONLY)
from ik_node.solvers.fabrik.iteration import (POLISH_DAMPING, POLISH_DAMPING_MIN,
                                              SLOW_STEP_RATIO2, SLOW_STEPS)
from ik_node.solvers.fabrik.serial import NULL_SPACE_DAMPING, SerialFabrik
from ik_node.solvers.numerics.null_space import FACTOR_MAX, STREAM_ERROR_M
from ik_node.kernels.small_matrix import mat_vec

# What a call of the kernel returns (compiled_steps): DONE, CHUNK_DONE or FAILED.
DONE, CHUNK_DONE, FAILED, CHUNK = steps.DONE, steps.CHUNK_DONE, steps.FAILED, steps.CHUNK

# Entries of the state array kept between calls: compiled_steps's, the pull, then the bone
# lengths (n + 1 of them).
_PULL = steps.LOOP_STATE
_STATE = _PULL + 1


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
            q_try[k] = passes.clip(q[k] + dq[k], model[k, _LOWER], model[k, _UPPER])
        passes.rebuild(model, n, q_try, x_try, R_try)
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
    ``BEGUN`` 0) starts from ``q``; a later one goes on from the state it left. ``q`` is the
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
    passes.rebuild(model, n, q, x, R)  # (x and R are always FK of q)
    if state[steps.BEGUN] == 0.0:
        L[0] = 0.0
        for v in range(1, n + 1):
            dx, dy, dz = x[v, 0] - x[v - 1, 0], x[v, 1] - x[v - 1, 1], x[v, 2] - x[v - 1, 2]
            L[v] = math.sqrt(dx * dx + dy * dy + dz * dz)
        obj = passes.error(x, n, target)
        state[_PULL] = settings.null_gain * obj if obj <= STREAM_ERROR_M else 0.0
        best_q[:] = q
        steps.begin(state, obj, obj <= tolerance)
    obj, best_obj, start_best, last_progress, since_progress, iterations, polish_after, \
        converged, stalled = steps.resume(state)
    pull = state[_PULL]
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
            passes.stretch(model, n, q, x, R, L, target, P)
        else:
            passes.forward(n, x, L, target, P)
            passes.backward(model, n, q, x, R, P)
        obj = passes.error(x, n, target)
        factor = steps.extrapolation(obj, obj_before, iterations) if extrapolate else 0.0
        if factor > 0.0:
            steps.extrapolate(model, q, q_before, factor, q_try)
            passes.rebuild(model, n, q_try, x_try, R_try)
            obj_try = passes.error(x_try, n, target)
            if obj_try < obj:
                q[:] = q_try
                x[:] = x_try
                R[:] = R_try
                obj = obj_try
        if steps.polish_due(polish, iterations, polish_after, obj, obj_before, max_iterations):
            taken = _polish(model, n, (q, x, R), target,
                            (min(polish, max_iterations - iterations), pull, tolerance),
                            (x_try, R_try, q_try), (cols, dq, free, d, r))
            if taken < 0:
                return FAILED
            pull = 0.0
            iterations += taken
            obj_polished = passes.error(x, n, target)
            stuck, polish_after = steps.polished(obj_polished, obj, iterations, polish_after,
                                                 stall_iterations)
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
        start_best, last_progress, since_progress, stall = steps.progress(
            obj, converged, (start_best, last_progress, since_progress),
            (min_improvement, stall_iterations))
        if stall:  # a serial run does not restart: the caller's search takes over
            stalled = True
            break
    if converged:
        best_q[:] = q
        best_obj = obj
    state[_PULL] = pull
    steps.keep(state, (obj, best_obj, start_best, last_progress, since_progress, iterations,
                       polish_after, converged, stalled))
    return code


_KERNELS: Dict[str, Any] = {}
_HELPERS = ('mat_vec', '_polish')


def compile() -> None:  # noqa: A001 - the kernel modules' entry point is named so
    """Compile the kernel (or load it from numba's cache on disk) and run it once;
    :mod:`ik_node.kernels` calls it in its loading thread."""
    if not _KERNELS:
        steps.compile()  # and the serial passes
        linalg.compile()
        kernel = kernels.jitted(globals(), _HELPERS, ('_run_fabrik',))['_run_fabrik']
        _exercise(kernel)
        _KERNELS['run'] = kernel


def _exercise(kernel) -> None:
    """Run the kernel once on a made-up 4-joint arm (every kind of fit, a stretch, the polish
    and its pull), so that numba compiles (or loads) it now, not in a solve."""
    n = 4
    model = np.zeros((n + 1, _COLUMNS))
    model[n, _T_TP] = 0.2
    for i in range(n):
        axis = (0.0, 0.0, 1.0) if i != 1 else (0.0, 1.0, 0.0)
        model[i, :fk.COLUMNS] = fk.fabrik_row(np.eye(3), (0.0 if i == 0 else 0.2, 0.0, 0.0),
                                              axis)
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
        state[steps.BEGUN] = 0.0
        kernel(model, settings._replace(stretch=stretch), np.array(target), np.full(n, 0.1),
               np.zeros(n), state, scratch, CHUNK)


def model_of(fabrik: SerialFabrik) -> np.ndarray:
    """The model array of a serial chain's passes: per joint its geometry, limits, fit and
    pull terms (the columns above); row n the tip's offset."""
    n = fabrik.n
    model = np.zeros((n + 1, _COLUMNS))
    for i in range(n):
        row = model[i]
        row[:fk.COLUMNS] = fabrik.rows[i]
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
