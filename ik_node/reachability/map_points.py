"""What a picture of a reachability map draws: a bounded set of points with a value each.

Filled voxels hide what is inside them and cost a renderer one box each; a picture that keeps
the robot visible draws one small point per voxel instead, at most ``max_points`` of them
(neighbouring voxels are merged into blocks of 1.25, 1.5, 2, ... voxels a side until they fit:
a block holds the voxels whose centres fall in it, and its point is their mean), each
with a value in [0, 1] for a colour scale:

* maps that bin approach directions: the reachability index (the share of directions reached);
* position-only maps: the depth inside the sampled workspace, in voxel steps from the nearest
  voxel the map does not hold, scaled so the boundary layer is 0 and the deepest voxel 1. A flat
  map (a planar chain's: one voxel thick) is measured in its own plane, else every voxel of it
  would be on the boundary.

The depth is a picture of the *sampled* map: a voxel on its boundary may lie deep inside the true
workspace where sampling was sparse (see :mod:`ik_node.reachability` for what a map proves).

Imports numpy only.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ik_node.errors import ConfigError
from ik_node.reachability.voxel_map import ReachabilityMap

#: Default bound on the points of one map's picture.
DEFAULT_MAX_POINTS = 2000
#: Block edges [voxels] tried in turn until the points fit (then doubling).
MERGE_FACTORS = (1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0)
INDEX_SCALE = 'reachability index (share of approach directions reached)'
DEPTH_SCALE = 'depth inside the sampled workspace (0 at its boundary, 1 deepest)'


class MapPoints(NamedTuple):
    """The points of one map's picture.

    Attributes:
        tip_link: the tip the map is of.
        points: ``(K, 3)`` positions [m] in the map's base frame (voxel or block centres).
        value: ``(K,)`` colour-scale values in [0, 1] (the mean over a block's voxels).
        scale: what ``value`` measures (:data:`INDEX_SCALE` or :data:`DEPTH_SCALE`).
        spacing: distance between neighbouring points [m] (the voxel edge times the merge
            factor, the edge of a block in voxels).
    """

    tip_link: str
    points: np.ndarray
    value: np.ndarray
    scale: str
    spacing: float


def boundary_depth(reach_map: ReachabilityMap) -> np.ndarray:
    """``(M,)`` int: each voxel's distance in face-neighbour steps to the nearest voxel position
    the map does not hold (1 for a voxel on the map's boundary).

    A map one voxel thick along an axis is measured across the other axes only.
    """
    ijk = np.asarray(reach_map.voxel_indices, dtype=np.int64)
    if len(ijk) == 0:
        return np.zeros(0, dtype=np.int64)
    lo = ijk.min(axis=0)
    extent = ijk.max(axis=0) - lo + 1
    axes = [a for a in range(3) if extent[a] > 1] or [0]
    cells = ijk[:, axes] - lo[axes] + 1  # one empty cell of padding on every side
    grid = np.zeros(tuple(int(extent[a]) + 2 for a in axes), dtype=bool)
    grid[tuple(cells.T)] = True
    depth = np.zeros(grid.shape, dtype=np.int64)
    inside, level = grid, 0
    while inside.any():
        level += 1
        depth[inside] = level
        kept = inside.copy()
        for axis in range(grid.ndim):  # the padding makes the wrap-around bring in empty cells
            kept &= np.roll(inside, 1, axis) & np.roll(inside, -1, axis)
        inside = kept
    return depth[tuple(cells.T)]


def map_points(reach_map: ReachabilityMap, max_points: int = DEFAULT_MAX_POINTS) -> MapPoints:
    """At most ``max_points`` points of ``reach_map`` with their colour-scale values.

    Raises:
        ConfigError: ``max_points`` is not a positive integer.
    """
    if isinstance(max_points, bool) or not isinstance(max_points, (int, np.integer)) or \
            max_points < 1:
        raise ConfigError(f'max_points must be a positive integer, got {max_points!r}')
    if reach_map.position_only:
        depth = boundary_depth(reach_map).astype(float)
        deepest = float(depth.max()) if len(depth) else 1.0
        value = (depth - 1.0) / (deepest - 1.0) if deepest > 1.0 else np.ones_like(depth)
        scale = DEPTH_SCALE
    else:
        value, scale = np.asarray(reach_map.index, dtype=float), INDEX_SCALE
    ijk = np.asarray(reach_map.voxel_indices, dtype=np.int64)
    size = float(reach_map.voxel_size)
    factors = iter(MERGE_FACTORS)
    factor = next(factors)
    blocks, inverse = ijk, np.arange(len(ijk))
    while len(blocks) > max_points:
        factor = next(factors, None) or 2.0 * factor
        blocks, inverse = np.unique(np.floor(ijk / factor).astype(np.int64), axis=0,
                                    return_inverse=True)
        inverse = inverse.reshape(-1)
    counts = np.bincount(inverse, minlength=len(blocks)).astype(float)
    centres = ijk * size
    points = np.column_stack([np.bincount(inverse, centres[:, a], len(blocks)) for a in
                              range(3)]) / counts[:, None] if len(ijk) else np.zeros((0, 3))
    mean = np.bincount(inverse, value, len(blocks)) / counts if len(ijk) else np.zeros(0)
    return MapPoints(reach_map.tip_link, points, np.clip(mean, 0.0, 1.0), scale, size * factor)
