"""The compiled descents of damped_jacobian: Levenberg-Marquardt descents in numba.

Why one file of this size: numba compiles a kernel with the helper functions it calls, and
caches them together, when they live in one module; the kernel mirrors the Python descent of
:mod:`.descent` step for step, so the two are read side by side.

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
import threading
from typing import Any, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

import ik_node.solvers.kernels as kernels
from ik_node.solvers.kernels import fk
from ik_node.solvers.numerics.codegen import MAX_STEP
from ik_node.solvers.numerics import dls_settings as dls
from ik_node.solvers.numerics.null_space import FACTOR_MAX, STREAM_ERROR_M

# Exit codes of a descent (the kernel's, and TIMEOUT and GOOD_ENOUGH of descent.py).
CONVERGED = 0
STUCK = 1
ITERATION_CAP = 2
CHUNK_DONE = 3
TIMEOUT = 4  # the budget is spent (set by DescentRun.descend, not the kernel)
BAD_INPUT = 5  # _first_pose: an input the general path refuses (with its message)
NEED_DRAWS = 6  # _descend_restarts: more batches of restart numbers needed
GOOD_ENOUGH = -1  # position only, within tolerance of the proven bound (descent.GOOD_ENOUGH)

#: Near a stream's seed: the stall factor (descent.STREAM_STALL_FACTOR) and the null-space
#: projector's relative damping (descent._NULL_SPACE_DAMPING); a test keeps them equal.
STREAM_STALL_FACTOR = 0.7
NULL_SPACE_DAMPING = 1e-9

# Columns of the model array: 0-11 the joint's constant 3 x 4 transform (row-major), then:
(_LOW, _HIGH, _PRISMATIC, _WRAPS, _BOUNDED, _CENTRED, _MIDDLE, _INVERSE_HALF) = range(12, 20)
# (_PRISMATIC: fk.PRISMATIC, a test keeps them equal)
_MODEL_COLUMNS = 20
# The input checks of _first_pose: those of ik_node.solvers.input_checks (a test keeps them
# equal).
_MAX_COORDINATE = 1e6
_MAX_NORM2 = 1.7e308
# Entries of a descent's state array, kept between the kernel's calls; _POSITION_ERROR and
# _ANGLE_ERROR: the errors of the last iterate, measured by the kernel's FK [m, rad].
# _TURNS: 1 when :func:`_first_pose` converged with a full-turn joint more than half a turn from
# its seed (the answer is then turned nearest the seed and measured again). _RESTARTS, _DRAWS,
# _DECIDE_AT, _IN_DESCENT: :func:`_descend_restarts`'s count of restarts, of batches of restart
# numbers used, the count at which a stuck descent goes back to Python, and whether a descent is
# under way.
(_LAM, _ITERATIONS, _LAST_BLOCKED, _STALL_COST, _STALL_ITERATION, _BEST_COST, _STALL_NOW,
 _NEAR, _FLOOR, _GOOD, _KEEP_BEST, _PULL, _FRESH, _POSITION_ERROR, _ANGLE_ERROR,
 _TURNS, _RESTARTS, _DRAWS, _DECIDE_AT, _IN_DESCENT) = range(20)
_STATE = 20


class DescentSettings(NamedTuple):
    """The settings of a descent, as the kernels read them: every field a float (numba types
    the tuple once and caches the kernels for it; :meth:`as_floats` makes them so). Flags are
    1.0 or 0.0; counts are whole floats."""

    w2: float = 0.0                        # orientation_weight squared [m^2/rad^2]
    tol_p: float = 0.0                     # position tolerance, with its margin [m]
    tol_r: float = 0.0                     # orientation tolerance, with its margin [rad]
    lambda_min: float = 0.0                # damping bounds and factors (dls_settings)
    lambda_max: float = 0.0
    lambda_down: float = 0.0
    lambda_up: float = 0.0
    stall_iterations: float = 0.0          # the stall window, and with joints sitting out
    stall_iterations_blocked: float = 0.0
    stall_factor: float = 0.0              # the stall factor, and with joints sitting out
    max_step: float = 0.0                  # the largest step of a joint [rad or m]
    max_iterations: float = 0.0
    orientation: float = 0.0               # 1.0: a pose target
    dual: float = 0.0                      # 1.0: the dual (3 x 3) system
    null_space: float = 0.0                # 1.0: a stream's first step pulls from the limits
    null_gain: float = 0.0
    stream_cost: float = 0.0               # a stream's seed is near within this cost [m^2]
    stream_stall: float = 0.0              # the stall factor near a stream's seed
    null_damping: float = 0.0              # the null-space projector's relative damping
    factor_max: float = 0.0                # the pull's largest factor (null_space.FACTOR_MAX)
    damping: float = 0.0                   # the first damping [m^2]
    stall_factor_blocked: float = 0.0

    def as_floats(self) -> 'DescentSettings':
        """These settings with every field a float."""
        return DescentSettings(*(float(v) for v in self))


class Problem(NamedTuple):
    """One solve's chain and target as :func:`_first_pose` reads them (unchecked input)."""

    model: np.ndarray     # (n + 1) x _MODEL_COLUMNS: the serial model
    position: np.ndarray  # the target position [m], 3 floats
    quat: np.ndarray      # the target orientation (x, y, z, w), or empty: a position target
    floor: float          # the squared proven residual [m^2] (0.0: none)


