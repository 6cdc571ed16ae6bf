#!/usr/bin/env python3
"""Benchmark of solves of several tips, in-process: all feet of a quadruped in one solve, and both
hands of a tree with a shared trunk.

All feet: N random joint vectors uniform within the limits (fixed RNG seed), FK -> one target per
foot; every solver answers ``solve(targets={foot: position})`` from the mid configuration. The
multi-leg solve (each leg with the configured solver: ``analytic_hip_knee`` where it fits the legs,
``damped_jacobian``, ``fabrik``) against the FABRIK passes over the whole tree (``fabrik_tree``,
one solve of the tree instead of one per leg). Robots: the packaged
``quad12`` and, from ``../shared/robots``, Solo 12 and ANYmal C.

Back to back: the multi-leg solve alone, on one robot's targets, in rounds of 100 solves a few
milliseconds apart (the others interleaved with it share the CPU caches and the machine with
it): the median of every round, reported as the median of the rounds and the lowest round.

Trees: N random compatible targets for both hands of ``twin_arm`` (FK of one random joint vector),
``damped_jacobian`` (the stacked Jacobian of both hands) against ``fabrik`` with twin_arm's config
parameters.

Success: every targeted tip within the solver's own position tolerance (its ``reachable``, the
errors measured by FK in the base class and checked again here) and the solve time within the
budget (5 ms). Timing: ``time.perf_counter`` around each solve; solvers interleaved target by
target; the thread's CPU time (``time.thread_time``) of each solve too, which time spent waiting
for a CPU does not inflate. The load average and the CPU time stolen by the hypervisor are
recorded beside the figures: on a shared machine they move the tails.

Usage::

    python -m benchmarks.solvers.several_tips                 # N = 500 per robot
    python -m benchmarks.solvers.several_tips --n 50 --out /tmp/several

Writes ``several_tips.json`` and ``several_tips.md`` into ``--out`` (default
``benchmarks/results/``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from ik_node import Chain, make_solver
from ik_node.errors import IkError
from ik_node import kernels
from ik_node.solvers.trees.several_tips import tip_targets_from_input

from benchmarks.common.robots import SHARED_ROBOTS

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / 'benchmarks' / 'results'

BUDGET_S = 0.005
#: name -> (urdf path, base, feet)
FEET_ROBOTS = {
    'quad12': (REPO / 'urdf' / 'quad12.urdf', 'base_link',
               ('FL_foot', 'FR_foot', 'RL_foot', 'RR_foot')),
    'solo12': (SHARED_ROBOTS / 'solo12.urdf', 'base_link',
               ('FL_FOOT', 'FR_FOOT', 'HL_FOOT', 'HR_FOOT')),
    'anymal_c': (SHARED_ROBOTS / 'anymal_c.urdf', 'base',
                 ('LF_FOOT', 'RF_FOOT', 'LH_FOOT', 'RH_FOOT')),
}
LEG_SOLVERS = ('analytic_hip_knee', 'damped_jacobian', 'fabrik')


def steal_jiffies() -> tuple:
    """(steal, total) jiffies of all CPUs from /proc/stat."""
    try:
        with open('/proc/stat') as f:
            values = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    return (values[7] if len(values) > 7 else 0), sum(values)


def fabrik_tree_solver(chain: Chain, params: Optional[dict] = None) -> Callable:
    """``solve(targets, seed)`` by the FABRIK passes over the whole tree (the tree path of
    :class:`FabrikSolver`, called directly: the solver itself splits independent legs), the
    solver built with ``params`` (default: its defaults)."""
    solver = make_solver('fabrik', chain, params or {})

    def solve(targets, seed):
        parsed = tip_targets_from_input(targets, chain.tip_links)
        q_seed = np.asarray(seed, dtype=float)
        start = time.perf_counter()
        raw = solver._solve_tree(parsed, q_seed)
        elapsed = time.perf_counter() - start
        return solver._finish_tips(raw, parsed, elapsed, False, q_seed.tolist())
    return solve


def summary(times: List[float], cpu: List[float], ok: List[bool], statuses: Dict[str, int]
            ) -> Dict[str, Any]:
    t = np.array(times) * 1e6
    return {'n': len(times), 'success_pct': 100.0 * float(np.mean(ok)),
            'median_us': float(np.median(t)), 'p90_us': float(np.percentile(t, 90)),
            'p99_us': float(np.percentile(t, 99)), 'max_us': float(t.max()),
            'cpu_median_us': float(np.median(cpu) * 1e6),
            'cpu_p99_us': float(np.percentile(cpu, 99) * 1e6), 'statuses': statuses}


def run(chain: Chain, solvers: Dict[str, Callable], n: int, rng_seed: int) -> Dict[str, Any]:
    """Interleaved solves of ``n`` random FK targets of every tip; per solver its summary."""
    rng = np.random.default_rng(rng_seed)
    seed = chain.mid_configuration()
    times: Dict[str, List[float]] = {k: [] for k in solvers}
    cpu: Dict[str, List[float]] = {k: [] for k in solvers}
    ok: Dict[str, List[bool]] = {k: [] for k in solvers}
    statuses: Dict[str, Dict[str, int]] = {k: {} for k in solvers}
    names = list(solvers)
    for i in range(n):
        T = chain.fk_tips(rng.uniform(chain.lower, chain.upper))
        targets = {tip: T[tip][:3, 3] for tip in chain.tip_links}
        for name in names[i % len(names):] + names[:i % len(names)]:
            cpu_start, start = time.thread_time(), time.perf_counter()
            result = solvers[name](targets, seed)
            elapsed = time.perf_counter() - start
            cpu[name].append(time.thread_time() - cpu_start)
            T_out = chain.fk_tips(result.joint_positions)
            errors_ok = all(
                abs(float(np.linalg.norm(T_out[tip][:3, 3] - p)) -
                    result.tips[tip].position_error) < 1e-9 for tip, p in targets.items())
            assert errors_ok, f'{name}: the reported errors are not the FK errors'
            assert chain.within_limits(result.joint_positions)
            times[name].append(elapsed)
            spent = cpu[name][-1] if 'CPU time' in name else elapsed
            ok[name].append(result.reachable and spent <= BUDGET_S)
            statuses[name][result.status.value] = statuses[name].get(result.status.value, 0) + 1
    return {name: summary(times[name], cpu[name], ok[name], statuses[name]) for name in names}


def all_feet(n: int, rng_seed: int) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for robot, (path, base, feet) in FEET_ROBOTS.items():
        if not path.is_file():
            out[robot] = {'skipped': f'{path} not found'}
            continue
        chain = Chain.from_urdf_file(path, base, list(feet))
        solvers: Dict[str, Callable] = {}
        skipped = {}
        for name in LEG_SOLVERS:
            try:
                solver = make_solver(name, chain)
            except IkError as exc:
                skipped[name] = str(exc)
                continue
            solvers[f'{name} (legs)'] = \
                lambda targets, seed, s=solver: s.solve(targets=targets, seed=seed)
        solvers['fabrik_tree'] = fabrik_tree_solver(chain)
        print(f'{robot}: {", ".join(solvers)}', flush=True)
        out[robot] = {'results': run(chain, solvers, n, rng_seed), 'skipped': skipped}
    return out


def back_to_back(n_rounds: int, rng_seed: int) -> Dict[str, Any]:
    """Every leg solver that fits, alone, in rounds of 100 solves of random four-foot targets."""
    out: Dict[str, Any] = {}
    for robot, (path, base, feet) in FEET_ROBOTS.items():
        if not path.is_file():
            continue
        chain = Chain.from_urdf_file(path, base, list(feet))
        rng = np.random.default_rng(rng_seed)
        targets = []
        for _ in range(100):
            T = chain.fk_tips(rng.uniform(chain.lower, chain.upper))
            targets.append({tip: T[tip][:3, 3] for tip in chain.tip_links})
        seed = chain.mid_configuration()
        for name in LEG_SOLVERS:
            try:
                solver = make_solver(name, chain)
            except IkError:
                continue
            rounds, reached = [], 0
            for _ in range(n_rounds):
                times = []
                for t in targets:
                    start = time.perf_counter()
                    result = solver.solve(targets=t, seed=seed)
                    times.append(time.perf_counter() - start)
                    reached += result.reachable
                rounds.append(float(np.median(times)) * 1e6)
                time.sleep(0.005)
            out[f'{robot}: {name} (legs)'] = {
                'median_of_rounds_us': float(np.median(rounds)), 'lowest_round_us': min(rounds),
                'reached_pct': 100.0 * reached / (n_rounds * len(targets))}
            print(f'{robot}: {name} back to back: {np.median(rounds):.0f} us', flush=True)
    return out


def trees(n: int, rng_seed: int) -> Dict[str, Any]:
    import yaml
    config = yaml.safe_load((REPO / 'config' / 'twin_arm.yaml').read_text())
    params = config['ik_node']['ros__parameters']
    chain = Chain.from_urdf_file(REPO / 'urdf' / 'twin_arm.urdf', params['base_link'],
                                 params['tip_links'])
    dj = make_solver('damped_jacobian', chain, params.get('damped_jacobian', {}))
    fabrik_params = {**params.get('fabrik', {}), 'timeout': BUDGET_S}
    fabrik = make_solver('fabrik', chain, fabrik_params)
    # The same solver without its wall clock: on a loaded machine a solve preempted for
    # milliseconds ends as timeout; its thread's CPU time within the budget says whether the
    # solver itself is fast enough (success then: reached and CPU time <= the budget).
    dj_free = make_solver('damped_jacobian', chain, {**params.get('damped_jacobian', {}),
                                                     'timeout': 60.0})
    solvers = {'damped_jacobian': lambda t, s: dj.solve(targets=t, seed=s),
               'damped_jacobian (timeout 60 s; success: CPU time <= 5 ms)':
                   lambda t, s: dj_free.solve(targets=t, seed=s),
               'fabrik (twin_arm.yaml, timeout 5 ms)': lambda t, s: fabrik.solve(targets=t,
                                                                                  seed=s)}
    print('twin_arm: both hands', flush=True)
    return {'twin_arm': {'results': run(chain, solvers, n, rng_seed)}}


def commit() -> str:
    try:
        return subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=REPO,
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return 'unknown'


def markdown(data: Dict[str, Any]) -> str:
    lines = ['# Several tips in one solve (in-process)', '',
             f'Command: `{data["command"]}`, commit {data["commit"]}, {data["date"]}; '
             f'{data["n"]} targets per robot; load average {data["load_before"]} before, '
             f'{data["load_after"]} after; steal {data["steal_pct"]:.1f} %.', '',
             'Success: every targeted tip reached (FK-measured, the solver\'s tolerance) '
             f'within {BUDGET_S * 1e3:g} ms.', '']
    for section, title in (('all_feet', 'All four feet, from the mid configuration'),
                           ('trees', 'Both hands of a tree with a shared trunk')):
        lines += [f'## {title}', '',
                  '| robot | solver | success % | median µs | p90 µs | p99 µs | max µs | '
                  'CPU median µs | CPU p99 µs | statuses |', '|---' * 10 + '|']
        for robot, entry in data[section].items():
            if 'results' not in entry:
                lines.append(f'| {robot} | skipped: {entry["skipped"]} | | | | | | | | |')
                continue
            for name, r in entry['results'].items():
                st = ', '.join(f'{k} {v}' for k, v in sorted(r['statuses'].items()))
                lines.append(f'| {robot} | {name} | {r["success_pct"]:.1f} | '
                             f'{r["median_us"]:.0f} | {r["p90_us"]:.0f} | {r["p99_us"]:.0f} | '
                             f'{r["max_us"]:.0f} | {r["cpu_median_us"]:.0f} | '
                             f'{r["cpu_p99_us"]:.0f} | {st} |')
            for name, why in entry.get('skipped', {}).items():
                lines.append(f'| {robot} | {name}: does not fit ({why[:120]}) | | | | | | | | |')
        lines.append('')
    lines += ['## The multi-leg solve back to back (rounds of 100 four-foot solves)', '',
              '| robot: solver | median of the round medians µs | lowest round µs | reached % |',
              '|---|---|---|---|']
    for name, r in data['back_to_back'].items():
        lines.append(f'| {name} | {r["median_of_rounds_us"]:.0f} | {r["lowest_round_us"]:.0f} | '
                     f'{r["reached_pct"]:.1f} |')
    lines.append('')
    return '\n'.join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--n', type=int, default=500, help='targets per robot')
    parser.add_argument('--rng-seed', type=int, default=0)
    parser.add_argument('--rounds', type=int, default=20, help='back-to-back rounds of 100')
    parser.add_argument('--out', type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    kernels.wait()  # the default install's path (compiled where numba serves) from the start
    load_before = os.getloadavg()
    steal0 = steal_jiffies()
    command = 'python -m benchmarks.solvers.several_tips ' + ' '.join(argv or sys.argv[1:])
    data = {'command': command,
            'commit': commit(), 'date': datetime.datetime.now().isoformat(timespec='minutes'),
            'n': args.n, 'all_feet': all_feet(args.n, args.rng_seed),
            'trees': trees(args.n, args.rng_seed),
            'back_to_back': back_to_back(args.rounds, args.rng_seed)}
    steal1 = steal_jiffies()
    data['steal_pct'] = 100.0 * (steal1[0] - steal0[0]) / max(steal1[1] - steal0[1], 1)
    data['load_before'] = ' '.join(f'{v:.1f}' for v in load_before)
    data['load_after'] = ' '.join(f'{v:.1f}' for v in os.getloadavg())
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / 'several_tips.json').write_text(json.dumps(data, indent=1))
    text = markdown(data)
    (args.out / 'several_tips.md').write_text(text + '\n')
    print(text)
    return 0


if __name__ == '__main__':
    sys.exit(main())
