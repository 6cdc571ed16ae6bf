"""What a capability map is of: the robot, the grid, the orientations, the collision world and
how each cell is decided; the cells and how they are split into shards.

A :class:`MapSpec` is a small frozen value: a worker process (or a Ray task) given the spec and
a shard number computes that shard alone, so the map does not depend on how many workers built
it. The grid's cells are the voxel centres ``index * voxel_m`` (the convention of
:mod:`ik_node.reachability`) within the chain's proven reach sphere (a centre outside it is out
of reach, no IK needed); they are listed in x, y, z index order and cut into shards of
whole columns (one x, y) of about ``shard_cells`` cells.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from typing import Optional, Tuple

import numpy as np

from ik_node.errors import ConfigError

#: Most cells a map may have, and most cells times orientations (each an IK problem).
MAX_CELLS = 20_000_000
MAX_TARGETS = 2_000_000_000
#: The version of how targets are decided (:mod:`.decide`): a part of every map's key, so
#: shards decided another way are not reused.
DECISION_VERSION = 4
#: Smallest voxel edge [m].
MIN_VOXEL_M = 1e-3


@dataclasses.dataclass(frozen=True)
class MapSpec:
    """The description of one capability map (everything a shard needs to be computed).

    Attributes:
        urdf_text: the robot description (URDF XML).
        urdf_path: where it was read from ('' for none): a worker reads meshes relative to it.
        base_link, tip_link: the chain; the map's frame is the base link.
        voxel_m: voxel edge [m].
        directions: approach directions on the sphere.
        rolls: rolls about each approach direction.
        collisions: decide with the self-collision and world check.
        table_z: a table (the collision world's ground plane) at this height in the base frame
            [m], or None.
        seed: of the extra IK seeds (the same seed gives the same map).
        attempts: IK attempts per target: from the mid configuration, then from
            ``attempts - 1`` fixed random configurations.
        descents: stuck descents (the seed's and restarts) per attempt before it gives up.
        shard_cells: cells per shard.
        tool_offset: the tool's pose in the tip frame, ``(x, y, z, qx, qy, qz, qw)``, or ``()``
            (:mod:`.tool`): the map is of the tool's poses.
    """

    urdf_text: str
    base_link: str
    tip_link: str
    voxel_m: float
    directions: int
    rolls: int = 1
    collisions: bool = False
    table_z: Optional[float] = None
    seed: int = 0
    attempts: int = 3
    descents: int = 3
    shard_cells: int = 64
    urdf_path: str = ''
    tool_offset: Tuple[float, ...] = ()

    def __post_init__(self):
        from ik_node.capability.tool import tool_offset
        object.__setattr__(self, 'tool_offset', tool_offset(self.tool_offset))
        if not (isinstance(self.voxel_m, (int, float)) and math.isfinite(self.voxel_m) and
                self.voxel_m >= MIN_VOXEL_M):
            raise ConfigError(f'voxel {self.voxel_m!r} m: give a finite edge >= {MIN_VOXEL_M} m')
        for name, low in (('attempts', 1), ('descents', 1), ('shard_cells', 1)):
            value = getattr(self, name)
            if int(value) != value or value < low:
                raise ConfigError(f'{name} {value!r}: give a whole number >= {low}')
        if self.table_z is not None and not math.isfinite(self.table_z):
            raise ConfigError(f'table height {self.table_z!r} m is not finite')

    @property
    def description_hash(self) -> str:
        """sha256 of the robot description's text."""
        return hashlib.sha256(self.urdf_text.encode()).hexdigest()

    def key(self) -> str:
        """A hash of everything that decides the map's verdicts (not ``urdf_path``): shards
        written under another key are not reused."""
        values = dataclasses.asdict(self)
        values.pop('urdf_text')
        values.pop('urdf_path')
        if not self.tool_offset:
            values.pop('tool_offset')  # the key of a map without a tool as it was before
        values['description'] = self.description_hash
        values['decision'] = DECISION_VERSION
        return hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()[:16]


def reach_sphere(chain) -> Tuple[np.ndarray, float]:
    """The centre [m] and radius [m] of a sphere holding every position the tip reaches."""
    from ik_node.model.chain import chain_lengths
    from ik_node.solvers.geometry.reach_bound import reach_bound
    bound = reach_bound(chain)
    if bound is not None:
        return np.array(bound.origin, dtype=float), float(bound.reach)
    return np.zeros(3), float(sum(chain_lengths(chain)))


def grid_cells(centre: np.ndarray, radius: float, voxel_m: float, orientations: int
               ) -> np.ndarray:
    """(M, 3) int64 voxel indices whose centres ``index * voxel_m`` lie within ``radius`` [m]
    of ``centre``, in x, y, z order.

    Raises:
        ConfigError: more than :data:`MAX_CELLS` cells, or more than :data:`MAX_TARGETS`
            cells times ``orientations`` (the message says how many and what to change).
    """
    low = np.floor((centre - radius) / voxel_m).astype(np.int64)
    high = np.ceil((centre + radius) / voxel_m).astype(np.int64)
    box = int(np.prod(high - low + 1))
    estimate = int(box * math.pi / 6.0)  # the sphere's share of its box
    if estimate > MAX_CELLS or estimate * orientations > MAX_TARGETS:
        raise ConfigError(
            f'a {voxel_m:g} m grid over the reach sphere (radius {radius:.3g} m) has about '
            f'{estimate:,} cells x {orientations} orientations = {estimate * orientations:,} '
            f'IK targets; at most {MAX_CELLS:,} cells and {MAX_TARGETS:,} targets: use a '
            'larger voxel or fewer orientations')
    axes = [np.arange(lo, hi + 1) for lo, hi in zip(low.tolist(), high.tolist(), strict=True)]
    cells = []
    for ix in axes[0]:  # one x slab at a time: the box may be large
        grid = np.stack(np.meshgrid([ix], axes[1], axes[2], indexing='ij'), -1).reshape(-1, 3)
        inside = np.linalg.norm(grid * voxel_m - centre, axis=1) <= radius
        cells.append(grid[inside])
    return np.concatenate(cells) if cells else np.zeros((0, 3), np.int64)


def shard_bounds(cells: np.ndarray, shard_cells: int) -> np.ndarray:
    """(S + 1,) where each shard's rows of the cell list begin, and the end: whole columns of
    cells (one x, y; the list is in x, y, z order) of at least ``shard_cells`` cells each (the
    last may hold fewer)."""
    if not len(cells):
        return np.zeros(1, np.int64)
    changes = np.flatnonzero(np.any(cells[1:, :2] != cells[:-1, :2], axis=1)) + 1
    column_starts = np.concatenate([[0], changes]).tolist()
    bounds = [0]
    for start in column_starts[1:]:
        if start - bounds[-1] >= shard_cells:
            bounds.append(start)
    bounds.append(len(cells))
    return np.array(bounds, np.int64)


def column_starts(cells: np.ndarray) -> np.ndarray:
    """(M,) bool: the cell begins a column (its x, y differ from the cell before)."""
    starts = np.ones(len(cells), bool)
    starts[1:] = np.any(cells[1:, :2] != cells[:-1, :2], axis=1)
    return starts


def spec_of_map(meta, urdf_text: str, urdf_path: str = '') -> MapSpec:
    """The :class:`MapSpec` a map with ``meta`` was built from, given its description's text
    (the shard size, which decides no verdict, is the default)."""
    names = [f.name for f in dataclasses.fields(MapSpec)
             if f.name not in ('urdf_text', 'urdf_path', 'shard_cells')]
    values = {name: meta[name] for name in names if name in meta}
    values['tool_offset'] = tuple(values.get('tool_offset') or ())
    return MapSpec(urdf_text=urdf_text, urdf_path=urdf_path, **values)
