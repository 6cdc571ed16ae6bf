"""``method: transpose``, the teaching baseline: plain gradient descent on the weighted error.

``q <- clip(q + step_size * J^T e)``: no line search, no scaling, no restarts, stopping only at
the tolerance or ``max_iterations``.
"""

from __future__ import annotations

import math
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np

from ik_node.solvers.base import IkStatus, RawSolution

_TWO_PI = 2.0 * math.pi


def solve_transpose(evaluate: Callable, q: List[float], step_size: float, max_iterations: int,
                    tolerances: Sequence[float], limits: Tuple[Sequence[float], Sequence[float],
                                                               Sequence[bool]],
                    record_history: bool) -> RawSolution:
    """Gradient steps from ``q`` until the errors are within ``tolerances`` (position [m],
    angle [rad]) or ``max_iterations`` steps are taken. ``evaluate(q)`` gives ``(cost, position
    error, angle error, e, J)``; each iterate is brought into ``limits`` ``(low, high, wraps)``
    by :func:`clip`."""
    low, high, wraps = limits
    tol_p, tol_r = tolerances
    history: Optional[List[float]] = [] if record_history else None
    iterations = 0
    while True:
        _, position_error, angle_error, e, J = evaluate(q)
        if history is not None:
            history.append(position_error)
        if position_error <= tol_p and angle_error <= tol_r:
            return RawSolution(np.array(q), IkStatus.CONVERGED, iterations, history=history)
        if iterations >= max_iterations:
            return RawSolution(np.array(q), IkStatus.MAX_ITERATIONS, iterations,
                               history=history, message=f'transpose: {iterations} '
                               f'iterations with step size {step_size:g}')
        gradient = np.asarray(e) @ np.asarray(J)  # J^T e
        q = clip((np.asarray(q) + step_size * gradient).tolist(), low, high, wraps)
        iterations += 1


def clip(q: Sequence[float], low: Sequence[float], high: Sequence[float],
         wraps: Sequence[bool]) -> List[float]:
    """``q`` within the limits: wrapped by whole turns where the joint allows a full turn
    (``wraps``: the same pose), else clipped."""
    out = []
    for v, lo, hi, wrap in zip(q, low, high, wraps, strict=True):
        if v < lo:
            v = v + _TWO_PI * math.ceil((lo - v) / _TWO_PI) if wrap else lo
        elif v > hi:
            v = v - _TWO_PI * math.ceil((v - hi) / _TWO_PI) if wrap else hi
        out.append(v)
    return out
