#!/usr/bin/env python3
"""Legged robots: one leg at a time with analytic_hip_knee, damped_jacobian and fabrik.

Legs: every foot of quad12 (packaged) and of Go1, Solo 12 and ANYmal C (``../shared/robots``,
skipped when absent), each as its own serial chain from the trunk to the foot.

In reach: ``--n`` targets per leg, FK of random in-limit joint vectors (a span over a full turn
sampled in +-pi), fixed RNG seed. The solvers run interleaved target by target (their order
rotates), each seeded with its own previous answer, as a node tracking a stream would be. Every
solve is timed with ``time.perf_counter`` around the call and rated by ik_node's FK on the joints
it returned: ``exact`` = within 1e-9 m, ``success`` = within 1e-5 m and every joint within its
limits. The analytic solver is also timed alone in a tight loop (``back to back``: the targets
solved one after another, seeded with the previous answer, in 20 rounds a few milliseconds
apart): the median call over all rounds, and the lowest round median, which leaves out most of
what other processes on a shared machine add (the target is checked on it; both are reported).

Out of reach: ``--oor-n`` targets per leg and kind (beyond the reach, in the inner hole, behind
joint limits; benchmarks/reach/out_of_reach.py makes them, damped_jacobian dropping the reachable
ones), each rated against a long batched multi-start search (``--reference-starts`` starts; a
solver that ends lower lowers the reference). ``closest`` = within 1e-6 m of the reference;
``bound ok`` = ``min_residual`` (when given) not above it.

All feet: the whole tree (four feet) solved in one call, ``solve(targets={foot: position})``,
for every solver that takes the tree; a solver that refuses it is listed with its reason (the
leg-by-leg multi-tip solve is a separate piece of work). ``--feet-n`` four-foot targets.

Usage::

    python -m benchmarks.legs.bench                       # everything: results/legs.{md,json}
    python -m benchmarks.legs.bench --quick               # smoke run into a temporary folder
    python -m benchmarks.legs.bench --robots quad12 go1 --n 1000 --oor-n 10
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

from benchmarks.reach import out_of_reach
from benchmarks.common import target_checks
from benchmarks.common.target_checks import check
from ik_node import Chain, IkError, make_solver

from benchmarks.common.robots import SHARED_ROBOTS

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / 'benchmarks' / 'results'

#: robot -> (file, base link, feet)
ROBOTS = {
    'quad12': (REPO / 'urdf' / 'quad12.urdf', 'base_link',
               ('FL_foot', 'FR_foot', 'RL_foot', 'RR_foot')),
    'go1': (SHARED_ROBOTS / 'go1.urdf', 'trunk', ('FL_foot', 'FR_foot', 'RL_foot', 'RR_foot')),
    'solo12': (SHARED_ROBOTS / 'solo12.urdf', 'base_link',
               ('FL_FOOT', 'FR_FOOT', 'HL_FOOT', 'HR_FOOT')),
    'anymal_c': (SHARED_ROBOTS / 'anymal_c.urdf', 'base',
                 ('LF_FOOT', 'RF_FOOT', 'LH_FOOT', 'RH_FOOT')),
}
SOLVERS = ('analytic_hip_knee', 'damped_jacobian', 'fabrik')
EXACT_M = 1e-9
SUCCESS_M = 1e-5
CLOSEST_M = 1e-6
TARGET_MEDIAN_US = 10.0
BACK_TO_BACK_ROUNDS = 20
ROUND_PAUSE_S = 0.005


def log(message: str) -> None:
    print(message, flush=True)


def random_q(chain: Chain, rng: np.random.Generator) -> np.ndarray:
    lower = np.maximum(chain.lower, -math.pi)
    upper = np.minimum(chain.upper, math.pi)
    return rng.uniform(lower, upper)


def percentile_us(times: List[float], pct: float) -> Optional[float]:
    return float(np.percentile(times, pct) * 1e6) if times else None


# ------------------------------------------------------------------------------- in reach
def in_reach(chain: Chain, solvers: Dict[str, Any], n: int, rng: np.random.Generator):
    """Per solver: exact %, success %, median and p95 time [us]; the analytic back to back."""
    targets = [chain.fk(random_q(chain, rng))[:3, 3] for _ in range(n)]
    names = list(solvers)
    seeds = {name: chain.mid_configuration() for name in names}
    rows = {name: {'exact': 0, 'success': 0, 'times': []} for name in names}
    for k, target in enumerate(targets):
        for j in range(len(names)):
            name = names[(k + j) % len(names)]
            start = time.perf_counter()
            result = solvers[name].solve(target, seed=seeds[name])
            elapsed = time.perf_counter() - start
            q = result.joint_positions
            error = float(np.linalg.norm(chain.fk(q)[:3, 3] - target))
            row = rows[name]
            row['times'].append(elapsed)
            row['exact'] += error <= EXACT_M
            row['success'] += error <= SUCCESS_M and chain.within_limits(q)
            seeds[name] = q
    out = {}
    for name, row in rows.items():
        out[name] = {'n': n, 'exact_pct': 100.0 * row['exact'] / n,
                     'success_pct': 100.0 * row['success'] / n,
                     'median_us': percentile_us(row['times'], 50),
                     'p95_us': percentile_us(row['times'], 95)}
    analytic = solvers.get('analytic_hip_knee')
    if analytic is not None:
        times, round_medians = [], []
        for _ in range(BACK_TO_BACK_ROUNDS):
            seed, round_times = chain.mid_configuration(), []
            for target in targets:
                start = time.perf_counter()
                seed = analytic.solve(target, seed=seed).joint_positions
                round_times.append(time.perf_counter() - start)
            times += round_times
            round_medians.append(percentile_us(round_times, 50))
            time.sleep(ROUND_PAUSE_S)
        row = out['analytic_hip_knee']
        row['back_to_back_us'] = percentile_us(times, 50)
        row['back_to_back_best_round_us'] = min(round_medians)
    return out


# --------------------------------------------------------------------------- out of reach
def beyond_reach(chain: Chain, solvers: Dict[str, Any], oor_n: int, starts: int,
                 rng_seed: int):
    """Per solver and in total: closest %, bound ok %, median time [us], worst excess [m]."""
    checker = solvers.get('damped_jacobian') or make_solver('damped_jacobian', chain)

    def reachable(target) -> bool:
        result = checker.solve(target)
        error = np.linalg.norm(chain.fk(result.joint_positions)[:3, 3] - target)
        return bool(error <= SUCCESS_M)

    kinds = out_of_reach.make_targets(chain, oor_n, rng_seed, starts, reachable,
                                      log=lambda m: None)
    targets = [(kind, t, best) for kind, found in kinds.items()
               for t, best, _ in found['targets']]
    rows = {name: {'closest': 0, 'bound_ok': 0, 'times': [], 'excess': 0.0, 'statuses': {}}
            for name in solvers}
    for _kind, target, best in targets:
        outcomes = {}
        for name, s in solvers.items():
            start = time.perf_counter()
            result = s.solve(target, seed=chain.mid_configuration())
            elapsed = time.perf_counter() - start
            error = float(np.linalg.norm(chain.fk(result.joint_positions)[:3, 3] - target))
            outcomes[name] = (result, error, elapsed)
        best = min([best] + [e for _, e, _ in outcomes.values()])
        for name, (result, error, elapsed) in outcomes.items():
            row = rows[name]
            row['times'].append(elapsed)
            row['closest'] += error <= best + CLOSEST_M
            row['excess'] = max(row['excess'], error - best)
            bound = result.min_residual
            row['bound_ok'] += bound is None or bound <= best + 1e-9
            status = result.status.value
            row['statuses'][status] = row['statuses'].get(status, 0) + 1
    count = len(targets)
    out = {'targets': count,
           'kinds': {kind: len(found['targets']) for kind, found in kinds.items()}}
    for name, row in rows.items():
        out[name] = {'closest_pct': 100.0 * row['closest'] / count if count else None,
                     'bound_ok_pct': 100.0 * row['bound_ok'] / count if count else None,
                     'median_us': percentile_us(row['times'], 50),
                     'p95_us': percentile_us(row['times'], 95),
                     'worst_excess_m': row['excess'], 'statuses': row['statuses']}
    return out


# ------------------------------------------------------------------------------- all feet
def all_feet(path: Path, base: str, feet, n: int, rng: np.random.Generator):
    """Per solver: the whole tree in one solve, or why the solver does not take it.

    This is the hook for the leg-by-leg multi-tip solve: a solver that accepts the four-foot
    tree and ``solve(targets=...)`` is measured here with no change to this script.
    """
    tree = Chain.from_urdf_file(path, base, list(feet))
    targets = [{foot: tree.fk(q, foot)[:3, 3] for foot in feet}
               for q in (random_q(tree, rng) for _ in range(n))]
    out: Dict[str, Any] = {}
    for name in SOLVERS:
        try:
            s = make_solver(name, tree)
        except IkError as exc:
            out[name] = {'refused': str(exc).split(';')[0]}
            continue
        times, reached, seed = [], 0, tree.mid_configuration()
        try:
            for feet_targets in targets:
                start = time.perf_counter()
                result = s.solve(targets=feet_targets, seed=seed)
                times.append(time.perf_counter() - start)
                seed = result.joint_positions
                worst = max(float(np.linalg.norm(tree.fk(seed, foot)[:3, 3] - p))
                            for foot, p in feet_targets.items())
                reached += worst <= SUCCESS_M and tree.within_limits(seed)
        except (IkError, TypeError) as exc:
            out[name] = {'refused': f'{type(exc).__name__}: {exc}'.split(';')[0]}
            continue
        out[name] = {'n': n, 'success_pct': 100.0 * reached / n,
                     'median_us': percentile_us(times, 50), 'p95_us': percentile_us(times, 95)}
    return out


# --------------------------------------------------------------------------------- report
def _fmt(value, digits=1, suffix=''):
    if value is None:
        return '-'
    return f'{value:.{digits}f}{suffix}'


def _back_to_back(row: Dict[str, Any]) -> str:
    if row.get('back_to_back_us') is None:
        return '-'
    return f'{row["back_to_back_us"]:.1f}, {row["back_to_back_best_round_us"]:.1f}'


def markdown(results: Dict[str, Any]) -> str:
    lines = ['# ik_node legs benchmark', '',
             f'Command: `{results["command"]}`  ', f'Commit: {results["commit"]}  ',
             f'Date: {results["date"]}; machine: {results["machine"]} '
             f'(load average at start {results["load"]})', '',
             'Single leg (one chain trunk -> foot), in process. Times are per solve call, '
             'FK-rated by the benchmark; see benchmarks/legs/bench.py for the protocol.', '',
             ]
    lines += target_checks.markdown(results['target_checks'])
    lines += ['', '## In reach', '',
              '| robot | foot | solver | exact <= 1e-9 m | success | median [us] | p95 [us] '
              '| back to back: median, best round [us] |', '|---|---|---|---|---|---|---|---|']
    for leg in results['legs']:
        for name, row in leg['in_reach'].items():
            lines.append(f'| {leg["robot"]} | {leg["foot"]} | {name} | '
                         f'{_fmt(row["exact_pct"], 1, " %")} | {_fmt(row["success_pct"], 1, " %")}'
                         f' | {_fmt(row["median_us"])} | {_fmt(row["p95_us"])} | '
                         f'{_back_to_back(row)} |')
    lines += ['', '## Out of reach (closest pose vs a long search)', '',
              '| robot | foot | targets (beyond/inner/behind limits) | solver | closest <= 1e-6 m '
              '| bound ok | worst excess [m] | median [us] | p95 [us] | statuses |',
              '|---|---|---|---|---|---|---|---|---|---|']
    for leg in results['legs']:
        oor = leg['out_of_reach']
        kinds = '/'.join(str(oor['kinds'][k]) for k in out_of_reach.KINDS)
        for name in SOLVERS:
            row = oor.get(name)
            if row is None:
                continue
            statuses = ', '.join(f'{k} {v}' for k, v in sorted(row['statuses'].items()))
            lines.append(f'| {leg["robot"]} | {leg["foot"]} | {kinds} | {name} | '
                         f'{_fmt(row["closest_pct"], 1, " %")} | '
                         f'{_fmt(row["bound_ok_pct"], 1, " %")} | {row["worst_excess_m"]:.2e} | '
                         f'{_fmt(row["median_us"])} | {_fmt(row["p95_us"])} | {statuses} |')
    lines += ['', '## All feet in one solve (the tree)', '',
              '| robot | solver | success | median [us] | p95 [us] |', '|---|---|---|---|---|']
    for robot, rows in results['all_feet'].items():
        for name, row in rows.items():
            if 'refused' in row:
                lines.append(f'| {robot} | {name} | not run: {row["refused"]} | | |')
            else:
                lines.append(f'| {robot} | {name} | {_fmt(row["success_pct"], 1, " %")} | '
                             f'{_fmt(row["median_us"])} | {_fmt(row["p95_us"])} |')
    return '\n'.join(lines) + '\n'


def checks(results: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The benchmark's targets for analytic_hip_knee, with this run's figures."""
    legs = [leg for leg in results['legs'] if 'analytic_hip_knee' in leg['in_reach']]
    out = []
    if not legs:
        return out
    exact = [leg['in_reach']['analytic_hip_knee']['exact_pct'] for leg in legs]
    out.append(check('analytic_hip_knee: 100 % of reachable targets within 1e-9 m on every leg',
                     f'{min(exact):.2f} % on the worst of {len(legs)} legs', min(exact) == 100.0))
    closest = [leg['out_of_reach']['analytic_hip_knee']['closest_pct'] for leg in legs
               if leg['out_of_reach'].get('analytic_hip_knee', {}).get('closest_pct') is not None]
    if closest:
        count = sum(leg['out_of_reach']['targets'] for leg in legs)
        out.append(check('analytic_hip_knee out of reach: the closest pose within 1e-6 m of a long '
                         'search',
                         f'{min(closest):.1f} % on the worst leg ({count} targets)',
                         min(closest) == 100.0))
    best = {f'{leg["robot"]}:{leg["foot"]}': leg['in_reach']['analytic_hip_knee']
            ['back_to_back_best_round_us'] for leg in legs}
    pooled = [leg['in_reach']['analytic_hip_knee']['back_to_back_us'] for leg in legs]
    worst = max(best, key=best.get)
    out.append(check(f'analytic_hip_knee: median <= {TARGET_MEDIAN_US:g} us per leg back to back',
                     f'best-round medians {min(best.values()):.1f}-{best[worst]:.1f} us (worst '
                     f'{worst}); all rounds pooled {min(pooled):.1f}-{max(pooled):.1f} us',
                     best[worst] <= TARGET_MEDIAN_US))
    return out


