#!/usr/bin/env python3
"""A/B in one process: damped_jacobian of this checkout against the same solver at a git ref.

The solver's modules of the ref (``solver.py`` and, where the ref has them, ``descent.py``,
``starts.py`` and ``transpose.py`` of ``ik_node/solvers/damped_jacobian`` at ``--ref``, by ``git
show``) are loaded beside this checkout's and run on the same targets, interleaved target by
target (the order alternates), each call timed as the lesser of its wall and process CPU time.
The rest of ik_node (kinematics, the closest-pose search, the compiled descent) is this
checkout's for both: the A/B isolates the solver's modules. Reported per robot and kind: how
many answers are the same (status, iterations, joints within 1e-9), the medians and 95th
percentiles and their ratios (this checkout over the ref).

Kinds: ``position`` (FK targets, position only), ``beyond`` (the same positions pushed out to
1.6 times their distance from the base: many beyond the reach, the closest-pose search), and
``pose`` (6D, FK targets). Random seeds (the benchmark's RNG streams).

Usage::

    python benchmarks/ab_damped_jacobian.py --ref main --robots leg3 ur5 panda --n 800
    python benchmarks/ab_damped_jacobian.py --ref main --kinds position beyond --deterministic

``--deterministic`` gives both solvers a 30 s timeout, so iteration caps end the solves, never
the clock: then every answer must be the same when only speed changed.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402

import bench_solvers  # noqa: E402

PACKAGE = 'ik_node.solvers.damped_jacobian'
#: The solver's modules taken from the ref, each after those it imports (solver.py last).
MODULES = ('descent', 'starts', 'transpose', 'solver')


def load_ref_solver(ref: str):
    """The DampedJacobianSolver class of ``MODULES`` at git ``ref``: each module the ref has is
    loaded under its own name, and the ref's imports of the others are pointed at them."""
    loaded = {}
    for name in MODULES:
        path = f'{PACKAGE.replace(".", "/")}/{name}.py'
        shown = subprocess.run(['git', '-C', str(REPO), 'show', f'{ref}:{path}'],
                               capture_output=True, text=True)
        if shown.returncode != 0 and name != 'solver':
            continue  # a ref from before the module was split out of solver.py
        shown.check_returncode()
        source = shown.stdout
        for other, module_name in loaded.items():
            source = source.replace(f'{PACKAGE}.{other} ', f'{module_name} ')
        module_name = f'ref_{name}_{ref}'.replace('/', '_').replace('-', '_').replace('.', '_')
        module = importlib.util.module_from_spec(
            importlib.util.spec_from_loader(module_name, loader=None))
        sys.modules[module_name] = module
        exec(compile(source, f'{ref}:{path}', 'exec'), module.__dict__)
        loaded[name] = module_name
    return sys.modules[loaded['solver']].DampedJacobianSolver


def timed(solver, position, quat, seed):
    t0, c0 = time.perf_counter(), time.process_time()
    result = solver.solve(position, quat, seed)
    return result, min(time.perf_counter() - t0, time.process_time() - c0)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--ref', default='main')
    ap.add_argument('--robots', nargs='+', default=['leg3', 'ur5', 'panda'])
    ap.add_argument('--kinds', nargs='+', default=['position', 'beyond', 'pose'],
                    choices=['position', 'beyond', 'pose'])
    ap.add_argument('--n', type=int, default=500)
    ap.add_argument('--deterministic', action='store_true')
    args = ap.parse_args(argv)
    import ik_node
    Ref = load_ref_solver(args.ref)
    params = {'timeout': 30.0} if args.deterministic else {}
    robots = bench_solvers.load_robots(argparse.Namespace(robots=args.robots, urdf=None))
    print(f'| robot | kind | same answers | median ms ({args.ref}) | median ms (this) | ratio | '
          f'p95 ms ({args.ref}) | p95 ms (this) | ratio |')
    print('|---|---|---|---|---|---|---|---|---|')
    for robot in robots:
        chain = robot.chain
        ref = Ref(chain, params)
        this = ik_node.make_solver('damped_jacobian', chain, params)
        targets, seeds = bench_solvers.make_targets(chain, args.n, 0)
        for kind in args.kinds:
            if kind == 'pose' and chain.n < 6:
                continue
            times = {'ref': [], 'this': []}
            same = 0
            for k, target in enumerate(targets):
                position = target.position * (1.6 if kind == 'beyond' else 1.0)
                quat = target.quat_xyzw if kind == 'pose' else None
                order = [('ref', ref), ('this', this)]
                results = {}
                for name, solver in (order if k % 2 else order[::-1]):
                    results[name], dt = timed(solver, position, quat, seeds[k])
                    times[name].append(dt)
                a, b = results['ref'], results['this']
                same += (a.status == b.status and a.iterations == b.iterations and
                         bool(np.allclose(a.joint_positions, b.joint_positions, atol=1e-9)))
            med = {n: 1e3 * float(np.median(t)) for n, t in times.items()}
            p95 = {n: 1e3 * float(np.percentile(t, 95)) for n, t in times.items()}
            print(f'| {robot.name} | {kind} | {same}/{len(targets)} | {med["ref"]:.3f} | '
                  f'{med["this"]:.3f} | {med["this"] / med["ref"]:.2f}x | {p95["ref"]:.3f} | '
                  f'{p95["this"]:.3f} | {p95["this"] / p95["ref"]:.2f}x |', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
