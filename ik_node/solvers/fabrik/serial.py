"""FABRIK on a serial chain of revolute joints with one target, in plain floats.

Why one file of this size: the serial FABRIK run is the tree's passes unrolled in plain floats
for speed; it stays one piece so it can be read against tree.py line by line.

The same iteration as :meth:`ik_node.solvers.fabrik.tree.FabrikTree.run` for the one-tip case,
without restarts (the caller's closest-pose search restarts instead): forward pass, backward
pass with the 'bones' or 'points' fit of each joint (see :mod:`ik_node.solvers.fabrik.tree`), the
stretching first pass toward a target out of reach, the extrapolation and the damped
least-squares polish. For 3-7 joints numpy's per-call overhead dominates arrays this small: in
tuples of floats an iteration is several times faster.
The results agree with :class:`FabrikTree` to round-off (tested).

Rotations are row-major 9-tuples, vectors 3-tuples.
"""

from __future__ import annotations

import math
import time
from typing import List, Optional, Sequence, Tuple

from ik_node.solvers.numerics.budget import StepPace
from ik_node.solvers.numerics.null_space import STREAM_ERROR_M, centring_terms, limit_pull
from ik_node.solvers.fabrik.tree import (_EPS_M, _EXTRAPOLATE_MAX_FACTOR, _EXTRAPOLATE_MIN_RATIO,
                                         _POLISH_DAMPING, _POLISH_DAMPING_MIN, _POLISH_RATIO,
                                         _POLISH_STUCK_RATIO, _SLOW_STEP_RATIO2, _SLOW_STEPS,
                                         _TIP_FIT_WEIGHT, FabrikRun, _angle_in_limits)

# The null-space projector of the polish's pull, mu (A A^T + mu I)^-1 damped by this share of
# trace(A A^T) / 3: exact on the null space, about mu / sigma^2 on the row space.
_NULL_SPACE_DAMPING = 1e-9

Vec = Tuple[float, float, float]
Mat = Tuple[float, float, float, float, float, float, float, float, float]


def _mm(a: Mat, b: Mat) -> Mat:
    a0, a1, a2, a3, a4, a5, a6, a7, a8 = a
    b0, b1, b2, b3, b4, b5, b6, b7, b8 = b
    return (a0 * b0 + a1 * b3 + a2 * b6, a0 * b1 + a1 * b4 + a2 * b7, a0 * b2 + a1 * b5 + a2 * b8,
            a3 * b0 + a4 * b3 + a5 * b6, a3 * b1 + a4 * b4 + a5 * b7, a3 * b2 + a4 * b5 + a5 * b8,
            a6 * b0 + a7 * b3 + a8 * b6, a6 * b1 + a7 * b4 + a8 * b7, a6 * b2 + a7 * b5 + a8 * b8)


def _mv(a: Mat, v: Vec) -> Vec:
    x, y, z = v
    return (a[0] * x + a[1] * y + a[2] * z, a[3] * x + a[4] * y + a[5] * z,
            a[6] * x + a[7] * y + a[8] * z)


def _vm(v: Vec, a: Mat) -> Vec:
    """``v @ a`` (= a^T v): a world vector in the frame ``a``."""
    x, y, z = v
    return (x * a[0] + y * a[3] + z * a[6], x * a[1] + y * a[4] + z * a[7],
            x * a[2] + y * a[5] + z * a[8])


def _mat(M) -> Mat:
    return tuple(float(v) for v in M.reshape(9))


def _vec(v) -> Vec:
    return tuple(float(c) for c in v)