def _commit() -> str:
    try:
        commit = subprocess.run(['git', '-C', str(REPO), 'rev-parse', '--short', 'HEAD'],
                                capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(['git', '-C', str(REPO), 'status', '--porcelain', 'ik_node'],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return 'unknown'
    return commit + (' (ik_node/ has uncommitted changes)' if dirty else '')


# ----------------------------------------------------------------------------------- main
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--robots', nargs='+', default=list(ROBOTS))
    parser.add_argument('--solvers', nargs='+', default=list(SOLVERS))
    parser.add_argument('--n', type=int, default=1000, help='reachable targets per leg')
    parser.add_argument('--oor-n', type=int, default=10, help='out-of-reach targets per kind')
    parser.add_argument('--reference-starts', type=int, default=100)
    parser.add_argument('--feet-n', type=int, default=200, help='four-foot targets per robot')
    parser.add_argument('--rng-seed', type=int, default=0)
    parser.add_argument('--quick', action='store_true',
                        help='quad12 only, a few targets, into a temporary folder')
    parser.add_argument('--out', type=Path, default=None,
                        help='folder for legs.json and legs.md (default benchmarks/results)')
    args = parser.parse_args(argv)
    unknown = [r for r in args.robots if r not in ROBOTS] + \
        [s for s in args.solvers if s not in SOLVERS]
    if unknown:
        parser.error(f'unknown robots/solvers {", ".join(unknown)}; robots: '
                     f'{", ".join(ROBOTS)}; solvers: {", ".join(SOLVERS)}')
    if args.quick:
        args.robots = ['quad12'] if args.robots == list(ROBOTS) else args.robots
        args.n, args.oor_n, args.reference_starts, args.feet_n = 30, 1, 10, 5
    out_dir = args.out or (Path(tempfile.mkdtemp(prefix='bench_quick_')) if args.quick
                           else RESULTS)
    out_dir.mkdir(parents=True, exist_ok=True)
    results: Dict[str, Any] = {
        'command': 'python -m benchmarks.legs.bench ' + ' '.join(argv if argv is not None
                                                                 else sys.argv[1:]),
        'commit': _commit(), 'date': datetime.datetime.now().isoformat(timespec='minutes'),
        'machine': f'{platform.machine()}, {os.cpu_count()} cores, Python '
                   f'{platform.python_version()}, numpy {np.__version__}',
        'load': ' '.join(f'{x:.1f}' for x in os.getloadavg()),
        'legs': [], 'all_feet': {}}
    rng = np.random.default_rng(args.rng_seed)
    for robot in args.robots:
        path, base, feet = ROBOTS[robot]
        if not path.is_file():
            log(f'{robot}: {path} not present, skipped')
            continue
        for foot in feet[:1] if args.quick else feet:
            chain = Chain.from_urdf_file(path, base, foot)
            solvers = {name: make_solver(name, chain) for name in args.solvers}
            leg = {'robot': robot, 'foot': foot,
                   'in_reach': in_reach(chain, solvers, args.n, rng),
                   'out_of_reach': beyond_reach(chain, solvers, args.oor_n,
                                                args.reference_starts, args.rng_seed)}
            results['legs'].append(leg)
            a = leg['in_reach'].get('analytic_hip_knee', {})
            log(f'{robot} {foot}: analytic exact {_fmt(a.get("exact_pct"), 1, " %")}, back to '
                f'back (median, best round) {_back_to_back(a)} us; out of reach '
                f'{leg["out_of_reach"]["targets"]} targets')
        results['all_feet'][robot] = all_feet(path, base, feet, args.feet_n, rng)
    results['target_checks'] = checks(results)
    (out_dir / 'legs.json').write_text(json.dumps(results, indent=1) + '\n')
    (out_dir / 'legs.md').write_text(markdown(results))
    log(f'wrote {out_dir / "legs.md"} and legs.json')
    for line in target_checks.log_lines(results['target_checks']):
        log('  ' + line)
    return 0


if __name__ == '__main__':
    sys.exit(main())
