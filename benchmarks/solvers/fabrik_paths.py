#!/usr/bin/env python3
"""A/B/C in one process: fabrik's serial passes compiled, in plain floats, and its numpy tree
passes; with ``--trees``, A/B: whole solves of twin_arm's tree, its passes compiled or numpy.

All three run the same loop (:func:`ik_node.solvers.fabrik.iteration.iterate`, compiled whole
in :mod:`ik_node.solvers.fabrik.compiled`) on the same single-target problems of a serial chain
(random reachable targets and seeds, one RNG stream per robot), with the same settings, rounds
rotating which goes first. Reported per robot: the median time per iteration of each [us] over
the rounds, the ratios (floats over compiled, numpy over floats), and how many runs end with the
same iteration count in all three. The compiled kernel is loaded before timing.

``--trees``: ``fabrik`` with twin_arm's config (``config/twin_arm.yaml``: tolerance 0.1 mm, 300
iterations, ``timeout`` 50 ms) on both hands, and the same on the left hand and the two right
fingers, solving ``--n`` random compatible targets (FK of joint vectors uniform within the
limits, one RNG) from the mid configuration, the compiled path (the tree passes compiled, see
:mod:`ik_node.solvers.fabrik.compiled_tree`) and the Python path (the numpy tree passes)
interleaved target by target, alternating which goes first. Reported per case: the median, p90,
p99 and max solve time [us] of each path, the ratio of the medians, success (every tip reached,
by FK, within the 50 ms budget; and within 5 ms) and how many solves end with the same status
and iteration count on both paths.

Usage::

    python -m benchmarks.solvers.fabrik_paths
    python -m benchmarks.solvers.fabrik_paths --robots ur5 planar4 --n 100 --rounds 10
    python -m benchmarks.solvers.fabrik_paths --trees --n 300
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from ik_node import make_solver
from ik_node.model.chain import Chain
from ik_node import kernels
from ik_node.solvers.fabrik.compiled_runs import CompiledFabrik
from ik_node.solvers.fabrik.iteration import FabrikProblem, FabrikSettings
from ik_node.solvers.fabrik.serial import SerialFabrik
from ik_node.solvers.fabrik.tree import FabrikTree

from benchmarks.common.robots import SHARED_ROBOTS

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / 'benchmarks' / 'results'

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


TREES = {'twin_arm hands': ['left_hand', 'right_hand'],
         'twin_arm hand + fingers': ['left_hand', 'right_finger_a', 'right_finger_b']}


def compare_tree(name: str, n: int) -> str:
    """One tree's line of the ``--trees`` report."""
    import yaml
    config = yaml.safe_load((REPO / 'config' / 'twin_arm.yaml').read_text())
    params = config['ik_node']['ros__parameters']['fabrik']
    budget = float(params['timeout'])
    chain = Chain.from_urdf_file(REPO / 'urdf' / 'twin_arm.urdf', 'base_link', TREES[name])
    paths = {'compiled': make_solver('fabrik', chain, params),
             'python': make_solver('fabrik', chain, params)}
    paths['python']._compiled_tree = None  # the numpy tree passes
    assert paths['compiled']._compiled_tree is not None and \
        paths['compiled']._compiled_tree.ready()
    rng = np.random.default_rng(0)
    seed = chain.mid_configuration()
    times = {label: [] for label in paths}
    ok = {label: [] for label in paths}
    fast = {label: [] for label in paths}
    same = 0
    labels = list(paths)
    for i in range(n):
        T = chain.fk_tips(rng.uniform(chain.lower, chain.upper))
        targets = {tip: T[tip][:3, 3] for tip in chain.tip_links}
        results = {}
        for label in labels[i % 2:] + labels[:i % 2]:
            start = time.perf_counter()
            result = paths[label].solve(targets=targets, seed=seed)
            elapsed = time.perf_counter() - start
            T_out = chain.fk_tips(result.joint_positions)
            reached = all(float(np.linalg.norm(T_out[tip][:3, 3] - p)) <=
                          params['position_tolerance'] for tip, p in targets.items())
            assert chain.within_limits(result.joint_positions)
            times[label].append(elapsed * 1e6)
            ok[label].append(reached and elapsed <= budget)
            fast[label].append(reached and elapsed <= 0.005)
            results[label] = result
        a, b = results['compiled'], results['python']
        same += (a.status, a.iterations) == (b.status, b.iterations)
    cells = []
    for label in labels:
        t = np.array(times[label])
        cells.append(f'{np.median(t):.0f} / {np.percentile(t, 90):.0f} / '
                     f'{np.percentile(t, 99):.0f} / {t.max():.0f}')
    ratio = float(np.median(times['compiled']) / np.median(times['python']))
    return (f'| {name} | {cells[0]} | {cells[1]} | {ratio:.3f} | '
            f'{100 * np.mean(ok["compiled"]):.1f} / {100 * np.mean(ok["python"]):.1f} | '
            f'{100 * np.mean(fast["compiled"]):.1f} / {100 * np.mean(fast["python"]):.1f} | '
            f'{same} of {n} |')


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--robots', nargs='+', default=list(ROBOTS), choices=list(ROBOTS))
    parser.add_argument('--n', type=int, default=40, help='problems per robot')
    parser.add_argument('--rounds', type=int, default=6,
                        help='rounds per robot (rotating the order)')
    parser.add_argument('--trees', action='store_true',
                        help='whole solves of twin_arm\'s tree, compiled vs Python path')
    args = parser.parse_args(argv)
    if not kernels.wait():
        print(kernels.serving(), file=sys.stderr)
        return 1
    if args.trees:
        print('| tree | compiled median / p90 / p99 / max [us] | Python median / p90 / p99 / '
              'max [us] | compiled / Python (medians) | success % within 50 ms (compiled / '
              'Python) | within 5 ms | same status and iterations |')
        print('| --- | --- | --- | --- | --- | --- | --- |')
        for name in TREES:
            print(compare_tree(name, args.n), flush=True)
        return 0
    print('| robot | compiled [us/iteration] | floats [us/iteration] | numpy [us/iteration] | '
          'floats / compiled | numpy / floats | same iterations |')
    print('| --- | --- | --- | --- | --- | --- | --- |')
    for name in args.robots:
        print(compare(name, args.n, args.rounds), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
