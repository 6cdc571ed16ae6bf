#!/usr/bin/env python3
"""Where a fabrik solve spends its time, on the Python path and on the compiled path: per robot
the time per solve of each, interleaved in one process, their ratio, and the share of the passes
in each path's profile.

Single targets on serial chains (FK of random joints within the limits, random seeds, fixed RNG
seed), fabrik's defaults with a 60 s timeout (iteration caps end the solves, not the clock). The
same solves on two solvers of the same chain: one whose serial passes run in Python
(``fabrik/serial.py``, the reach checks in Python too), one whose passes run in the compiled
kernel (``fabrik/compiled.py``, the reach checks in one compiled call; loaded before timing);
rounds alternate which goes first, the medians over the rounds are reported. Then the same
solves under cProfile: the share of the passes' own time (Python: the passes and the
small-matrix helpers they call; compiled: ``CompiledFabrik.run`` and the kernel's calls).

Usage::

    python benchmarks/profile_fabrik.py              # planar4, leg3, arm6, ur5, panda (if present)
    python benchmarks/profile_fabrik.py --n 200 --rounds 6
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
from ik_node.solvers import kernels  # noqa: E402

SHARED_ROBOTS = REPO.parent / 'shared' / 'robots'
ROBOTS = {'planar4': (REPO / 'urdf' / 'planar4.urdf', 'base_link', 'tip'),
          'leg3': (REPO / 'urdf' / 'leg3.urdf', 'base_link', 'foot'),
          'arm6': (REPO / 'urdf' / 'arm6.urdf', 'base_link', 'tool0'),
          'ur5': (SHARED_ROBOTS / 'ur5.urdf', 'base_link', 'tool0'),
          'panda': (SHARED_ROBOTS / 'panda.urdf', 'panda_link0', 'panda_hand_tcp')}
#: The functions of the Python passes (fabrik/serial.py) and the small-matrix helpers they call.
PASSES = ('forward', 'backward', '_fit_points', 'rebuild', '_joint', '_tip', 'stretch',
          'mat_mul', 'vec_mat', '<genexpr>')


def _share(solver, calls, compiled: bool) -> float:
    """The passes' share [%] of the own time in the profile of ``calls``."""
    profiler = cProfile.Profile()
    profiler.enable()
    for p, q in calls:
        solver.solve(p, None, q)
    profiler.disable()
    stats = pstats.Stats(profiler).stats
    # pstats: (calls, primitive calls, own time, cumulative time, callers) per function.
    total = sum(own for (_, _, own, _, _) in stats.values())
    if compiled:  # the wrap and the kernel (cProfile sees the numba dispatcher's call)
        passes = sum(own for (file, _, func), (_, _, own, _, _) in stats.items()
                     if func in ('run', '_run_fabrik') and
                     file.endswith(os.path.join('fabrik', 'compiled.py')))
    else:
        passes = sum(own for (file, _, func), (_, _, own, _, _) in stats.items()
                     if func in PASSES and ('fabrik' in file or 'small_matrix' in file))
    return 100.0 * passes / total


def profile(name: str, n: int, rounds: int) -> str:
    path, base, tip = ROBOTS[name]
    chain = Chain.from_urdf_file(path, base, tip)
    solvers = {'python': make_solver('fabrik', chain, {'timeout': 60.0}),
               'compiled': make_solver('fabrik', chain, {'timeout': 60.0})}
    # Its serial passes and its reach checks run in Python.
    solvers['python']._compiled = solvers['python']._compiled_reach = None
    rng = np.random.default_rng(0)
    calls = [(chain.fk(rng.uniform(chain.lower, chain.upper))[:3, 3].copy(),
              rng.uniform(chain.lower, chain.upper)) for _ in range(n)]
    times = {label: [] for label in solvers}
    iterations = {}
    for r in range(rounds):
        order = list(solvers.items())
        for label, solver in order if r % 2 == 0 else order[::-1]:
            start = time.perf_counter()
            iterations[label] = sum(solver.solve(p, None, q).iterations for p, q in calls)
            times[label].append((time.perf_counter() - start) / n)
    python, fast = float(np.median(times['python'])), float(np.median(times['compiled']))
    same = 'yes' if iterations['python'] == iterations['compiled'] else 'no'
    return (f'| {name} | {python * 1e6:.0f} | {fast * 1e6:.0f} | {fast / python:.2f} | '
            f'{iterations["python"] / n:.1f} | {same} | '
            f'{_share(solvers["python"], calls, False):.0f} % | '
            f'{_share(solvers["compiled"], calls, True):.0f} % |')


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--n', type=int, default=100, help='targets per robot')
    parser.add_argument('--rounds', type=int, default=6, help='rounds per robot (alternating)')
    args = parser.parse_args(argv)
    if not kernels.wait():
        print(kernels.serving(), file=sys.stderr)
        return 1
    print(f'load average {os.getloadavg()[0]:.1f}; {kernels.serving()}')
    print('| robot | Python [us/solve] | compiled [us/solve] | compiled / Python | iterations '
          '| same iterations | passes (Python) | passes (compiled) |')
    print('|---|---|---|---|---|---|---|---|')
    for name, (path, _, _) in ROBOTS.items():
        if path.is_file():
            print(profile(name, args.n, args.rounds), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
