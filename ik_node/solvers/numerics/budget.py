"""Wall-time budgets of the iterative solvers: no step starts that would end after the deadline.

Shared by damped_jacobian, the closest-pose search and fabrik's passes and polish. Plain floats
and ``time.perf_counter``.
"""

from __future__ import annotations

import time
from typing import Optional

#: Kept free at the end of a budget [s] (at most a tenth of it) for what follows the iterations:
#: the caller's FK check of the answer and its result.
RESERVE_S = 50e-6
#: The least time [s] worth handing to the closest-pose search when a solver's own iterations
#: stop for time: its set-up (a stretching sweep) and first Newton system.
HANDOVER_S = 100e-6


class Budget:
    """A wall-time budget in which no step starts that would end after the deadline, judged by
    the pace of the steps so far (a step: the time between two calls of :meth:`allows`).

    The pace is the second-slowest step (the slowest while there is only one): a single step
    stretched by something outside the solve (the process preempted, the VM's CPU stolen, a
    garbage collection) would otherwise be taken as the pace and end the solve early, as
    ``timeout``, with most of its budget left (a stall of a few milliseconds in a solve that
    takes a fraction of one). A step type that really is the slowest recurs and sets the pace; one
    that occurs once overruns the deadline by at most its excess over the pace. While there is
    only one step a stall in it still sets the pace: a solver whose own iterations stop for time
    while :meth:`can_hand_over` hands a position target to the closest-pose search, which paces
    its own steps.
    """

    def __init__(self, seconds: float, start: Optional[float] = None):
        """``seconds`` from now, or from ``start`` (a ``time.perf_counter()`` reading: the
        budget of work begun then). Steps are timed from now: work done before is not a step,
        so a stall in it does not set the pace."""
        now = time.perf_counter()
        self.deadline = (now if start is None else start) + seconds - min(RESERVE_S,
                                                                          0.1 * seconds)
        self._last = now
        self._pace = StepPace()

    def mark(self) -> None:
        """Start timing a step now (after work not to be counted as one, e.g. another
        solver's iterations that kept their own clock)."""
        self._last = time.perf_counter()

    def can_hand_over(self) -> bool:
        """Whether at least ``HANDOVER_S`` is left: enough to hand the rest to the closest-pose
        search after a solver's own iterations stopped for time."""
        return self.deadline - time.perf_counter() >= HANDOVER_S

    def allows(self) -> bool:
        """Whether another step fits; call it before each step."""
        now = time.perf_counter()
        pace = self._pace.add(now - self._last)
        self._last = now
        return now + pace <= self.deadline


class StepPace:
    """The expected duration of the next step: the second-slowest step so far, or the slowest
    while there is only one (see :class:`Budget`)."""

    __slots__ = ('slowest', 'second')

    def __init__(self) -> None:
        self.slowest = self.second = 0.0

    def add(self, step: float) -> float:
        """Record a step's duration [s]; return the pace [s]."""
        if step > self.slowest:
            self.second, self.slowest = self.slowest, step
        elif step > self.second:
            self.second = step
        return self.expected

    @property
    def expected(self) -> float:
        """The pace [s] (0 before the first step)."""
        return self.second or self.slowest
