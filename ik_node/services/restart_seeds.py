"""Seeds for a request's solve after the first: configurations whose tips lie near the target.

A request answered without ``SUCCESS`` from its own seed (the budget of a descent ended, the
answer collided, a constraint was missed) is solved again while its budget lasts: from the
configurations of a fixed random sample whose tips lie nearest the target (position plus
``weight`` times the angle to the target's orientation, summed over the tips), nearest first,
every other one a fresh random configuration (a target near none of the sample). A descent
from a nearby configuration usually converges within a fraction of a millisecond.
"""

from __future__ import annotations

import math
from typing import Dict, Iterator, Mapping, Tuple

import numpy as np

from ik_node.model.chain import Chain

#: Random configurations sampled once per chain.
SAMPLE_SIZE = 2000
#: Metres per radian of orientation difference in the nearness of a tip.
ORIENTATION_WEIGHT_M = 0.5


class NearSeeds:
    """A fixed sample of a chain's configurations and their tips' poses.

    Args:
        chain: the group's chain.
        size: how many configurations (uniform within the limits; +-pi where unbounded).
        seed: of the sample's generator (answers repeat from run to run).
    """

    def __init__(self, chain: Chain, size: int = SAMPLE_SIZE, seed: int = 1) -> None:
        self.lower = np.where(np.isfinite(chain.lower), chain.lower, -math.pi)
        self.upper = np.where(np.isfinite(chain.upper), chain.upper, math.pi)
        self.q = np.random.default_rng(seed).uniform(self.lower, self.upper,
                                                     size=(size, chain.n))
        self._tips: Dict[str, Tuple[np.ndarray, np.ndarray]] = {}
        for tip in chain.tip_links:
            T = np.array([chain.fk(q, tip) for q in self.q])
            self._tips[tip] = (T[:, :3, 3].copy(), T[:, :3, :3].reshape(len(self.q), 9).copy())

    def distances(self, targets: Mapping[str, Tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        """Each sampled configuration's distance to ``targets`` (tip -> (position [m],
        rotation 3x3 or None)): the tips' position errors plus ``ORIENTATION_WEIGHT_M`` times
        their angles, summed."""
        d = np.zeros(len(self.q))
        for tip, (position, R) in targets.items():
            points, rotations = self._tips[tip]
            d += np.linalg.norm(points - np.asarray(position, dtype=float), axis=1)
            if R is not None:
                cos = 0.5 * (rotations @ np.asarray(R, dtype=float).ravel() - 1.0)
                d += ORIENTATION_WEIGHT_M * np.arccos(np.clip(cos, -1.0, 1.0))
        return d

    def seeds(self, targets: Mapping[str, Tuple[np.ndarray, np.ndarray]],
              lower: np.ndarray, upper: np.ndarray, rng: np.random.Generator
              ) -> Iterator[np.ndarray]:
        """Seeds within ``lower``..``upper`` (the limits a request's joint constraints
        narrowed): the sample's configurations nearest ``targets`` in turn with random ones."""
        low = np.where(np.isfinite(lower), lower, -math.pi)
        high = np.where(np.isfinite(upper), upper, math.pi)
        order = np.argsort(self.distances(targets), kind='stable')
        for k in order:
            yield np.clip(self.q[k], low, high)
            yield rng.uniform(low, high)
