"""The steps of FABRIK's iteration loop that the compiled serial and tree runs share.

:func:`~ik_node.solvers.fabrik.iteration.iterate` is one loop over either kind of passes; its
compiled forms (:func:`.compiled._run_fabrik` over a chain, :func:`.compiled_tree._run_tree`
over a tree) differ in their passes and in what they keep of the best configuration, and take
every other step from here: the state kept between calls, the extrapolation of a linear
sequence of iterates, when the polish runs and what it says, the stall rule, and the clock
between calls (:func:`run_chunks`, in Python). The same operations in the same order as
``iterate``, so the same floats.

Plain Python functions in numba's subset, compiled in place by :func:`compile` and written into
each caller by numba (``inline='always'``): a kernel that calls them is compiled after them.
"""

from __future__ import annotations

import time
from typing import Callable, Optional, Tuple

import ik_node.kernels as kernels
from ik_node.kernels import fk
from ik_node.solvers.fabrik import compiled_passes as passes
from ik_node.solvers.fabrik.iteration import (EXTRAPOLATE_MAX_FACTOR, EXTRAPOLATE_MIN_RATIO,
                                              POLISH_RATIO, POLISH_STUCK_RATIO)
from ik_node.solvers.numerics.budget import StepPace

# What a call of a kernel returns.
DONE = 0        # the run ended (converged, stalled or out of iterations): see the state
CHUNK_DONE = 1  # CHUNK iterations done: call again to go on
FAILED = 2      # a polish system not positive definite: the Python passes run instead
RESTART = 3     # (a tree) the run stalled with a restart left: draw a start and call again

#: Iterations per kernel call between two looks at the clock.
CHUNK = 16

# The entries of a run's state array kept between calls, first in both kernels' (each kernel's
# own entries follow, from LOOP_STATE on).
(BEGUN, OBJ, BEST_OBJ, START_BEST, LAST_PROGRESS, SINCE_PROGRESS, ITERATIONS, STALLED,
 CONVERGED, POLISH_AFTER) = range(10)
LOOP_STATE = 10

#: The column of a joint's lower limit (the upper one next) in both kernels' joint arrays: right
#: after its FABRIK row.
LIMITS = fk.COLUMNS


# ------------------------------------------------------------------------ the steps (numba)
def begin(state, obj, converged):
    """A run's first state: ``obj`` the error of its start, no iteration yet."""
    state[OBJ] = state[BEST_OBJ] = state[START_BEST] = state[LAST_PROGRESS] = obj
    state[SINCE_PROGRESS] = state[ITERATIONS] = state[STALLED] = 0.0
    state[POLISH_AFTER] = 0.0
    state[CONVERGED] = 1.0 if converged else 0.0
    state[BEGUN] = 1.0


def resume(state):
    """The loop's variables as the last call left them: ``(obj, best_obj, start_best,
    last_progress, since_progress, iterations, polish_after, converged, stalled)``."""
    return (state[OBJ], state[BEST_OBJ], state[START_BEST], state[LAST_PROGRESS],
            int(state[SINCE_PROGRESS]), int(state[ITERATIONS]), int(state[POLISH_AFTER]),
            state[CONVERGED] != 0.0, state[STALLED] != 0.0)


def keep(state, loop):
    """Store the loop's variables (:func:`resume`'s tuple) for the next call."""
    obj, best_obj, start_best, last_progress, since_progress, iterations, polish_after, \
        converged, stalled = loop
    state[OBJ], state[BEST_OBJ], state[START_BEST] = obj, best_obj, start_best
    state[LAST_PROGRESS] = last_progress
    state[SINCE_PROGRESS], state[ITERATIONS] = since_progress, iterations
    state[POLISH_AFTER] = polish_after
    state[CONVERGED] = 1.0 if converged else 0.0
    state[STALLED] = 1.0 if stalled else 0.0


