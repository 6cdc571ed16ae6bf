"""Optional compiled descent of damped_jacobian: one 6D Levenberg-Marquardt descent in numba.

Why one file of this size: the numba kernel must see its helper functions in one module to
compile them together; it mirrors the Python descent in descent.py step for step.

The pure-Python solver (:mod:`ik_node.solvers.damped_jacobian.solver`) is complete without this
module. Where `numba <https://numba.pydata.org>`_ is installed (``pip install numba``; rosdep key
``python3-numba``), a pose target on a serial chain runs each descent's iterations here: the
same FK, weighted error, normal equations ``J^T W J``, damped Cholesky step with joints at a limit
sitting out, step cap, wrapping and clipping, adaptive damping and stall test as the Python loop,
in machine code (one call per few iterations instead of two generated Python functions per
iteration). Restarts, the closest-pose check and the budget stay in Python.

The kernel is generic: a chain is passed as an array (per joint the constant 3 x 4 transform of
:class:`~ik_node.model.fast_kinematics.SerialKinematics`, its limits and kind), so one compiled
function serves every chain. It is compiled when the first solver using it is built and cached
on disk by numba (``cache=True``: later processes load it); ``IK_NODE_NO_NUMBA=1`` turns the
accelerator off. Install size and start-up cost: docs/speed.md.
"""

from __future__ import annotations

import importlib.util
import math
import os
from typing import List, NamedTuple, Optional, Sequence, Tuple

import numpy as np


# Kernel exit codes.
CONVERGED = 0
STUCK = 1
ITERATION_CAP = 2
CHUNK_DONE = 3
TIMEOUT = 4  # the budget is spent (set by CompiledDescent.descend, not the kernel)

# Columns of the model array: 0-11 the joint's constant 3 x 4 transform (row-major), then:
_LOW, _HIGH, _PRISMATIC, _WRAPS, _BOUNDED = 12, 13, 14, 15, 16
_MODEL_COLUMNS = 17
# Entries of the settings array.
(_W2, _TOL_P, _TOL_R, _LAMBDA_MIN, _LAMBDA_MAX, _LAMBDA_DOWN, _LAMBDA_UP, _STALL_ITERATIONS,
 _STALL_ITERATIONS_BLOCKED, _STALL_FACTOR, _MAX_STEP, _MAX_ITERATIONS) = range(12)
def available() -> bool:
    """Whether numba is installed (and not turned off by ``IK_NODE_NO_NUMBA``); it is
    imported, and the kernel compiled or loaded from numba's cache, only when the first
    :class:`CompiledDescent` is made (importing numba takes a noticeable part of a second)."""
    if os.environ.get('IK_NODE_NO_NUMBA', '') not in ('', '0'):
        return False
    return importlib.util.find_spec('numba') is not None


class _Work(NamedTuple):
    """Scratch arrays of one kernel call, made once and reused by every evaluation."""

    F: np.ndarray        # 3 x 4: the frame so far
    G: np.ndarray        # 3 x 4: the joint's frame before its motion
    axes: np.ndarray     # n x 3: joint axes (base frame)
    origins: np.ndarray  # n x 3: joint origins (base frame)
    T: np.ndarray        # 3 x 4: the tip
    E: np.ndarray        # 3 x 3: R_target R^T
    J: np.ndarray        # 6 x n: the Jacobian


def _new_work(n):
    return _Work(np.empty((3, 4)), np.empty((3, 4)), np.empty((n, 3)), np.empty((n, 3)),
                 np.empty((3, 4)), np.empty((3, 3)), np.empty((6, n)))


def _tip(model, n, q, work):
    """The tip's 3 x 4 transform at ``q`` into ``work.T``; each joint's axis and origin (base
    frame) into ``work.axes`` and ``work.origins``."""
    F, G, axes, origins, T = work.F, work.G, work.axes, work.origins, work.T
    for r in range(3):
        for c in range(4):
            F[r, c] = 1.0 if r == c else 0.0
    for i in range(n):
        for r in range(3):
            for c in range(4):
                G[r, c] = F[r, 0] * model[i, c] + F[r, 1] * model[i, 4 + c] + \
                    F[r, 2] * model[i, 8 + c]
            G[r, 3] += F[r, 3]
            axes[i, r] = G[r, 2]
            origins[i, r] = G[r, 3]
        if model[i, _PRISMATIC] != 0.0:
            for r in range(3):
                F[r, 0] = G[r, 0]
                F[r, 1] = G[r, 1]
                F[r, 2] = G[r, 2]
                F[r, 3] = G[r, 3] + G[r, 2] * q[i]
        else:
            cq = math.cos(q[i])
            sq = math.sin(q[i])
            for r in range(3):
                F[r, 0] = G[r, 0] * cq + G[r, 1] * sq
                F[r, 1] = G[r, 1] * cq - G[r, 0] * sq
                F[r, 2] = G[r, 2]
                F[r, 3] = G[r, 3]
    for r in range(3):
        for c in range(4):
            T[r, c] = F[r, 0] * model[n, c] + F[r, 1] * model[n, 4 + c] + F[r, 2] * model[n, 8 + c]
        T[r, 3] += F[r, 3]
    return T


