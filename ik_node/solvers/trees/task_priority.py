"""Task priority for a tree whose targets cannot all be reached: the reachable tips first.

The tree solvers minimise a weighted sum of the tips' errors. When one tip's target is proven
out of reach, that sum pulls the shared joints (a waist, a torso) towards it, and a tip whose
target is reachable ends centimetres off it. After such a solve (some tip missed, and some tip is
proven out of reach while another is not), the solvers run this phase:

1. the *primary* task: the tips not proven out of reach, solved alone by the solver (from its
   answer, so the shared joints start leaning the right way);
2. the *secondary* task: the tips proven out of reach (:func:`split_by_proof`), brought closer
   within the null space of the primary task (:func:`prioritised_descent`): task-priority damped
   least squares, ``dq = J1+ e1 + N1 (J2 N1)+ (e2 - J2 J1+ e1)`` with ``N1 = I - J1+ J1``, each
   step projected back onto the primary targets by a few Newton steps of the primary task alone,
   clipped to the joint limits (joints at a limit whose step points outwards sit out the step)
   and kept only if the primary tips stay within tolerance and the secondary error falls.

The caller keeps the better of its own answer and this one by :func:`rank`: first the number of
primary tips reached, then the primary error (while some miss), then the secondary error.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass
from typing import Callable, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from ik_node.solvers.numerics.budget import Budget
from ik_node.solvers.numerics.codegen import MAX_STEP
from ik_node.solvers.numerics.dls_settings import LAMBDA_DOWN, LAMBDA_MAX, LAMBDA_MIN, \
    LAMBDA_UP, STALL_ITERATIONS
from ik_node.solvers.results import IkStatus, RawSolution
from ik_node.solvers.trees.several_tips import TipTarget
from ik_node.solvers.trees.residuals import TipPath, stacked_residual

#: Initial damping [m^2] of the secondary task's steps (adapted as in the damped least squares).
_DAMPING = 0.1
#: Damping [m^2] of the primary task's pseudo-inverse: directions that move the primary tips
#: by less than about its square root [m/rad] count as its null space.
_PRIMARY_DAMPING = 1e-6
#: Newton steps of the primary task alone after each step, to bring the primary tips back onto
#: their targets (the null space is curved: a step along it drifts off them to second order).
_CORRECTIONS = 3
#: The descent stops when the secondary error [m, weighted] has fallen by less than this in
#: ``STALL_ITERATIONS`` steps.
_MIN_GAIN_M = 1e-7
#: The phase starts from the solver's answer, then from random configurations, until two starts
#: agree on the least secondary error (within ``_AGREE_M`` [m], the primary tips reached) or
#: after this many starts.
_MOST_STARTS = 8
_AGREE_M = 1e-5


class PrioritySplit(NamedTuple):
    """The targets of a solve split by priority: ``primary`` (not proven out of reach) first."""

    primary: Tuple[TipTarget, ...]
    secondary: Tuple[TipTarget, ...]

    @property
    def ordered(self) -> Tuple[TipTarget, ...]:
        """The primary targets, then the secondary ones."""
        return self.primary + self.secondary


class PriorityRun(NamedTuple):
    """What :func:`prioritised_descent` returns: the active joints' values and the steps."""

    x: List[float]
    steps: int


def split_by_proof(targets: Sequence[TipTarget], bounds: Sequence[Optional[float]],
                   tolerance: float) -> Optional[PrioritySplit]:
    """The targets whose tip is proven out of reach (its bound in ``bounds`` [m], in the order of
    ``targets``, above ``tolerance`` [m]) as the secondary task, the others as the primary;
    None when either task would be empty (nothing to put first)."""
    primary, secondary = [], []
    for target, bound in zip(targets, bounds, strict=True):
        (secondary if bound is not None and bound > tolerance else primary).append(target)
    if not primary or not secondary:
        return None
    return PrioritySplit(tuple(primary), tuple(secondary))


@dataclass(frozen=True)
class PriorityTask:
    """How the phase measures a tree's answers.

    Attributes:
        paths, weights: each tip's :class:`~ik_node.solvers.trees.residuals.TipPath` and
            weight (by tip index).
        orientation_weight: [m/rad] of the stacked residual.
        low, high: the tree's joint limits.
        tol_p, tol_r: a tip is on its target within these [m], [rad] (with the solver's margin
            for round-off).
    """

    paths: Sequence[TipPath]
    weights: Sequence[float]
    orientation_weight: float
    low: Sequence[float]
    high: Sequence[float]
    tol_p: float
    tol_r: float


