"""The queries of a built map: forward verdicts per second, and base placement for task poses.

    python -m benchmarks.capability.queries --map /tmp/ik_node_capability_bench/0.05

Forward: ``--forward`` fresh poses (uniform in a 2 m cube, uniform orientations) in one batch,
after the lookup is built: microseconds per pose for the map alone (mixed cells uncertain) and,
on the first ``--forward-ik`` of them, with IK deciding the mixed cells. Base placement:
``--tasks`` task poses reachable from a hidden base (drawn from the map's reached targets, the
seed printed), a 2 m x 2 m floor grid at 5 cm and 10 degrees around it; the time of the
ranking, by the map alone and by :func:`ik_node.capability.place_base` (as the command line and
the node answer: the mixed cells of 20 candidates decided by IK, the top answer verified), the
share the top answer claims, the share in mixed cells, and the share real IK reaches from it
(every task pose, dense IK). ``--compare-ik A D`` also times query IK of ``A`` starts x ``D``
descents, interleaved with the default's over ``--rounds``.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from pathlib import Path

import numpy as np

from ik_node.capability import (CellLookup, Placement, PlacementGrid, QueryIk, base_placement,
                                load_map, place_base, reachable, verify_placements)
from ik_node.capability.decide import map_solver
from ik_node.capability.placement import task_in_base
from ik_node import kernels


def forward_with_ik(capability, lookup, solver, poses, args):
    """``(verdicts, us per pose wall, us per pose CPU)`` of forward queries with IK (best of
    ``args.rounds``), printing each setting's CPU time (``--compare-ik``: interleaved)."""
    settings = [QueryIk(), QueryIk(*args.compare_ik)] if args.compare_ik else [QueryIk()]
    timed = {k: [] for k in range(len(settings))}
    for _ in range(args.rounds):  # interleaved: the machine's load falls on both alike
        for k, ik in enumerate(settings):
            start, cpu = time.perf_counter(), time.process_time()
            answer = reachable(capability, poses, lookup, solver, ik)
            timed[k].append((time.perf_counter() - start, time.process_time() - cpu, answer))
    for k, ik in enumerate(settings):
        answer = timed[k][0][2]
        decided = max(int(answer.by_ik.sum()), 1)
        cpu = min(c for _, c, _ in timed[k])
        print(f'forward with IK, {ik.attempts} starts x {ik.descents} descents: '
              f'{1e6 * cpu / len(poses):.1f} us CPU per pose, {1e6 * cpu / decided:.0f} us per '
              f'pose decided at query time ({decided} of {len(poses)}; reached '
              f'{int((answer.by_ik & answer.reachable).sum())}); best of {args.rounds}',
              flush=True)
    return (timed[0][0][2], 1e6 * min(w for w, _, _ in timed[0]) / len(poses),
            1e6 * min(c for _, c, _ in timed[0]) / len(poses))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--map', type=Path, required=True)
    p.add_argument('--forward', type=int, default=100_000)
    p.add_argument('--forward-ik', type=int, default=5000)
    p.add_argument('--tasks', type=int, default=100)
    p.add_argument('--seed', type=int, default=None)
    p.add_argument('--rounds', type=int, default=1, help='forward queries with IK: rounds')
    p.add_argument('--compare-ik', type=int, nargs=2, default=None,
                   metavar=('ATTEMPTS', 'DESCENTS'),
                   help='also time query IK of these starts and descents (interleaved)')
    args = p.parse_args()
    kernels.wait()
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), 'little')
    print(f'seed: {seed}')
    rng = np.random.default_rng(seed)
    capability = load_map(args.map)
    lookup = CellLookup(capability)
    poses = np.hstack([rng.uniform(-1, 1, (args.forward, 3)), rng.normal(size=(args.forward, 4))])
    reachable(capability, poses[:10], lookup)
    start, cpu = time.perf_counter(), time.process_time()
    alone = reachable(capability, poses, lookup)
    forward_us = 1e6 * (time.perf_counter() - start) / args.forward
    forward_cpu = 1e6 * (time.process_time() - cpu) / args.forward
    meta = capability.meta
    solver, why = map_solver(meta)
    if solver is None:
        raise SystemExit(f'cannot verify: {why}')
    some = poses[:args.forward_ik]
    reachable(capability, some[:10], lookup, solver)
    with_ik, forward_ik_us, forward_ik_cpu = forward_with_ik(capability, lookup, solver, some,
                                                             args)
    rows, bins = np.nonzero(capability.reached)
    pick = rng.choice(len(rows), args.tasks, replace=False)
    local = np.hstack([capability.cells[rows[pick]] * capability.voxel_m,
                       capability.orientations.quats_xyzw[bins[pick]]])
    hidden = Placement(0.3, -0.2, math.radians(40.0), 1.0)
    # The task poses in the floor's frame: turned by the hidden yaw, then moved to its x, y.
    world = task_in_base(local, Placement(0.0, 0.0, -hidden.yaw, 1.0))
    world[:, :2] += [hidden.x, hidden.y]
    assert np.allclose(task_in_base(world, hidden)[:, :3], local[:, :3])
    grid = PlacementGrid((-0.7, 1.3, 0.05), (-1.2, 0.8, 0.05), math.radians(10.0))
    base_placement(capability, world[:2], grid, 1)  # load the compiled scan
    start, cpu = time.perf_counter(), time.process_time()
    alone_top = base_placement(capability, world, grid, 5)[0]
    alone_s, alone_cpu = time.perf_counter() - start, time.process_time() - cpu
    start, cpu = time.perf_counter(), time.process_time()
    top = place_base(capability, world, grid, 5, solver).placements
    placement_s = time.perf_counter() - start
    placement_cpu = time.process_time() - cpu
    verified = verify_placements(solver, world, [alone_top, top[0]], tool=capability.tool_offset)
    xs, ys, yaws = grid.axes()
    print('| map | forward, map alone [us/pose wall / CPU] | uncertain | forward with IK '
          '[us/pose wall / CPU] | by IK | base poses | task poses |')
    print('|---' * 7 + '|')
    print(f'| {meta["voxel_m"]:g} m x {capability.reached.shape[1]} | {forward_us:.2f} / '
          f'{forward_cpu:.2f} | {100 * alone.uncertain.mean():.1f} % | {forward_ik_us:.1f} / '
          f'{forward_ik_cpu:.1f} | {100 * with_ik.by_ik.mean():.1f} % | '
          f'{len(xs) * len(ys) * len(yaws):,} | {args.tasks} |')
    print('\n| base placement | time [s wall / CPU] | top answer | claimed share | in mixed cells '
          '| IK share |')
    print('|---' * 6 + '|')
    for name, seconds, cpu, t, check in (
            ('map alone', alone_s, alone_cpu, alone_top, verified[0]),
            ('place_base: mixed cells of 20 candidates by IK, the top verified', placement_s,
             placement_cpu, top[0], verified[1])):
        print(f'| {name} | {seconds:.3f} / {cpu:.3f} | ({t.x:.2f}, {t.y:.2f}, '
              f'{math.degrees(t.yaw):.0f} deg) | {100 * t.share:.0f} % | {100 * t.mixed:.0f} % | '
              f'{100 * check:.0f} % |')


if __name__ == '__main__':
    main()
