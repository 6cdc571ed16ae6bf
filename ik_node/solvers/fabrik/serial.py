"""FABRIK on a serial chain of revolute joints with one target, in plain floats.

The same iteration as :meth:`ik_node.solvers.fabrik.tree.FabrikTree.run` for the one-tip case
(the one loop, :func:`~ik_node.solvers.fabrik.iteration.iterate`, over :class:`SerialPasses`),
without restarts (the caller's closest-pose search restarts instead): forward pass, backward
pass with the 'bones' or 'points' fit of each joint (see :mod:`ik_node.solvers.fabrik.tree`), the
stretching first pass toward a target out of reach, the extrapolation and the damped
least-squares polish. For 3-7 joints numpy's per-call overhead dominates arrays this small: in
tuples of floats an iteration takes 6-7 times less time (``python -m
benchmarks.solvers.fabrik_paths``, ``benchmarks/results/fabrik_passes.md``).
The results agree with :class:`FabrikTree` to round-off (tested).

Rotations are row-major 9-tuples, vectors 3-tuples
(:mod:`~ik_node.kernels.small_matrix`). The nodes are placed by the kernel library's FABRIK
forward kinematics in plain Python (:data:`ik_node.kernels.fk.plain`, on each joint's row as a
tuple of floats): the compiled passes run the same functions, so both give the same bits.
"""

from __future__ import annotations

import math
import time
from typing import List, Optional, Sequence, Tuple

import numpy as np

from ik_node.solvers.fabrik.iteration import (EPS_M, POLISH_DAMPING, POLISH_DAMPING_MIN,
                                              SLOW_STEP_RATIO2, SLOW_STEPS, TIP_FIT_WEIGHT,
                                              FabrikProblem, FabrikRun, FabrikSettings, Passes,
                                              angle_in_limits, iterate)
from ik_node.solvers.numerics.budget import StepPace
from ik_node.solvers.numerics.null_space import STREAM_ERROR_M, centring_terms, limit_pull
from ik_node.kernels import fk
from ik_node.kernels.small_matrix import Mat, Vec, damped_step, mat_vec, vec_from_array, vec_mat

_base_frame, _zero_frame, _turned, _point_in = (
    fk.plain.base_frame, fk.plain.zero_frame, fk.plain.turned, fk.plain.point_in)

# The null-space projector of the polish's pull, mu (A A^T + mu I)^-1 damped by this share of
# trace(A A^T) / 3: exact on the null space, about mu / sigma^2 on the row space.
NULL_SPACE_DAMPING = 1e-9


