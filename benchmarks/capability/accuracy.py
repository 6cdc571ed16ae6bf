"""How right a capability map is: held-out poses decided by the map and by dense IK.

    python -m benchmarks.capability.accuracy --voxels 0.1 0.05 --orientations 50 --poses 2000
    python -m benchmarks.capability.accuracy --collisions --table 0.0 --workers 2

For each resolution it builds the UR5e map (timed; ``--maps DIR`` keeps and reuses them), then
draws fresh poses (the seed is printed; ``--seed`` repeats a run): half are tool poses of random
joint configurations (collision-free ones with ``--collisions``), half uniform in the reach
sphere with uniform random orientations. The truth of each pose is dense IK: the mid
configuration and ``--truth-seeds`` random ones, each a solve of up to 8 descents, with the
collision check when the map has one. Reported per resolution, for what the forward query
answers (uniform cells from the map, mixed cells by IK at query time): accuracy, false
positives (the map says reachable, IK finds nothing: the costly error) and false negatives as
shares of all poses, the share decided by IK and the microseconds per pose (one batch); for
the map alone (mixed cells uncertain): the uncertain share and the accuracy on the rest; and
the accuracy of the cell centre's verdict alone (every cell taken as uniform).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from benchmarks.capability.robots import robot_path
from ik_node.capability import CellLookup, MapSpec, build_map, reachable
from ik_node.capability.build import BUILD_FILE
from ik_node.capability.decide import decide_targets, solver_for
from ik_node.capability.orientations import (orientation_bins, quats_from_rotations,
                                             rotations_from_quats)
from ik_node.capability.spec import reach_sphere
from ik_node import kernels


def fresh_poses(solver, count: int, rng) -> np.ndarray:
    """(count, 7) held-out poses: half from random configurations, half uniform."""
    chain = solver.chain
    checker = getattr(getattr(solver, '_collision', None), 'checker', None)
    half = count // 2
    Q = rng.uniform(chain.lower, chain.upper, size=(4 * half, chain.n))
    if checker is not None:
        Q = Q[checker.free_mask(Q)]
    Q = Q[:half]
    T = np.array([chain.fk(q) for q in Q])
    from_joints = np.hstack([T[:, :3, 3], quats_from_rotations(T[:, :3, :3])])
    centre, radius = reach_sphere(chain)
    direction = rng.normal(size=(count - half, 3))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    points = centre + direction * radius * rng.uniform(0, 1, size=(count - half, 1)) ** (1 / 3)
    quats = rng.normal(size=(count - half, 4))
    quats /= np.linalg.norm(quats, axis=1, keepdims=True)
    return np.vstack([from_joints, np.hstack([points, quats])])


def truth(solver, poses: np.ndarray, seeds: int, rng) -> np.ndarray:
    """Dense IK: reached from the mid configuration or one of ``seeds`` random ones."""
    chain = solver.chain
    starts = np.vstack([chain.mid_configuration()[None],
                        rng.uniform(chain.lower, chain.upper, size=(seeds, chain.n))])
    return decide_targets(solver, np.ascontiguousarray(poses[:, :3]),
                          np.ascontiguousarray(quats_from_rotations(
                              rotations_from_quats(poses[:, 3:]))), starts, 8)[0]


def scores(said: np.ndarray, true: np.ndarray) -> dict:
    n = len(true)
    return {'accuracy': float(np.mean(said == true)),
            'false_pos': float(np.sum(said & ~true)) / n,
            'false_neg': float(np.sum(~said & true)) / n, 'n': n,
            'reachable': float(true.mean())}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--voxels', type=float, nargs='+', default=[0.1])
    p.add_argument('--orientations', type=int, default=50)
    p.add_argument('--rolls', type=int, default=1)
    p.add_argument('--collisions', action='store_true')
    p.add_argument('--table', type=float, default=None)
    p.add_argument('--attempts', type=int, default=3)
    p.add_argument('--descents', type=int, default=3)
    p.add_argument('--poses', type=int, default=2000)
    p.add_argument('--truth-seeds', type=int, default=32)
    p.add_argument('--workers', type=int, default=0)
    p.add_argument('--seed', type=int, default=None)
    p.add_argument('--maps', type=Path, default=None, help='keep (and reuse) the maps here')
    args = p.parse_args()
    kernels.wait()
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), 'little')
    print(f'held-out seed: {seed}  (repeat with --seed {seed})')
    urdf = robot_path('ur5e')
    print('| voxel [m] | orientations | collisions | targets | build [s wall / s CPU] | '
          'mixed cells | fresh poses | accuracy | false pos | false neg | by IK | '
          'query [us/pose wall / CPU] | map alone: uncertain | accuracy of the rest | centre only: '
          'accuracy | false pos |')
    print('|---' * 16 + '|')
    for voxel in args.voxels:
        spec = MapSpec(urdf.read_text(), 'base_link', 'tool0', voxel, args.orientations,
                       args.rolls, args.collisions, args.table, attempts=args.attempts,
                       descents=args.descents, urdf_path=str(urdf))
        folder = (args.maps or Path('/tmp/ik_node_capability_bench')) / f'{voxel:g}'
        start = time.perf_counter()
        capability = build_map(spec, folder, args.workers)
        built = time.perf_counter() - start
        cpu = json.loads((folder / BUILD_FILE).read_text())['shard_seconds']
        solver = solver_for(spec)
        rng = np.random.default_rng(seed)
        poses = fresh_poses(solver, args.poses, rng)
        true = truth(solver, poses, args.truth_seeds, rng)
        lookup = CellLookup(capability)
        reachable(capability, poses[:10], lookup, solver)  # warm
        start, cpu = time.perf_counter(), time.process_time()
        answer = reachable(capability, poses, lookup, solver)
        query_us = 1e6 * (time.perf_counter() - start) / len(poses)
        query_cpu = 1e6 * (time.process_time() - cpu) / len(poses)
        full = scores(answer.reachable, true)
        alone = reachable(capability, poses, lookup)
        sure = ~alone.uncertain
        rest = scores(alone.reachable[sure], true[sure])
        rows = lookup.rows_of(poses[:, :3])
        bins = orientation_bins(capability.orientations, rotations_from_quats(poses[:, 3:]))
        centre = np.where(rows >= 0, capability.reached[np.maximum(rows, 0), bins], False)
        old = scores(centre, true)
        print(f'| {voxel:g} | {capability.reached.shape[1]} | {args.collisions} | '
              f'{capability.reached.size:,} | {built:.1f} / {cpu:.1f} | '
              f'{100 * capability.mixed.mean():.1f} % | {len(poses)} | '
              f'{100 * full["accuracy"]:.2f} % | {100 * full["false_pos"]:.2f} % | '
              f'{100 * full["false_neg"]:.2f} % | {100 * answer.by_ik.mean():.1f} % | '
              f'{query_us:.1f} / {query_cpu:.1f} | {100 * alone.uncertain.mean():.1f} % | '
              f'{100 * rest["accuracy"]:.2f} % | {100 * old["accuracy"]:.2f} % | '
              f'{100 * old["false_pos"]:.2f} % |', flush=True)


if __name__ == '__main__':
    main()