class Descent(NamedTuple):
    """A descent's arrays, which the kernels update in place."""

    target: np.ndarray   # 12: the target position [m], then its rotation (row-major)
    q: np.ndarray        # n: the iterate
    best_q: np.ndarray   # n: the best configuration so far
    state: np.ndarray    # _STATE: what a descent keeps between calls
    scratch: np.ndarray  # _scratch_size(n): the work arrays


class Restarts(NamedTuple):
    """The restart candidates of :func:`_descend_restarts`: ``low + span * batches[b, c]``."""

    batches: np.ndarray  # (batches, candidates, n): uniform numbers in [0, 1)
    low: np.ndarray      # n
    span: np.ndarray     # n


class DescentStart(NamedTuple):
    """How :meth:`DescentRun.descend` begins a descent (as
    :meth:`.descent.PythonDescent.descend`): from ``q``, the cost measured above ``floor`` (the
    squared proven residual [m^2]), ``good_enough`` the position error [m] that ends a position
    descent (-1: none), the solve's ``iterations`` and ``last_blocked`` so far; ``near``: near
    a stream's seed (None: decided by the cost of ``q``), ``pull``: its first step pulls away
    from the limits, ``keep_best``: a lower cost than the best replaces the best."""

    q: Sequence[float]
    floor: float
    good_enough: float
    iterations: int = 0
    last_blocked: int = -1
    near: Optional[bool] = False
    pull: bool = False
    keep_best: bool = True


class RestartPlan(NamedTuple):
    """The plain restarts of :meth:`DescentRun.descend_restarts`: ``restarts`` counted so far,
    stuck at ``decide_at`` restarts the solver's loop decides; candidates ``low + span * u``
    from ``draws`` (a :class:`.starts.RestartDraws`), its batches from ``used`` on."""

    restarts: int
    decide_at: int
    draws: Any
    low: np.ndarray
    span: np.ndarray
    used: int = 0


class TreeProblem(NamedTuple):
    """A tree's targeted tips, as the tree kernels read them."""

    model: np.ndarray    # the tips' serial models, stacked (rows: see TreeKernel._plan)
    tips: np.ndarray     # per tip: _TIP_ROW, _TIP_JOINTS, _TIP_ORIENTATION, _TIP_WEIGHT, ...
    columns: np.ndarray  # per tip's joint: its active column
    targets: np.ndarray  # per tip: 12 floats as Descent.target


def available() -> bool:
    """Whether the compiled path may serve (:func:`ik_node.solvers.kernels.available`)."""
    return kernels.available()


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
    return _work_views(np.empty(_scratch_size(n)), n)


def _work_size(n):
    """The floats of a :class:`_Work`."""
    return 51 + 20 * n + 2 * n * n


def _scratch_size(n):
    """The floats of one descent's scratch: its :class:`_Work`, then its two step systems
    (``A``, ``b`` of at most max(n, 3) rows each)."""
    return _work_size(n) + 2 * max(n, 3) * (n + 1)


