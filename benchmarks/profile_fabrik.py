#!/usr/bin/env python3
"""Where a fabrik solve spends its time: per robot the time per solve and per iteration, and
the share of the passes (forward, backward with its fits, rebuild) in the solve's profile.

Single targets on serial chains (FK of random joints within the limits, random seeds, fixed RNG
seed), fabrik's defaults with a 60 s timeout (iteration caps end the solves, not the clock).
Timing first (``time.perf_counter`` around the solves), then the same solves under cProfile:
the share of each function's own time. A compiled kernel pays where the passes are most of a
solve.

Usage::

    python benchmarks/profile_fabrik.py              # planar4, leg3, arm6, ur5 (if present)
    python benchmarks/profile_fabrik.py --n 200
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from ik_node import Chain, make_solver  # noqa: E402

ROBOTS = {'planar4': (REPO / 'urdf' / 'planar4.urdf', 'base_link', 'tip'),
          'leg3': (REPO / 'urdf' / 'leg3.urdf', 'base_link', 'foot'),
          'arm6': (REPO / 'urdf' / 'arm6.urdf', 'base_link', 'tool0'),
          'ur5': (REPO.parent / 'shared' / 'robots' / 'ur5.urdf', 'base_link', 'tool0')}
#: The functions of the passes (fabrik/serial.py) and the small-matrix helpers they call.
PASSES = ('forward', 'backward', '_fit_points', 'rebuild', '_joint', '_tip', 'stretch',
          'mat_mul', 'vec_mat', '<genexpr>')


def profile(name: str, n: int) -> str:
    path, base, tip = ROBOTS[name]
    chain = Chain.from_urdf_file(path, base, tip)
    solver = make_solver('fabrik', chain, {'timeout': 60.0})
    rng = np.random.default_rng(0)
    calls = [(chain.fk(rng.uniform(chain.lower, chain.upper))[:3, 3].copy(),
              rng.uniform(chain.lower, chain.upper)) for _ in range(n)]
    start = time.perf_counter()
    iterations = sum(solver.solve(p, None, q).iterations for p, q in calls)
    elapsed = time.perf_counter() - start
    profiler = cProfile.Profile()
    profiler.enable()
    for p, q in calls:
        solver.solve(p, None, q)
    profiler.disable()
    stats = pstats.Stats(profiler).stats
    # pstats: (calls, primitive calls, own time, cumulative time, callers) per function.
    total = sum(own for (_, _, own, _, _) in stats.values())
    passes = sum(own for (file, _, func), (_, _, own, _, _) in stats.items()
                 if func in PASSES and ('fabrik' in file or 'small_matrix' in file))
    return (f'| {name} | {elapsed / n * 1e6:.0f} | {iterations / n:.1f} | '
            f'{elapsed / max(iterations, 1) * 1e6:.0f} | {100.0 * passes / total:.0f} % |')


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--n', type=int, default=100, help='targets per robot')
    args = parser.parse_args(argv)
    print(f'load average {os.getloadavg()[0]:.1f}')
    print('| robot | per solve [us] | iterations | per iteration [us] | passes |')
    print('|---|---|---|---|---|')
    for name, (path, _, _) in ROBOTS.items():
        if path.is_file():
            print(profile(name, args.n), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
