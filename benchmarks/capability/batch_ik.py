"""Batch IK against one call at a time: UR5e 6D, random reachable targets.

    python -m benchmarks.capability.batch_ik --targets 20000
    python -m benchmarks.capability.batch_ik --collisions --targets 5000

Targets are tool poses of random joint configurations (collision-free ones with
``--collisions``: the collision model from the URDF's meshes), solved by ``solve_many`` from
the mid configuration and from the nearest table configuration (``seeds='nearest'``), and by
``solve()`` from the mid configuration in a loop, interleaved in rounds. Reported: the median
over rounds of solves per second of CPU time of this process (per core: the process runs on
one thread; pin it with ``taskset -c 0``), the success share of each, the share the batch
kernel answered, how many verdicts differ from the loop's, and the load average.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from benchmarks.capability.robots import robot_path
from ik_node import Chain, make_solver
from ik_node.capability.orientations import quats_from_rotations
from ik_node import kernels
from ik_node.solvers.batch import solve_many


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--targets', type=int, default=20000)
    p.add_argument('--rounds', type=int, default=3)
    p.add_argument('--collisions', action='store_true')
    p.add_argument('--seed', type=int, default=None)
    args = p.parse_args()
    kernels.wait()
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), 'little')
    print(f'seed: {seed}')
    chain = Chain.from_urdf_file(robot_path('ur5e'), 'base_link', 'tool0')
    solver = make_solver('damped_jacobian', chain, {'self_collision': args.collisions})
    rng = np.random.default_rng(seed)
    Q = rng.uniform(chain.lower, chain.upper, size=(3 * args.targets, chain.n))
    if args.collisions:
        Q = Q[solver._collision.checker.free_mask(Q)]
    Q = Q[:args.targets]
    T = np.array([chain.fk(q) for q in Q])
    positions, quats = T[:, :3, 3].copy(), quats_from_rotations(T[:, :3, :3])
    solve_many(solver, positions[:10], quats[:10])  # load the batch kernel
    solve_many(solver, positions[:10], quats[:10], seeds='nearest')  # and make the table
    print(f'load average before: {os.getloadavg()}')
    rates = {None: [], 'nearest': [], 'loop': []}
    ok = {None: 0, 'nearest': 0, 'loop': 0}
    compiled = {None: 0, 'nearest': 0}
    differ = {None: 0, 'nearest': 0}
    count = max(1, args.targets // 10)  # the loop on a tenth: it is the slow one
    for _ in range(args.rounds):
        results = {}
        for seeds in (None, 'nearest'):
            start = time.process_time()
            results[seeds] = result = solve_many(solver, positions, quats, seeds=seeds)
            rates[seeds].append(args.targets / (time.process_time() - start))
            ok[seeds] += int(result.reachable.sum())
            compiled[seeds] += int(result.compiled.sum())
        start = time.process_time()
        answers = [solver.solve(positions[i], quats[i]) for i in range(count)]
        rates['loop'].append(count / (time.process_time() - start))
        ok['loop'] += sum(a.reachable for a in answers)
        for seeds in (None, 'nearest'):
            differ[seeds] += sum(a.reachable != results[seeds].reachable[i]
                                 for i, a in enumerate(answers))
    print(f'load average after: {os.getloadavg()}')
    total = args.rounds * args.targets
    loop = float(np.median(rates['loop']))
    print('| collisions | targets | seeds | solve_many [solves/s CPU, median] | solve() loop '
          '[solves/s CPU] | ratio | success batch | success loop | batch kernel share | '
          'verdicts differing |')
    print('|---|---|---|---|---|---|---|---|---|---|')
    for seeds in (None, 'nearest'):
        b = float(np.median(rates[seeds]))
        print(f'| {args.collisions} | {args.targets} x {args.rounds} | {seeds or "mid"} | '
              f'{b:,.0f} | {loop:,.0f} | {b / loop:.1f}x | {100 * ok[seeds] / total:.2f} % | '
              f'{100 * ok["loop"] / (args.rounds * count):.2f} % | '
              f'{100 * compiled[seeds] / total:.1f} % | {differ[seeds]} of '
              f'{args.rounds * count} |')
    print('rounds [solves/s]: ' + '; '.join(
        f'{k or "mid"} ' + ', '.join(f'{r:,.0f}' for r in v) for k, v in rates.items()))


if __name__ == '__main__':
    main()
