"""``ik-solve reach-map``: build a chain's sampled reachability map and write it to files.

    ik-solve reach-map --urdf arm6.urdf --base-link base_link --tip-link tool0 --out maps
    ik-solve reach-map --config twin_arm --samples 500000 --voxel 0.05 --json

For each tip (one, or every tip of a branched ``--config``) it writes ``reach_map_<tip>.npz``
(:func:`ik_node.reachability.save_npz`: ``numpy.load`` reads it), a PNG picture of one slice
(needs matplotlib, the ``demo`` extra; ``--no-png`` skips it) and with ``--ply`` a point cloud,
then prints a summary (``--json``: one JSON object). A sampled map under-approximates: a blank
voxel may still be reachable. Exit status 0, or 2 on bad arguments, configuration or URDF.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

from ik_node.cli.common import PROG, Parser, fail, flat_config
from ik_node.config.node_config import build_chain, config_from_flat
from ik_node.errors import ConfigError, IkError
from ik_node.reachability import (DEFAULT_DIRECTIONS, DEFAULT_SAMPLES, DEFAULT_VOXEL_M, PLANES,
                                  ReachabilityMap, build_reachability_map, map_slice, save_npz,
                                  save_ply)

COMMAND = 'reach-map'
EXIT_OK = 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``ik-solve reach-map``."""
    p = Parser(prog=f'{PROG} {COMMAND}',
                description='Sample a chain\'s joint space and write its reachability map '
                            '(NPZ, a PNG slice, optionally PLY).',
                epilog='A sampled map under-approximates the workspace: a voxel missing from '
                       'it may still be reachable. Exit status: 0 written, 2 error.')
    p.add_argument('--config', metavar='YAML',
                   help='ik_node parameters file (path, or a name in the package config/) '
                        'giving the robot, base and tip(s)')
    p.add_argument('--urdf', metavar='FILE',
                   help='URDF file: a path, or a name in the package urdf/ (e.g. arm6.urdf)')
    p.add_argument('--xacro-args', metavar='"KEY:=VALUE ..."',
                   help='arguments of a .xacro --urdf file, e.g. "prefix:=left_"')
    p.add_argument('--base-link', '--base', dest='base', metavar='LINK',
                   help='base link: the map\'s frame (default: base_link)')
    p.add_argument('--tip-link', '--tip', dest='tip', metavar='LINK', help='tip link')
    p.add_argument('--samples', type=int, default=DEFAULT_SAMPLES, metavar='N',
                   help=f'joint configurations to sample (default: {DEFAULT_SAMPLES})')
    p.add_argument('--voxel', type=float, default=DEFAULT_VOXEL_M, metavar='M',
                   help=f'voxel edge [m] (default: {DEFAULT_VOXEL_M})')
    p.add_argument('--directions', type=int, default=DEFAULT_DIRECTIONS, metavar='K',
                   help='approach-direction cells of the reachability index (default: '
                        f'{DEFAULT_DIRECTIONS})')
    p.add_argument('--seed', type=int, default=0, help='random seed (default: 0)')
    p.add_argument('--position-only', action='store_true',
                   help='bin positions only (default: when fewer than 6 joints move the tip)')
    p.add_argument('--plane', choices=sorted(PLANES), default='xz',
                   help='plane of the PNG slice (default: xz, a side view)')
    p.add_argument('--offset', type=float, default=0.0, metavar='M',
                   help='where the slice cuts the plane\'s normal axis [m] (default: 0)')
    p.add_argument('--out', type=Path, default=Path('.'), metavar='DIR',
                   help='output folder, created if missing (default: the current folder)')
    p.add_argument('--no-png', action='store_true', help='write no PNG (no matplotlib needed)')
    p.add_argument('--ply', action='store_true', help='also write a PLY point cloud')
    p.add_argument('--json', action='store_true', help='print one JSON object')
    return p


def _pyplot():
    """matplotlib's pyplot on the Agg backend, or a clear error when matplotlib is missing."""
    try:
        import matplotlib
    except ImportError:
        raise ConfigError('the PNG picture needs matplotlib: pip install matplotlib (or the '
                          'ik_node "demo" extra), or pass --no-png') from None
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    return plt