class Ranking(NamedTuple):
    """The order of answers of one split: ``primary_tips`` targets and ``primary_rows`` rows of
    the stacked error come first; a primary tip is on its target within ``tol_p`` [m],
    ``tol_r`` [rad]."""

    primary_tips: int
    primary_rows: int
    tol_p: float
    tol_r: float

    def rank(self, errors: Sequence[Tuple[float, float]], e: np.ndarray
             ) -> Tuple[int, float, float]:
        """The order of two answers (lower is better): minus the number of primary tips within
        tolerance, the primary task's cost while some miss (else 0), the secondary task's cost.

        ``errors`` and ``e`` as :func:`~ik_node.solvers.trees.residuals.stacked_residual`
        gives them for the targets of :attr:`PrioritySplit.ordered`.
        """
        primary_tips, primary_rows, tol_p, tol_r = self
        reached = sum(p <= tol_p and a <= tol_r for p, a in errors[:primary_tips])
        e1, e2 = e[:primary_rows], e[primary_rows:]
        return (-reached, 0.0 if reached == primary_tips else float(e1 @ e1), float(e2 @ e2))


def prioritised_descent(x: Sequence[float], evaluate: Callable, ranking: Ranking,
                        low: Sequence[float], high: Sequence[float], budget: Budget,
                        max_steps: int) -> PriorityRun:
    """The secondary task's error lowered in the null space of the primary task, from ``x``.

    Args:
        x: the active joints' values [rad or m] (within ``low`` .. ``high``).
        evaluate: ``evaluate(x) -> (cost, errors, e, J)`` of the targets of
            :attr:`PrioritySplit.ordered`
            (:func:`~ik_node.solvers.trees.residuals.stacked_residual`).
        ranking: which targets and rows are the primary task's (they come first), and its
            tolerances.
        low, high: the active joints' limits.
        budget: no step starts that would end after its deadline.
        max_steps: the most steps (each one evaluation of the step and up to ``_CORRECTIONS``
            more).

    Returns:
        The best configuration by :meth:`Ranking.rank` (the start when no step improves it)
        and the steps taken.
    """
    primary_tips, primary_rows, tol_p, tol_r = ranking
    rank = ranking.rank
    low_a, high_a = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    x_best = np.minimum(np.maximum(np.asarray(x, dtype=float), low_a), high_a)
    _, errors, e, J = evaluate(x_best.tolist())
    key = rank(errors, e)
    lam, steps = _DAMPING, 0
    stall_error, stall_step = math.sqrt(key[2]), 0
    while steps < max_steps and budget.allows():
        steps += 1
        dq = _priority_step(J, e, primary_rows, x_best, low_a, high_a, lam, key[0] != -primary_tips)
        x_try = np.minimum(np.maximum(x_best + dq, low_a), high_a)
        trial = evaluate(x_try.tolist())
        for _ in range(_CORRECTIONS):  # back onto the primary targets
            if all(p <= tol_p and a <= tol_r for p, a in trial[1][:primary_tips]):
                break
            dq = _primary_step(trial[3], trial[2], primary_rows, x_try, low_a, high_a)
            x_try = np.minimum(np.maximum(x_try + dq, low_a), high_a)
            trial = evaluate(x_try.tolist())
        key_try = rank(trial[1], trial[2])
        if key_try < key:
            x_best, key = x_try, key_try
            _, errors, e, J = trial
            lam = max(lam * LAMBDA_DOWN, LAMBDA_MIN)
        else:
            lam *= LAMBDA_UP
            if lam > LAMBDA_MAX:
                break
        if steps - stall_step >= STALL_ITERATIONS:
            error = math.sqrt(key[2])
            if key[0] == -primary_tips and stall_error - error < _MIN_GAIN_M:
                break
            stall_error, stall_step = error, steps
    return PriorityRun(x_best.tolist(), steps)


def _free_columns(x: np.ndarray, dq: np.ndarray, low: np.ndarray, high: np.ndarray,
                  free: np.ndarray) -> np.ndarray:
    """The joints of ``free`` that ``dq`` does not push past a limit they sit at."""
    return free & ~(((x <= low) & (dq < 0.0)) | ((x >= high) & (dq > 0.0)))


def _primary_pinv(J1: np.ndarray) -> np.ndarray:
    """The (slightly damped) pseudo-inverse of the primary task's Jacobian."""
    return J1.T @ np.linalg.inv(J1 @ J1.T + _PRIMARY_DAMPING * np.eye(J1.shape[0]))


def _limited(step: Callable[[np.ndarray], np.ndarray], x: np.ndarray, low: np.ndarray,
             high: np.ndarray) -> np.ndarray:
    """``step(free)`` (the step on the joints ``free``), recomputed without the joints it pushes
    past a limit they sit at (up to three times), scaled to at most ``MAX_STEP`` per joint."""
    free = np.ones(len(x), dtype=bool)
    dq = np.zeros(len(x))
    for _ in range(3):
        dq[:] = 0.0
        dq[free] = step(free)
        still = _free_columns(x, dq, low, high, free)
        if still.all() or np.array_equal(still, free):
            break
        free = still
        if not free.any():
            return np.zeros(len(x))
    largest = float(np.max(np.abs(dq))) if len(dq) else 0.0
    return dq * (MAX_STEP / largest) if largest > MAX_STEP else dq