def _work_views(scratch, n):
    """The :class:`_Work` of a descent as views of ``scratch`` (:func:`_scratch_size`
    floats): no allocation per kernel call."""
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
    start = _work_size(n)
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
    :meth:`DescentRun.descend` starts it (``floor`` the squared proven residual). Returns
    BAD_INPUT for an input the checks refuse, else :func:`_descend`'s code; on CONVERGED
    ``state[_TURNS]`` says whether a full-turn joint ended more than half a turn from its
    seed."""
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
    """The descent from ``descent.q`` (begun as :meth:`DescentRun.descend` begins it) and, each
    time a descent is stuck while ``state[_RESTARTS]`` is below ``state[_DECIDE_AT]``, a restart as
    the solver's loop makes it: the lowest-cost (:func:`_pose_cost`, the first of equals) of the
    candidates ``low + span * batches[state[_DRAWS]]``, then its descent; up to ``steps``
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
# Columns of a tree's tips array: per targeted tip its first row in the tree's model array, its
# joint count, whether it has an orientation target, its weight, its first entry in the columns
# array (the active column of each of its path's joints).
_TIP_ROW, _TIP_JOINTS, _TIP_ORIENTATION, _TIP_WEIGHT, _TIP_COLUMNS = range(5)


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


_KERNELS = {}
_HELPERS = ('_first_descent', '_work_size', '_scratch_size', '_work_views', '_new_work', '_tip',
            '_pose_cost', '_rotation_vector', '_evaluate', '_damped_solve', '_dual_solve',
            '_sits_out', '_trial', '_null_space_shift', '_tree_evaluate', '_tree_within')


def compile() -> None:
    """Compile the kernels (or load them from numba's cache on disk) and run each once on a
    small chain; :mod:`ik_node.solvers.kernels` calls it in its loading thread."""
    if not _KERNELS:
        fk.compile()
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
        _exercise(kernels_)
        _KERNELS.update(kernels_)


def _exercise(kernels_) -> None:
    """Run every kernel once, in each of its kinds (6D, position in both systems), so that
    numba compiles (or loads) every specialisation now, not in a solve."""
    for n, orientation in ((6, True), (6, False), (3, False)):
        transforms = [np.eye(4)[:3] for _ in range(n)]
        descent = CompiledDescent(transforms, np.eye(4)[:3], [False] * n, [False] * n,
                                  list(range(n)), [-1.0] * n, [1.0] * n,
                                  [(k, 0.0, 1.0) for k in range(n)], _default_params(),
                                  compiled_kernels=kernels_)
        run = descent.start([0.1, 0.0, 0.0], np.eye(3) if orientation else None, [0.0] * n)
        run.descend(DescentStart([0.0] * n, 0.0, -1.0, near=True, pull=True), None)
        run.lowest_cost(np.zeros((2, n)))
        run.cost([0.0] * n)
        if orientation:
            run.first_pose(np.array([0.1, 0.0, 0.0]), np.array([0.0, 0.0, 0.0, 1.0]),
                           np.zeros(n), 0.0)
            run.first_pose(np.array([0.1, 0.0, 0.0]), np.empty(0), np.zeros(n), 0.0)
            run.descend_restarts(DescentStart([0.0] * n, 0.0, -1.0), None,
                                 RestartPlan(0, 1, _ExerciseDraws(n), np.full(n, -1.0),
                                             np.full(n, 2.0)))
    # A tree of two tips on three joints (one shared), a pose and a position target.
    tree_model = np.zeros((6, _MODEL_COLUMNS))
    tree_model[:, :12] = np.eye(4)[:3].ravel()
    tips = np.array([[0, 2, 1, 1.0, 0], [3, 2, 0, 1.0, 2]], dtype=float)
    columns = np.array([0, 1, 0, 2], dtype=float)
    targets = np.zeros((2, 12))
    targets[:, 0] = 0.1
    targets[0, 3:] = np.eye(3).ravel()
    active_model = np.zeros((3, _MODEL_COLUMNS))
    active_model[:, _LOW], active_model[:, _HIGH], active_model[:, _BOUNDED] = -1.0, 1.0, 1.0
    settings = DescentSettings(
        lambda_min=1e-9, lambda_max=1e9, lambda_up=10.0, lambda_down=0.1, max_step=1.0,
        max_iterations=20, stall_iterations=2, stall_iterations_blocked=2, damping=0.1,
        stall_factor=0.25).as_floats()
    state = np.zeros(_STATE)
    state[_BEST_COST], state[_FRESH] = math.inf, 1.0
    tree = TreeProblem(tree_model, tips, columns, targets)
    kernels_['tree_descend'](tree, active_model, settings, np.zeros(3), np.zeros(3),
                             np.full(2, -1.0), state, 16)
    kernels_['tree_cost'](tree, settings, np.zeros(3))


