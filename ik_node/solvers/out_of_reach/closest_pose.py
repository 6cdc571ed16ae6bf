"""The closest pose to a position target the tip cannot reach: descents from a sequence of
starts, and the rule that decides when no restart can do better.

Here :meth:`ClosestPose.search` runs descents
(:class:`~ik_node.solvers.out_of_reach.closest_descent.PoseDescent`) from a fixed sequence of
starts and stops by the rule below.

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

The descents and sweeps are :class:`~ik_node.solvers.out_of_reach.closest_descent.PoseDescent`'s
(Newton with the exact Hessian, the cyclic-coordinate stretch), in plain floats; once the
compiled kernels are loaded, the descents, sweeps and nearest sample tips run in them
(:mod:`ik_node.solvers.out_of_reach.compiled_search`: the same steps, tens of times faster).
"""

from __future__ import annotations

import functools
import math
import random
from dataclasses import dataclass
from typing import Callable, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from ik_node.solvers.numerics.budget import Budget
from ik_node.solvers.out_of_reach.closest_descent import Descent, PoseDescent
from ik_node.solvers.out_of_reach.compiled_search import REACHED, STATIONARY, CompiledSearch
from ik_node.solvers.out_of_reach.measured_reach import MeasuredReach
from ik_node.solvers.out_of_reach.tip_sample import CANDIDATES, MIN_SPACING, TipSample

#: A flip (see :meth:`ClosestPose._flips`) also moves a free joint whose range exceeds a half
#: turn when it ends within this fraction of its span from a limit.
NEAR_LIMIT = 0.05
#: A restart starts from the lowest-error of this many random configurations.
_RANDOM_CANDIDATES = 4
#: The Newton steps of a search over all its descents where the solver's own iteration cap
#: counts other iterations (fabrik's: its FABRIK passes); damped_jacobian's default cap.
SEARCH_MAX_ITERATIONS = 2000


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


class ClosestPose(PoseDescent):
    """Closest-pose search on one chain (see the module docstring): a
    :class:`~ik_node.solvers.out_of_reach.closest_descent.PoseDescent` (its arguments) with the
    search's starts and restart rule on top."""

    def __init__(self, pose_jacobian: Callable, position: Callable,
                 newton: Optional[Callable], low: Sequence[float], high: Sequence[float],
                 wraps: Sequence[bool], prismatic: Sequence[bool], reach: float):
        super().__init__(pose_jacobian, position, newton, low, high, wraps, prismatic, reach)
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
