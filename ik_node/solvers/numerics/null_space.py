"""The secondary objective of redundant chains: a pull away from the joint limits.

A chain with more joints than its target has dimensions reaches the target along a whole
self-motion (the null space of the Jacobian). Solvers that step by the least-norm solution leave
that self-motion where the seed put it, and along a stream it drifts: cyclic task motions do not
bring the joints back, and a joint ends pressed against a limit, where the seeded descent stalls
and a restart lands on another solution branch. The pull moves the joints along the self-motion
away from their limits, in proportion to the stream's own step, so a stream that stands still
does not move and a moving one keeps its joints off their limits.

Used by the damped least-squares solver (its first step on a stream) and FABRIK's
least-squares polish. Plain floats, as the solvers' iterations are.
"""

from __future__ import annotations

import math
from typing import List, Sequence, Tuple

#: A seed whose weighted error is at most this [m] is one step of a stream away from its target.
STREAM_ERROR_M = 0.05
#: The steepness x / (1 - x^2) of the pull is capped at this (x: offset from the middle of the
#: limits in half ranges).
FACTOR_MAX = 10.0


def centring_terms(lower: Sequence[float], upper: Sequence[float],
                   joints: Sequence[int]) -> List[Tuple[int, float, float]]:
    """``(index, middle, 1 / half range)`` of each of ``joints`` with a finite, non-empty range
    (the joints whose limits constrain a step; full-turn and continuous joints have none)."""
    out = []
    for k in joints:
        lo, hi = lower[k], upper[k]
        if math.isfinite(lo) and math.isfinite(hi) and hi > lo:
            out.append((k, 0.5 * (lo + hi), 2.0 / (hi - lo)))
    return out


def limit_pull(q: Sequence[float], terms: Sequence[Tuple[int, float, float]],
               scale: float) -> List[float]:
    """The joint step ``d`` [rad or m] away from the limits, before projection on the null space:
    ``d_k = -scale * f(x_k)`` with ``x_k`` joint k's offset from the middle of its limits in half
    ranges (-1 .. 1) and ``f(x) = x / (1 - x^2)`` capped at ``FACTOR_MAX`` (about ``x`` in the
    middle, steep near a limit); 0 for joints without terms."""
    d = [0.0] * len(q)
    for k, middle, inverse_half in terms:
        x = (q[k] - middle) * inverse_half
        factor = x / max(1.0 - x * x, 1e-12)
        d[k] = -scale * max(-FACTOR_MAX, min(factor, FACTOR_MAX))
    return d