class _ExerciseDraws:
    """Restart numbers for :func:`_exercise` (:class:`.starts.RestartDraws`' interface)."""

    def __init__(self, n: int):
        self._batches = np.full((4, 4, n), 0.5)

    def upto(self, k: int) -> np.ndarray:
        return self._batches


def _default_params() -> dict:
    """The solver parameters the kernels read, at typical values (for :func:`_exercise`)."""
    return {'orientation_weight': 0.5, 'position_tolerance': 1e-5,
            'orientation_tolerance': 1e-4, 'damping': 0.1, 'max_iterations': 20,
            'null_space_gain': 0.5}


def _descent_settings(params: dict) -> 'DescentSettings':
    """The settings of a descent with the solver's parameters (``orientation_weight``, the
    tolerances with their margin, ``damping``) and damped_jacobian's shared constants; the
    others 0.0."""
    return DescentSettings(
        w2=params['orientation_weight'] ** 2,
        tol_p=dls.TOLERANCE_MARGIN * params['position_tolerance'],
        tol_r=dls.TOLERANCE_MARGIN * params['orientation_tolerance'],
        lambda_min=dls.LAMBDA_MIN, lambda_max=dls.LAMBDA_MAX, lambda_down=dls.LAMBDA_DOWN,
        lambda_up=dls.LAMBDA_UP, stall_iterations=dls.STALL_ITERATIONS,
        stall_iterations_blocked=dls.STALL_ITERATIONS_BLOCKED, stall_factor=dls.STALL_FACTOR,
        stall_factor_blocked=dls.STALL_FACTOR, max_step=MAX_STEP,
        damping=params['damping']).as_floats()


