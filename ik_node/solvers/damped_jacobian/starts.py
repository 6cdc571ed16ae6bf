"""Where the restarts of a damped-least-squares solve begin: random configurations, and for a
stream's stuck solve, configurations near the seed.

A restart begins at the lowest-cost of ``RESTART_CANDIDATES`` uniformly random configurations.
A stream's seed (within ``STREAM_ERROR_M``, weighted, of its target: docs/continuity.md) is one
step away from the answer, so when its descent is stuck the next starts are near the seed, within
``NEAR_SEED_RADII``, before the mid or a random configuration (:mod:`.solver`).
"""

from __future__ import annotations

import random
import threading
from typing import Sequence

import numpy as np

from ik_node.solvers.numerics.dls_settings import RESTART_CANDIDATES as _RESTART_CANDIDATES

#: A stream's stuck solve starts its next descents near the seed, within these radii [rad or m]
#: (each the lowest-cost of RESTART_CANDIDATES), before the mid or a random configuration.
NEAR_SEED_RADII = (0.05, 0.15, 0.4, 1.0)


class RestartDraws:
    """The random numbers of a solver's restarts, the same for every solve: the sequence of
    ``random.Random(seed)``, drawn once and kept. Batch ``k`` holds the ``RESTART_CANDIDATES x n``
    numbers in [0, 1) of a solve's ``k``-th set of candidates (random or near the seed), in the
    order a fresh generator would draw them; a solve reads batches 0, 1, 2, ... instead of seeding
    a generator of its own."""

    def __init__(self, seed: int, n: int):
        self._rng = random.Random(seed)
        self._n = n
        self._batches = np.empty((0, _RESTART_CANDIDATES, n))
        self._lock = threading.Lock()

    def batch(self, k: int) -> np.ndarray:
        """The ``k``-th batch (drawn on first use, with every batch before it)."""
        return self.upto(k)[k]

    def upto(self, k: int) -> np.ndarray:
        """The batches drawn so far, at least ``k + 1`` of them: ``(batches,
        RESTART_CANDIDATES, n)``."""
        batches = self._batches
        if k < len(batches):
            return batches
        with self._lock:
            batches = self._batches
            if k >= len(batches):
                count = max(2 * len(batches), k + 1, 8) - len(batches)
                random_unit = self._rng.random
                drawn = [random_unit() for _ in range(count * _RESTART_CANDIDATES * self._n)]
                batches = self._batches = np.concatenate([batches, np.array(drawn).reshape(
                    (count, _RESTART_CANDIDATES, self._n))])
        return batches


def near_candidates(units: np.ndarray, q_seed: Sequence[float], radius: float,
                    low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """A few random configurations (rows) within ``radius`` [rad or m] of ``q_seed`` per joint,
    inside the limits ``low``, ``high``, from a batch of :class:`RestartDraws`; a near-seed
    start begins at the lowest-cost one."""
    return np.minimum(np.maximum(np.asarray(q_seed) + radius * (2.0 * units - 1.0), low), high)


def restart_candidates(units: np.ndarray, low: np.ndarray, span: np.ndarray) -> np.ndarray:
    """A few uniformly random configurations (rows), each joint in ``[low, low + span)``, from a
    batch of :class:`RestartDraws`; a restart begins at the lowest-cost one (the first of
    equals)."""
    return low + span * units