def extrapolation(obj, obj_before, iterations):
    """The factor by which to prolong the last step (the remaining distance of a linear
    sequence of errors), or 0.0 where the iterates do not call for it."""
    if 0.0 < obj < obj_before and iterations > 1:
        rho = obj / obj_before
        if rho > EXTRAPOLATE_MIN_RATIO:
            return min(rho / (1.0 - rho), EXTRAPOLATE_MAX_FACTOR)
    return 0.0


def extrapolate(joints, q, q_before, factor, q_try):
    """``q_try``: the last step ``q - q_before`` prolonged by ``factor``, clipped to the limits
    (``joints[k, LIMITS]``, ``joints[k, LIMITS + 1]``)."""
    for k in range(q.shape[0]):
        q_try[k] = passes.clip(q[k] + factor * (q[k] - q_before[k]), joints[k, LIMITS],
                               joints[k, LIMITS + 1])


def polish_due(polish, iterations, polish_after, obj, obj_before, max_iterations):
    """Whether the polish runs now: FABRIK's iteration lowered the error too little."""
    return (polish > 0 and iterations >= polish_after and obj > 0.0 and
            obj >= POLISH_RATIO * obj_before and iterations < max_iterations)


def polished(obj_polished, obj, iterations, polish_after, stall_iterations):
    """What a polish said: ``(stuck, polish_after)``: whether FABRIK and the polish both
    crawl, and the iteration after which the polish may run again (later where it did not
    help: FABRIK works a while)."""
    if obj_polished > POLISH_RATIO * obj:
        polish_after = iterations + stall_iterations
    return obj_polished > POLISH_STUCK_RATIO * obj, polish_after


def progress(obj, converged, counts, rule):
    """The stall rule after an iteration: ``(start_best, last_progress, since_progress,
    stalled)``. ``counts``: ``(start_best, last_progress, since_progress)`` before it;
    ``rule``: ``(min_improvement, stall_iterations)``."""
    start_best, last_progress, since_progress = counts
    min_improvement, stall_iterations = rule
    start_best = min(start_best, obj)
    if start_best < last_progress - min_improvement:
        return start_best, start_best, 0, False
    since_progress += 1
    return (start_best, last_progress, since_progress,
            not (since_progress < stall_iterations or converged))


_COMPILED = []
_HELPERS = ('begin', 'resume', 'keep', 'extrapolation', 'extrapolate', 'polish_due', 'polished',
            'progress')


def compile() -> None:  # noqa: A001 - the kernel modules' entry point is named so
    """Compile these functions in place, once, after the serial passes they call."""
    if not _COMPILED:
        passes.compile()
        kernels.jitted(globals(), _HELPERS, (), inlined=_HELPERS)
        _COMPILED.append(True)


# ------------------------------------------------------------------------ the clock (Python)
def run_chunks(kernel: Callable[..., int], args: tuple, state, deadline: float,
               restart: Optional[Callable[[], None]] = None) -> Tuple[int, bool]:
    """Call ``kernel(*args, chunk)`` (at most ``chunk`` iterations a call) until its run ends,
    as :func:`~.iteration.iterate` runs: no iteration starts past ``deadline``, judged by the
    pace of the iterations so far. ``restart`` draws a fresh start where the kernel returned
    RESTART. Returns the last code and whether the deadline ended the run."""
    chunk = CHUNK if time.perf_counter() <= deadline else 0
    pace = StepPace()
    while True:
        before = state[ITERATIONS]
        started = time.perf_counter()
        code = kernel(*args, chunk)
        if code == RESTART:
            restart()
        elif code != CHUNK_DONE:
            return code, False
        now = time.perf_counter()
        done = state[ITERATIONS] - before
        if done > 0.0:
            pace.add((now - started) / done)
        expected = pace.expected
        if expected <= 0.0 or now + expected > deadline:
            if code == RESTART:  # the Python loop measures the fresh start first
                code = kernel(*args, 0)
            return code, True
        fits = (deadline - now) / expected  # iterations (an infinite deadline: inf)
        chunk = CHUNK if fits >= CHUNK else int(fits)
