"""Batch IK against one call at a time: UR5e 6D, random reachable targets.

    python -m benchmarks.capability.batch_ik --targets 20000
    python -m benchmarks.capability.batch_ik --collisions --targets 5000

Targets are tool poses of random joint configurations (collision-free ones with
``--collisions``: the collision model from the URDF's meshes), solved from the mid
configuration by ``solve_many`` and by ``solve()`` in a loop, interleaved in rounds. Reported:
solves per second of CPU time of this process (per core: the process runs on one thread), the
success share of each, the share the batch kernel answered, and how many answers differ.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from benchmarks.capability.robots import robot_path
from ik_node import Chain, make_solver
from ik_node.capability.orientations import quats_from_rotations
from ik_node.solvers import kernels
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
    batch_cpu = single_cpu = 0.0
    batch_ok = single_ok = compiled = differ = single_count = 0
    for _ in range(args.rounds):
        start = time.process_time()
        result = solve_many(solver, positions, quats)
        batch_cpu += time.process_time() - start
        batch_ok += int(result.reachable.sum())
        compiled += int(result.compiled.sum())
        count = max(1, args.targets // 10)  # the loop on a tenth: it is the slow one
        start = time.process_time()
        answers = [solver.solve(positions[i], quats[i]) for i in range(count)]
        single_cpu += time.process_time() - start
        single_ok += sum(a.reachable for a in answers)
        single_count += count
        differ += sum(a.reachable != result.reachable[i] for i, a in enumerate(answers))
    total = args.rounds * args.targets
    print('| collisions | targets | solve_many [solves/s CPU] | solve() loop [solves/s CPU] | '
          'ratio | success batch | success loop | batch kernel share | verdicts differing |')
    print('|---|---|---|---|---|---|---|---|---|')
    b, s = total / batch_cpu, single_count / single_cpu
    print(f'| {args.collisions} | {args.targets} x {args.rounds} | {b:,.0f} | {s:,.0f} | '
          f'{b / s:.1f}x | {100 * batch_ok / total:.2f} % | '
          f'{100 * single_ok / single_count:.2f} % | {100 * compiled / total:.1f} % | '
          f'{differ} of {single_count} |')


if __name__ == '__main__':
    main()
