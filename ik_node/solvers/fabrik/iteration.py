"""One FABRIK run: the problem, the settings, and the iteration with its stall rule.

The tree passes (:class:`~ik_node.solvers.fabrik.tree.FabrikTree`, numpy) and the serial passes
in plain floats (:class:`~ik_node.solvers.fabrik.serial.SerialFabrik`) run the same loop,
:func:`iterate`, over a :class:`Passes` state of their own: the forward and backward passes (or
the stretching pass first), the extrapolation, the damped least-squares polish, the stall
rule with its restarts, and the best configuration seen.

A run is described by two frozen values: :class:`FabrikProblem` (the targets, the start, what
may happen after a stall) and :class:`FabrikSettings` (the solver's parameters for the
iterations). The constants shared by both kinds of passes are here too.
"""

from __future__ import annotations

import abc
import dataclasses
import math
import time
from typing import Any, List, Optional, Tuple

import numpy as np

from ik_node.solvers.numerics.budget import StepPace

TWO_PI = 2.0 * math.pi
#: Below this a projected bone [m] (or a squared fit moment [m^2]) counts as degenerate.
EPS_M = 1e-9
#: A child bone within acos(0.9) ~ 26 deg of the child's own hinge axis is an offset, not a
#: direction to follow (the UR5 shoulder: its bone runs along the next axis).
PARALLEL_COS = 0.9
#: In a 'points' fit, a targeted tip counts this many times a child joint (the tip is what
#: must arrive; chosen on UR5 and Panda among 0.3, 1, 3, 10).
TIP_FIT_WEIGHT = 3.0
#: Extrapolation (see :attr:`FabrikSettings.extrapolate`): tried when an iteration's error ratio
#: is above this (slow, linear convergence), with the step stretched at most this many times.
#: Chosen on planar4, leg3, UR5 and twin_arm among ratios 0, 0.3, 0.5 and caps 10, 30, 100.
EXTRAPOLATE_MIN_RATIO = 0.3
EXTRAPOLATE_MAX_FACTOR = 30.0
#: Polish (see :attr:`FabrikSettings.polish`): initial and smallest Levenberg-Marquardt damping
#: [m^2]; tried when a FABRIK iteration cut the error by less than this ratio.
POLISH_DAMPING = 1e-3
POLISH_DAMPING_MIN = 1e-9
POLISH_RATIO = 0.5
POLISH_STUCK_RATIO = 0.9
#: The polish ends early after this many steps in a row that cut the (weighted) error by less
#: than 10 % (squared: ``SLOW_STEP_RATIO2``) or were rejected: Gauss-Newton steps near a
#: reachable target cut it by far more; slow steps are a target out of reach (or a stall at
#: limits), where the caller's stall handling (restarts, the closest-pose search) takes over.
SLOW_STEPS = 2
SLOW_STEP_RATIO2 = 0.9 ** 2


@dataclasses.dataclass(frozen=True)
class FabrikSettings:
    """How a run iterates: the solver's parameters for FABRIK.

    Attributes:
        tolerance: tip position error counted as reached [m].
        max_iterations: cap on forward/backward iterations (polish steps count too).
        min_improvement: the weighted RMS tip error [m] must improve by this much within
            ``stall_iterations`` iterations, or the run counts as stalled.
        stall_iterations: see ``min_improvement``.
        extrapolate: after an iteration that cut the error by the ratio rho, also try the
            iteration's joint step stretched by rho / (1 - rho) (where a linearly converging
            sequence ends up) and keep it if it lowers the error. FABRIK crawls near full
            extension and along limits, where this saves iterations.
        polish: after a FABRIK iteration that cut the error by less than ``POLISH_RATIO``, up
            to this many damped least-squares steps (each counted as an iteration); when they
            cut it by less than ``POLISH_STUCK_RATIO`` the run counts as stalled at once (if a
            restart is left, or the problem says ``stop_when_stuck``). 0: FABRIK passes only.
        record_history: keep the largest tip error [m] of every iteration.
        null_space_gain: [rad/m] serial runs only: when the seed is within ``STREAM_ERROR_M``
            of the target (a stream), the first polish step also pulls along the self-motion
            away from the joint limits, by this gain times the seed's error.
    """

    tolerance: float
    max_iterations: int
    min_improvement: float
    stall_iterations: int
    extrapolate: bool = True
    polish: int = 0
    record_history: bool = False
    null_space_gain: float = 0.0