class SerialFabrik:
    """FABRIK of a serial, revolute chain toward one target (geometry from a FabrikTree)."""

    def __init__(self, tree):
        n = tree.n
        self.n = n
        self.lower, self.upper = list(tree.lower), list(tree.upper)
        #: Each joint's FABRIK model row (:func:`~ik_node.kernels.fk.fabrik_row`), the tip's
        #: offset from the last joint [m].
        self.rows = list(tree.rows)
        self.t_tip = tree.tip_offsets[0]
        self.axes = [vec_from_array(tree.axes[i]) for i in range(n)]
        # How each joint fits its angle (as TreePlan decides for one targeted tip of weight 1):
        # ('bones', w_perp, w_cross) or ('points', nodes); fallback: every node below.
        self.align: List[tuple] = []
        for i in range(n):
            child = i + 1
            informative = tree.informative[i][0]
            if informative and tree.planar_below[i]:
                self.align.append(('bones', vec_from_array(tree.r_perp[i][0]),
                                   vec_from_array(tree.r_cross[i][0])))
            else:
                nodes = sorted({child, n} if informative else {n})
                self.align.append(('points', nodes))
        self.fallback = [list(range(i + 1, n + 1)) for i in range(n)]
        self.fit_weight = [1.0] * n + [TIP_FIT_WEIGHT]
        self.centring = centring_terms(self.lower, self.upper, range(n))

    # ---------------------------------------------------------------------------- geometry
    def rebuild(self, q: Sequence[float]) -> Tuple[List[Vec], List[Mat]]:
        """Node positions (joints, then the tip) and joint rotations: FK of ``q``."""
        rows = self.rows
        R0, xi = _base_frame(rows[0])
        Ri = _turned(rows[0], R0, q[0])
        x: List[Vec] = [xi]
        R: List[Mat] = [Ri]
        for i in range(1, self.n):
            R0, xi = _zero_frame(rows[i], Ri, xi)
            Ri = _turned(rows[i], R0, q[i])
            x.append(xi)
            R.append(Ri)
        x.append(_point_in(Ri, xi, self.t_tip))
        return x, R

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
            if norm < EPS_M:  # the point is on the joint: keep the old bone direction
                cx, cy, cz = x[u + 1]
                dx, dy, dz = x[u][0] - cx, x[u][1] - cy, x[u][2] - cz
                norm = max(length, EPS_M)
            f = length / max(norm, EPS_M)
            P[u] = (px + dx * f, py + dy * f, pz + dz * f)
        return P

    def backward(self, q: List[float], x: List[Vec], R: List[Mat], P: List[Vec]) -> None:
        """Re-anchor from the base: fit each joint's angle, clamp it, rebuild (in place)."""
        rows = self.rows
        for i in range(self.n):
            R0, xi = _zero_frame(rows[i], R[i - 1], x[i - 1]) if i else _base_frame(rows[0])
            align = self.align[i]
            if align[0] == 'bones':
                _, w_perp, w_cross = align
                bx, by, bz = vec_mat((P[i + 1][0] - xi[0], P[i + 1][1] - xi[1],
                                  P[i + 1][2] - xi[2]), R0)
                s = w_cross[0] * bx + w_cross[1] * by + w_cross[2] * bz
                c = w_perp[0] * bx + w_perp[1] * by + w_perp[2] * bz
                fitted = s * s + c * c > EPS_M * EPS_M
                if fitted:
                    q[i] = angle_in_limits(math.atan2(s, c), q[i], self.lower[i],
                                            self.upper[i])
            else:
                fitted = self._fit_points(align[1], i, R0, xi, q, x, R, P)
            if not fitted:
                self._fit_points(self.fallback[i], i, R0, xi, q, x, R, P)
            x[i], R[i] = xi, _turned(rows[i], R0, q[i])
        x[self.n] = _point_in(R[-1], x[self.n - 1], self.t_tip)

    def _fit_points(self, nodes, i, R0, xi, q, x, R, P) -> bool:
        """Joint ``i``'s angle moving ``nodes`` (rigidly, at their old ``x``) onto ``P``;
        False when they are all on the axis. See FabrikTree._fit_points."""
        Ri, x_i = R[i], x[i]
        m = [0.0] * 9
        for v in nodes:
            w = self.fit_weight[v]
            rx, ry, rz = vec_mat((x[v][0] - x_i[0], x[v][1] - x_i[1], x[v][2] - x_i[2]), Ri)
            bx, by, bz = vec_mat((P[v][0] - xi[0], P[v][1] - xi[1], P[v][2] - xi[2]), R0)
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
        if s * s + c * c <= EPS_M * EPS_M:
            return False
        q[i] = angle_in_limits(math.atan2(s, c), q[i], self.lower[i], self.upper[i])
        return True

    def stretch(self, q, x, R, L, target: Vec) -> None:
        """Backward pass with the chain laid straight from its first joint to ``target``."""
        n = self.n
        ox, oy, oz = x[0]
        dx, dy, dz = target[0] - ox, target[1] - oy, target[2] - oz
        norm = max(math.sqrt(dx * dx + dy * dy + dz * dz), EPS_M)
        dx, dy, dz = dx / norm, dy / norm, dz / norm
        P: List[Vec] = []
        reach = 0.0
        for v in range(n + 1):
            if v:
                reach += L[v]
            P.append((ox + reach * dx, oy + reach * dy, oz + reach * dz))
        self.backward(q, x, R, P)

    # --------------------------------------------------------------------------------- run
    def run(self, problem: FabrikProblem, settings: FabrikSettings) -> FabrikRun:
        """Iterate FABRIK toward the one target of ``problem`` (its ``restarts`` unused: the
        caller's closest-pose search restarts instead; pass ``stop_when_stuck``), as
        :meth:`FabrikTree.run <ik_node.solvers.fabrik.tree.FabrikTree.run>` does, in floats."""
        return iterate(SerialPasses(self, problem, settings), problem, settings)


def _distance(a: Vec, b: Vec) -> float:
    """``|a - b|`` [m], summed as the compiled passes sum it (:mod:`.compiled`)."""
    dx, dy, dz = a[0] - b[0], a[1] - b[1], a[2] - b[2]
    return math.sqrt(dx * dx + dy * dy + dz * dz)