def _pose_cost(model, n, target, w2, q, work):
    """The weighted 6D cost of ``q`` as ``residuals.cost_function`` computes it (the angle by
    acos), which ranks restart candidates in the Python descent."""
    T = _tip(model, n, q, work)
    c = 0.0
    for a in range(3):
        for b in range(3):
            c += target[3 + 3 * a + b] * T[a, b]
    angle = math.acos(max(-1.0, min(1.0, 0.5 * (c - 1.0))))
    return ((target[0] - T[0, 3]) ** 2 + (target[1] - T[1, 3]) ** 2 +
            (target[2] - T[2, 3]) ** 2 + w2 * angle * angle)


def _evaluate(model, n, target, w2, tol_p, tol_r, q, H, g, work):
    """The weighted 6D error of ``q`` and, above the tolerances, its normal equations.

    Returns ``(cost, position error, angle error, built)``; ``H`` (n x n, full) and ``g`` are
    filled when ``built`` (errors above ``tol_p`` or ``tol_r``). As ``pose_normal`` of
    :class:`~ik_node.model.fast_kinematics.SerialKinematics`.
    """
    T = _tip(model, n, q, work)
    axes, origins, E, J = work.axes, work.origins, work.E, work.J
    dx = target[0] - T[0, 3]
    dy = target[1] - T[1, 3]
    dz = target[2] - T[2, 3]
    # E = R_target R^T: its skew part and trace give the rotation vector.
    for a in range(3):
        for b in range(3):
            E[a, b] = (target[3 + 3 * a] * T[b, 0] + target[4 + 3 * a] * T[b, 1] +
                       target[5 + 3 * a] * T[b, 2])
    sx = 0.5 * (E[2, 1] - E[1, 2])
    sy = 0.5 * (E[0, 2] - E[2, 0])
    sz = 0.5 * (E[1, 0] - E[0, 1])
    c = 0.5 * (E[0, 0] + E[1, 1] + E[2, 2] - 1.0)
    sin_angle = math.sqrt(sx * sx + sy * sy + sz * sz)
    angle = math.atan2(sin_angle, c)
    if sin_angle > 1e-6:
        f = w2 * angle / sin_angle
        wx, wy, wz = sx * f, sy * f, sz * f
    elif c > 0.0:
        wx, wy, wz = w2 * sx, w2 * sy, w2 * sz
    else:  # half a turn: the axis from (E + I) / 2 = a a^T, signed by the skew part
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
        f = w2 * angle
        wx, wy, wz = ax * f, ay * f, az * f
    position_sq = dx * dx + dy * dy + dz * dz
    position_error = math.sqrt(position_sq)
    cost = position_sq + w2 * angle * angle
    if position_error <= tol_p and angle <= tol_r:
        return cost, position_error, angle, False
    px, py, pz = T[0, 3], T[1, 3], T[2, 3]
    for i in range(n):
        zx, zy, zz = axes[i, 0], axes[i, 1], axes[i, 2]
        if model[i, _PRISMATIC] != 0.0:
            J[0, i], J[1, i], J[2, i] = zx, zy, zz
            J[3, i] = J[4, i] = J[5, i] = 0.0
        else:
            ex = px - origins[i, 0]
            ey = py - origins[i, 1]
            ez = pz - origins[i, 2]
            J[0, i] = zy * ez - zz * ey
            J[1, i] = zz * ex - zx * ez
            J[2, i] = zx * ey - zy * ex
            J[3, i], J[4, i], J[5, i] = zx, zy, zz
    for a in range(n):
        for b in range(a + 1):
            h = (J[0, a] * J[0, b] + J[1, a] * J[1, b] + J[2, a] * J[2, b] +
                 w2 * (J[3, a] * J[3, b] + J[4, a] * J[4, b] + J[5, a] * J[5, b]))
            H[a, b] = h
            H[b, a] = h
        g[a] = (J[0, a] * dx + J[1, a] * dy + J[2, a] * dz + J[3, a] * wx + J[4, a] * wy +
                J[5, a] * wz)
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


