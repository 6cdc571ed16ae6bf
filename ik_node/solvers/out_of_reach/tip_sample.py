"""A precomputed sample of a chain's tip positions: starts for the closest-pose search that
cover the joint space.

Built once per solver (numpy, batched forward kinematics): ``SAMPLES`` configurations drawn
uniformly within the joint limits (infinite ones as +-pi) with a fixed RNG seed, and their tip
positions. For a target, :meth:`TipSample.starts` gives the configurations whose tips lie
nearest it, a configuration close to one already given left out: the structured starts of the
search (the seed, the stretched mid configuration) share a bias near the limits, and random
starts seldom land in the basin of a closest pose behind a limit (a leg's thigh turned over its
back, a 7-joint arm's elbow flipped); the nearest sampled tips lie next to that pose wherever it
is, since out of reach the closest pose is on the boundary of the sampled cloud facing the
target.
"""

from __future__ import annotations

import math
from typing import Iterator, List, Optional

import numpy as np

#: Configurations sampled per chain, and the RNG seed (the same sample every time).
SAMPLES = 4096
SEED = 20261203
#: Nearest tips considered per target, and the least difference [rad or m] (largest over the
#: joints) between two configurations given as starts.
CANDIDATES = 32
MIN_SPACING = 0.5


class TipSample:
    """Sampled configurations ``q`` (m x n) and their tip positions ``tips`` (m x 3) [m]."""

    def __init__(self, q: np.ndarray, tips: np.ndarray):
        self.q, self.tips = q, tips

    def starts(self, target) -> Iterator[List[float]]:
        """Configurations whose tips lie nearest ``target`` [m], nearest first, each differing
        from every one given before by more than ``MIN_SPACING`` in some joint (computed when
        first asked for)."""
        offsets = self.tips - np.asarray(target, dtype=float)
        distances = np.einsum('ij,ij->i', offsets, offsets)
        count = min(CANDIDATES, len(distances))
        nearest = np.argpartition(distances, count - 1)[:count]
        nearest = nearest[np.argsort(distances[nearest])]
        given: List[np.ndarray] = []
        for k in nearest:
            q = self.q[k]
            if all(np.max(np.abs(q - other)) > MIN_SPACING for other in given):
                given.append(q)
                yield q.tolist()


def tip_sample(chain, samples: int = SAMPLES) -> Optional[TipSample]:
    """The :class:`TipSample` of a serial chain with one tip and moving joints, else None."""
    if chain.n == 0 or len(chain.tips) != 1:
        return None
    rng = np.random.default_rng(SEED)
    lower = np.where(np.isfinite(chain.lower), chain.lower, -math.pi)
    upper = np.where(np.isfinite(chain.upper), chain.upper, math.pi)
    q = rng.uniform(lower, upper, (samples, chain.n))
    tip = chain.tips[0]
    tips = (chain.joint_frames(q)[:, tip.parent] @ tip.T_joint_tip)[:, :3, 3]
    return TipSample(q, np.ascontiguousarray(tips))
