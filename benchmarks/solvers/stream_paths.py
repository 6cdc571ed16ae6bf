#!/usr/bin/env python3
"""Streamed smooth paths on the real arms: how far does a joint move between two answers?

Each path is FK of a smooth joint curve (``joint_curve`` of ``test/core/smooth_paths.py``:
per joint ``c + a sin(2 pi f t + phi)``, amplitude 0.3-0.8 rad, 0.5-1.5 cycles, 0.15 rad inside
the limits), so a continuous solution exists. Every solve is seeded with the previous answer, as
the node does, with the solver's default parameters (its wall-clock ``timeout`` included: the
budget decides when restarts begin, as in the node). Per arm and path: the steps above
``--jump`` [rad], and the share of steps within the first-order bound
``2 (|J+ dx| + 2 ||J+|| tol)`` derived in ``test/core/smooth_paths.py`` (a step whose bound
is infinite, at a singular Jacobian, counts as within).

Usage::

    python -m benchmarks.solvers.stream_paths      # all arms, 20 paths x 400 steps
    python -m benchmarks.solvers.stream_paths --robots panda --paths 5 --task position
    python -m benchmarks.solvers.stream_paths --param damped_jacobian.posture_weight=0

Prints a markdown table; ``--out FILE`` also writes it there with the command and the commit.
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.common.from_tests import load_test_helper
from ik_node.config.node_config import build_chain, load_config
from ik_node.model.chain import Chain

from benchmarks.common.robots import SHARED_ROBOTS

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / 'benchmarks' / 'results'
_smooth_paths = load_test_helper('smooth_paths')
# ARMS: name -> (file, base, tip); arm6 is the packaged arm (its config/arm6.yaml chain).
ARMS, joint_curve, step_bound, stream = (_smooth_paths.ARMS, _smooth_paths.joint_curve,
                                         _smooth_paths.step_bound, _smooth_paths.stream)



def arm_chain(name: str) -> Chain:
    """The arm's chain: a reference URDF from ../shared/robots, or the packaged arm6."""
    if ARMS[name] is None:
        return build_chain(load_config(REPO / 'config' / f'{name}.yaml'))
    file, base, tip = ARMS[name]
    return Chain.from_urdf_file(SHARED_ROBOTS / file, base, tip)


def measure(chain: Chain, solver: str, params: dict, six_d: bool, paths: int, steps: int,
            jump: float, rng_seed: int) -> dict:
    """Streams ``paths`` paths; counts steps above ``jump`` and steps within the bound."""
    jumps, within, total, converged, solve_s = [], 0, 0, 0, 0.0
    for path in range(paths):
        Q = joint_curve(chain, np.random.default_rng(rng_seed + path), steps)
        t0 = time.perf_counter()
        s = stream(chain, solver, params, Q, six_d, Q[0])
        solve_s += time.perf_counter() - t0
        answers = s.answers
        converged += sum(r.reachable for r in s.results)
        for k in range(1, len(answers)):
            move = np.abs(answers[k] - answers[k - 1])
            total += 1
            if move.max() > jump:
                i = int(move.argmax())
                jumps.append((path, k, chain.joint_names[i], float(move[i]),
                              s.results[k].message))
            bound = step_bound(s, k)
            within += bool(move.max() <= bound or not math.isfinite(bound))
    return {'jumps': jumps, 'within': within, 'steps': total, 'converged': converged,
            'solves': paths * steps, 'solve_ms': 1e3 * solve_s / (paths * steps)}


def commit() -> str:
    try:
        return subprocess.run(['git', '-C', str(REPO), 'rev-parse', '--short', 'HEAD'],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return 'unknown'


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--robots', nargs='*', default=list(ARMS), choices=list(ARMS))
    parser.add_argument('--solver', default='damped_jacobian')
    parser.add_argument('--task', choices=('6d', 'position'), default='6d')
    parser.add_argument('--paths', type=int, default=20)
    parser.add_argument('--steps', type=int, default=400)
    parser.add_argument('--jump', type=float, default=1.0, help='a jump is a step above this '
                        '[rad]')
    parser.add_argument('--rng-seed', type=int, default=0)
    parser.add_argument('--param', action='append', default=[],
                        help='SOLVER.NAME=VALUE, a solver parameter (repeatable)')
    parser.add_argument('--out', type=Path, help='also write the table to this file')
    args = parser.parse_args(argv)
    params: dict = {}
    for item in args.param:
        key, _, text = item.partition('=')
        solver, _, name = key.partition('.')
        if solver != args.solver:
            continue
        for kind in (int, float, str):
            try:
                params[name] = kind(text)
                break
            except ValueError:
                pass
    lines = [f'`python -m benchmarks.solvers.stream_paths {" ".join(argv or sys.argv[1:])}` at '
             f'{commit()}: {args.solver}, {args.task}, {args.paths} paths x {args.steps} steps',
             '', '| arm | steps > %g rad | largest step [rad] | within bound | converged | '
             'ms/solve |' % args.jump, '|---|---:|---:|---:|---:|---:|']
    details = []
    for name in args.robots:
        chain = arm_chain(name)
        r = measure(chain, args.solver, params, args.task == '6d', args.paths, args.steps,
                    args.jump, args.rng_seed)
        largest = max((j[3] for j in r['jumps']), default=float('nan'))
        line = (f'| {name} | {len(r["jumps"])} | {largest:.3f} | '
                f'{100.0 * r["within"] / r["steps"]:.2f} % | '
                f'{100.0 * r["converged"] / r["solves"]:.2f} % | {r["solve_ms"]:.2f} |')
        lines.append(line)
        print(line, flush=True)
        details += [f'- {name} path {p} step {k}: {joint} {move:.3f} rad ({message})'
                    for p, k, joint, move, message in r['jumps']]
    text = '\n'.join(lines + ([''] + details if details else [])) + '\n'
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == '__main__':
    sys.exit(main())
