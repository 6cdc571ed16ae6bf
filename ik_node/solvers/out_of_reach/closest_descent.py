"""The descents of the closest-pose search: stationary points of the tip distance within the
joint limits, and the sweep that lays a chain out toward a target.

Out of reach, ``f(q) = |t - p(q)|^2`` has a positive minimum, often several local ones (a limb
folded the wrong way at a limit, a flipped wrist), and the Gauss-Newton model of a least-squares
solver misses the curvature that the residual itself contributes, so it crawls toward a stretched,
singular configuration instead of arriving. Here:

* :meth:`PoseDescent.descend` is Newton's method on ``f`` with its exact Hessian
  ``J^T J - S``, ``S_jk = w_j . (J_k x e)`` for ``j <= k`` (``J_k`` the linear, ``w_j`` the
  angular Jacobian column, ``e = t - p``: the second derivative of a serial chain's tip is
  ``d2p / dq_j dq_k = w_j x J_k``), Levenberg-Marquardt damped so a step is taken only when it
  lowers the error. It ends at a *stationary point*: the projected gradient ``J^T e`` vanishes,
  where a joint pressed against a limit whose gradient points outwards does not count (the
  Karush-Kuhn-Tucker condition of the box of limits), or the next Newton step promises less
  than ``NEWTON_DECREMENT_M`` (the answer is then that close to the stationary value).
* :meth:`PoseDescent.stretch` is one cyclic-coordinate sweep: each joint in turn takes the exact
  angle (within its limits) that brings the tip nearest the target. From the mid configuration it
  lays the chain out toward the target, a start whose descent ends at the closest pose for
  nearly every out-of-reach target of the benchmark robots; the tip-to-base sweep covers the
  rest behind a leg's limits.

Which starts to descend from, and when to stop restarting, is the search's rule
(:class:`~ik_node.solvers.out_of_reach.closest_pose.ClosestPose`, a :class:`PoseDescent` with
the search on top). Plain floats and the math module: the Jacobians come from the chain's
generated kinematics; the compiled kernels take the same steps
(:mod:`ik_node.solvers.out_of_reach.compiled_search`).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from operator import mul
from typing import Callable, List, Optional, Sequence, Tuple

from ik_node.solvers.numerics.budget import Budget
from ik_node.solvers.numerics.codegen import damped_solve_function, limit_functions
from ik_node.solvers.geometry.planar_core import clamp_on_circle

_TWO_PI = 2.0 * math.pi
# Levenberg-Marquardt damping of the Newton steps [m^2]: start, bounds and factors.
_LAMBDA_START = 1e-4
_LAMBDA_MIN = 1e-12
_LAMBDA_MAX = 1e6
_LAMBDA_DOWN = 0.2
_LAMBDA_UP = 10.0
#: Stationary when the projected gradient |J^T e| [m^2/rad] is below this fraction of
#: |e| times the chain's reach: no allowed joint motion turns the tip more than ~1e-7 rad toward
#: the target; with the Newton steps' quadratic convergence the error is then within round-off
#: of the stationary value.
GRADIENT_TOLERANCE = 1e-7
#: Also stationary when a step of the (barely damped) Newton model promises to lower the error
#: by less than this [m]: at quadratic convergence what is left is of the order of its square.
#: Unlike a looser gradient test this is safe in flat directions (a near-singular Hessian makes
#: the promised step long, not short). It saves the last one or two iterations of a descent.
NEWTON_DECREMENT_M = 1e-7
#: Damping [m^2] of the Cholesky test that tells a minimum from a saddle: flat directions (a
#: wrist turning about the line from its centre to the target) count as a minimum; a saddle
#: such as an arm stretched short of a target in front of it curves by about -|e| times a
#: bone length, 1e-3 m^2 or more.
_MINIMUM_DAMPING = 1e-6


@dataclass
class Descent:
    """Where one descent ended."""

    q: List[float]
    error: float            # [m] tip distance to the target
    iterations: int
    stationary: bool        # ended at a stationary point (else: out of time or iterations)
    pressed: Tuple[int, ...]  # joints at a limit with the gradient pointing outwards
    minimum: bool = False   # stationary with a positive definite Hessian on the free joints
    #                         (not a saddle such as a stretched arm short of an inner target)


class PoseDescent:
    """Newton descents and stretch sweeps of the tip's distance on one chain (module docstring).

    Args:
        pose_jacobian: ``q -> (p, R, J)``: tip position (3 floats), rotation (unused) and the
            6 x n geometric Jacobian as rows (linear rows first) of the chain's tip.
        position: ``q -> p``: the tip position only (for trial steps).
        newton: ``(target, q) -> (cost, H, g)`` as :meth:`newton_system` computes it (the
            generated :attr:`~ik_node.model.fast_kinematics.SerialKinematics.position_newton` of a
            serial chain), or None to use :meth:`newton_system`.
        low, high: joint limits [rad or m] (may be infinite).
        wraps: per joint, whether it is revolute with a range of a full turn or more (out-of-range
            values are wrapped by whole turns: the same pose).
        prismatic: per joint.
        reach: an upper bound of the tip's distance from the chain's first joint [m] (sets the
            scale of the gradient test).
    """

    def __init__(self, pose_jacobian: Callable, position: Callable,
                 newton: Optional[Callable], low: Sequence[float], high: Sequence[float],
                 wraps: Sequence[bool], prismatic: Sequence[bool], reach: float):
        self._pose_jacobian = pose_jacobian
        self._position = position
        self._newton = newton or self.newton_system
        self.n = n = len(low)
        self._low, self._high = list(low), list(high)
        self._wraps, self._prismatic = list(wraps), list(prismatic)
        bounded = [k for k in range(n) if not wraps[k] and math.isfinite(low[k]) and
                   math.isfinite(high[k])]
        self._bounded = bounded
        self._advance, self._pressed = limit_functions(self._low, self._high, self._wraps,
                                                       bounded)
        self._solve = damped_solve_function(n)
        self._mid = [0.5 * (lo + hi) if math.isfinite(lo) and math.isfinite(hi) else 0.0
                     for lo, hi in zip(low, high, strict=True)]
        self._random_spans = [(lo if math.isfinite(lo) else -math.pi,
                               (hi if math.isfinite(hi) else math.pi) -
                               (lo if math.isfinite(lo) else -math.pi))
                              for lo, hi in zip(low, high, strict=True)]
        self._gradient_scale = GRADIENT_TOLERANCE * max(reach, 1e-3)
        # Entries of row/column k of a flat lower triangle (a >= b at a (a + 1) / 2 + b).
        self._row_indices = [[max(k, j) * (max(k, j) + 1) // 2 + min(k, j) for j in range(n)]
                             for k in range(n)]

    def tip_position(self, q: Sequence[float]) -> Tuple[float, float, float]:
        """The tip position [m] at ``q``."""
        return self._position(q)

    def random_configuration(self, rng: random.Random) -> List[float]:
        """A configuration drawn uniformly within the limits (infinite ones as +-pi)."""
        return [lo + span * rng.random() for lo, span in self._random_spans]

    def ascend(self, centre: Sequence[float], q: Sequence[float], max_iterations: int,
               held: Sequence[int] = ()) -> float:
        """Damped Newton ascent of the tip's distance from ``centre`` from ``q`` within the
        limits (the descent's system with the signs turned), the joints ``held`` kept at their
        values; the distance [m] where it ends."""
        q = list(q)
        newton = self._newton
        cost, H, g = newton(centre, q)
        lam = _LAMBDA_START
        for _ in range(max_iterations):
            up = [-v for v in g]  # minus half the gradient of -cost: the ascent direction
            pressed = list(self._pressed(q, up)) + list(held)
            for k in pressed:
                up[k] = 0.0
            distance = math.sqrt(cost)
            if sum(map(mul, up, up)) <= (self._gradient_scale * distance) ** 2:
                break
            down = [-h for h in H]  # half the Hessian of -cost
            for k in pressed:
                for index in self._row_indices[k]:
                    down[index] = 0.0
            while True:
                try:
                    dq = self._solve(down, up, lam)
                except (ValueError, ZeroDivisionError):  # not negative definite: damp more
                    dq = None
                if dq is not None:
                    if lam <= _LAMBDA_START and sum(map(mul, up, dq)) <= \
                            2.0 * distance * NEWTON_DECREMENT_M:
                        return distance
                    q_new = self._advance(q, dq)
                    trial = newton(centre, q_new)
                    if trial[0] > cost:
                        q, (cost, H, g) = q_new, trial
                        lam = max(lam * _LAMBDA_DOWN, _LAMBDA_MIN)
                        break
                lam *= _LAMBDA_UP
                if lam > _LAMBDA_MAX:
                    return distance
        return math.sqrt(cost)

    # ------------------------------------------------------------------------------- Newton
    def newton_system(self, target: Sequence[float], q: Sequence[float]):
        """``(cost, H, g)`` at ``q``: ``cost = |e|^2`` [m^2], ``H = J^T J - S`` (flat lower
        triangle, see :func:`~ik_node.solvers.numerics.codegen.lower_index`) and ``g = J^T e``:
        half the Hessian and minus half the gradient of ``cost``."""
        (px, py, pz), _, J = self._pose_jacobian(q)
        ex, ey, ez = target[0] - px, target[1] - py, target[2] - pz
        jx, jy, jz, wx, wy, wz = J
        n = self.n
        # c_k = J_k x e, so that S_jk = w_j . c_k (j <= k).
        cx = [jy[k] * ez - jz[k] * ey for k in range(n)]
        cy = [jz[k] * ex - jx[k] * ez for k in range(n)]
        cz = [jx[k] * ey - jy[k] * ex for k in range(n)]
        H = []
        for a in range(n):
            xa, ya, za, ca, da, ea_ = jx[a], jy[a], jz[a], cx[a], cy[a], cz[a]
            for b in range(a + 1):
                H.append(xa * jx[b] + ya * jy[b] + za * jz[b] -
                         (wx[b] * ca + wy[b] * da + wz[b] * ea_))
        g = [jx[k] * ex + jy[k] * ey + jz[k] * ez for k in range(n)]
        return ex * ex + ey * ey + ez * ez, H, g

    def descend(self, target: Sequence[float], q: Sequence[float], budget: Budget,
                max_iterations: int, tolerance: float,
                history: Optional[List[float]] = None) -> Descent:
        """Damped Newton from ``q`` to a stationary point of the tip distance (or to within
        ``tolerance`` [m] of the target, or out of time or iterations). ``history`` gets the
        error [m] at the start and after every iteration."""
        q = list(q)
        newton = self._newton
        cost, H, g = newton(target, q)
        lam = _LAMBDA_START
        iterations = 0
        tol2 = tolerance * tolerance
        while True:
            pressed = self._pressed(q, g)
            gradient2 = sum(map(mul, g, g))  # (map: the same sums as a generator, faster)
            if pressed:
                gradient2 -= sum(g[k] * g[k] for k in pressed)
            error = math.sqrt(cost)
            if cost <= tol2:
                return Descent(q, error, iterations, True, tuple(pressed), True)
            if gradient2 <= (self._gradient_scale * error) ** 2:
                return self._stationary(q, error, iterations, pressed, H)
            if iterations >= max_iterations or not budget.allows():
                return Descent(q, error, iterations, False, tuple(pressed))
            iterations += 1
            if pressed:  # those joints sit the step out: identity rows, zero gradient
                H, g_step = list(H), list(g)
                for k in pressed:
                    for index in self._row_indices[k]:
                        H[index] = 0.0
                    g_step[k] = 0.0
            else:
                g_step = g
            while True:
                try:
                    dq = self._solve(H, g_step, lam)
                except (ValueError, ZeroDivisionError):  # not positive definite: damp more
                    dq = None
                if dq is not None:
                    if lam <= _LAMBDA_START and sum(map(mul, g_step, dq)) <= \
                            2.0 * error * NEWTON_DECREMENT_M:  # g.dq: the promised |e|^2 drop
                        return self._stationary(q, error, iterations, pressed, H)
                    q_new = self._advance(q, dq)
                    trial = newton(target, q_new)  # most trials are accepted: build it now
                    if trial[0] < cost:
                        q = q_new
                        cost, H, g = trial
                        lam = max(lam * _LAMBDA_DOWN, _LAMBDA_MIN)
                        break
                lam *= _LAMBDA_UP
                if lam > _LAMBDA_MAX:  # no step lowers the error: stationary to round-off
                    if history is not None:
                        history.append(math.sqrt(cost))
                    return self._stationary(q, error, iterations, pressed, H)
            if history is not None:
                history.append(math.sqrt(cost))

    def _stationary(self, q: List[float], error: float, iterations: int, pressed,
                    H: List[float]) -> Descent:
        """A stationary :class:`Descent`, with whether the (half) Hessian ``H`` is positive
        definite on the joints not pressed against a limit (Cholesky with ~round-off damping)."""
        if pressed:
            H = list(H)
            for k in pressed:
                for index in self._row_indices[k]:
                    H[index] = 0.0
        try:
            self._solve(H, [0.0] * self.n, _MINIMUM_DAMPING)
            minimum = True
        except (ValueError, ZeroDivisionError):
            minimum = False
        return Descent(q, error, iterations, True, tuple(pressed), minimum)

    # ------------------------------------------------------------------------------ stretch
    def stretch(self, target: Sequence[float], q: Sequence[float], from_base: bool = True
                ) -> List[float]:
        """One cyclic-coordinate sweep: each joint in turn (from the base, or from the tip)
        takes the value within its limits that brings the tip nearest ``target``."""
        q = list(q)
        tx, ty, tz = target
        for k in (range(self.n) if from_base else range(self.n - 1, -1, -1)):
            (px, py, pz), _, J = self._pose_jacobian(q)
            ex, ey, ez = tx - px, ty - py, tz - pz
            lx, ly, lz = J[0][k], J[1][k], J[2][k]
            if self._prismatic[k]:  # move along the axis by the error's component
                value = q[k] + ex * lx + ey * ly + ez * lz
                q[k] = min(max(value, self._low[k]), self._high[k])
                continue
            ax, ay, az = J[3][k], J[4][k], J[5][k]
            # u: the tip's offset from the axis (J_k x a); w: the target's offset from the axis.
            ux, uy, uz = ly * az - lz * ay, lz * ax - lx * az, lx * ay - ly * ax
            along = ex * ax + ey * ay + ez * az
            wx, wy, wz = ex - along * ax + ux, ey - along * ay + uy, ez - along * az + uz
            s = ax * (uy * wz - uz * wy) + ay * (uz * wx - ux * wz) + az * (ux * wy - uy * wx)
            c = ux * wx + uy * wy + uz * wz
            if s * s + c * c <= 1e-30:  # tip or target on the axis: nothing to turn toward
                continue
            q[k] = self._turned(k, q[k], math.atan2(s, c))
        return q

    def _turned(self, k: int, value: float, angle: float) -> float:
        lo, hi = self._low[k], self._high[k]
        turned = value + angle
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return turned
        if self._wraps[k]:
            if turned < lo:
                turned += _TWO_PI * math.ceil((lo - turned) / _TWO_PI)
            elif turned > hi:
                turned -= _TWO_PI * math.ceil((turned - hi) / _TWO_PI)
            return min(max(turned, lo), hi)
        return min(max(clamp_on_circle(turned, value, lo, hi), lo), hi)

    def _distance(self, target, q) -> float:
        px, py, pz = self._position(q)
        return math.sqrt((target[0] - px) ** 2 + (target[1] - py) ** 2 + (target[2] - pz) ** 2)
