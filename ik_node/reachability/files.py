"""Reachability maps on disk: NPZ (numpy alone reads it) and PLY point clouds."""

from __future__ import annotations

from pathlib import Path
from typing import Union

import numpy as np

from ik_node.errors import IkError
from ik_node.reachability.voxel_map import ReachabilityMap

#: Version of the NPZ layout written by :func:`save_npz`.
NPZ_FORMAT = 1


class MapFileError(IkError, ValueError):
    """A file is not a reachability map written by :func:`save_npz`."""


def save_npz(reach_map: ReachabilityMap, path: Union[str, Path]) -> Path:
    """Write the map as a compressed NPZ that ``numpy.load(path)`` reads (no pickles).

    Keys: ``centres`` (M, 3) [m], ``voxel_indices`` (M, 3), ``index`` (M,), ``sample_counts``
    (M,), ``directions`` (K, 3), ``voxel_size`` [m], ``samples``, ``seed``, ``position_only``,
    ``base_link``, ``tip_link``, ``joint_names`` (strings), ``format`` (layout version).

    Returns:
        The path written (numpy adds ``.npz`` when missing).
    """
    path = Path(path)
    if path.suffix != '.npz':
        path = path.with_name(path.name + '.npz')
    np.savez_compressed(
        path, format=np.int64(NPZ_FORMAT), centres=reach_map.centres,
        voxel_indices=reach_map.voxel_indices, index=reach_map.index,
        sample_counts=reach_map.sample_counts, directions=reach_map.directions,
        voxel_size=np.float64(reach_map.voxel_size), samples=np.int64(reach_map.samples),
        seed=np.int64(reach_map.seed), position_only=np.bool_(reach_map.position_only),
        base_link=np.str_(reach_map.base_link), tip_link=np.str_(reach_map.tip_link),
        joint_names=np.array(reach_map.joint_names, dtype=np.str_))
    return path


def load_npz(path: Union[str, Path]) -> ReachabilityMap:
    """Read a map written by :func:`save_npz`.

    Raises:
        MapFileError: the file cannot be read, or lacks a key, or has another format version.
    """
    keys = ('format', 'voxel_indices', 'index', 'sample_counts', 'directions', 'voxel_size',
            'samples', 'seed', 'position_only', 'base_link', 'tip_link', 'joint_names')
    try:
        with np.load(path, allow_pickle=False) as data:
            missing = [k for k in keys if k not in data.files]
            if missing:
                raise MapFileError(f'{str(path)!r} is not a reachability map: missing '
                                   f'{", ".join(missing)}')
            values = {k: data[k] for k in keys}
    except (OSError, ValueError) as exc:
        if isinstance(exc, MapFileError):
            raise
        raise MapFileError(f'cannot read reachability map {str(path)!r}: {exc}') from None
    if int(values['format']) != NPZ_FORMAT:
        raise MapFileError(f'{str(path)!r} has map format {int(values["format"])}; this '
                           f'version reads format {NPZ_FORMAT}')
    return ReachabilityMap(
        str(values['base_link']), str(values['tip_link']),
        tuple(str(n) for n in values['joint_names']), float(values['voxel_size']),
        values['voxel_indices'].astype(np.int64), values['index'].astype(float),
        values['sample_counts'].astype(np.int64), values['directions'].astype(float),
        int(values['samples']), int(values['seed']), bool(values['position_only']))


#: Colour stops (index 0 -> 1) of the PLY point colours: dark purple, blue, green, yellow.
_STOPS = np.array([[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]])


def colours_from_index(index: np.ndarray) -> np.ndarray:
    """``(M, 3)`` uint8 RGB of indices in [0, 1] (a viridis-like ramp, yellow = 1)."""
    x = np.clip(np.asarray(index, dtype=float), 0.0, 1.0) * (len(_STOPS) - 1)
    return np.rint(np.column_stack([np.interp(x, np.arange(len(_STOPS)), _STOPS[:, c])
                                    for c in range(3)])).astype(np.uint8)


def save_ply(reach_map: ReachabilityMap, path: Union[str, Path]) -> Path:
    """Write the voxel centres as an ASCII PLY point cloud: ``x y z`` [m], ``red green blue``
    (:func:`colours_from_index`) and ``reachability_index`` per point."""
    path = Path(path)
    rgb = colours_from_index(reach_map.index)
    header = ['ply', 'format ascii 1.0',
              f'comment reachability map {reach_map.base_link} -> {reach_map.tip_link}, '
              f'voxel {reach_map.voxel_size:g} m, {reach_map.samples} samples',
              f'element vertex {len(reach_map)}', 'property float x', 'property float y',
              'property float z', 'property uchar red', 'property uchar green',
              'property uchar blue', 'property float reachability_index', 'end_header']
    rows = [f'{x:.6g} {y:.6g} {z:.6g} {r} {g} {b} {i:.6g}' for (x, y, z), (r, g, b), i
            in zip(reach_map.centres.tolist(), rgb.tolist(), reach_map.index.tolist())]
    path.write_text('\n'.join(header + rows) + '\n')
    return path