@dataclasses.dataclass(frozen=True)
class FabrikProblem:
    """What one run solves.

    Attributes:
        q_seed: (n,) start configuration inside the limits.
        tip_indices: indices into ``chain.tips`` of the targeted tips.
        targets: (len(tip_indices), 3) target positions [m], base frame.
        weights: (len(tip_indices),) positive priorities (a serial run has one tip, weight 1).
        stretch_tip: a tip (index into ``chain.tips``) provably out of reach: the first
            iteration lays its path straight towards its target. None: no such tip.
        restarts: after a stall, start again this many times from a random configuration
            (of the joints that move targeted tips; a fixed-seed RNG, so a solve is
            reproducible), within the same ``max_iterations``; the best result is kept.
        stop_when_stuck: when FABRIK and the polish both crawl, end the run as stalled even
            without a restart left (the caller finishes it another way).
        deadline: no iteration starts that would end after this ``time.perf_counter()`` [s],
            judged by the pace of the iterations so far (the second-slowest:
            :class:`~ik_node.solvers.numerics.budget.StepPace`); the run then ends with
            ``timed_out``.
    """

    q_seed: Any
    tip_indices: Tuple[int, ...]
    targets: np.ndarray
    weights: np.ndarray
    stretch_tip: Optional[int] = None
    restarts: int = 0
    stop_when_stuck: bool = False
    deadline: float = math.inf


@dataclasses.dataclass
class FabrikRun:
    """What a run returns: the best configuration seen and how it went."""

    q: np.ndarray
    tip_errors: np.ndarray    # [m] per targeted tip at ``q``, in the order of the targets
    iterations: int
    converged: bool
    stalled: bool
    history: Optional[List[float]]
    timed_out: bool = False


class Passes(abc.ABC):
    """The state of one run that :func:`iterate` drives: the configuration ``q`` (with the
    node positions and joint rotations equal to FK of it) and the operations on it.

    ``err`` values are whatever the passes measure per targeted tip (an array of errors, or one
    float); ``obj`` the weighted RMS of them [m], the quantity the run minimises.
    """

    q: Any

    @abc.abstractmethod
    def measure(self) -> Tuple[Any, float]:
        """``(err, obj)`` at the current ``q``."""

    @abc.abstractmethod
    def largest(self, err) -> float:
        """The largest tip error [m] of ``err``."""

    @abc.abstractmethod
    def reached(self, err, tolerance: float) -> bool:
        """Every tip of ``err`` within ``tolerance`` [m]."""

    @abc.abstractmethod
    def copy_q(self) -> Any:
        """A copy of ``q`` (the best configuration kept)."""

    @abc.abstractmethod
    def step(self, stretch: bool) -> None:
        """One FABRIK iteration: the forward and backward passes, or, with ``stretch``, the
        backward pass along the stretch tip's path laid straight towards its target."""

    @abc.abstractmethod
    def extrapolate(self, q_before, factor: float, obj: float
                    ) -> Optional[Tuple[Any, float]]:
        """Move to ``q + factor (q - q_before)`` (clipped to the limits) when that lowers the
        objective below ``obj``, and return its ``(err, obj)``; else None, ``q`` unchanged."""

    @abc.abstractmethod
    def polish(self, steps: int, history: Optional[List[float]], deadline: float) -> int:
        """Up to ``steps`` damped least-squares steps (see the passes' own polish); the
        number taken."""

    def can_move(self) -> bool:
        """Some revolute joint moves a targeted tip (else the run does not iterate)."""
        return True

    def restart(self) -> bool:
        """Move ``q`` to a fresh random start of the joints that move targeted tips; False
        when there is none (then the run ends)."""
        return False

    @abc.abstractmethod
    def run_of(self, best_q, best_err, iterations: int, converged: bool, stalled: bool,
               history: Optional[List[float]], timed_out: bool) -> FabrikRun:
        """The :class:`FabrikRun` of the best configuration."""