class CompiledDescent:
    """The compiled descents bound to one serial chain and one solver's parameters.

    A solve calls :meth:`start` with its target and runs its descents on the
    :class:`DescentRun` it returns. :meth:`serves` tells whether the kernels are loaded (a
    solver asks before each solve and takes the Python descent until then).

    Args:
        joint_transforms: per joint the constant 3 x 4 transform of
            :class:`~ik_node.model.fast_kinematics.SerialKinematics` (joint axis along z).
        tip_transform: the tip's constant 3 x 4 transform.
        prismatic, wraps, bounded: per joint (see ``DampedJacobianSolver``).
        low, high: the joint limits [rad or m].
        centring: the null-space pull's ``(index, middle, 1 / half range)`` per joint
            (:func:`~ik_node.solvers.null_space.centring_terms`).
        params: the solver's parameters (``orientation_weight``, the tolerances, ``damping``,
            ``max_iterations``, ``null_space_gain``).
        compiled_kernels: the kernels to use (by default those :func:`compile` loaded).
    """

    #: Iterations per kernel call between two checks of the budget.
    CHUNK = 16

    def __init__(self, joint_transforms: Sequence[np.ndarray], tip_transform: np.ndarray,
                 prismatic: Sequence[bool], wraps: Sequence[bool], bounded: Sequence[int],
                 low: Sequence[float], high: Sequence[float],
                 centring: Sequence[Tuple[int, float, float]], params: dict,
                 compiled_kernels: Optional[dict] = None):
        n = len(joint_transforms)
        model = np.zeros((n + 1, _MODEL_COLUMNS))
        for i, C in enumerate(joint_transforms):
            model[i, :12] = np.asarray(C, dtype=float)[:3, :4].ravel()
            model[i, _LOW], model[i, _HIGH] = low[i], high[i]
            model[i, _PRISMATIC] = float(prismatic[i])
            model[i, _WRAPS] = float(wraps[i])
            model[i, _BOUNDED] = float(i in bounded)
        for k, middle, inverse_half in centring:
            model[k, _CENTRED], model[k, _MIDDLE], model[k, _INVERSE_HALF] = \
                1.0, middle, inverse_half
        model[n, :12] = np.asarray(tip_transform, dtype=float)[:3, :4].ravel()
        self.model = model
        self.n = n
        gain = params['null_space_gain']
        #: Per with_orientation: the DescentSettings (the 6D one None where the Python descent
        #: serves: the dual system for 12 joints or more).
        self.settings = {}
        for orientation in (False, True):
            rows = 6 if orientation else 3
            dual = 2 * rows <= n
            if orientation and dual:
                self.settings[True] = None
                continue
            settings = _descent_settings(params)._replace(
                max_iterations=params['max_iterations'], orientation=orientation, dual=dual,
                null_space=gain > 0.0 and bool(centring) and n > rows, null_gain=gain,
                stream_cost=STREAM_ERROR_M * STREAM_ERROR_M, stream_stall=STREAM_STALL_FACTOR,
                null_damping=NULL_SPACE_DAMPING, factor_max=FACTOR_MAX)
            if orientation:
                settings = settings._replace(stall_factor=dls.POSE_STALL_FACTOR)
            self.settings[orientation] = settings.as_floats()
        self._kernels = _KERNELS if compiled_kernels is None else compiled_kernels
        self._runs = threading.local()  # per thread: its DescentRun, reused by every solve

    def ready(self) -> bool:
        """Whether the compiled kernels are loaded (never blocks)."""
        return bool(self._kernels) and (self._kernels is not _KERNELS or kernels.ready())

    def serves(self, with_orientation: bool) -> bool:
        """Whether a target of this kind runs here now (the kernels loaded, the kind
        compiled); never blocks."""
        return self.settings[with_orientation] is not None and self.ready()

    def start_loading(self) -> None:
        """Start loading the kernels in the background unless they are (a solve calls it
        before its budget starts: starting a thread can take milliseconds on a loaded
        machine). Not at construction: importing numba would slow down a node's start-up."""
        if not self.ready():
            kernels.start()

    def start(self, p_target: Sequence[float], R_target: Optional[np.ndarray],
              q: Sequence[float]) -> 'DescentRun':
        """The descents of one solve toward a target (position [m], rotation matrix or None
        for a position target), with no best configuration yet (``q``, cost infinite). The
        run's arrays are this thread's, reused by its next solve: a solve copies what it
        returns."""
        run = self.run()
        run.aim(p_target, R_target, q)
        return run

    def run(self) -> 'DescentRun':
        """This thread's :class:`DescentRun` (its arrays reused by each of its solves)."""
        run = getattr(self._runs, 'run', None)
        if run is None:
            run = self._runs.run = DescentRun(self)
        return run


