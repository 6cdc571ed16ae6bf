"""FABRIK's compiled serial passes bound to one chain: :class:`CompiledFabrik`.

It runs the kernel of :mod:`ik_node.solvers.fabrik.compiled` toward one target and answers what
:meth:`SerialFabrik.run <ik_node.solvers.fabrik.serial.SerialFabrik.run>` answers. The clock
stays here, in Python: the kernel runs at most :data:`~ik_node.solvers.fabrik.compiled.CHUNK`
iterations per call (polish steps count as iterations, as in the Python loop; a polish started
in a call finishes in it) and :meth:`CompiledFabrik.run` starts the next call
(:func:`~ik_node.solvers.fabrik.compiled_steps.run_chunks`) only where the iterations fit
before the deadline, judged by the pace per iteration of the calls so far (the second-slowest,
:class:`~ik_node.solvers.numerics.budget.StepPace`); the Python loop judges each iteration and
each polish step alike. A run that records its history, or whose polish meets a system that is
not positive definite (where the Python polish raises), is left to the Python passes.
"""

from __future__ import annotations

import threading
from typing import Any, Dict, Optional

import numpy as np

import ik_node.kernels as kernels
from ik_node.solvers.fabrik import compiled
from ik_node.solvers.fabrik import compiled_steps as steps
from ik_node.solvers.fabrik.iteration import FabrikProblem, FabrikRun, FabrikSettings
from ik_node.solvers.fabrik.serial import SerialFabrik


def available() -> bool:
    """Whether the compiled path may serve (:func:`ik_node.kernels.available`)."""
    return kernels.available()


class CompiledFabrik:
    """The compiled passes bound to one serial chain's :class:`SerialFabrik`.

    :meth:`run` answers what ``SerialFabrik.run`` answers, or None where the Python passes
    run (the kernel not loaded yet, a history to record, a polish the kernel leaves to
    Python). Built only where numba may serve (:func:`of`); the kernel loads in the
    background from the first solve on (:meth:`start_loading`).
    """

    def __init__(self, fabrik: SerialFabrik, compiled_kernels: Optional[Dict[str, Any]] = None):
        self.n = fabrik.n
        self.model = compiled.model_of(fabrik)
        self._kernels = compiled._KERNELS if compiled_kernels is None else compiled_kernels
        self._runs = threading.local()  # per thread: its arrays, reused by every run

    @classmethod
    def of(cls, fabrik: Optional[SerialFabrik]) -> Optional['CompiledFabrik']:
        """The compiled passes of ``fabrik`` where numba may serve; else None."""
        if fabrik is None or not available() or fabrik.n == 0:
            return None
        return cls(fabrik)

    def ready(self) -> bool:
        """Whether the kernel is loaded (never blocks)."""
        return bool(self._kernels) and (self._kernels is not compiled._KERNELS or kernels.ready())

    def start_loading(self) -> None:
        """Start loading the kernels in the background unless they are (a solve calls it
        before its budget starts; not at construction: importing numba would slow down a
        node's start-up)."""
        if not self.ready():
            kernels.start()

    def run(self, problem: FabrikProblem, settings: FabrikSettings) -> Optional[FabrikRun]:
        """The :class:`FabrikRun` of ``SerialFabrik.run(problem, settings)`` (one target, no
        restarts), or None where the Python passes run instead."""
        if settings.record_history or not self.ready():
            return None
        arrays = getattr(self._runs, 'arrays', None)
        if arrays is None:
            n = self.n
            arrays = self._runs.arrays = (np.zeros(3), np.zeros(n), np.zeros(n),
                                          np.zeros(compiled._STATE + n + 1),
                                          np.zeros(compiled._scratch_size(n)))
        target, q, best_q, state, scratch = arrays
        values = compiled.PassSettings(
            float(settings.tolerance), float(settings.max_iterations),
            float(settings.min_improvement), float(settings.stall_iterations),
            float(settings.extrapolate), float(settings.polish), float(settings.null_space_gain),
            float(problem.stretch_tip is not None),
            float(problem.restarts > 0 or problem.stop_when_stuck))
        target[:] = problem.targets[0]
        q[:] = problem.q_seed
        state[steps.BEGUN] = state[steps.ITERATIONS] = 0.0
        code, timed_out = steps.run_chunks(
            self._kernels['run'], (self.model, values, target, q, best_q, state, scratch), state,
            problem.deadline)
        if code == steps.FAILED:
            return None
        converged, stalled = bool(state[steps.CONVERGED]), bool(state[steps.STALLED])
        return FabrikRun(best_q.copy(), np.array([state[steps.BEST_OBJ]]),
                         int(state[steps.ITERATIONS]), converged,
                         stalled and not converged, None,
                         timed_out and not converged)
