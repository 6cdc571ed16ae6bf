"""Which cells of a map are uniform and which mixed.

A map decides each (voxel, orientation bin) at one target, the voxel's centre in the bin's
orientation, but a query asks about any pose in the voxel and the bin. Near the boundary of the
reachable set a cell holds reachable and unreachable poses alike, and its centre speaks for
neither. A cell is called **uniform** when its target and its neighbours' targets agree: the 26
voxels around it in the same bin, and the adjacent orientation bins of the same voxel (those
within :data:`ADJACENT` times the bin's nearest spacing); a neighbour beyond the map's cells is
beyond the proven reach, unreachable. Every other cell is **mixed**: a forward query decides it
by IK at query time (or says it is uncertain). That a uniform cell is uniform is an estimate
from its neighbours' samples, not a proof: the held-out benchmark measures how often it is
wrong.
"""

from __future__ import annotations

import itertools

import numpy as np

from ik_node.capability.orientations import OrientationSet

#: Orientation bins within this factor of a bin's nearest spacing are its neighbours.
ADJACENT = 1.6


def adjacent_bins(orientations: OrientationSet) -> list:
    """Per orientation bin the indices of its adjacent bins (by rotation angle)."""
    R = orientations.rotations
    cosines = np.clip((np.einsum('aij,bij->ab', R, R) - 1.0) / 2.0, -1.0, 1.0)
    angles = np.arccos(cosines)
    np.fill_diagonal(angles, np.inf)
    nearest = angles.min(axis=1) if len(R) > 1 else np.zeros(len(R))
    return [np.flatnonzero(row <= ADJACENT * near + 1e-12) for row, near in zip(angles, nearest)]


def mixed_cells(cells: np.ndarray, reached: np.ndarray, orientations: OrientationSet
                ) -> np.ndarray:
    """(M, K) bool: the cells (voxel, bin) whose neighbourhood's verdicts disagree.

    Args:
        cells: (M, 3) voxel indices of the map.
        reached: (M, K) the verdicts at the cells' targets.
        orientations: the map's orientation bins (K of them).
    """
    reached = np.asarray(reached, bool)
    every = reached.copy()
    some = reached.copy()
    if len(cells):
        low = cells.min(axis=0) - 1
        shape = cells.max(axis=0) - low + 2
        rows = np.full(tuple(shape.tolist()), -1, np.int64)
        rows[tuple((cells - low).T)] = np.arange(len(cells))
        padded = np.vstack([reached, np.zeros((1, reached.shape[1]), bool)])  # row -1: none
        for step in itertools.product((-1, 0, 1), repeat=3):
            if step == (0, 0, 0):
                continue
            neighbour = padded[rows[tuple((cells - low + np.array(step)).T)]]
            every &= neighbour
            some |= neighbour
    for k, adjacent in enumerate(adjacent_bins(orientations)):
        if len(adjacent):
            every[:, k] &= reached[:, adjacent].all(axis=1)
            some[:, k] |= reached[:, adjacent].any(axis=1)
    return some & ~every
