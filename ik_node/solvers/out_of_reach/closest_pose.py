"""The closest pose to a position target the tip cannot reach: stationary points of the tip
distance within the joint limits, and the rule that decides when no restart can do better.

Why one file of this size: the Newton descent, the stretch sweep and the stopping rule share the
search's generated functions and its record of stationary points.

Out of reach, ``f(q) = |t - p(q)|^2`` has a positive minimum, often several local ones (a limb
folded the wrong way at a limit, a flipped wrist), and the Gauss-Newton model of a least-squares
solver misses the curvature that the residual itself contributes, so it crawls toward a stretched,
singular configuration instead of arriving. Here:

* :meth:`ClosestPose.descend` is Newton's method on ``f`` with its exact Hessian
  ``J^T J - S``, ``S_jk = w_j . (J_k x e)`` for ``j <= k`` (``J_k`` the linear, ``w_j`` the
  angular Jacobian column, ``e = t - p``: the second derivative of a serial chain's tip is
  ``d2p / dq_j dq_k = w_j x J_k``), Levenberg-Marquardt damped so a step is taken only when it
  lowers the error. It ends at a *stationary point*: the projected gradient ``J^T e`` vanishes,
  where a joint pressed against a limit whose gradient points outwards does not count (the
  Karush-Kuhn-Tucker condition of the box of limits), or the next Newton step promises less
  than ``NEWTON_DECREMENT_M`` (the answer is then that close to the stationary value).
* :meth:`ClosestPose.stretch` is one cyclic-coordinate sweep: each joint in turn takes the exact
  angle (within its limits) that brings the tip nearest the target. From the mid configuration it
  lays the chain out toward the target, a start whose descent ends at the closest pose for
  nearly every out-of-reach target of the benchmark robots; the tip-to-base sweep covers the
  rest behind a leg's limits.
* :meth:`ClosestPose.search` runs descents from a fixed sequence of starts and stops by the rule
  below.

**The restart rule.** A restart is spent only while the best stationary point found is not yet
*confirmed*: confirmed when two descents from different starts ended at it (errors within
``agreement``), one of the two from a start that covers the joint space. The covering starts
are the configurations of the chain's tip sample whose tips lie nearest the target
(:mod:`ik_node.solvers.out_of_reach.tip_sample`, when the solver has set :attr:`samples`), then
random configurations. The structured starts share a bias: near the base they fold the chain
against the same limits, mirror images of each other; on arms with lopsided limits (Jaco2,
Baxter) the seed's and the stretched mid configuration's descents can agree on a pose far worse
than the best; behind a limit the closest pose may be on its far side, which they never aim
at. The nearest sampled tips lie next to the closest pose wherever it is.

Without a tip sample a confirmation also waits until every *flip* queued so far has been
descended from: a flip (:meth:`ClosestPose._flips`) is a stationary point with the joints that a
limit stopped moved to the other ends of their ranges, the way round to the other side of the
target that random starts seldom take. The search also stops when the best error is within
``agreement`` of the proven lower bound (nothing can be closer; see
:mod:`ik_node.solvers.geometry.reach_bound`), when a descent reaches the target, and at the
time, iteration or restart limits (:mod:`ik_node.solvers.numerics.budget`). A confirmed point is the
closest pose found, not a proof: the solvers report it as ``not_reached`` unless the proven
bound exceeds the tolerance; a search stopped by a limit leaves its best point *best found*
(:mod:`ik_node.solvers.out_of_reach.outcome`). The held-out figures:
``benchmarks/results/closest_legs.md``.

**The measured reach** (:mod:`ik_node.solvers.out_of_reach.measured_reach`, measured once when
a solver is built): a target outside the range of the tip's distances from a centre on the first
joint's axis (or nearer that axis than the tip comes, or farther from the second joint's origin)
cannot come nearer than that gap, so a stationary point at the gap is the closest pose after one
descent (stop ``'reach'``).

The starts, in order: the caller's own configuration (continuity with the seed) when its tip
is at least as near the target as the next start's, the mid configuration stretched from the
base, the same stretched from the tip, the tip sample's nearest configurations (each differing
from the ones before by more than half a radian in some joint), then the best of a few random
configurations; the sampled and random ones stretched from the base (fewer descents before two
agree on the 7-joint arms). A seed farther than the stretched mid configuration (a
random seed, a jump of the target) is not descended from: its descent is the longest of a
search, and the other starts find the same closest poses on the benchmark robots.

A leg that fits the analytic leg geometry never gets here: its solvers take its closed-form
closest pose (:mod:`ik_node.solvers.hip_knee.exact_leg`).

Plain floats and the math module: the Jacobians come from the chain's generated kinematics;
once the compiled kernels are loaded, the descents, sweeps and nearest sample tips run in them
(:mod:`ik_node.solvers.out_of_reach.compiled_search`: the same steps, tens of times faster).
"""

