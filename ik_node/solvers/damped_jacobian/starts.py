"""Where the restarts of a damped-least-squares solve begin: random configurations, and for a
stream's stuck solve, configurations near the seed.

A restart begins at the lowest-cost of ``RESTART_CANDIDATES`` uniformly random configurations.
A stream's seed (within ``STREAM_ERROR_M``, weighted, of its target: docs/continuity.md) is one
step away from the answer, so when its descent is stuck the next starts are near the seed, within
``NEAR_SEED_RADII``, before the mid or a random configuration (:mod:`.solver`).
"""

from __future__ import annotations

import random
from typing import List, Sequence, Tuple

from ik_node.solvers.damped_jacobian.settings import RESTART_CANDIDATES as _RESTART_CANDIDATES

#: A stream's stuck solve starts its next descents near the seed, within these radii [rad or m]
#: (each the lowest-cost of RESTART_CANDIDATES), before the mid or a random configuration.
NEAR_SEED_RADII = (0.05, 0.15, 0.4, 1.0)


def near_candidates(rng: random.Random, q_seed: List[float], radius: float,
                    low: Sequence[float], high: Sequence[float]) -> List[List[float]]:
    """A few random configurations within ``radius`` [rad or m] of ``q_seed`` per joint,
    inside the limits ``low``, ``high``; a near-seed start begins at the lowest-cost one."""
    random_unit = rng.random
    return [[min(max(v + radius * (2.0 * random_unit() - 1.0), lo), hi)
             for v, lo, hi in zip(q_seed, low, high, strict=True)]
            for _ in range(_RESTART_CANDIDATES)]


def restart_candidates(rng: random.Random, spans: Sequence[Tuple[float, float]]
                       ) -> List[List[float]]:
    """A few uniformly random configurations, each joint in ``[lo, lo + span)`` of its
    ``(lo, span)`` in ``spans``; a restart begins at the lowest-cost one (the first of
    equals)."""
    random_unit = rng.random
    # lo + span * random() is what rng.uniform(lo, hi) computes, without its call.
    return [[lo + span * random_unit() for lo, span in spans]
            for _ in range(_RESTART_CANDIDATES)]