def _trial(model, n, q, H, g, lam, max_step, q_new, L, x, H2, g2):
    """One damped step from ``q`` into ``q_new`` (as ``damped_trial_function`` of
    :mod:`ik_node.solvers.numerics.codegen`): solve, bounded joints at a limit whose step points
    outwards sit out (solved again without them), the step scaled to ``max_step`` per joint,
    wrapped or clipped into the limits. Returns -1 if the system is not positive definite,
    else the number of joints that sat out."""
    if not _damped_solve(H, g, lam, n, L, x):
        return -1
    blocked = 0
    for k in range(n):
        if model[k, _BOUNDED] != 0.0 and (
                (x[k] < 0.0 and q[k] <= model[k, _LOW]) or
                (x[k] > 0.0 and q[k] >= model[k, _HIGH])):
            blocked += 1
    if blocked:
        for a in range(n):
            g2[a] = g[a]
            for b in range(n):
                H2[a, b] = H[a, b]
        for k in range(n):
            if model[k, _BOUNDED] != 0.0 and (
                    (x[k] < 0.0 and q[k] <= model[k, _LOW]) or
                    (x[k] > 0.0 and q[k] >= model[k, _HIGH])):
                for b in range(n):
                    H2[k, b] = 0.0
                    H2[b, k] = 0.0
                g2[k] = 0.0
        if not _damped_solve(H2, g2, lam, n, L, x):
            return -1
    largest = 0.0
    for k in range(n):
        largest = max(largest, abs(x[k]))
    scale = max_step / largest if largest > max_step else 1.0
    two_pi = 2.0 * math.pi
    for k in range(n):
        v = q[k] + x[k] * scale
        lo, hi = model[k, _LOW], model[k, _HIGH]
        if v < lo:
            v = v + two_pi * math.ceil((lo - v) / two_pi) if model[k, _WRAPS] != 0.0 else lo
        elif v > hi:
            v = v - two_pi * math.ceil((v - hi) / two_pi) if model[k, _WRAPS] != 0.0 else hi
        q_new[k] = v
    return blocked


def _descend(model, settings, target, q, best_q, best_cost, lam, floor, iterations,
             last_blocked, stall_cost, stall_iteration, fresh, steps):
    """Up to ``steps`` iterations of one descent from ``q`` (updated in place, as ``best_q``
    when a configuration of lower cost than ``best_cost`` is found).

    The loop of ``descent.PythonDescent.descend``. At the start of a descent (``fresh``) the
    stall reference is set here. Returns ``(code, best_cost, lam, iterations, last_blocked,
    stall_cost, stall_iteration)``, code CONVERGED, STUCK, ITERATION_CAP or CHUNK_DONE (call
    again with the values returned to go on).
    """
    n = q.shape[0]
    w2, tol_p, tol_r = settings[_W2], settings[_TOL_P], settings[_TOL_R]
    H = np.empty((n, n))
    g = np.empty(n)
    Ht = np.empty((n, n))
    gt = np.empty(n)
    H2 = np.empty((n, n))
    g2 = np.empty(n)
    L = np.empty((n, n))
    x = np.empty(n)
    q_new = np.empty(n)
    work = _new_work(n)
    cost, position_error, angle_error, built = _evaluate(model, n, target, w2, tol_p, tol_r, q,
                                                         H, g, work)
    if fresh:
        if cost < best_cost:
            best_cost = cost
            best_q[:] = q
        stall_cost, stall_iteration = cost, iterations
    max_iterations = int(settings[_MAX_ITERATIONS])
    code = CHUNK_DONE
    taken = 0
    while True:
        if position_error <= tol_p and angle_error <= tol_r:
            code = CONVERGED
            break
        if iterations >= max_iterations:
            code = ITERATION_CAP
            break
        if taken >= steps:
            break
        iterations += 1
        taken += 1
        stuck = False
        blocked = _trial(model, n, q, H, g, lam, settings[_MAX_STEP], q_new, L, x, H2, g2)
        if blocked > 0:
            last_blocked = iterations
        accepted = False
        if blocked >= 0:
            t_cost, t_position, t_angle, t_built = _evaluate(model, n, target, w2, tol_p,
                                                             tol_r, q_new, Ht, gt, work)
            if t_cost < cost:
                accepted = True
                q[:] = q_new
                cost, position_error, angle_error = t_cost, t_position, t_angle
                if t_built:  # the trial's normal equations become the iterate's
                    H, Ht = Ht, H
                    g, gt = gt, g
                if cost < best_cost:
                    best_cost = cost
                    best_q[:] = q
                lam = max(lam * settings[_LAMBDA_DOWN], settings[_LAMBDA_MIN])
        if not accepted:
            lam *= settings[_LAMBDA_UP]
            stuck = lam > settings[_LAMBDA_MAX]
        window = (settings[_STALL_ITERATIONS_BLOCKED] if last_blocked > stall_iteration
                  else settings[_STALL_ITERATIONS])
        if iterations - stall_iteration >= window:
            stuck = stuck or cost - floor > settings[_STALL_FACTOR] * (stall_cost - floor)
            stall_cost, stall_iteration = cost, iterations
        if stuck:
            code = STUCK
            break
    return code, best_cost, lam, iterations, last_blocked, stall_cost, stall_iteration


