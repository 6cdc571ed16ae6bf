"""Equal-area cells of the sphere of directions: the orientation bins of the reachability index."""

from __future__ import annotations

import math
from typing import List

import numpy as np

from ik_node.errors import ConfigError

#: Most cells :class:`DirectionBins` makes (a voxel-direction pair is packed into 63 bits).
MAX_DIRECTIONS = 1 << 12


class DirectionBins:
    """``count`` equal-area cells of the unit sphere of directions, and the cell of a direction.

    A zonal partition (Leopardi's recursive zonal equal-area partition, one level): two polar
    caps of one cell each and rings of latitude between them, each ring cut into equal azimuth
    sectors; the rings' heights in z are chosen so that every cell has area exactly
    ``4 pi / count`` (on a sphere, area is proportional to height in z). Ring widths are about
    one cell side, so cells are roughly square. ``count`` 1 is the whole sphere, 2 two halves.

    Attributes:
        count: number of cells.
        centres: ``(count, 3)`` unit vectors, each cell's centre (mid z, mid azimuth).
    """

    def __init__(self, count: int) -> None:
        if isinstance(count, bool) or int(count) != count or not 1 <= count <= MAX_DIRECTIONS:
            raise ConfigError(f'directions must be a whole number in [1, {MAX_DIRECTIONS}], '
                              f'got {count!r}')
        self.count = int(count)
        sectors = self._ring_sectors(self.count)
        cumulative = np.concatenate([[0], np.cumsum(sectors)])
        #: z of each ring's top edge, then the bottom (-1): ring r spans z_edges[r + 1 .. r]
        self._z_edges = 1.0 - 2.0 * cumulative / self.count
        self._sectors = np.array(sectors)
        self._first = cumulative[:-1]
        centres = []
        for r, n in enumerate(sectors):
            z = 0.5 * (self._z_edges[r] + self._z_edges[r + 1])
            if r in (0, len(sectors) - 1) and n == 1:  # a cap: its centre is the pole
                z = 1.0 if r == 0 else -1.0
            radius = math.sqrt(max(0.0, 1.0 - z * z))
            azimuth = (np.arange(n) + 0.5) * 2.0 * math.pi / n
            centres += [(radius * math.cos(a), radius * math.sin(a), z) for a in azimuth]
        self.centres = np.array(centres, dtype=float).reshape(-1, 3)

    @staticmethod
    def _ring_sectors(count: int) -> List[int]:
        if count <= 2:
            return [1] * count
        cell = 4.0 * math.pi / count
        cap = math.acos(1.0 - 2.0 / count)  # polar angle of a one-cell cap
        rings = max(1, round((math.pi - 2.0 * cap) / math.sqrt(cell)))
        width = (math.pi - 2.0 * cap) / rings
        sectors, carry = [1], 0.0
        for r in range(rings):
            top, bottom = cap + r * width, cap + (r + 1) * width
            ideal = 2.0 * math.pi * (math.cos(top) - math.cos(bottom)) / cell + carry
            n = max(1, round(ideal))
            carry = ideal - n
            sectors.append(n)
        sectors[-1] += count - 2 - sum(sectors[1:])  # rounding leftovers go to the last ring
        return sectors + [1]

    def bin_of(self, x: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
        """The cell index of each direction ``(x, y, z)`` (unit vectors, arrays of one shape)."""
        ring = np.searchsorted(-self._z_edges[1:-1], -np.asarray(z), side='right')
        turns = np.arctan2(y, x) * (0.5 / math.pi) % 1.0
        sector = np.minimum((turns * self._sectors[ring]).astype(np.int64),
                            self._sectors[ring] - 1)
        return self._first[ring] + sector
