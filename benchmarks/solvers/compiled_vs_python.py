#!/usr/bin/env python3
"""A/B in one process: the compiled kernels (the default install) against the pure-Python path.

Two solvers per case, built alike, one with the compiled kernels (loaded before the first
timed solve), one on the pure-Python path (as with ``IK_NODE_NO_NUMBA=1``), solve the same
targets from the same seeds, interleaved target by target (the order alternates). Each call is
timed by its wall time; reported per case: the medians and 95th percentiles, their ratios
(compiled over Python), and how many answers are the same (status, iterations, joints within
1e-6 rad). The hypervisor's steal and the load average over the run are recorded: the machine
may be shared, read the ratios.

Cases: position-only and 6D targets (FK of random joint vectors, random seeds) on 6- and
7-joint arms; both hands of ``twin_arm`` (damped_jacobian's stacked Jacobian, position
targets); all four feet of quad12, Solo 12 and ANYmal C in one ``analytic_hip_knee`` solve (from
the mid configuration; also timed back to back, rounds of 100 solves).

Usage::

    python -m benchmarks.solvers.compiled_vs_python       # writes results/compiled_ab.md
    python -m benchmarks.solvers.compiled_vs_python --n 100 --out /tmp/ab.md
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List

import numpy as np
import transforms3d
import yaml

from ik_node import Chain, make_solver
from ik_node import kernels
from ik_node.solvers.damped_jacobian import compiled
from ik_node.solvers.hip_knee import compiled_legs

from benchmarks.common.robots import SHARED_ROBOTS

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / 'benchmarks' / 'results'

ARMS = {'arm6': (REPO / 'urdf' / 'arm6.urdf', 'base_link', 'tool0'),
        'ur5': (SHARED_ROBOTS / 'ur5.urdf', 'base_link', 'tool0'),
        'panda': (SHARED_ROBOTS / 'panda.urdf', 'panda_link0', 'panda_hand_tcp')}
FEET = {'quad12': (REPO / 'urdf' / 'quad12.urdf', 'base_link',
                   ['FL_foot', 'FR_foot', 'RL_foot', 'RR_foot']),
        'solo12': (SHARED_ROBOTS / 'solo12.urdf', 'base_link',
                   ['FL_FOOT', 'FR_FOOT', 'HL_FOOT', 'HR_FOOT']),
        'anymal_c': (SHARED_ROBOTS / 'anymal_c.urdf', 'base',
                     ['LF_FOOT', 'RF_FOOT', 'LH_FOOT', 'RH_FOOT'])}
#: The tracik protocol's tolerances (benchmarks/solvers/bench.py).
PARAMS = {'position_tolerance': 1e-5, 'orientation_tolerance': 1e-5}


def python_solver(name: str, chain: Chain, params: dict):
    """The solver on the pure-Python path (its compiled descents and legs turned off)."""
    available, legs_available = compiled.available, compiled_legs.available
    compiled.available = compiled_legs.available = lambda: False
    try:
        return make_solver(name, chain, params)
    finally:
        compiled.available, compiled_legs.available = available, legs_available


def steal_and_total() -> tuple:
    """(steal, total) jiffies of all CPUs from /proc/stat."""
    with open('/proc/stat') as f:
        values = [int(v) for v in f.readline().split()[1:]]
    return values[7], sum(values)


def interleaved(solve_a: Callable, solve_b: Callable, calls: List[tuple]) -> Dict:
    """Both solvers on every call's arguments, the order alternating; times [us]."""
    times = {'a': [], 'b': []}
    same = 0
    for k, args in enumerate(calls):
        results = {}
        order = (('a', solve_a), ('b', solve_b)) if k % 2 == 0 else \
            (('b', solve_b), ('a', solve_a))
        for key, solve in order:
            start = time.perf_counter()
            results[key] = solve(*args)
            times[key].append((time.perf_counter() - start) * 1e6)
        a, b = results['a'], results['b']
        same += (a.status, a.iterations) == (b.status, b.iterations) and \
            float(np.max(np.abs(a.joint_positions - b.joint_positions))) < 1e-6
    return {'median_a': float(np.median(times['a'])), 'median_b': float(np.median(times['b'])),
            'p95_a': float(np.percentile(times['a'], 95)),
            'p95_b': float(np.percentile(times['b'], 95)), 'same': same, 'n': len(calls)}


def arm_cases(n: int, rng: np.random.Generator) -> Dict[str, Dict]:
    out = {}
    for robot, (path, base, tip) in ARMS.items():
        if not path.is_file():
            continue
        chain = Chain.from_urdf_file(path, base, tip)
        fast = make_solver('damped_jacobian', chain, PARAMS)
        slow = python_solver('damped_jacobian', chain, PARAMS)
        for kind in ('position', '6D'):
            calls = []
            for _ in range(n):
                T = chain.fk(rng.uniform(chain.lower, chain.upper))
                w, x, y, z = transforms3d.quaternions.mat2quat(T[:3, :3])
                quat = None if kind == 'position' else np.array([x, y, z, w])
                calls.append((T[:3, 3].copy(), quat, rng.uniform(chain.lower, chain.upper)))
            out[f'{robot} ({chain.n} joints), {kind}, random seeds'] = interleaved(
                fast.solve, slow.solve, calls)
            print(f'{robot} {kind} done', flush=True)
    return out