def _lowest_cost(model, settings, target, candidates):
    """The index of the candidate configuration (a row) of lowest weighted 6D cost (the first
    of equals)."""
    n = candidates.shape[1]
    work = _new_work(n)
    best, best_cost = 0, math.inf
    for k in range(candidates.shape[0]):
        cost = _pose_cost(model, n, target, settings[_W2], candidates[k], work)
        if cost < best_cost:
            best, best_cost = k, cost
    return best


def _cost(model, settings, target, q):
    """The weighted 6D cost of ``q`` (:func:`_pose_cost`): the solver asks it of the seed to
    tell a stream's step, whose descents run in Python."""
    n = q.shape[0]
    return _pose_cost(model, n, target, settings[_W2], q, _new_work(n))


_KERNELS = {}


def _kernels():
    """``(descend, lowest_cost)`` compiled by numba (once per process; numba's cache on disk
    keeps the machine code between processes)."""
    if not _KERNELS:
        import numba
        jit = numba.njit(cache=True, nogil=True)
        # The helpers are compiled first: the functions calling them see the compiled ones.
        global _new_work, _tip, _pose_cost, _evaluate, _damped_solve, _trial
        _new_work = jit(_new_work)
        _tip = jit(_tip)
        _pose_cost = jit(_pose_cost)
        _evaluate = jit(_evaluate)
        _damped_solve = jit(_damped_solve)
        _trial = jit(_trial)
        _KERNELS['descend'] = jit(_descend)
        _KERNELS['lowest_cost'] = jit(_lowest_cost)
        _KERNELS['cost'] = jit(_cost)
    return _KERNELS['descend'], _KERNELS['lowest_cost']


