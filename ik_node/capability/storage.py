"""The capability map as a value, its NPZ file, its shards' files, and the pure merge.

A map folder holds ``capability_map.npz`` (``numpy.load`` reads it: the verdicts and which
cells are mixed (:mod:`.uniform`), each packed 8 per byte, the cells, the orientations, and a
JSON ``meta`` entry with the resolution, the robot and its description's sha256, the base and
tip links, the tool offset and how the cells were decided) and, while it is built,
``shards/<spec key>/shard_<k>.npz``, one per finished shard, each written to a temporary name
and renamed (a killed build leaves only whole shards, which a new build with the
same spec reuses).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Tuple

import numpy as np

from ik_node.capability.orientations import OrientationSet, orientation_set
from ik_node.capability.spec import MapSpec, shard_bounds
from ik_node.capability.uniform import mixed_cells
from ik_node.errors import ConfigError

MAP_FILE = 'capability_map.npz'
FORMAT = 'ik_node capability map 2'
#: Earlier formats :func:`load_map` reads (without ``mixed_bits``: derived on loading).
READABLE = (FORMAT, 'ik_node capability map 1')
#: A cell's three values (:attr:`CapabilityMap.verdicts`).
NONE, ALL, MIXED = 0, 1, 2
_SHARD = re.compile(r'shard_(\d{6})\.npz$')


@dataclasses.dataclass(frozen=True, eq=False)
class CapabilityMap:
    """An IK-verified capability map (immutable).

    Attributes:
        meta: the spec's values (not the description's text) and the build's figures:
            ``base_link``, ``tip_link``, ``robot``, ``description_sha256``, ``voxel_m``,
            ``directions``, ``rolls``, ``collisions``, ``table_z``, ``seed``, ``attempts``,
            ``descents``, ``key``, ``urdf_path`` (nothing that varies between two builds of
            one spec: the same spec gives the same file, byte for byte).
        cells: (M, 3) int64 voxel indices; cell ``m`` is centred on ``cells[m] * voxel_m``.
        reached: (M, K * R) bool: the target (cell centre, orientation bin) reached by IK.
        mixed: (M, K * R) bool: the cell is mixed, its neighbours' verdicts disagree
            (:mod:`.uniform`); None: derived from ``reached``.
    """

    meta: Mapping[str, Any]
    cells: np.ndarray
    reached: np.ndarray
    mixed: Optional[np.ndarray] = None

    def __post_init__(self):
        if self.mixed is None:
            object.__setattr__(self, 'mixed', mixed_cells(
                np.asarray(self.cells), self.reached, orientation_set(
                    int(self.meta['directions']), int(self.meta['rolls']))))
        for name in ('cells', 'reached', 'mixed'):
            array = np.array(getattr(self, name))
            array.setflags(write=False)
            object.__setattr__(self, name, array)
        object.__setattr__(self, 'meta', dict(self.meta))

    @property
    def voxel_m(self) -> float:
        """Voxel edge [m]."""
        return float(self.meta['voxel_m'])

    @functools.cached_property
    def orientations(self) -> OrientationSet:
        """The orientation bins (rebuilt from the directions and rolls)."""
        return orientation_set(int(self.meta['directions']), int(self.meta['rolls']))

    @functools.cached_property
    def verdicts(self) -> np.ndarray:
        """(M, K * R) uint8: :data:`NONE` (uniform, unreachable), :data:`ALL` (uniform,
        reachable) or :data:`MIXED` per cell."""
        return np.where(self.mixed, MIXED, np.where(self.reached, ALL, NONE)).astype(np.uint8)

    @property
    def tool_offset(self) -> Tuple[float, ...]:
        """The tool's pose in the tip frame (``x y z qx qy qz qw``), ``()`` for none."""
        return tuple(self.meta.get('tool_offset') or ())

    @property
    def index(self) -> np.ndarray:
        """(M,) the reachability index of each cell: the share of orientations reached."""
        return self.reached.mean(axis=1) if self.reached.shape[1] else np.zeros(len(self.cells))


def map_meta(spec: MapSpec, robot: str) -> Dict[str, Any]:
    """The ``meta`` of a map built from ``spec``."""
    values = dataclasses.asdict(spec)
    values.pop('urdf_text')
    values.pop('shard_cells')
    values.update(robot=robot, description_sha256=spec.description_hash, key=spec.key(),
                  format=FORMAT)
    return values