def plot_map_slice(reach_map: ReachabilityMap, path: Path, plane: str = 'xz',
                   offset: float = 0.0, note: Optional[str] = None) -> Path:
    """Write a PNG of one slice of ``reach_map`` (:func:`ik_node.reachability.map_slice`);
    ``note``: the title's second line (default: the samples, the voxel, what white means)."""
    plt = _pyplot()
    image = map_slice(reach_map, plane, offset)
    names = 'xyz'
    h, v, normal = PLANES[plane]
    fig, ax = plt.subplots(figsize=(7.0, 6.0))
    if image.index.size:
        half = 0.5 * reach_map.voxel_size
        extent = (image.h_centres[0] - half, image.h_centres[-1] + half,
                  image.v_centres[0] - half, image.v_centres[-1] + half)
        cmap = plt.get_cmap('viridis').with_extremes(bad='white')
        shown = ax.imshow(np.ma.masked_invalid(image.index), origin='lower', extent=extent,
                          cmap=cmap, vmin=0.0, vmax=1.0, interpolation='nearest')
        bar = fig.colorbar(shown, ax=ax, shrink=0.8)
        bar.set_label('reached (position-only map)' if reach_map.position_only else
                      f'reachability index: share of the {len(reach_map.directions)} '
                      'approach directions reached')
    ax.plot([0.0], [0.0], 's', color='black', markersize=6)
    ax.set_aspect('equal')
    ax.set_xlabel(f'{names[h]} [m] ({reach_map.base_link})')
    ax.set_ylabel(f'{names[v]} [m] ({reach_map.base_link})')
    if note is None:
        note = (f'{reach_map.samples} samples, voxel {reach_map.voxel_size:g} m; white: not '
                'sampled (may still be reachable)')
    ax.set_title(f'{reach_map.base_link} -> {reach_map.tip_link}: {plane} slice at '
                 f'{names[normal]} = {image.offset:.3g} m\n{note}', fontsize=10)
    ax.grid(True, lw=0.4, alpha=0.5)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def summary(reach_map: ReachabilityMap, files: Dict[str, str], seconds: float) -> Dict[str, Any]:
    """The JSON-ready summary of one map and the files written."""
    centres = reach_map.centres
    return {
        'base_link': reach_map.base_link, 'tip_link': reach_map.tip_link,
        'samples': reach_map.samples, 'voxel_size_m': reach_map.voxel_size,
        'voxels': len(reach_map), 'position_only': reach_map.position_only,
        'directions': len(reach_map.directions),
        'mean_index': float(reach_map.index.mean()) if len(reach_map) else 0.0,
        'extent_min_m': centres.min(axis=0).tolist() if len(reach_map) else None,
        'extent_max_m': centres.max(axis=0).tolist() if len(reach_map) else None,
        'build_time_s': round(seconds, 3), **files}


def human_lines(item: Dict[str, Any]) -> List[str]:
    """One map's summary as a few readable lines."""
    kind = ('position only' if item['position_only'] else
            f'mean index {item["mean_index"]:.3f} over {item["directions"]} directions')
    lines = [f'{item["base_link"]} -> {item["tip_link"]}: {item["voxels"]} voxels of '
             f'{item["voxel_size_m"]:g} m from {item["samples"]} samples in '
             f'{item["build_time_s"]:.2f} s ({kind})']
    lines += [f'  wrote {item[key]}' for key in ('npz', 'png', 'ply') if key in item]
    return lines


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of ``ik-solve reach-map``. Returns the exit status (0, or 2 on error)."""
    args = build_parser().parse_args(argv)
    try:
        if not args.no_png:
            _pyplot()  # fail before the build, not after it
        flat = flat_config(argparse.Namespace(config=args.config, urdf=args.urdf,
                                              xacro_args=args.xacro_args, base=args.base,
                                              tip=args.tip, solver=None, param=[]))
        config = config_from_flat(flat, source='command line')
        chain = build_chain(config)
        try:
            args.out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f'cannot create output folder {str(args.out)!r}: '
                              f'{exc.strerror}') from None
        items = []
        for tip in chain.tip_links:
            start = time.perf_counter()
            reach_map = build_reachability_map(
                chain, tip, samples=args.samples, voxel_size=args.voxel,
                directions=args.directions, seed=args.seed,
                position_only=True if args.position_only else None)
            seconds = time.perf_counter() - start
            stem = f'reach_map_{tip}'
            files = {'npz': str(save_npz(reach_map, args.out / f'{stem}.npz'))}
            if not args.no_png:
                files['png'] = str(plot_map_slice(reach_map, args.out / f'{stem}.png',
                                                  args.plane, args.offset))
            if args.ply:
                files['ply'] = str(save_ply(reach_map, args.out / f'{stem}.ply'))
            items.append(summary(reach_map, files, seconds))
    except IkError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f'cannot write to {str(args.out)!r}: {exc.strerror or exc}')
    if args.json:
        print(json.dumps({'maps': items}))
    else:
        print('\n'.join(line for item in items for line in human_lines(item)))
    return EXIT_OK
