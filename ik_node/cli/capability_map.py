"""``ik-solve capability-map``: build an IK-verified capability map of a chain.

    ik-solve capability-map --urdf ur5e.urdf --base base_link --tip tool0 --voxel 0.05 \\
        --orientations 50 --collisions --out maps/ur5e
    ik-solve capability-map ... --workers 2                 this machine's process pool
    ik-solve capability-map ... --ray-address 10.0.0.5:6379 the same shards on a Ray cluster
    ik-solve capability-map ... --tool-offset 0 0 0.15      the poses of a tool 15 cm out

Writes ``DIR/capability_map.npz`` (:mod:`ik_node.capability.storage`), the shards on the way
(a killed build run again resumes), and ``DIR/reach_map_<tip>.npz``: the reachability index per
voxel in the format of ``ik-solve reach-map``, which the node's map display loads. Prints a
summary (``--json``: one JSON object). Exit status 0, or 2 on bad arguments, configuration,
URDF or an unreachable Ray address.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import List, Optional

import numpy as np

from ik_node.cli.common import PROG, Parser, fail, flat_config
from ik_node.errors import IkError

COMMAND = 'capability-map'


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``ik-solve capability-map``."""
    p = Parser(prog=f'{PROG} {COMMAND}',
               description='Decide every (voxel, tool orientation) of a chain\'s workspace by IK '
                           '(with the collision model) and write the capability map.',
               epilog='A voxel and orientation marked reachable was reached by IK at its '
                      'centre; one marked unreachable was not found by the attempts or is '
                      'proven out of reach. A cell whose neighbours disagree is mixed: queries '
                      'decide its poses by IK (see docs/capability.md for the measured '
                      'accuracy). Exit status: 0 written, 2 error.')
    p.add_argument('--config', metavar='YAML', help='ik_node parameters file giving the robot')
    p.add_argument('--urdf', metavar='FILE', help='URDF file (a path, or a name in urdf/)')
    p.add_argument('--xacro-args', metavar='"KEY:=VALUE ..."', help='arguments of a .xacro')
    p.add_argument('--base-link', '--base', dest='base', metavar='LINK', help='base link')
    p.add_argument('--tip-link', '--tip', dest='tip', metavar='LINK', help='tip link')
    p.add_argument('--voxel', type=float, required=True, metavar='M', help='voxel edge [m]')
    p.add_argument('--orientations', type=int, default=50, metavar='K',
                   help='approach directions, even on the sphere (default: 50)')
    p.add_argument('--rolls', type=int, default=1, metavar='R',
                   help='rolls about each approach direction (default: 1)')
    p.add_argument('--collisions', action='store_true',
                   help='reachable only when free of self-collision (and of the table)')
    p.add_argument('--table', type=float, metavar='Z',
                   help='a table plane at height Z [m] in the base frame (with --collisions)')
    p.add_argument('--attempts', type=int, default=3, metavar='A',
                   help='IK attempts per target: mid configuration, then random (default: 3)')
    p.add_argument('--descents', type=int, default=3, metavar='D',
                   help='stuck descents per attempt before it gives up (default: 3)')
    p.add_argument('--tool-offset', type=float, nargs='+', default=[], metavar='V',
                   help='the tool frame in the tip frame: X Y Z [m], X Y Z ROLL PITCH YAW '
                        '[rad] or X Y Z QX QY QZ QW; the map is of the tool\'s poses')
    p.add_argument('--seed', type=int, default=0, help='seed of the random attempts')
    p.add_argument('--shard-cells', type=int, default=64, metavar='N',
                   help='voxels per shard (default: 64)')
    p.add_argument('--out', type=Path, required=True, metavar='DIR', help='map folder')
    p.add_argument('--workers', type=int, default=0, metavar='N',
                   help='worker processes (default: one per core); with Ray: tasks in flight')
    p.add_argument('--ray-address', metavar='HOST:PORT',
                   help='run the shards on this Ray cluster (default: $RAY_ADDRESS if set, '
                        'else this machine); needs ik_node[scale]')
    p.add_argument('--png', action='store_true',
                   help='also write a PNG of the index on the xz plane (needs matplotlib)')
    p.add_argument('--no-progress', action='store_true', help='no progress bar on stderr')
    p.add_argument('--json', action='store_true', help='print one JSON object')
    return p


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of ``ik-solve capability-map``. Returns the exit status."""
    args = build_parser().parse_args(argv)
    from ik_node.capability import MapSpec, Progress, build_map
    from ik_node.config.node_config import build_chain, config_from_flat
    from ik_node.reachability import save_npz
    try:
        if args.workers < 0:
            fail(f'--workers {args.workers}: give 0 (one per core) or more')
        if args.png:
            from ik_node.cli.reach_map import _pyplot
            _pyplot()  # fail before the build, not after it
        if args.table is not None and not args.collisions:
            fail('--table needs --collisions (the table is part of the collision world)')
        flat = flat_config(argparse.Namespace(config=args.config, urdf=args.urdf,
                                              xacro_args=args.xacro_args, base=args.base,
                                              tip=args.tip, solver=None, param=[]))
        config = config_from_flat(flat, source='command line')
        chain = build_chain(config)
        if len(chain.tip_links) != 1:
            fail(f'a capability map is of one tip; give --tip (one of '
                 f'{", ".join(chain.tip_links)})')
        text = config.urdf_xml()
        path = ''
        if not config.robot_description and config.urdf_file:
            from ik_node.model.resources import urdf_path
            path = str(urdf_path(config.urdf_file))
        spec = MapSpec(text, config.base_link, chain.tip_links[0], args.voxel,
                       args.orientations, args.rolls, args.collisions, args.table, args.seed,
                       args.attempts, args.descents, args.shard_cells, path,
                       tuple(args.tool_offset))
        start = time.perf_counter()
        progress = None if args.no_progress else Progress(0, stream=sys.stderr)
        capability = build_map(spec, args.out, args.workers, args.ray_address, progress)
        seconds = time.perf_counter() - start
        reach = as_reach_map(capability, chain)
        reach_file = save_npz(reach, args.out / f'reach_map_{chain.tip_links[0]}.npz')
        picture = None
        if args.png:
            from ik_node.cli.reach_map import plot_map_slice
            picture = plot_map_slice(
                reach, args.out / f'capability_{chain.tip_links[0]}.png',
                note=f'IK-verified, voxel {spec.voxel_m:g} m; white: no orientation reached')
    except IkError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f'cannot write to {str(args.out)!r}: {exc.strerror or exc}')
    summary = {'base_link': spec.base_link, 'tip_link': spec.tip_link, 'voxel_m': spec.voxel_m,
               'cells': int(len(capability.cells)),
               'orientations': int(capability.reached.shape[1]),
               'targets': int(capability.reached.size),
               'reached_share': round(float(capability.reached.mean()), 4),
               'mixed_share': round(float(capability.mixed.mean()), 4),
               'tool_offset': list(spec.tool_offset),
               'collisions': spec.collisions, 'build_seconds': round(seconds, 2),
               'map': str(args.out / 'capability_map.npz'), 'reach_map': str(reach_file)}
    if picture is not None:
        summary['png'] = str(picture)
    if args.json:
        print(json.dumps(summary))
    else:
        print(f'{spec.base_link} -> {spec.tip_link}: {summary["cells"]} voxels of '
              f'{spec.voxel_m:g} m x {summary["orientations"]} orientations, '
              f'{100 * summary["reached_share"]:.1f} % reached, '
              f'{100 * summary["mixed_share"]:.1f} % mixed, {seconds:.1f} s\n'
              f'  wrote {summary["map"]}\n  wrote {summary["reach_map"]}' +
              (f'\n  wrote {picture}' if picture is not None else ''))
    return 0


def as_reach_map(capability, chain):
    """The map's reachability index per voxel as a :class:`ReachabilityMap` (voxels with at
    least one orientation reached), which the node's map display and ``reach-map`` read."""
    from ik_node.reachability import ReachabilityMap
    keep = capability.reached.any(axis=1)
    counts = capability.reached.sum(axis=1)
    return ReachabilityMap(
        base_link=capability.meta['base_link'], tip_link=capability.meta['tip_link'],
        joint_names=tuple(chain.joint_names), voxel_size=capability.voxel_m,
        voxel_indices=capability.cells[keep], index=capability.index[keep],
        sample_counts=counts[keep].astype(np.int64),
        directions=capability.orientations.directions, samples=int(capability.reached.size),
        seed=int(capability.meta['seed']), position_only=False)
