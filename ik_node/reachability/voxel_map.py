"""The immutable reachability map and the questions it answers (see :mod:`ik_node.reachability`
for what a sampled map does and does not prove)."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import NamedTuple, Tuple

import numpy as np

from ik_node.errors import ConfigError, TargetError

PLANES = {'xy': (0, 1, 2), 'xz': (0, 2, 1), 'yz': (1, 2, 0)}

# Voxel indices are packed into one int64 key: 17 bits per coordinate (offset by 2^16).
_BITS = 17
_OFFSET = 1 << (_BITS - 1)
_MASK = (1 << _BITS) - 1


@dataclass(frozen=True, eq=False)
class ReachabilityMap:
    """The sampled reachability map of one tip (immutable; arrays are read-only).

    Attributes:
        base_link: the frame of every position, the chain's base link.
        tip_link: the tip the map is of.
        joint_names: the joints that move the tip, in the order they were sampled.
        voxel_size: edge of a voxel [m].
        voxel_indices: ``(M, 3)`` int64; voxel ``v`` is centred on ``voxel_indices[v] *
            voxel_size`` [m]. Sorted (x, then y, then z index), one row per reached voxel.
        index: ``(M,)`` reachability index in (0, 1]: the share of ``directions`` reached in
            the voxel (1 everywhere for a position-only map).
        sample_counts: ``(M,)`` how many samples put the tip in the voxel.
        directions: ``(K, 3)`` unit approach directions of the index's bins (``(0, 3)`` when
            position-only).
        samples: how many configurations were sampled.
        seed: the random generator's seed.
        position_only: True when orientation was not binned.
    """

    base_link: str
    tip_link: str
    joint_names: Tuple[str, ...]
    voxel_size: float
    voxel_indices: np.ndarray
    index: np.ndarray
    sample_counts: np.ndarray
    directions: np.ndarray
    samples: int
    seed: int
    position_only: bool

    def __post_init__(self) -> None:
        for name in ('voxel_indices', 'index', 'sample_counts', 'directions'):
            array = np.array(getattr(self, name))  # a private copy, then frozen
            array.setflags(write=False)
            object.__setattr__(self, name, array)

    @property
    def centres(self) -> np.ndarray:
        """``(M, 3)`` voxel centres [m] in the base frame."""
        return self.voxel_indices * self.voxel_size

    def __len__(self) -> int:
        return len(self.index)

    def __repr__(self) -> str:
        kind = 'position only' if self.position_only else f'{len(self.directions)} directions'
        return (f'ReachabilityMap({self.base_link!r} -> {self.tip_link!r}: {len(self)} voxels '
                f'of {self.voxel_size:g} m, {self.samples} samples, {kind})')

    @functools.cached_property
    def _keys(self) -> np.ndarray:
        return _pack(self.voxel_indices)


class MapSlice(NamedTuple):
    """One layer of voxels of a map, as an image.

    ``index[r, c]`` is the index of the voxel centred on ``(h_centres[c], v_centres[r])`` in the
    plane's (horizontal, vertical) axes, NaN where the map has no voxel. The layer is the one
    whose centre along the plane's normal is ``offset`` [m].
    """

    plane: str
    offset: float
    h_centres: np.ndarray
    v_centres: np.ndarray
    index: np.ndarray


def reachability_index_at(reach_map: ReachabilityMap, point) -> float:
    """The index of the voxel containing ``point`` [m, base frame]; 0.0 when not in the map
    (which does not mean unreachable: see the module docstring)."""
    ijk = np.rint(_point(point) / reach_map.voxel_size).astype(np.int64)
    if np.any(np.abs(ijk) >= _OFFSET):
        return 0.0
    key = _pack(ijk[None, :])[0]
    at = int(np.searchsorted(reach_map._keys, key))
    if at < len(reach_map._keys) and reach_map._keys[at] == key:
        return float(reach_map.index[at])
    return 0.0


def nearest_reachable_distance(reach_map: ReachabilityMap, point, min_index: float = 0.0
                               ) -> float:
    """Distance [m] from ``point`` (base frame) to the nearest voxel of the map (its cube, so 0
    inside a voxel), among voxels whose index is at least ``min_index``; ``inf`` if none.

    What it proves: some sampled in-limit configuration puts the tip inside that voxel, so the
    chain can bring its tip within ``distance + sqrt(3) * voxel_size`` of ``point`` (an upper
    bound of the distance from ``point`` to the workspace). What it does not: the map is a
    sampled under-approximation, so a distance > 0 does not mean ``point`` is unreachable, nor
    that the workspace is that far away. Never use it to call a target unreachable.

    Cost: one pass over the map's voxels (O(M)).
    """
    p = _point(point)
    keep = reach_map.index >= min_index
    if not np.any(keep):
        return math.inf
    outside = np.abs(reach_map.centres[keep] - p) - 0.5 * reach_map.voxel_size
    return float(np.sqrt(np.min(np.sum(np.maximum(outside, 0.0) ** 2, axis=1))))


def map_slice(reach_map: ReachabilityMap, plane: str = 'xz', offset: float = 0.0) -> MapSlice:
    """The layer of voxels of ``plane`` (``'xy'``, ``'xz'`` or ``'yz'``) nearest ``offset`` [m]
    along the plane's normal, as an image over the whole map's extent in the plane."""
    if plane not in PLANES:
        raise ConfigError(f'plane {plane!r} is not one of: {", ".join(PLANES)}')
    h, v, normal = PLANES[plane]
    ijk = reach_map.voxel_indices
    layer = int(np.rint(float(offset) / reach_map.voxel_size))
    if len(ijk) == 0:
        empty = np.zeros(0)
        return MapSlice(plane, layer * reach_map.voxel_size, empty, empty, np.zeros((0, 0)))
    lo, hi = ijk.min(axis=0), ijk.max(axis=0)
    image = np.full((hi[v] - lo[v] + 1, hi[h] - lo[h] + 1), np.nan)
    here = ijk[:, normal] == layer
    image[ijk[here, v] - lo[v], ijk[here, h] - lo[h]] = reach_map.index[here]
    size = reach_map.voxel_size
    return MapSlice(plane, layer * size, np.arange(lo[h], hi[h] + 1) * size,
                    np.arange(lo[v], hi[v] + 1) * size, image)


def _pack(ijk: np.ndarray) -> np.ndarray:
    ijk = np.asarray(ijk, dtype=np.int64) + _OFFSET
    return (ijk[:, 0] << (2 * _BITS)) | (ijk[:, 1] << _BITS) | ijk[:, 2]


def _unpack(keys: np.ndarray) -> np.ndarray:
    keys = np.asarray(keys, dtype=np.int64)
    return np.column_stack([(keys >> (2 * _BITS)) & _MASK, (keys >> _BITS) & _MASK,
                            keys & _MASK]).astype(np.int64).reshape(-1, 3) - _OFFSET


def _point(point) -> np.ndarray:
    try:
        p = np.asarray(point, dtype=float)
    except (TypeError, ValueError):
        p = np.zeros(0)
    if p.shape != (3,) or not np.all(np.isfinite(p)):
        raise TargetError(f'point must be 3 finite coordinates [m], got {point!r}')
    return p