class SerialFabrik:
    """FABRIK of a serial, revolute chain toward one target (geometry from a FabrikTree)."""

    def __init__(self, tree):
        n = tree.n
        self.n = n
        self.lower, self.upper = list(tree.lower), list(tree.upper)
        self.R_tp = [_mat(tree.R_tp[i]) for i in range(n)]
        self.t_tp = [_vec(tree.t_tp[i]) for i in range(n)]
        self.t_tip = _vec(tree.t_tip[0])
        self.axes = [_vec(tree.axes[i]) for i in range(n)]
        self.aaT = [_mat(tree.aaT[i]) for i in range(n)]
        self.I_aaT = [_mat(tree.I_aaT[i]) for i in range(n)]
        self.K = [_mat(tree.K[i]) for i in range(n)]
        # How each joint fits its angle (as _Plan decides for one targeted tip of weight 1):
        # ('bones', w_perp, w_cross) or ('points', nodes); fallback: every node below.
        self.align: List[tuple] = []
        for i in range(n):
            child = i + 1
            informative = tree.informative[i][0]
            if informative and tree.planar_below[i]:
                self.align.append(('bones', _vec(tree.r_perp[i][0]), _vec(tree.r_cross[i][0])))
            else:
                nodes = sorted({child, n} if informative else {n})
                self.align.append(('points', nodes))
        self.fallback = [list(range(i + 1, n + 1)) for i in range(n)]
        self.fit_weight = [1.0] * n + [_TIP_FIT_WEIGHT]
        self.centring = centring_terms(self.lower, self.upper, range(n))

    # ---------------------------------------------------------------------------- geometry
    def _joint(self, i: int, q_i: float, R_parent: Optional[Mat], x_parent: Optional[Vec]
               ) -> Tuple[Mat, Vec, Mat]:
        """(R0, x_i, R_i): joint i's q = 0 rotation, its origin and its rotation at ``q_i``."""
        if R_parent is None:
            R0, xi = self.R_tp[i], self.t_tp[i]
        else:
            R0 = _mm(R_parent, self.R_tp[i])
            ox, oy, oz = _mv(R_parent, self.t_tp[i])
            xi = (x_parent[0] + ox, x_parent[1] + oy, x_parent[2] + oz)
        c, s = math.cos(q_i), math.sin(q_i)
        A, B, K = self.aaT[i], self.I_aaT[i], self.K[i]
        rot = tuple(A[k] + c * B[k] + s * K[k] for k in range(9))
        return R0, xi, _mm(R0, rot)

    def rebuild(self, q: Sequence[float]) -> Tuple[List[Vec], List[Mat]]:
        """Node positions (joints, then the tip) and joint rotations: FK of ``q``."""
        x: List[Vec] = []
        R: List[Mat] = []
        R_parent = x_parent = None
        for i in range(self.n):
            _, xi, Ri = self._joint(i, q[i], R_parent, x_parent)
            x.append(xi)
            R.append(Ri)
            R_parent, x_parent = Ri, xi
        x.append(self._tip(R[-1], x[-1]))
        return x, R

    def _tip(self, R_last: Mat, x_last: Vec) -> Vec:
        ox, oy, oz = _mv(R_last, self.t_tip)
        return (x_last[0] + ox, x_last[1] + oy, x_last[2] + oz)

    # ------------------------------------------------------------------------------ passes
    def forward(self, x: List[Vec], L: List[float], target: Vec) -> List[Vec]:
        """Points P: the tip on the target, every joint but the first pulled after it."""
        n = self.n
        P: List[Vec] = [x[0]] * (n + 1)
        P[n] = target
        for u in range(n - 1, 0, -1):
            px, py, pz = P[u + 1]
            dx, dy, dz = x[u][0] - px, x[u][1] - py, x[u][2] - pz
            norm = math.sqrt(dx * dx + dy * dy + dz * dz)
            length = L[u + 1]
            if norm < _EPS_M:  # the point is on the joint: keep the old bone direction
                cx, cy, cz = x[u + 1]
                dx, dy, dz = x[u][0] - cx, x[u][1] - cy, x[u][2] - cz
                norm = max(length, _EPS_M)
            f = length / max(norm, _EPS_M)
            P[u] = (px + dx * f, py + dy * f, pz + dz * f)
        return P

    def backward(self, q: List[float], x: List[Vec], R: List[Mat], P: List[Vec]) -> None:
        """Re-anchor from the base: fit each joint's angle, clamp it, rebuild (in place)."""
        R_parent = x_parent = None
        for i in range(self.n):
            if R_parent is None:
                R0, xi = self.R_tp[i], self.t_tp[i]
            else:
                R0 = _mm(R_parent, self.R_tp[i])
                ox, oy, oz = _mv(R_parent, self.t_tp[i])
                xi = (x_parent[0] + ox, x_parent[1] + oy, x_parent[2] + oz)
            align = self.align[i]
            if align[0] == 'bones':
                _, w_perp, w_cross = align
                bx, by, bz = _vm((P[i + 1][0] - xi[0], P[i + 1][1] - xi[1],
                                  P[i + 1][2] - xi[2]), R0)
                s = w_cross[0] * bx + w_cross[1] * by + w_cross[2] * bz
                c = w_perp[0] * bx + w_perp[1] * by + w_perp[2] * bz
                fitted = s * s + c * c > _EPS_M * _EPS_M
                if fitted:
                    q[i] = _angle_in_limits(math.atan2(s, c), q[i], self.lower[i],
                                            self.upper[i])
            else:
                fitted = self._fit_points(align[1], i, R0, xi, q, x, R, P)
            if not fitted:
                self._fit_points(self.fallback[i], i, R0, xi, q, x, R, P)
            c, s = math.cos(q[i]), math.sin(q[i])
            A, B, K = self.aaT[i], self.I_aaT[i], self.K[i]
            Ri = _mm(R0, tuple(A[k] + c * B[k] + s * K[k] for k in range(9)))
            x[i], R[i] = xi, Ri
            R_parent, x_parent = Ri, xi
        x[self.n] = self._tip(R[-1], x[self.n - 1])

    def _fit_points(self, nodes, i, R0, xi, q, x, R, P) -> bool:
        """Joint ``i``'s angle moving ``nodes`` (rigidly, at their old ``x``) onto ``P``;
        False when they are all on the axis. See FabrikTree._fit_points."""
        Ri, x_i = R[i], x[i]
        m = [0.0] * 9
        for v in nodes:
            w = self.fit_weight[v]
            rx, ry, rz = _vm((x[v][0] - x_i[0], x[v][1] - x_i[1], x[v][2] - x_i[2]), Ri)
            bx, by, bz = _vm((P[v][0] - xi[0], P[v][1] - xi[1], P[v][2] - xi[2]), R0)
            rx, ry, rz = rx * w, ry * w, rz * w
            m[0] += rx * bx
            m[1] += rx * by
            m[2] += rx * bz
            m[3] += ry * bx
            m[4] += ry * by
            m[5] += ry * bz
            m[6] += rz * bx
            m[7] += rz * by
            m[8] += rz * bz
        ax, ay, az = self.axes[i]
        s = ax * (m[5] - m[7]) + ay * (m[6] - m[2]) + az * (m[1] - m[3])
        aMa = (ax * (m[0] * ax + m[1] * ay + m[2] * az) + ay * (m[3] * ax + m[4] * ay + m[5] * az)
               + az * (m[6] * ax + m[7] * ay + m[8] * az))
        c = m[0] + m[4] + m[8] - aMa
        if s * s + c * c <= _EPS_M * _EPS_M:
            return False
        q[i] = _angle_in_limits(math.atan2(s, c), q[i], self.lower[i], self.upper[i])
        return True

    def stretch(self, q, x, R, L, target: Vec) -> None:
        """Backward pass with the chain laid straight from its first joint to ``target``."""
        n = self.n
        ox, oy, oz = x[0]
        dx, dy, dz = target[0] - ox, target[1] - oy, target[2] - oz
        norm = max(math.sqrt(dx * dx + dy * dy + dz * dz), _EPS_M)
        dx, dy, dz = dx / norm, dy / norm, dz / norm
        P: List[Vec] = []
        reach = 0.0
        for v in range(n + 1):
            if v:
                reach += L[v]
            P.append((ox + reach * dx, oy + reach * dy, oz + reach * dz))
        self.backward(q, x, R, P)

    # ------------------------------------------------------------------------------ polish
    def polish(self, q, x, R, target: Vec, tolerance: float, steps: int,
               history: Optional[List[float]], deadline: float,
               pull: float = 0.0) -> Tuple[int, list, list]:
        """Damped least-squares steps on the tip's position Jacobian (see FabrikTree.polish).
        Returns (steps taken, x, R).

        ``pull`` > 0 [rad/m x m]: the first step also moves along the self-motion away from the
        joint limits, by :func:`~ik_node.solvers.numerics.null_space.limit_pull` with this scale
        projected on the null space of the free joints' Jacobian (``d - J+ J d``); kept, as
        every step, only if it lowers the error.
        """
        n = self.n
        lower, upper = self.lower, self.upper
        tx, ty, tz = target
        ex, ey, ez = tx - x[n][0], ty - x[n][1], tz - x[n][2]
        obj = ex * ex + ey * ey + ez * ez
        damping, taken, pace, slow = _POLISH_DAMPING, 0, StepPace(), 0
        while taken < steps:
            started = time.perf_counter()
            if started + pace.expected > deadline:
                break
            taken += 1
            tip = x[n]
            cols = []
            for i in range(n):
                ax, ay, az = _mv(R[i], self.axes[i])
                rx, ry, rz = tip[0] - x[i][0], tip[1] - x[i][1], tip[2] - x[i][2]
                cols.append((ay * rz - az * ry, az * rx - ax * rz, ax * ry - ay * rx))
            free = [True] * n
            dq = [0.0] * n
            for _ in range(3):  # freeze joints the step pushes past a limit
                dq = _damped_step(cols, free, (ex, ey, ez), damping)
                pressed = [k for k in range(n) if free[k] and
                           ((q[k] <= lower[k] and dq[k] < 0.0) or
                            (q[k] >= upper[k] and dq[k] > 0.0))]
                if not pressed:
                    break
                for k in pressed:
                    free[k] = False
                if not any(free):
                    dq = [0.0] * n
                    break
            if pull > 0.0 and n > 3:
                d = limit_pull(q, self.centring, pull)
                d = [v if free[k] else 0.0 for k, v in enumerate(d)]
                Jd = tuple(sum(cols[k][r] * d[k] for k in range(n)) for r in range(3))
                trace = sum(c[0] * c[0] + c[1] * c[1] + c[2] * c[2] for c in cols)
                try:
                    r = _damped_step(cols, free, Jd, _NULL_SPACE_DAMPING * max(trace / 3, 1e-12))
                    dq = [a + b - c for a, b, c in zip(dq, d, r, strict=True)]
                except (ValueError, ZeroDivisionError):  # not positive definite: no pull
                    pass
            pull = 0.0
            q_try = [min(max(q[k] + dq[k], lower[k]), upper[k]) for k in range(n)]
            x_try, R_try = self.rebuild(q_try)
            dx, dy, dz = tx - x_try[n][0], ty - x_try[n][1], tz - x_try[n][2]
            obj_try = dx * dx + dy * dy + dz * dz
            if obj_try < obj:
                slow = slow + 1 if obj_try > _SLOW_STEP_RATIO2 * obj else 0
                q[:] = q_try
                x, R = x_try, R_try
                ex, ey, ez, obj = dx, dy, dz, obj_try
                damping = max(damping * 0.1, _POLISH_DAMPING_MIN)
            else:
                slow += 1
                damping *= 10.0
            error = math.sqrt(obj)
            if history is not None:
                history.append(error)
            pace.add(time.perf_counter() - started)
            if error <= tolerance or slow >= _SLOW_STEPS:
                break
        return taken, x, R

    # --------------------------------------------------------------------------------- run
    def run(self, q_seed, target: Sequence[float], tolerance: float, max_iterations: int,
            min_improvement: float, stall_iterations: int, extrapolate: bool = True,
            stretch: bool = False, record_history: bool = False, polish: int = 0,
            deadline: float = math.inf, null_space_gain: float = 0.0) -> FabrikRun:
        """FabrikTree.run for this chain's tip, without restarts and with ``stop_when_stuck``
        (see there for the arguments); returns the same :class:`FabrikRun`.

        ``null_space_gain`` [rad/m]: when the seed is within ``STREAM_ERROR_M`` of the target (a
        stream), the first polish step also pulls along the self-motion away from the joint
        limits, by this gain times the seed's error (see :meth:`polish`)."""
        import numpy as np  # the result's arrays only
        n = self.n
        target = (float(target[0]), float(target[1]), float(target[2]))
        tx, ty, tz = target
        q = [float(v) for v in q_seed]
        x, R = self.rebuild(q)
        L = [0.0] + [math.dist(x[v], x[v - 1]) for v in range(1, n + 1)]

        def error_of(x) -> float:
            return math.sqrt((x[n][0] - tx) ** 2 + (x[n][1] - ty) ** 2 + (x[n][2] - tz) ** 2)

        err = error_of(x)
        pull = null_space_gain * err if err <= STREAM_ERROR_M else 0.0
        history = [err] if record_history else None
        best_q, best_err = list(q), err
        best_obj = start_best = err
        last_progress_obj, since_progress, iterations, stalled = best_obj, 0, 0, False
        converged = err <= tolerance
        polish_after = 0
        timed_out, pace = False, StepPace()
        lower, upper = self.lower, self.upper
        while not converged and iterations < max_iterations:
            started = time.perf_counter()
            if started + pace.expected > deadline:
                timed_out = True
                break
            iterations += 1
            q_before, obj_before = list(q), err
            if stretch and iterations == 1:
                self.stretch(q, x, R, L, target)
            else:
                P = self.forward(x, L, target)
                self.backward(q, x, R, P)
            err = error_of(x)
            obj = err
            if extrapolate and 0.0 < obj < obj_before and iterations > 1:
                rho = obj / obj_before
                if rho > _EXTRAPOLATE_MIN_RATIO:
                    f = min(rho / (1.0 - rho), _EXTRAPOLATE_MAX_FACTOR)
                    q_try = [min(max(q[k] + f * (q[k] - q_before[k]), lower[k]), upper[k])
                             for k in range(n)]
                    x_try, R_try = self.rebuild(q_try)
                    err_try = error_of(x_try)
                    if err_try < obj:
                        q, x, R, err, obj = q_try, x_try, R_try, err_try, err_try
            if history is not None:
                history.append(err)
            pace.add(time.perf_counter() - started)
            if (polish > 0 and iterations >= polish_after and obj > 0.0 and
                    obj >= _POLISH_RATIO * obj_before and iterations < max_iterations):
                taken, x, R = self.polish(q, x, R, target, tolerance,
                                          min(polish, max_iterations - iterations), history,
                                          deadline, pull)
                pull = 0.0
                iterations += taken
                err = error_of(x)
                obj_polished = err
                stuck = obj_polished > _POLISH_STUCK_RATIO * obj
                if obj_polished > _POLISH_RATIO * obj:
                    polish_after = iterations + stall_iterations
                obj = obj_polished
                if stuck and min_improvement > 0.0 and not stretch:
                    if obj < best_obj:
                        best_q, best_err, best_obj = list(q), err, obj
                    start_best = min(start_best, obj)
                    last_progress_obj = start_best + min_improvement
                    since_progress = stall_iterations - 1
            if obj < best_obj:
                best_q, best_err, best_obj = list(q), err, obj
            converged = err <= tolerance
            start_best = min(start_best, obj)
            if start_best < last_progress_obj - min_improvement:
                last_progress_obj, since_progress = start_best, 0
                continue
            since_progress += 1
            if since_progress < stall_iterations or converged:
                continue
            stalled = True
            break
        if converged:
            best_q, best_err = list(q), err
        return FabrikRun(np.array(best_q), np.array([best_err]), iterations, converged,
                         stalled and not converged, history, timed_out and not converged)


