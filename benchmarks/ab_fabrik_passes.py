#!/usr/bin/env python3
"""A/B/C in one process: fabrik's serial passes compiled, in plain floats, and its numpy tree
passes.

All three run the same loop (:func:`ik_node.solvers.fabrik.iteration.iterate`, compiled whole
in :mod:`ik_node.solvers.fabrik.compiled`) on the same single-target problems of a serial chain
(random reachable targets and seeds, one RNG stream per robot), with the same settings, rounds
rotating which goes first. Reported per robot: the median time per iteration of each [us] over
the rounds, the ratios (floats over compiled, numpy over floats), and how many runs end with the
same iteration count in all three. The compiled kernel is loaded before timing.

Usage::

    python benchmarks/ab_fabrik_passes.py
    python benchmarks/ab_fabrik_passes.py --robots ur5 planar4 --n 100 --rounds 10
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SHARED_ROBOTS = REPO.parent / 'shared' / 'robots'
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from ik_node.model.chain import Chain  # noqa: E402
from ik_node.solvers import kernels  # noqa: E402
from ik_node.solvers.fabrik.compiled import CompiledFabrik  # noqa: E402
from ik_node.solvers.fabrik.iteration import FabrikProblem, FabrikSettings  # noqa: E402
from ik_node.solvers.fabrik.serial import SerialFabrik  # noqa: E402
from ik_node.solvers.fabrik.tree import FabrikTree  # noqa: E402

ROBOTS = {'planar4': (REPO / 'urdf' / 'planar4.urdf', 'base_link', 'tip'),
          'leg3': (REPO / 'urdf' / 'leg3.urdf', 'base_link', 'foot'),
          'arm6': (REPO / 'urdf' / 'arm6.urdf', 'base_link', 'tool0'),
          'ur5': (SHARED_ROBOTS / 'ur5.urdf', 'base_link', 'tool0'),
          'panda': (SHARED_ROBOTS / 'panda.urdf', 'panda_link0', 'panda_hand_tcp')}
#: The solver's defaults for a single target (tolerance [m], iterations, min improvement [m],
#: stall iterations, polish steps).
SETTINGS = FabrikSettings(1e-5, 100, 1e-9, 5, polish=10)


def compare(name: str, n: int, rounds: int) -> str:
    """One robot's line of the report."""
    path, base, tip = ROBOTS[name]
    chain = Chain.from_urdf_file(path, base, tip)
    tree = FabrikTree(chain)
    serial = SerialFabrik(tree)
    rng = np.random.default_rng(0)
    low, high = np.maximum(chain.lower, -np.pi), np.minimum(chain.upper, np.pi)
    problems = [FabrikProblem(rng.uniform(low, high), (0,),
                              chain.fk(rng.uniform(low, high))[:3, 3][None, :], np.ones(1),
                              stop_when_stuck=True) for _ in range(n)]
    passes = [('compiled', CompiledFabrik(serial)), ('floats', serial), ('numpy', tree)]
    times = {label: [] for label, _ in passes}
    iterations = {}
    for r in range(rounds):
        for label, runner in passes[r % 3:] + passes[:r % 3]:
            start = time.perf_counter()
            runs = [runner.run(p, SETTINGS) for p in problems]
            total = sum(run.iterations for run in runs)
            times[label].append((time.perf_counter() - start) / max(total, 1) * 1e6)
            iterations[label] = [run.iterations for run in runs]
    same = sum(a == b == c for a, b, c in zip(iterations['compiled'], iterations['floats'],
                                               iterations['numpy'], strict=True))
    fast, floats, numpy_ = (float(np.median(times[label])) for label, _ in passes)
    return (f'| {name} | {fast:.2f} | {floats:.1f} | {numpy_:.1f} | {floats / fast:.1f} | '
            f'{numpy_ / floats:.2f} | {same} of {n} |')


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--robots', nargs='+', default=list(ROBOTS), choices=list(ROBOTS))
    parser.add_argument('--n', type=int, default=40, help='problems per robot')
    parser.add_argument('--rounds', type=int, default=6,
                        help='rounds per robot (rotating the order)')
    args = parser.parse_args(argv)
    if not kernels.wait():
        print(kernels.serving(), file=sys.stderr)
        return 1
    print('| robot | compiled [us/iteration] | floats [us/iteration] | numpy [us/iteration] | '
          'floats / compiled | numpy / floats | same iterations |')
    print('| --- | --- | --- | --- | --- | --- | --- |')
    for name in args.robots:
        print(compare(name, args.n, args.rounds), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