class DescentRun:
    """The compiled descents of one solve: its target, the last iterate :attr:`q` and the best
    configuration of all its descents :attr:`best_q` (arrays) with its cost :attr:`best_cost`.
    Its own arrays: solves on one solver from several threads do not share them."""

    __slots__ = ('descend_kernel', 'cost_kernel', 'lowest_cost_kernel', 'first_pose_kernel',
                 'restarts_kernel', 'model', 'settings', 'with_orientation', 'target', 'q',
                 'best_q', 'state', 'scratch', 'descent')

    def __init__(self, kernel: CompiledDescent):
        kernels_ = kernel._kernels
        self.descend_kernel = kernels_['descend']
        self.cost_kernel = kernels_['cost']
        self.lowest_cost_kernel = kernels_['lowest_cost']
        self.first_pose_kernel = kernels_['first_pose']
        self.restarts_kernel = kernels_['descend_restarts']
        self.model = kernel.model
        self.settings = kernel.settings
        self.with_orientation = False
        self.target = np.zeros(12)
        self.q = np.empty(kernel.n)
        self.best_q = np.empty(kernel.n)
        self.state = np.zeros(_STATE)
        self.scratch = np.empty(_scratch_size(kernel.n))
        self.descent = Descent(self.target, self.q, self.best_q, self.state, self.scratch)

    def aim(self, p_target: Sequence[float], R_target: Optional[np.ndarray],
            q: Sequence[float]) -> None:
        """Start a solve toward a target, :attr:`best_q` ``q`` at infinite cost."""
        self.with_orientation = R_target is not None
        target = self.target
        target[:3] = p_target
        if R_target is not None:
            target[3:] = R_target.ravel()
        self.best_q[:] = q
        self.state[_BEST_COST] = math.inf

    @property
    def best_cost(self) -> float:
        """The cost of :attr:`best_q` (infinite before any descent kept one)."""
        return float(self.state[_BEST_COST])

    def iterations(self) -> int:
        """The iterations of the solve so far."""
        return int(self.state[_ITERATIONS])

    def turns(self) -> bool:
        """Whether :meth:`first_pose`'s answer has a full-turn joint more than half a turn from
        its seed (turned nearest the seed, it is measured again)."""
        return self.state[_TURNS] != 0.0

    def errors(self) -> Tuple[float, Optional[float]]:
        """The errors of the last iterate :attr:`q` as the kernel's FK measured them:
        ``(position [m], angle [rad] or None for a position target)``."""
        state = self.state
        return (float(state[_POSITION_ERROR]),
                float(state[_ANGLE_ERROR]) if self.with_orientation else None)

    def descend(self, start: DescentStart, budget) -> Tuple[int, np.ndarray, int, int, bool]:
        """One descent begun as ``start`` says, as :meth:`.descent.PythonDescent.descend`;
        ``budget`` (or None) is asked before each chunk of iterations. Returns ``(code, last
        iterate, iterations, last_blocked, near)``: code CONVERGED, GOOD_ENOUGH, STUCK,
        ITERATION_CAP or TIMEOUT (the budget spent; STUCK for a position target when enough is
        left to hand it to the closest-pose search); the last iterate is :attr:`q` (reused by
        the next descent)."""
        self.q[:] = start.q
        state = self.state
        state[_ITERATIONS], state[_LAST_BLOCKED] = start.iterations, start.last_blocked
        state[_NEAR] = -1.0 if start.near is None else float(start.near)
        state[_FLOOR], state[_GOOD] = start.floor, start.good_enough
        state[_KEEP_BEST], state[_PULL] = float(start.keep_best), float(start.pull)
        state[_FRESH] = 1.0
        return self.go_on(CHUNK_DONE, budget)

    def descend_restarts(self, start: DescentStart, budget, plan: RestartPlan
                         ) -> Tuple[int, np.ndarray, int, int, bool, int, int]:
        """A descent begun as :meth:`descend` begins ``start`` (``near`` and ``pull`` read as
        False: not the first of its solve), then the solver's plain restarts in the kernel
        (:func:`_descend_restarts`, as ``plan`` says) until a descent ends otherwise than
        stuck, or stuck at ``plan.decide_at`` restarts; ``budget`` is asked before each chunk
        of iterations. Returns :meth:`descend`'s tuple and the restarts and batches counted."""
        q_array = self.q
        q_array[:] = start.q
        state = self.state
        state[_ITERATIONS], state[_LAST_BLOCKED] = start.iterations, start.last_blocked
        state[_NEAR] = 0.0
        state[_FLOOR], state[_GOOD] = start.floor, start.good_enough
        state[_KEEP_BEST], state[_PULL], state[_FRESH] = float(start.keep_best), 0.0, 1.0
        state[_RESTARTS], state[_DRAWS], state[_DECIDE_AT] = plan.restarts, plan.used, \
            plan.decide_at
        state[_IN_DESCENT] = 1.0
        settings = self.settings[self.with_orientation]
        draws, low, span = plan.draws, plan.low, plan.span
        restart = Restarts(draws.upto(plan.used + 8), low, span)
        while True:
            if budget is not None and not budget.allows():
                code = STUCK if not self.with_orientation and budget.can_hand_over() \
                    else TIMEOUT
                break
            code = self.restarts_kernel(self.model, settings, restart, self.descent,
                                        CompiledDescent.CHUNK)
            while code == NEED_DRAWS:
                restart = Restarts(draws.upto(int(state[_DRAWS]) + 8), low, span)
                code = self.restarts_kernel(self.model, settings, restart, self.descent,
                                            CompiledDescent.CHUNK)
            if code != CHUNK_DONE:
                break
        return (code, q_array, int(state[_ITERATIONS]), int(state[_LAST_BLOCKED]), False,
                int(state[_RESTARTS]), int(state[_DRAWS]))

    def first_pose(self, position: np.ndarray, quat: np.ndarray, seed: np.ndarray,
                   floor: float) -> int:
        """A solve's checks and the first chunk of its seed's descent in one call
        (:func:`_first_pose`; float64 vectors, ``quat`` empty for a position target):
        BAD_INPUT, or the descent's code (CHUNK_DONE: :meth:`go_on` finishes it)."""
        orientation = self.with_orientation = quat.shape[0] != 0
        return self.first_pose_kernel(Problem(self.model, position, quat, floor),
                                      self.settings[orientation], seed, self.descent,
                                      CompiledDescent.CHUNK)

    def go_on(self, code: int, budget) -> Tuple[int, np.ndarray, int, int, bool]:
        """The descent under way (its last chunk's ``code``) to its end, ``budget`` (or None)
        asked before each chunk; returns what :meth:`descend` does."""
        state = self.state
        settings = self.settings[self.with_orientation]
        while code == CHUNK_DONE:
            if budget is not None and not budget.allows():
                code = STUCK if not self.with_orientation and budget.can_hand_over() \
                    else TIMEOUT
                break
            code = self.descend_kernel(self.model, settings, self.descent, CompiledDescent.CHUNK)
        return (code, self.q, int(state[_ITERATIONS]), int(state[_LAST_BLOCKED]),
                state[_NEAR] > 0.0)

    def cost(self, q: Sequence[float]) -> float:
        """The cost of ``q`` to the target [m^2] (weighted, for a pose)."""
        return float(self.cost_kernel(self.model, self.settings[self.with_orientation],
                                      self.target,
                                      np.asarray(q, dtype=float)))

    def lowest_cost(self, candidates: np.ndarray) -> np.ndarray:
        """The candidate configuration (a row of ``candidates``, floats) of lowest cost to the
        target (the first of equals)."""
        return candidates[self.lowest_cost_kernel(
            self.model, self.settings[self.with_orientation], self.target, candidates)]