from __future__ import annotations

import functools
import math
import random
from dataclasses import dataclass
from operator import mul
from typing import Callable, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from ik_node.solvers.numerics.budget import Budget
from ik_node.solvers.numerics.codegen import damped_solve_function, limit_functions
from ik_node.solvers.geometry.planar_core import clamp_on_circle
from ik_node.solvers.out_of_reach.compiled_search import REACHED, STATIONARY, CompiledSearch
from ik_node.solvers.out_of_reach.measured_reach import MeasuredReach
from ik_node.solvers.out_of_reach.tip_sample import CANDIDATES, MIN_SPACING, TipSample


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
#: A flip (see :meth:`ClosestPose._flips`) also moves a free joint whose range exceeds a half
#: turn when it ends within this fraction of its span from a limit.
NEAR_LIMIT = 0.05
#: A restart starts from the lowest-error of this many random configurations.
_RANDOM_CANDIDATES = 4
#: The Newton steps of a search over all its descents where the solver's own iteration cap
#: counts other iterations (fabrik's: its FABRIK passes); damped_jacobian's default cap.
SEARCH_MAX_ITERATIONS = 2000


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


class SearchLimits(NamedTuple):
    """How far :meth:`ClosestPose.search` may go and what it counts as one answer."""

    max_iterations: int       # Newton steps over all its descents
    max_restarts: int         # descents after the first
    tolerance: float          # [m] an error this small is the target reached
    agreement: float          # [m] errors this close count as the same minimum


@dataclass
class Search:
    """What :meth:`ClosestPose.search` found."""

    q: List[float]
    error: float              # [m]
    iterations: int
    descents: int
    confirmed: bool           # two descents from different starts agreed on the best
    proven: bool              # the best is within ``agreement`` of the proven lower bound
    stop: str                 # 'converged', 'confirmed', 'proven', 'reach', 'timeout',
    #                           'iterations', 'restarts': the solve's status and message for
    #                           each are in ik_node.solvers.out_of_reach.outcome
    pressed: Tuple[int, ...]