def iterate(passes: Passes, problem: FabrikProblem, settings: FabrikSettings) -> FabrikRun:
    """Iterate FABRIK on ``passes`` until every targeted tip is within the tolerance, the
    iterations or the time run out, or the run stalls (with restarts, it then starts afresh).

    Stall rule: the best objective since the (re)start must improve by ``min_improvement``
    within ``stall_iterations`` iterations. A polish that crawls as well (a local minimum,
    usually at a joint limit) makes the next check a stall at once when a restart is left (or
    with ``stop_when_stuck``): without one, crawling on can only lower the error.
    """
    tolerance, min_improvement = settings.tolerance, settings.min_improvement
    stall_iterations, polish = settings.stall_iterations, settings.polish
    max_iterations, extrapolate = settings.max_iterations, settings.extrapolate
    restarts, deadline = problem.restarts, problem.deadline
    stretching = problem.stretch_tip is not None
    stop_when_stuck = problem.stop_when_stuck
    err, obj = passes.measure()
    history = [passes.largest(err)] if settings.record_history else None
    best_q, best_err = passes.copy_q(), err
    best_obj = start_best = obj
    last_progress_obj, since_progress, iterations, stalled = best_obj, 0, 0, False
    converged = passes.reached(err, tolerance)
    if not passes.can_move():
        max_iterations = 0                  # nothing can move a targeted tip
    polish_after = 0
    timed_out, pace = False, StepPace()  # of the FABRIK iterations
    while not converged and iterations < max_iterations:
        started = time.perf_counter()
        if started + pace.expected > deadline:  # it would end past the deadline
            timed_out = True
            break
        iterations += 1
        q_before, obj_before = passes.copy_q(), obj
        passes.step(stretching and iterations == 1)
        err, obj = passes.measure()
        if extrapolate and 0.0 < obj < obj_before and iterations > 1:
            rho = obj / obj_before
            if rho > EXTRAPOLATE_MIN_RATIO:  # remaining distance of a linear sequence
                better = passes.extrapolate(
                    q_before, min(rho / (1.0 - rho), EXTRAPOLATE_MAX_FACTOR), obj)
                if better is not None:
                    err, obj = better
        if history is not None:
            history.append(passes.largest(err))
        pace.add(time.perf_counter() - started)
        if (polish > 0 and iterations >= polish_after and obj > 0.0 and
                obj >= POLISH_RATIO * obj_before and iterations < max_iterations):
            iterations += passes.polish(min(polish, max_iterations - iterations), history,
                                        deadline)
            err, obj_polished = passes.measure()
            stuck = obj_polished > POLISH_STUCK_RATIO * obj
            if obj_polished > POLISH_RATIO * obj:   # no help here: let FABRIK work a while
                polish_after = iterations + stall_iterations
            obj = obj_polished
            # FABRIK and the polish both crawl: a local minimum, restart now (without a
            # restart left, crawling on can only lower the error).
            if stuck and min_improvement > 0.0 and (restarts > 0 or stop_when_stuck) and \
                    not stretching:
                if obj < best_obj:
                    best_q, best_err, best_obj = passes.copy_q(), err, obj
                start_best = min(start_best, obj)
                last_progress_obj = start_best + min_improvement
                since_progress = stall_iterations - 1
        if obj < best_obj:
            best_q, best_err, best_obj = passes.copy_q(), err, obj
        converged = passes.reached(err, tolerance)
        start_best = min(start_best, obj)
        if start_best < last_progress_obj - min_improvement:
            last_progress_obj, since_progress = start_best, 0
            continue
        since_progress += 1
        if since_progress < stall_iterations or converged:
            continue
        stalled = True
        if restarts <= 0 or stretching or not passes.restart():
            break
        restarts -= 1                      # a local minimum (joint limits): start afresh
        err, obj = passes.measure()
        start_best = last_progress_obj = obj
        since_progress = 0
    if converged:
        best_q, best_err = passes.copy_q(), err
    return passes.run_of(best_q, best_err, iterations, converged, stalled and not converged,
                         history, timed_out and not converged)


def angle_in_limits(theta: float, q_old: float, lower: float, upper: float) -> float:
    """The joint value for angle ``theta`` [rad] nearest ``q_old`` within [lower, upper].

    Adds whole turns to ``theta``; if no turn lands inside the limits, returns the limit
    nearest to ``theta`` on the circle.
    """
    q = theta + TWO_PI * round((q_old - theta) / TWO_PI)
    if lower <= q <= upper:
        return q
    inside = [c for c in (q - TWO_PI, q + TWO_PI) if lower <= c <= upper]
    if inside:
        return min(inside, key=lambda c: abs(c - q_old))
    d_lower = abs(math.remainder(theta - lower, TWO_PI))
    d_upper = abs(math.remainder(theta - upper, TWO_PI))
    return lower if d_lower <= d_upper else upper


def weighted_rms(w_norm: np.ndarray, err: np.ndarray) -> float:
    """``sqrt(sum w_k err_k^2)`` [m] for weights ``w_norm`` summing to 1."""
    return math.sqrt(float(w_norm @ (err * err)))