def _damped_step(cols, free, e: Vec, damping: float) -> List[float]:
    """``(A^T A + damping I)^-1 A^T e`` over the free columns, as ``A^T (A A^T + damping I)^-1 e``
    (a 3 x 3 system; the same step)."""
    a00 = a01 = a02 = a11 = a12 = a22 = 0.0
    for k, (cx, cy, cz) in enumerate(cols):
        if free[k]:
            a00 += cx * cx
            a01 += cx * cy
            a02 += cx * cz
            a11 += cy * cy
            a12 += cy * cz
            a22 += cz * cz
    a00 += damping
    a11 += damping
    a22 += damping
    ex, ey, ez = e
    # Cholesky of the symmetric positive definite 3 x 3 matrix.
    l00 = math.sqrt(a00)
    l10, l20 = a01 / l00, a02 / l00
    l11 = math.sqrt(a11 - l10 * l10)
    l21 = (a12 - l20 * l10) / l11
    l22 = math.sqrt(a22 - l20 * l20 - l21 * l21)
    y0 = ex / l00
    y1 = (ey - l10 * y0) / l11
    y2 = (ez - l20 * y0 - l21 * y1) / l22
    z2 = y2 / l22
    z1 = (y1 - l21 * z2) / l11
    z0 = (y0 - l10 * z1 - l20 * z2) / l00
    return [(cx * z0 + cy * z1 + cz * z2) if free[k] else 0.0
            for k, (cx, cy, cz) in enumerate(cols)]