class ClosestPose:
    """Closest-pose search on one chain (see the module docstring).

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
        #: The chain's measured reach (:mod:`ik_node.solvers.out_of_reach.measured_reach`), set
        #: by the solver that owns this search; None: searches stop by the other rules only.
        self.reach: Optional[MeasuredReach] = None
        #: The chain's tip sample (:mod:`ik_node.solvers.out_of_reach.tip_sample`), set by the
        #: solver that owns this search; None: the structured and random starts only.
        self.samples: Optional[TipSample] = None
        #: The compiled descents and sweeps (:mod:`ik_node.solvers.out_of_reach.compiled_search`),
        #: set by the solver that owns this search; they serve once loaded, unless a history
        #: is recorded.
        self.kernel: Optional[CompiledSearch] = None

    def use_compiled(self, chain) -> None:
        """Set :attr:`kernel` to the compiled descents of ``chain`` (this search's chain, with
        generated serial kinematics) where numba may serve."""
        self.kernel = CompiledSearch.of(chain, self._low, self._high, self._wraps,
                                        self._bounded)

    def reach_gap(self, target: Sequence[float]) -> float:
        """:meth:`MeasuredReach.gap` of the target, -inf without a measured reach."""
        return -math.inf if self.reach is None else self.reach.gap(target)

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

    # ------------------------------------------------------------------------------- search
    def search(self, target: Sequence[float], q_own: Sequence[float], budget: Budget,
               limits: SearchLimits, bound: Optional[float],
               rng: Union[random.Random, int, None] = None,
               history: Optional[List[float]] = None) -> Search:
        """Descents from ``q_own`` and then from the restart starts, until the rule stops them
        (module docstring). ``bound``: a proven lower bound of the error [m], or None;
        ``limits``: iterations, restarts, the tolerance and the agreement of two minima;
        ``rng``: the random starts' generator, or the seed of one made when first needed
        (None: 0)."""
        max_iterations, max_restarts, tolerance, agreement = limits
        budget.mark()
        reach_gap = self.reach_gap(target)
        steps = self._steps(target, history)
        descend = steps.descend
        best: Optional[Descent] = None
        agreeing = iterations = descents = 0
        random_agrees = False
        stop = 'restarts'
        starts = self._starts(target, q_own, rng, steps)
        flips: List[List[float]] = []  # stationary points with joints moved to their other ends
        flipped: set = set()           # the flips queued so far: ((joint, end), ...)
        while True:
            if flips:
                make_start, is_random, is_own = flips.pop().copy, False, False
            else:
                make_start, is_random, is_own = next(starts)
            if descents > max_restarts:
                break
            if iterations >= max_iterations:
                stop = 'iterations'
                break
            if descents and not budget.allows():
                stop = 'timeout'
                break
            q_start = make_start()
            if history is not None and not is_own:  # another start, as an iteration's
                px, py, pz = self._position(q_start)
                history.append(math.sqrt((target[0] - px) ** 2 + (target[1] - py) ** 2 +
                                         (target[2] - pz) ** 2))
            d = descend(target, q_start, budget, max_iterations - iterations, tolerance,
                        history)
            iterations += d.iterations
            descents += 1
            if best is None or d.error < best.error - agreement or (
                    d.error <= tolerance < best.error):  # (a reached target is never "the same")
                best, agreeing, random_agrees = d, int(d.stationary), is_random
            elif d.stationary and d.error <= best.error + agreement:
                # The same minimum (or its mirror image): the first found is kept, so the
                # answer stays with the seed's configuration where it is as close.
                agreeing += 1
                random_agrees = random_agrees or is_random
            if d.stationary and self.samples is None:
                flips.extend(self._flips(d, flipped))
            if best.error <= tolerance:
                stop = 'converged'
                break
            if bound is not None and best.stationary and best.error <= bound + agreement:
                stop = 'proven'
                break
            if best.stationary and best.error <= reach_gap + agreement:
                stop = 'reach'  # as far out as the measured reach: no pose is nearer
                break
            if agreeing >= 2 and random_agrees and not flips:
                stop = 'confirmed'
                break
            if not d.stationary:
                stop = 'iterations' if iterations >= max_iterations else 'timeout'
                break
        if best is None:  # no iteration or restart left: the own configuration as it is
            px, py, pz = self._position(list(q_own))
            error = math.sqrt((target[0] - px) ** 2 + (target[1] - py) ** 2 +
                              (target[2] - pz) ** 2)
            return Search(list(q_own), error, 0, 0, False, False, stop, ())
        return Search(best.q, best.error, iterations, descents, stop == 'confirmed',
                      stop == 'proven', stop, best.pressed)

    def _flips(self, d: Descent, flipped: set) -> List[List[float]]:
        """Starts on the far side of the limits that stopped a descent: its stationary point with
        the joints pressed against a limit (and the free joints whose range exceeds a half turn
        ending within ``NEAR_LIMIT`` of their span from a limit) moved to the other ends of their
        ranges, all of them at once and each alone; only those not queued before, at most n per
        search. A limit blocks the way round to the other side of the target, where the closest
        pose may lie (Go1's thigh turning up over its back to 4.5 rad, ANYmal's hip abduction at
        its other limit); the structured starts never aim there and random ones seldom do."""
        low, high = self._low, self._high
        ends = []
        for k in self._bounded:
            span = high[k] - low[k]
            if k in d.pressed or (span > math.pi and
                                  min(d.q[k] - low[k], high[k] - d.q[k]) <= NEAR_LIMIT * span):
                mid = 0.5 * (low[k] + high[k])
                ends.append((k, low[k] if d.q[k] >= mid else high[k]))
        groups = [tuple(ends)] + ([(end,) for end in ends] if len(ends) > 1 else [])
        out = []
        for group in groups:
            if group in flipped or len(flipped) >= self.n:
                continue
            flipped.add(group)
            q = list(d.q)
            for k, value in group:
                q[k] = value
            out.append(q)
        out.reverse()  # popped from the end: all flipped first
        return out

    def _steps(self, target: Sequence[float], history: Optional[List[float]]) -> '_Steps':
        """The search's steps toward ``target``: in the compiled kernel once it is loaded
        (unless a ``history`` is recorded), else in Python."""
        kernel = self.kernel if history is None and self.kernel is not None and \
            self.kernel.ready() else None
        if kernel is None:
            return _Steps(self.descend, self.stretch, self._nearest_samples, self._distance)
        target_array = np.array(target, dtype=float)
        return _Steps(functools.partial(self._descend_compiled, kernel, target_array),
                      functools.partial(_sweep_compiled, kernel, target_array),
                      functools.partial(_nearest_compiled, kernel, target_array, self.samples),
                      functools.partial(_distance_compiled, kernel, target_array))

    def _starts(self, target, q_own, rng: Union[random.Random, int, None], steps: '_Steps'):
        """``(make_start, is_random, is_own)`` in order; a start after the second is computed
        only when needed. A start from the tip sample counts as random (it covers the joint
        space)."""
        sweep, distance = steps.sweep, steps.distance
        stretched = sweep(target, self._mid, True)
        if distance(target, q_own) <= distance(target, stretched):
            yield (lambda: list(q_own)), False, True  # near the answer: continuity
        yield (lambda: stretched), False, False
        yield (lambda: sweep(target, self._mid, False)), False, False
        if self.samples is not None:
            for q in steps.nearest(target):
                yield (lambda q=q: sweep(target, q, True)), True, False
        if not isinstance(rng, random.Random):
            rng = random.Random(rng or 0)
        while True:
            yield (lambda: sweep(target, self._random_start(target, rng), True)), True, False

    def _nearest_samples(self, target):
        return self.samples.starts(target)

    def _descend_compiled(self, kernel: CompiledSearch, target_array: np.ndarray,
                          target: Sequence[float], q: Sequence[float], budget: Budget,
                          max_iterations: int, tolerance: float, history: None = None
                          ) -> Descent:
        """:meth:`descend` in the compiled kernel (the same steps, to round-off);
        ``target_array``: ``target`` as an array."""
        q_end, error, iterations, end, minimum, pressed = kernel.descend(
            target_array, q, budget, max_iterations, tolerance, self._gradient_scale)
        stationary = end in (REACHED, STATIONARY)
        return Descent(q_end, error, iterations, stationary, pressed, stationary and minimum)

    def _distance(self, target, q) -> float:
        px, py, pz = self._position(q)
        return math.sqrt((target[0] - px) ** 2 + (target[1] - py) ** 2 + (target[2] - pz) ** 2)

    def _random_start(self, target, rng: random.Random) -> List[float]:
        best, best_cost = None, math.inf
        tx, ty, tz = target
        for _ in range(_RANDOM_CANDIDATES):
            q = [lo + span * rng.random() for lo, span in self._random_spans]
            px, py, pz = self._position(q)
            cost = (tx - px) ** 2 + (ty - py) ** 2 + (tz - pz) ** 2
            if cost < best_cost:
                best, best_cost = q, cost
        return best


class _Steps(NamedTuple):
    """The steps of one search: ``descend`` as :meth:`ClosestPose.descend`, ``sweep(target, q,
    from_base)`` as :meth:`ClosestPose.stretch`, ``nearest(target)`` the tip sample's starts,
    ``distance(target, q)`` the tip's distance [m]."""

    descend: Callable
    sweep: Callable
    nearest: Callable
    distance: Callable


def _distance_compiled(kernel: CompiledSearch, target_array, target, q) -> float:
    """The tip's distance [m] from the target in the compiled kernel."""
    return kernel.distance(target_array, q)


def _sweep_compiled(kernel: CompiledSearch, target_array, target, q, from_base: bool
                    ) -> List[float]:
    """:meth:`ClosestPose.stretch` in the compiled kernel."""
    return kernel.stretch(target_array, q, from_base)


def _nearest_compiled(kernel: CompiledSearch, target_array, samples: TipSample, target
                      ) -> List[List[float]]:
    """:meth:`TipSample.starts` in the compiled kernel."""
    return kernel.nearest(samples, target_array, CANDIDATES, MIN_SPACING)