class SerialPasses(Passes):
    """The state of one run of :class:`SerialFabrik` (``fabrik``) toward the problem's one
    target: ``q``, node positions ``x`` and joint rotations ``R`` (always FK of ``q``), bone
    lengths ``L``; and the pull of the first polish step (see :meth:`polish`)."""

    def __init__(self, fabrik: SerialFabrik, problem: FabrikProblem, settings: FabrikSettings):
        self.fabrik = fabrik
        n = fabrik.n
        target = problem.targets[0]
        self.target = (float(target[0]), float(target[1]), float(target[2]))
        self.tolerance = settings.tolerance
        self.q = [float(v) for v in problem.q_seed]
        self.x, self.R = fabrik.rebuild(self.q)
        self.L = [0.0] + [_distance(self.x[v], self.x[v - 1]) for v in range(1, n + 1)]
        err = self._error_of(self.x)
        #: [rad/m x m] the first polish step's pull away from the limits: the gain times the
        #: seed's error when the seed is within ``STREAM_ERROR_M`` of the target (a stream).
        self.pull = settings.null_space_gain * err if err <= STREAM_ERROR_M else 0.0

    def _error_of(self, x: List[Vec]) -> float:
        return _distance(x[self.fabrik.n], self.target)

    # ------------------------------------------------------------------- what iterate reads
    def measure(self) -> Tuple[float, float]:
        err = self._error_of(self.x)
        return err, err

    def largest(self, err: float) -> float:
        return err

    def reached(self, err: float, tolerance: float) -> bool:
        return err <= tolerance

    def copy_q(self) -> List[float]:
        return list(self.q)

    def step(self, stretch: bool) -> None:
        fabrik = self.fabrik
        if stretch:
            fabrik.stretch(self.q, self.x, self.R, self.L, self.target)
        else:
            fabrik.backward(self.q, self.x, self.R, fabrik.forward(self.x, self.L, self.target))

    def extrapolate(self, q_before: List[float], factor: float, obj: float
                    ) -> Optional[Tuple[float, float]]:
        fabrik, q = self.fabrik, self.q
        lower, upper = fabrik.lower, fabrik.upper
        q_try = [min(max(q[k] + factor * (q[k] - q_before[k]), lower[k]), upper[k])
                 for k in range(fabrik.n)]
        x_try, R_try = fabrik.rebuild(q_try)
        err_try = self._error_of(x_try)
        if err_try < obj:
            self.q, self.x, self.R = q_try, x_try, R_try
            return err_try, err_try
        return None

    def run_of(self, best_q, best_err, iterations, converged, stalled, history, timed_out
               ) -> FabrikRun:
        return FabrikRun(np.array(best_q), np.array([best_err]), iterations, converged,
                         stalled, history, timed_out)

    # ------------------------------------------------------------------------------ polish
    def polish(self, steps: int, history: Optional[List[float]] = None,
               deadline: float = math.inf) -> int:
        """Up to ``steps`` damped least-squares steps on the tip's position Jacobian (as
        :meth:`TreePasses.polish <ik_node.solvers.fabrik.tree_passes.TreePasses.polish>`);
        the number taken.

        The first call with ``pull`` > 0 [rad/m x m] also moves along the self-motion away
        from the joint limits, by :func:`~ik_node.solvers.numerics.null_space.limit_pull` with
        this scale projected on the null space of the free joints' Jacobian
        (``d - J+ J d``); kept, as every step, only if it lowers the error.
        """
        fabrik, q, x, R, pull = self.fabrik, self.q, self.x, self.R, self.pull
        n, lower, upper, tolerance = fabrik.n, fabrik.lower, fabrik.upper, self.tolerance
        tx, ty, tz = self.target
        ex, ey, ez = tx - x[n][0], ty - x[n][1], tz - x[n][2]
        obj = ex * ex + ey * ey + ez * ez
        damping, taken, pace, slow = POLISH_DAMPING, 0, StepPace(), 0
        while taken < steps:
            started = time.perf_counter()
            if started + pace.expected > deadline:
                break
            taken += 1
            tip = x[n]
            cols = []
            for i in range(n):
                ax, ay, az = mat_vec(R[i], fabrik.axes[i])
                rx, ry, rz = tip[0] - x[i][0], tip[1] - x[i][1], tip[2] - x[i][2]
                cols.append((ay * rz - az * ry, az * rx - ax * rz, ax * ry - ay * rx))
            free = [True] * n
            dq = [0.0] * n
            for _ in range(3):  # freeze joints the step pushes past a limit
                dq = damped_step(cols, free, (ex, ey, ez), damping)
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
                d = limit_pull(q, fabrik.centring, pull)
                d = [v if free[k] else 0.0 for k, v in enumerate(d)]
                Jd = tuple(sum(cols[k][r] * d[k] for k in range(n)) for r in range(3))
                trace = sum(c[0] * c[0] + c[1] * c[1] + c[2] * c[2] for c in cols)
                try:
                    r = damped_step(cols, free, Jd, NULL_SPACE_DAMPING * max(trace / 3, 1e-12))
                    dq = [a + b - c for a, b, c in zip(dq, d, r, strict=True)]
                except (ValueError, ZeroDivisionError):  # not positive definite: no pull
                    pass
            pull = 0.0
            q_try = [min(max(q[k] + dq[k], lower[k]), upper[k]) for k in range(n)]
            x_try, R_try = fabrik.rebuild(q_try)
            dx, dy, dz = tx - x_try[n][0], ty - x_try[n][1], tz - x_try[n][2]
            obj_try = dx * dx + dy * dy + dz * dz
            if obj_try < obj:
                slow = slow + 1 if obj_try > SLOW_STEP_RATIO2 * obj else 0
                q[:] = q_try
                x, R = x_try, R_try
                ex, ey, ez, obj = dx, dy, dz, obj_try
                damping = max(damping * 0.1, POLISH_DAMPING_MIN)
            else:
                slow += 1
                damping *= 10.0
            error = math.sqrt(obj)
            if history is not None:
                history.append(error)
            pace.add(time.perf_counter() - started)
            if error <= tolerance or slow >= SLOW_STEPS:
                break
        self.x, self.R, self.pull = x, R, 0.0
        return taken