def tree_case(n: int, rng: np.random.Generator) -> Dict[str, Dict]:
    config = yaml.safe_load((REPO / 'config' / 'twin_arm.yaml').read_text())
    params = config['ik_node']['ros__parameters']
    chain = Chain.from_urdf_file(REPO / 'urdf' / 'twin_arm.urdf', params['base_link'],
                                 params['tip_links'])
    dj = params.get('damped_jacobian', {})
    fast = make_solver('damped_jacobian', chain, dj)
    slow = python_solver('damped_jacobian', chain, dj)
    calls = []
    for _ in range(n):
        T = chain.fk_tips(rng.uniform(chain.lower, chain.upper))
        calls.append(({tip: T[tip][:3, 3] for tip in chain.tip_links},
                      rng.uniform(chain.lower, chain.upper)))
    out = interleaved(lambda t, s: fast.solve(targets=t, seed=s),
                      lambda t, s: slow.solve(targets=t, seed=s), calls)
    print('twin_arm done', flush=True)
    return {'twin_arm, both hands (damped_jacobian tree), random seeds': out}


def feet_cases(n: int, rng: np.random.Generator) -> Dict[str, Dict]:
    out = {}
    for robot, (path, base, feet) in FEET.items():
        if not path.is_file():
            continue
        chain = Chain.from_urdf_file(path, base, feet)
        fast = make_solver('analytic_hip_knee', chain)
        slow = python_solver('analytic_hip_knee', chain, {})
        seed = chain.mid_configuration()
        calls = []
        for _ in range(n):
            T = chain.fk_tips(rng.uniform(chain.lower, chain.upper))
            calls.append(({tip: T[tip][:3, 3] for tip in chain.tip_links}, seed))
        case = interleaved(lambda t, s, a=fast: a.solve(targets=t, seed=s),
                           lambda t, s, b=slow: b.solve(targets=t, seed=s), calls)
        rounds = []
        for _ in range(10):  # back to back: the compiled path's solver alone
            times = []
            for targets, q in calls[:100]:
                start = time.perf_counter()
                fast.solve(targets=targets, seed=q)
                times.append((time.perf_counter() - start) * 1e6)
            rounds.append(float(np.median(times)))
            time.sleep(0.005)
        case['back_to_back_us'] = (float(np.median(rounds)), min(rounds))
        out[f'{robot}, four feet in one analytic_hip_knee solve'] = case
        print(f'{robot} done', flush=True)
    return out


def commit() -> str:
    try:
        out = subprocess.run(['git', '-C', str(REPO), 'rev-parse', '--short', 'HEAD'],
                             capture_output=True, text=True, timeout=5).stdout.strip()
        dirty = subprocess.run(['git', '-C', str(REPO), 'status', '--porcelain', 'ik_node'],
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return out + (' (ik_node/ has uncommitted changes)' if dirty else '')
    except OSError:
        return '?'


def markdown(cases: Dict[str, Dict], meta: Dict) -> str:
    lines = ['# Compiled kernels against the pure-Python path (in-process A/B)', '',
             f'Command: `{meta["command"]}`  ', f'Commit: {meta["commit"]}  ',
             f'Conditions: {meta["conditions"]}  ', f'{meta["serving"]}', '',
             'Interleaved target by target (the order alternates), wall time per solve() '
             'call. A = compiled kernels (the default install), B = pure Python. "same": status '
             'and iterations equal, joints within 1e-6 rad.', '',
             '| case | median A [us] | median B [us] | A / B | p95 A [us] | p95 B [us] | '
             'same |', '|---|---|---|---|---|---|---|']
    for name, c in cases.items():
        lines.append(f'| {name} | {c["median_a"]:.1f} | {c["median_b"]:.1f} | '
                     f'{c["median_a"] / c["median_b"]:.2f} | {c["p95_a"]:.1f} | '
                     f'{c["p95_b"]:.1f} | {c["same"]}/{c["n"]} |')
    feet = {k: c for k, c in cases.items() if 'back_to_back_us' in c}
    if feet:
        lines += ['', 'Four feet back to back (compiled path alone, 10 rounds of 100 solves): '
                  'median of the round medians, lowest round [us]: ' + '; '.join(
                      f'{k.split(",")[0]} {c["back_to_back_us"][0]:.1f}, '
                      f'{c["back_to_back_us"][1]:.1f}' for k, c in feet.items())]
    return '\n'.join(lines) + '\n'


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--n', type=int, default=400, help='targets per case (default 400)')
    ap.add_argument('--rng-seed', type=int, default=0)
    ap.add_argument('--out', type=Path, default=RESULTS / 'compiled_ab.md')
    args = ap.parse_args(argv)
    if not kernels.wait():
        print(f'the compiled kernels cannot serve: {kernels.serving()}', file=sys.stderr)
        return 2
    rng = np.random.default_rng(args.rng_seed)
    steal0, total0 = steal_and_total()
    load0 = os.getloadavg()
    cases = {**arm_cases(args.n, rng), **tree_case(args.n, rng), **feet_cases(args.n, rng)}
    steal1, total1 = steal_and_total()
    load1 = os.getloadavg()
    steal = 100.0 * (steal1 - steal0) / max(total1 - total0, 1)
    meta = {'command': ' '.join(['python -m benchmarks.solvers.compiled_vs_python'] + sys.argv[1:]),
            'commit': commit(), 'serving': kernels.serving(),
            'conditions': f'{os.cpu_count()} CPUs, Python {sys.version.split()[0]}, numpy '
                          f'{np.__version__}; steal {steal:.1f} % over the run; '
                          f'load average {load0[0]:.1f} at the start, '
                          f'{load1[0]:.1f} at the end; {time.strftime("%Y-%m-%dT%H:%M")}'}
    text = markdown(cases, meta)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == '__main__':
    sys.exit(main())