def merge(spec: MapSpec, robot: str, cells: np.ndarray, shards: Mapping[int, np.ndarray]
          ) -> CapabilityMap:
    """The map of ``spec`` from its shards' verdicts (``{k: (cells of shard k, K * R) bool}``),
    a pure function: the same shards give the same map whatever order they came in.

    Raises:
        ConfigError: a shard missing or of the wrong shape.
    """
    count = len(shard_bounds(cells, spec.shard_cells)) - 1
    missing = [k for k in range(count) if k not in shards]
    if missing:
        raise ConfigError(f'cannot merge: {len(missing)} of {count} shards missing '
                          f'(first: {missing[0]})')
    reached = np.concatenate([np.asarray(shards[k], bool) for k in range(count)]) if count \
        else np.zeros((0, spec.directions * spec.rolls), bool)
    if reached.shape != (len(cells), spec.directions * spec.rolls):
        raise ConfigError(f'cannot merge: the shards hold {reached.shape} verdicts, the map '
                          f'{len(cells)} cells x {spec.directions * spec.rolls} orientations')
    return CapabilityMap(map_meta(spec, robot), cells, reached)


def save_map(capability: CapabilityMap, folder: Path) -> Path:
    """Write ``capability`` to ``folder/capability_map.npz`` (atomically); returns the path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / MAP_FILE
    _atomic_savez(path, meta=np.array(json.dumps(capability.meta, sort_keys=True)),
                  cells=capability.cells,
                  reached_bits=np.packbits(capability.reached, axis=1),
                  mixed_bits=np.packbits(capability.mixed, axis=1),
                  orientations=np.array(capability.reached.shape[1]))
    return path


def load_map(folder: Path) -> CapabilityMap:
    """The map in ``folder`` (or the NPZ file itself).

    Raises:
        ConfigError: no map there, or a file that is not one.
    """
    path = Path(folder)
    if path.is_dir():
        path = path / MAP_FILE
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data['meta']))
            if meta.get('format') not in READABLE:
                raise ConfigError(f'{path}: not a capability map ({meta.get("format")!r})')
            count = int(data['orientations'])
            reached = np.unpackbits(data['reached_bits'], axis=1, count=count).astype(bool)
            mixed = (np.unpackbits(data['mixed_bits'], axis=1, count=count).astype(bool)
                     if 'mixed_bits' in data.files else None)
            meta['format'] = FORMAT
            return CapabilityMap(meta, data['cells'], reached, mixed)
    except FileNotFoundError:
        raise ConfigError(f'no capability map at {str(path)!r} (build one with ik-solve '
                          'capability-map --out DIR)') from None
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError(f'{str(path)!r} is not a readable capability map: {exc}') from None


def shard_folder(folder: Path, spec: MapSpec) -> Path:
    """Where the shards of ``spec`` are kept under a map folder."""
    return Path(folder) / 'shards' / spec.key()


def save_shard(folder: Path, index: int, reached: np.ndarray, seconds: float) -> Path:
    """Write one shard's verdicts (atomically: a killed build leaves whole files only)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f'shard_{index:06d}.npz'
    _atomic_savez(path, reached_bits=np.packbits(reached, axis=1),
                  orientations=np.array(reached.shape[1]), seconds=np.array(seconds))
    return path


def finished_shards(folder: Path) -> Dict[int, Path]:
    """The shard files already in ``folder``: ``{index: path}``."""
    if not folder.is_dir():
        return {}
    found = {}
    for path in folder.iterdir():
        match = _SHARD.match(path.name)
        if match:
            found[int(match.group(1))] = path
    return found


def load_shard(path: Path):
    """``(reached (cells, K * R) bool, seconds)`` of a shard file."""
    with np.load(path, allow_pickle=False) as data:
        reached = np.unpackbits(data['reached_bits'], axis=1,
                                count=int(data['orientations'])).astype(bool)
        return reached, float(data['seconds'])


def _atomic_savez(path: Path, **arrays) -> None:
    temporary = path.with_name(f'.{path.name}.{os.getpid()}.tmp')
    with open(temporary, 'wb') as handle:
        np.savez_compressed(handle, **arrays)
    os.replace(temporary, path)