def _priority_step(J: np.ndarray, e: np.ndarray, m1: int, x: np.ndarray, low: np.ndarray,
                   high: np.ndarray, lam: float, primary_missed: bool) -> np.ndarray:
    """``J1+ e1 + N1 (J2 N1)+ (e2 - J2 J1+ e1)``, ``(J2 N1)+`` damped by ``lam``; without
    the primary terms ``J1+ e1`` while the primary tips are within tolerance (near a singular
    primary Jacobian, its pseudo-inverse turns their error below tolerance into a large step
    that no damping of the secondary step shrinks)."""
    def step(free: np.ndarray) -> np.ndarray:
        J1, J2 = J[:m1, free], J[m1:, free]
        pinv = _primary_pinv(J1)
        dq1 = pinv @ e[:m1] if primary_missed else np.zeros(J1.shape[1])
        N1 = np.eye(J1.shape[1]) - pinv @ J1
        J2N = J2 @ N1
        rest = e[m1:] - J2 @ dq1
        return dq1 + N1 @ (J2N.T @ np.linalg.solve(J2N @ J2N.T + lam * np.eye(len(rest)),
                                                   rest))
    return _limited(step, x, low, high)


def _primary_step(J: np.ndarray, e: np.ndarray, m1: int, x: np.ndarray, low: np.ndarray,
                  high: np.ndarray) -> np.ndarray:
    """The least-norm Newton step ``J1+ e1`` of the primary task alone."""
    return _limited(lambda free: _primary_pinv(J[:m1, free]) @ e[:m1], x, low, high)


def solve_with_priority(split: PrioritySplit, raw: RawSolution, task: PriorityTask,
                        budget: Budget, max_iterations: int,
                        solve_primary: Callable[[Sequence[TipTarget], np.ndarray, int],
                                                RawSolution]) -> RawSolution:
    """The phase after a solve ``raw`` of every target that missed: the better of ``raw`` and
    the task-priority answer by :meth:`Ranking.rank`.

    Args:
        split: the targets by priority (:func:`split_by_proof`).
        raw: the solver's answer for all targets (its ``iterations`` counted against
            ``max_iterations``; its bounds are kept).
        task: the tree's paths, weights, limits and tolerances.
        budget: the solve's budget (what is left of it).
        max_iterations: the solve's iteration cap.
        solve_primary: ``solve_primary(targets, q_start, max_iterations) -> RawSolution``, the
            solver on the primary targets alone from ``q_start``.
    """
    paths, low, high = task.paths, task.low, task.high
    iterations = raw.iterations
    targets = split.ordered
    active = sorted({j for t in targets for j in paths[t.index].joints})
    evaluate = stacked_residual(paths, task.weights, targets, active, task.orientation_weight)
    primary_tips = len(split.primary)
    ranking = Ranking(primary_tips, sum(3 if t.R is None else 6 for t in split.primary),
                      task.tol_p, task.tol_r)
    low_active, high_active = [low[j] for j in active], [high[j] for j in active]

    def key(x: List[float]) -> Tuple[int, float, float]:
        _, errors, e, _ = evaluate(x)
        return ranking.rank(errors, e)

    q = np.array(raw.q, dtype=float)
    best_x = [float(q[j]) for j in active]
    best_key = raw_key = key(best_x)
    start = q.copy()
    rng = random.Random(0)
    start_cost = 0.0  # the longest start so far [s]: no start begins that would end late
    for _ in range(_MOST_STARTS):
        began = time.perf_counter()
        if iterations >= max_iterations or began + start_cost >= budget.deadline:
            break
        budget.mark()
        primary = solve_primary(split.primary, start, max_iterations - iterations)
        iterations += primary.iterations
        budget.mark()
        run = prioritised_descent(
            [float(primary.q[j]) for j in active], evaluate, ranking, low_active, high_active,
            budget, max(max_iterations - iterations, 0))
        iterations += run.steps
        run_key = key(run.x)
        start_cost = max(start_cost, time.perf_counter() - began)
        agree = run_key[:2] == best_key[:2] == (-primary_tips, 0.0) and \
            abs(math.sqrt(run_key[2]) - math.sqrt(best_key[2])) <= _AGREE_M
        if run_key < best_key:
            best_x, best_key = run.x, run_key
        if agree:
            break
        for c, j in enumerate(active):  # the next start: random within the limits
            lo = low_active[c] if math.isfinite(low_active[c]) else -math.pi
            hi = high_active[c] if math.isfinite(high_active[c]) else math.pi
            start[j] = lo + (hi - lo) * rng.random()
    raw.iterations = iterations
    if best_key >= raw_key:
        return raw
    q[active] = best_x
    reached = best_key[0] == -primary_tips
    message = ('task priority: every tip not proven out of reach on its target, the others '
               'as close as that allows' if reached else
               f'task priority: tips not proven out of reach missed ({raw.message})')
    return RawSolution(q, IkStatus.UNREACHABLE if reached else raw.status, iterations,
                       raw.min_residual, message, raw.history, raw.tip_residuals)