class CompiledDescent:
    """The compiled 6D descent bound to one serial chain and one set of solver settings.

    A solve calls :meth:`start` with its target and runs its descents on the
    :class:`DescentRun` it returns.

    Args:
        joint_transforms: per joint the constant 3 x 4 transform of
            :class:`~ik_node.model.fast_kinematics.SerialKinematics` (joint axis along z).
        tip_transform: the tip's constant 3 x 4 transform.
        prismatic, wraps, bounded: per joint (see ``DampedJacobianSolver``).
        low, high: the joint limits [rad or m].
        weight, tol_p, tol_r, ...: the orientation weight [m/rad], the tolerances with their
            margin [m, rad], the damping and stall constants, the step cap and the iteration
            cap of the solver.
    """

    #: Iterations per kernel call between two checks of the budget.
    CHUNK = 16

    def __init__(self, joint_transforms: Sequence[np.ndarray], tip_transform: np.ndarray,
                 prismatic: Sequence[bool], wraps: Sequence[bool], bounded: Sequence[int],
                 low: Sequence[float], high: Sequence[float], weight: float, tol_p: float,
                 tol_r: float, lambda_min: float, lambda_max: float, lambda_down: float,
                 lambda_up: float, stall_iterations: int, stall_iterations_blocked: int,
                 stall_factor: float, max_step: float, max_iterations: int):
        n = len(joint_transforms)
        model = np.zeros((n + 1, _MODEL_COLUMNS))
        for i, C in enumerate(joint_transforms):
            model[i, :12] = np.asarray(C, dtype=float)[:3, :4].ravel()
            model[i, _LOW], model[i, _HIGH] = low[i], high[i]
            model[i, _PRISMATIC] = float(prismatic[i])
            model[i, _WRAPS] = float(wraps[i])
            model[i, _BOUNDED] = float(i in bounded)
        model[n, :12] = np.asarray(tip_transform, dtype=float)[:3, :4].ravel()
        self.model = model
        self.settings = np.array([weight * weight, tol_p, tol_r, lambda_min, lambda_max,
                                  lambda_down, lambda_up, stall_iterations,
                                  stall_iterations_blocked, stall_factor, max_step,
                                  max_iterations], dtype=float)
        self.n = n
        self.descend_kernel, self.lowest_cost_kernel = _kernels()
        self.cost_kernel = _KERNELS['cost']

    def warm_up(self) -> None:
        """Compile (or load from numba's cache) the kernel now, not in the first solve."""
        run = self.start([0.0, 0.0, 0.0], np.eye(3), [0.0] * self.n)
        run.descend([0.0] * self.n, 0.1, 0.0, 0, -1, None)
        run.lowest_cost([[0.0] * self.n] * 2)
        run.cost([0.0] * self.n)

    def start(self, p_target: Sequence[float], R_target: np.ndarray,
              q: Sequence[float]) -> 'DescentRun':
        """The descents of one solve toward a target (position [m], rotation matrix), with no
        best configuration yet (``q``, cost infinite)."""
        return DescentRun(self, p_target, R_target, q)


class DescentRun:
    """The compiled descents of one solve: its target, the last iterate :attr:`q` and the best
    configuration of all its descents :attr:`best_q` (arrays) with its cost :attr:`best_cost`.
    Its own arrays: solves on one solver from several threads do not share them."""

    __slots__ = ('kernel', 'target', 'q', 'best_q', 'best_cost')

    def __init__(self, kernel: CompiledDescent, p_target: Sequence[float], R_target: np.ndarray,
                 q: Sequence[float]):
        self.kernel = kernel
        target = self.target = np.empty(12)
        target[:3] = p_target
        target[3:] = R_target.ravel()
        self.q = np.empty(kernel.n)
        self.best_q = np.array(q, dtype=float)
        self.best_cost = math.inf

    def descend(self, q: Sequence[float], lam: float, floor: float, iterations: int,
                last_blocked: int, budget, stall_factor: Optional[float] = None
                ) -> Tuple[int, np.ndarray, int, int]:
        """One descent from ``q`` with initial damping ``lam`` and cost floor ``floor``
        (and, when given, another stall factor than the solver's for this descent);
        ``budget`` (or None) is asked before each chunk of iterations. Returns ``(code, last
        iterate, iterations, last_blocked)``: code CONVERGED, STUCK, ITERATION_CAP or TIMEOUT
        (the budget spent); the last iterate is :attr:`q` (reused by the next descent)."""
        kernel = self.kernel
        q_array = self.q
        q_array[:] = q
        settings = kernel.settings
        if stall_factor is not None:
            settings = settings.copy()
            settings[_STALL_FACTOR] = stall_factor
        best_cost = self.best_cost
        stall_cost, stall_iteration, fresh = 0.0, 0, True
        while True:
            if budget is not None and not budget.allows():
                code = TIMEOUT
                break
            code, best_cost, lam, iterations, last_blocked, stall_cost, stall_iteration = \
                kernel.descend_kernel(kernel.model, settings, self.target, q_array, self.best_q,
                                      best_cost, lam, floor, iterations, last_blocked,
                                      stall_cost, stall_iteration, fresh, kernel.CHUNK)
            fresh = False
            if code != CHUNK_DONE:
                break
        self.best_cost = best_cost
        return code, q_array, iterations, last_blocked

    def cost(self, q: Sequence[float]) -> float:
        """The weighted 6D cost of ``q`` to the target [m^2]."""
        kernel = self.kernel
        return float(kernel.cost_kernel(kernel.model, kernel.settings, self.target,
                                        np.asarray(q, dtype=float)))

    def lowest_cost(self, candidates: List[List[float]]) -> List[float]:
        """The candidate configuration of lowest weighted 6D cost to the target (the first of
        equals)."""
        kernel = self.kernel
        return candidates[kernel.lowest_cost_kernel(kernel.model, kernel.settings, self.target,
                                                    np.array(candidates, dtype=float))]
