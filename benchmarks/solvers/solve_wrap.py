#!/usr/bin/env python3
"""The per-solve wrap of ``Solver.solve`` around damped_jacobian's compiled descent: ``solve()``
against the raw kernel, on the same targets from the same seeds.

arm6 (``config/arm6.yaml``'s damped_jacobian parameters, or the defaults with ``--defaults``),
6D targets along the smooth joint-space path of ``benchmarks.common.paths`` (each solve seeded
with the previous answer, as the node seeds a stream), or FK of random configurations from the
mid configuration (``--random``). The compiled kernels are loaded first. Three timings per
target, interleaved (the order rotates from target to target), ``time.perf_counter`` around each:

* **kernel**: only the numba descent kernel's calls for that solve (its arrays filled
  beforehand), the descent of ``solve()`` repeated on its own;
* **run**: the compiled descent's Python object (``CompiledDescent.start`` and
  ``DescentRun.descend``), the same descent;
* **solve**: ``solver.solve(position, quat_xyzw, seed)``, everything a caller gets.

Targets whose solve needed more than its first descent (a restart) are left out of the kernel
and run columns' comparison (counted). ``--profile`` prints cProfile's table of the solve loop
instead (use its shares, not its times). Python's garbage collector is paused while timing.

Usage::

    python -m benchmarks.solvers.solve_wrap --n 3000
    python -m benchmarks.solvers.solve_wrap --n 3000 --profile --sort tottime
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from pathlib import Path

import numpy as np
import transforms3d

from benchmarks.common.paths import read_config, trajectory
from ik_node import Chain, make_solver
from ik_node import kernels
from ik_node.solvers.damped_jacobian import compiled_runs

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / 'benchmarks' / 'results'


def targets_of(chain: Chain, n: int, random_targets: bool, rng_seed: int = 0):
    """``(q_path, positions, quats_xyzw)``: the configurations whose FK are the targets."""
    if random_targets:
        rng = np.random.default_rng(rng_seed)
        q = rng.uniform(chain.lower, chain.upper, (n, chain.n))
    else:
        q = trajectory(chain, n, 1000.0, 1.0, rng_seed)
    T = chain.fk(q)
    quats = np.array([np.roll(transforms3d.quaternions.mat2quat(R), -1) for R in T[:, :3, :3]])
    return q, np.ascontiguousarray(T[:, :3, 3]), quats


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--n', type=int, default=3000, help='targets timed')
    ap.add_argument('--random', action='store_true',
                    help='FK of random configurations, solved from the mid configuration')
    ap.add_argument('--defaults', action='store_true',
                    help="damped_jacobian's default parameters instead of config/arm6.yaml's")
    ap.add_argument('--profile', action='store_true', help='cProfile table of the solve loop')
    ap.add_argument('--sort', default='tottime', help='cProfile sort key')
    args = ap.parse_args(argv)

    chain = Chain.from_urdf_file(str(REPO / 'urdf' / 'arm6.urdf'), 'base_link', 'tool0')
    params = {} if args.defaults else \
        read_config(REPO / 'config' / 'arm6.yaml').get('damped_jacobian', {})
    if not kernels.wait(300.0):
        print(f'the compiled kernels do not serve: {kernels.serving()}', file=sys.stderr)
        return 1
    solver = make_solver('damped_jacobian', chain, params)
    kernel = solver._compiled
    q_path, positions, quats = targets_of(chain, args.n + 200, args.random)
    mid = chain.mid_configuration()

    # Seeds: the previous answer along the path (a stream), or the mid configuration.
    seeds = []
    q = q_path[0].copy()
    for k in range(len(positions)):
        seeds.append(mid.copy() if args.random else q.copy())
        result = solver.solve(positions[k], quats[k], seeds[-1])
        q = result.joint_positions
    rotations = [transforms3d.quaternions.quat2mat(np.roll(quat, 1)) for quat in quats]

    kernel_s = []

    def timed_kernel(inner):
        def call(*a):
            t = time.perf_counter()
            code = inner(*a)
            kernel_s[-1] += time.perf_counter() - t
            return code
        return call

    def one_descent(k):
        """(run time [s], kernel time [s], iterations) of the first descent of target k."""
        kernel_s.append(0.0)
        t = time.perf_counter()
        run = kernel.start(positions[k], rotations[k], seeds[k])
        _, _, iterations, _, _ = run.descend(
            compiled_runs.DescentStart(seeds[k], 0.0, -1.0, near=None, pull=True), None)
        elapsed = time.perf_counter() - t
        return elapsed, kernel_s[-1], iterations

    # Wrap the kernel function the runs call (the run of this thread, made by solve()).
    run = kernel.start(positions[0], rotations[0], seeds[0])
    raw_kernel = run.descend_kernel

    if args.profile:
        import cProfile
        import pstats
        profiler = cProfile.Profile()
        gc.collect()
        gc.disable()
        profiler.enable()
        for k in range(200, len(positions)):
            solver.solve(positions[k], quats[k], seeds[k])
        profiler.disable()
        gc.enable()
        pstats.Stats(profiler).sort_stats(args.sort).print_stats(35)
        return 0

    solve_s, run_s, kern_s, same_iterations, restarts = [], [], [], 0, 0
    gc.collect()
    gc.disable()
    load0, t0 = os.getloadavg()[0], time.perf_counter()
    try:
        for k in range(len(positions)):
            order = k % 2
            for which in ((0, 1) if order == 0 else (1, 0)):
                if which == 0:
                    t = time.perf_counter()
                    result = solver.solve(positions[k], quats[k], seeds[k])
                    solve_time = time.perf_counter() - t
                else:
                    run.descend_kernel = timed_kernel(raw_kernel)
                    try:
                        run_time, kern_time, iterations = one_descent(k)
                    finally:
                        run.descend_kernel = raw_kernel
            if k < 200:
                continue  # warm-up
            if result.iterations != iterations or 'after 0 restarts' not in result.message:
                restarts += 1
                continue
            same_iterations += 1
            solve_s.append(solve_time)
            run_s.append(run_time)
            kern_s.append(kern_time)
    finally:
        gc.enable()
    wall = time.perf_counter() - t0

    def stats(values):
        a = np.array(values) * 1e6
        return f'median {np.median(a):7.2f} us, p95 {np.percentile(a, 95):7.2f} us'

    wrap_us = np.median(np.array(solve_s) - np.array(kern_s)) * 1e6
    above_run_us = np.median(np.array(solve_s) - np.array(run_s)) * 1e6
    import ik_node
    checkout = Path(ik_node.__file__).parents[1].name
    print(f'arm6 6D, {"random targets from mid" if args.random else "stream"}, '
          f'{"default" if args.defaults else "config/arm6.yaml"} parameters ({checkout}); '
          f'{same_iterations} solves in one descent compared, {restarts} left out; '
          f'load {load0:.1f} -> {os.getloadavg()[0]:.1f}, {wall:.1f} s')
    print(f'  kernel   {stats(kern_s)}')
    print(f'  run      {stats(run_s)}')
    print(f'  solve    {stats(solve_s)}')
    print(f'  solve - kernel (median of the per-target differences) {wrap_us:.2f} us; '
          f'solve - run {above_run_us:.2f} us; {kernels.serving()}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