def tree_kernel(chain, params: dict, wraps: Sequence[bool]) -> Optional['TreeKernel']:
    """The :class:`TreeKernel` of ``chain`` where numba may serve and every tip's path has
    generated kinematics; else None (the Python descents serve)."""
    if not available():
        return None
    try:
        return TreeKernel(chain, params, wraps)
    except ValueError:
        return None


class TreeKernel:
    """The compiled descents of :class:`~.tree.TreeDampedLeastSquares` on one tree: per tip
    its serial path's model (the generated kinematics' constant transforms), per set of
    targeted tips the stacked model (cached), and :meth:`start` for one solve.

    Args:
        chain: the tree (its tips' serial paths have generated kinematics).
        params: the damped_jacobian parameters (``orientation_weight``, the tolerances,
            ``damping``, ``max_iterations``).
        wraps: per joint of the tree, whether it wraps by whole turns.
    """

    def __init__(self, chain, params: dict, wraps: Sequence[bool]):
        self._paths = []
        for tip in chain.tip_links:
            fast = chain.serial_chain(tip).fast_kinematics
            if fast is None:
                raise ValueError(f'tip {tip!r}: no generated kinematics for its path')
            joints = chain.joints_of_tip(tip)
            model = np.zeros((len(joints) + 1, _MODEL_COLUMNS))
            for i, C in enumerate(fast.joint_transforms):
                model[i, :12] = np.asarray(C, dtype=float)[:3, :4].ravel()
                model[i, _PRISMATIC] = float(chain.joints[joints[i]].is_prismatic)
            model[len(joints), :12] = np.asarray(fast.tip_transform, dtype=float)[:3, :4].ravel()
            self._paths.append((joints, model))
        self._low, self._high = chain.lower.tolist(), chain.upper.tolist()
        self._wraps = list(wraps)
        self._plans = {}
        self.settings = _descent_settings(params)

    def serves(self) -> bool:
        """Whether the kernels are loaded (never blocks)."""
        return bool(_KERNELS) and kernels.ready()

    def start_loading(self) -> None:
        """As :meth:`CompiledDescent.start_loading`."""
        if not self.serves():
            kernels.start()

    def _plan(self, tips: Tuple[int, ...], active: Sequence[int], weights: Sequence[float]):
        """The stacked model of the targeted ``tips`` (in order) on the ``active`` joints."""
        key = (tips, tuple(weights))
        plan = self._plans.get(key)
        if plan is None:
            column = {j: c for c, j in enumerate(active)}
            rows = [self._paths[k][1] for k in tips]
            tree_model = np.concatenate(rows)
            table = np.zeros((len(tips), 5))
            columns: List[int] = []
            row = 0
            for t, k in enumerate(tips):
                joints = self._paths[k][0]
                table[t, _TIP_ROW], table[t, _TIP_JOINTS] = row, len(joints)
                table[t, _TIP_WEIGHT], table[t, _TIP_COLUMNS] = weights[k], len(columns)
                columns += [column[j] for j in joints]
                row += len(joints) + 1
            active_model = np.zeros((len(active), _MODEL_COLUMNS))
            for c, j in enumerate(active):
                lo, hi, wrap = self._low[j], self._high[j], self._wraps[j]
                active_model[c, _LOW], active_model[c, _HIGH] = lo, hi
                active_model[c, _WRAPS] = float(wrap)
                active_model[c, _BOUNDED] = float(not wrap and math.isfinite(lo) and
                                                  math.isfinite(hi))
            plan = (tree_model, table, np.array(columns, dtype=float), active_model)
            self._plans[key] = plan
        return plan

    def start(self, targets, active: Sequence[int], weights: Sequence[float],
              good_enough: Optional[Sequence[float]], floor: float,
              max_iterations: int) -> 'TreeRun':
        """The descents of one solve of ``targets`` (:class:`TipTarget` s: ``index``,
        ``position``, ``R``) on the ``active`` joints."""
        tree_model, table, columns, active_model = self._plan(
            tuple(t.index for t in targets), active, weights)
        table = table.copy()
        target_array = np.zeros((len(targets), 12))
        for k, t in enumerate(targets):
            target_array[k, :3] = t.position
            if t.R is not None:
                target_array[k, 3:] = np.asarray(t.R, dtype=float).ravel()
                table[k, _TIP_ORIENTATION] = 1.0
        settings = self.settings._replace(max_iterations=float(max_iterations))
        good = np.full(len(targets), -1.0) if good_enough is None else \
            np.array(good_enough, dtype=float)
        return TreeRun((TreeProblem(tree_model, table, columns, target_array), active_model,
                        settings), good, floor, len(active))


