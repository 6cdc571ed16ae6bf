#!/usr/bin/env python3
"""Time a reachability map build (:func:`ik_node.reachability.build_reachability_map`).

Robots: the Panda (``../shared/robots/panda.urdf``, panda_link0 -> panda_hand_tcp; skipped when
absent) and arm6 (``urdf/arm6.urdf``, base_link -> tool0), at the library defaults unless told
otherwise. Each build is timed with ``time.perf_counter`` around the whole call (sampling, FK,
binning, the final merge), after one untimed warm-up build of 20,000 samples; the median of
``--repeat`` builds is reported, with the fastest. Prints a markdown table row (and its header)::

    python -m benchmarks.reach.map_build
    python -m benchmarks.reach.map_build --samples 4000000 --voxel 0.05 --repeat 5
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from ik_node import Chain
from ik_node.reachability import (DEFAULT_DIRECTIONS, DEFAULT_SAMPLES,
                                  DEFAULT_VOXEL_M, build_reachability_map)

from benchmarks.common.robots import SHARED_ROBOTS

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / 'benchmarks' / 'results'

#: name -> (URDF, base link, tip link)
ROBOTS = {
    'panda': (SHARED_ROBOTS / 'panda.urdf', 'panda_link0', 'panda_hand_tcp'),
    'arm6': (REPO / 'urdf' / 'arm6.urdf', 'base_link', 'tool0'),
}


def time_builds(chain: Chain, repeat: int, **params):
    """(median [s], fastest [s], the last map) of ``repeat`` timed builds."""
    build_reachability_map(chain, **{**params, 'samples': 20_000})  # warm-up
    times, reach_map = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        reach_map = build_reachability_map(chain, **params)
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times), reach_map


def _commit() -> str:
    try:
        return subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], capture_output=True,
                              text=True, cwd=REPO, timeout=10).stdout.strip() or '?'
    except (OSError, subprocess.SubprocessError):
        return '?'


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--robots', nargs='+', choices=list(ROBOTS), default=list(ROBOTS))
    parser.add_argument('--samples', type=int, default=DEFAULT_SAMPLES)
    parser.add_argument('--voxel', type=float, default=DEFAULT_VOXEL_M, help='[m]')
    parser.add_argument('--directions', type=int, default=DEFAULT_DIRECTIONS)
    parser.add_argument('--repeat', type=int, default=3)
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f'--repeat must be >= 1, got {args.repeat}')
    cells = []
    for name in args.robots:
        path, base, tip = ROBOTS[name]
        if not path.is_file():
            cells.append(f'- ({path.name} absent)')
            continue
        chain = Chain.from_urdf_file(path, base, tip)
        median, fastest, reach_map = time_builds(
            chain, args.repeat, samples=args.samples, voxel_size=args.voxel,
            directions=args.directions)
        cells.append(f'{median:.2f} s (fastest {fastest:.2f}; {len(reach_map)} voxels, mean '
                     f'index {reach_map.index.mean():.3f})')
    load = '/'.join(f'{x:.1f}' for x in os.getloadavg()) if hasattr(os, 'getloadavg') else '?'
    machine = f'{platform.python_implementation()} {platform.python_version()}, ' \
              f'{os.cpu_count()} cpus, load {load}'
    header = ['date', 'commit', 'machine', 'samples', 'voxel [m]', 'directions',
              *(f'{name} build, median of {args.repeat}' for name in args.robots)]
    row = [datetime.date.today().isoformat(), _commit(), machine, f'{args.samples:,}',
           f'{args.voxel:g}', str(args.directions), *cells]
    print('| ' + ' | '.join(header) + ' |')
    print('|' + '---|' * len(header))
    print('| ' + ' | '.join(row) + ' |')
    return 0


if __name__ == '__main__':
    sys.exit(main())