class TreeRun:
    """The compiled descents of one tree solve: the best configuration of the active joints
    :attr:`best_x` with its cost :attr:`best_cost`."""

    def __init__(self, problem: tuple, good: np.ndarray, floor: float, n: int):
        self._problem = problem
        self._good = good
        self.x = np.empty(n)
        self.best_x = np.empty(n)
        self.state = np.zeros(_STATE)
        self.state[_BEST_COST] = math.inf
        self.state[_FLOOR] = floor

    @property
    def best_cost(self) -> float:
        """The cost of :attr:`best_x` (infinite before any descent)."""
        return float(self.state[_BEST_COST])

    def descend(self, x: Sequence[float], iterations: int, last_blocked: int,
                budget) -> Tuple[int, List[float], int, int]:
        """One descent from ``x`` (the active joints); ``budget`` is asked before each chunk of
        iterations. Returns ``(code, last iterate, iterations, last_blocked)``: CONVERGED,
        GOOD_ENOUGH, STUCK, ITERATION_CAP or TIMEOUT."""
        tree, active_model, settings = self._problem
        self.x[:] = x
        state = self.state
        state[_ITERATIONS], state[_LAST_BLOCKED], state[_FRESH] = iterations, last_blocked, 1.0
        descend = _KERNELS['tree_descend']
        while True:
            if not budget.allows():
                code = TIMEOUT
                break
            code = descend(tree, active_model, settings, self.x, self.best_x, self._good, state,
                           CompiledDescent.CHUNK)
            if code != CHUNK_DONE:
                break
        return code, self.x.tolist(), int(state[_ITERATIONS]), int(state[_LAST_BLOCKED])

    def cost(self, x: Sequence[float]) -> float:
        """The stacked cost of ``x`` (the active joints)."""
        tree, _, settings = self._problem
        return float(_KERNELS['tree_cost'](tree, settings, np.asarray(x, dtype=float)))
