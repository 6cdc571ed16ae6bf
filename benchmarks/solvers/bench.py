#!/usr/bin/env python3
"""Benchmark ik_node's IK solvers against KDL, ikpy and pinocchio on the same targets.

Targets: N random joint vectors uniform within the URDF limits (fixed RNG seed), FK -> target.
Tasks: '6d' (position and orientation) and 'position'. Seeds: the mid-limit configuration and a
random configuration per target. The solvers run interleaved, target by target (their order
rotates each target), so machine drift hits all alike. Every solve is timed around the solve
call by ``time.perf_counter`` (wall) and ``time.process_time`` (process CPU, all threads); its
time is the lesser of the two (both are reported). Its errors are measured here by ik_node's FK
on the joints it returned, for every solver alike.

Success = position error < 1e-5 m (and orientation error < 1e-4 rad for 6D), solve time within the
budget (5 ms), every joint inside its limits.

Usage (see benchmarks/README.md)::

    python -m benchmarks.solvers.bench                     # everything, N = 500
    python -m benchmarks.solvers.bench --quick --robots planar4
    python -m benchmarks.solvers.bench --robots ur5 panda --solvers damped_jacobian kdl_lma \\
        --param damped_jacobian.damping=0.01
    python -m benchmarks.solvers.bench --urdf my.urdf --base base_link --tip tool0

Writes ``NAME.json``, ``NAME.md`` (``--name``, default ``results``) and ``solvers.png`` into
``--out``.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import math
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np
import transforms3d

import ik_node
from benchmarks.reach import out_of_reach
from benchmarks.solvers import peers
from benchmarks.solvers.peers import (ORIENTATION_TOL_RAD, POSITION_TOL_M, Robot, Skip, Target,
                   rotation_error_rad)
from benchmarks.common import report
from benchmarks.common import target_checks
from ik_node import kernels

from benchmarks.common.robots import SHARED_ROBOTS

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / 'benchmarks' / 'results'

#: name -> (file, base, tip, where)
KNOWN_ROBOTS = {
    'leg3': (REPO / 'urdf' / 'leg3.urdf', 'base_link', 'foot', 'shipped'),
    'planar4': (REPO / 'urdf' / 'planar4.urdf', 'base_link', 'tip', 'shipped'),
    'arm6': (REPO / 'urdf' / 'arm6.urdf', 'base_link', 'tool0', 'shipped'),
    'ur5': (SHARED_ROBOTS / 'ur5.urdf', 'base_link', 'tool0', 'reference'),
    'panda': (SHARED_ROBOTS / 'panda.urdf', 'panda_link0', 'panda_hand_tcp', 'reference'),
    'ur10': (SHARED_ROBOTS / 'ur10.urdf', 'base_link', 'tool0', 'reference'),
    'iiwa14': (SHARED_ROBOTS / 'iiwa14.urdf', 'iiwa_link_0', 'iiwa_link_ee', 'reference'),
    'jaco2': (SHARED_ROBOTS / 'kinova_j2s6s200.urdf', 'j2s6s200_link_base',
              'j2s6s200_end_effector', 'reference'),
    'baxter': (SHARED_ROBOTS / 'baxter.urdf', 'base', 'right_hand_link', 'reference'),
}
#: '6d', 'position': FK targets, both seeds; 'out_of_reach': see out_of_reach.py; 'tracik':
#: TRAC-IK's published protocol (6D, 5 ms, 1e-5 on position [m] and rotation [rad]; its
#: mid-limit seed, and a random seed as well), ik_node's orientation_tolerance set to 1e-5.
TASKS = ('6d', 'position', 'out_of_reach', 'tracik')
TRACIK_TOL_RAD = 1e-5
SEEDS = ('mid', 'random')
CALIBRATION_UNITS = 200
#: ikpy gets this many budgets of evaluations so that its accuracy shows; a solve slower than
#: the budget still counts as a failure.
IKPY_BUDGET_FACTOR = 10.0


def log(msg: str) -> None:
    print(msg, flush=True)


# ------------------------------------------------------------------------------- set-up
def load_robots(args) -> List[Robot]:
    specs = []
    for name, (path, base, tip, where) in KNOWN_ROBOTS.items():
        if args.robots and name not in args.robots:
            continue
        if not path.is_file():
            log(f'skip robot {name}: {path} not found ({where})')
            continue
        specs.append((name, path, base, tip))
    if args.urdf:
        if not (len(args.urdf) == len(args.base) == len(args.tip)):
            sys.exit('--urdf, --base and --tip must be given the same number of times')
        for path, base, tip in zip(args.urdf, args.base, args.tip):
            name = Path(path).stem
            while name in [s[0] for s in specs]:
                name += '_'
            specs.append((name, Path(path).resolve(), base, tip))
    robots = []
    for name, path, base, tip in specs:
        chain = ik_node.Chain.from_urdf_file(path, base, tip)
        urdf = peers.parse_urdf(path)
        robots.append(Robot(name, path, base, tip, chain, urdf,
                            peers.urdf_joint_path(urdf, base, tip)))
    return robots


def sampling_box(chain):
    lo = np.where(np.isfinite(chain.lower), chain.lower, -math.pi)
    hi = np.where(np.isfinite(chain.upper), chain.upper, math.pi)
    return lo, hi


def make_targets(chain, n: int, rng_seed: int):
    """N targets from random joint vectors within limits, and N random seeds (own RNG stream)."""
    lo, hi = sampling_box(chain)
    q_targets = np.random.default_rng(rng_seed).uniform(lo, hi, size=(n, chain.n))
    q_seeds = np.random.default_rng(rng_seed + 1).uniform(lo, hi, size=(n, chain.n))
    targets = []
    for q in q_targets:
        T = chain.fk(q)
        w, x, y, z = transforms3d.quaternions.mat2quat(T[:3, :3])
        targets.append(Target(T, T[:3, 3].copy(), np.array([x, y, z, w])))
    return targets, q_seeds


def parse_params(items: List[str]) -> Dict[str, Dict[str, Any]]:
    out: Dict[str, Dict[str, Any]] = {}
    for item in items or []:
        key, _, text = item.partition('=')
        solver, _, param = key.partition('.')
        if not (solver and param and text):
            sys.exit(f'--param {item!r}: expected SOLVER.NAME=VALUE')
        low = text.lower()
        if low in ('true', 'false'):
            value: Any = low == 'true'
        else:
            try:
                value = int(text)
            except ValueError:
                try:
                    value = float(text)
                except ValueError:
                    value = text
        out.setdefault(solver, {})[param] = value
    return out


def calibrate(adapter, target: Target, q_seed, budget_s: float) -> int:
    """Iteration (or evaluation) cap whose full run takes about ``budget_s`` on this machine.

    KDL: the solver is rebuilt with eps = 0 (and eps_joints = 0 for LMA) so it runs exactly
    CALIBRATION_UNITS iterations; ikpy: the forward-kinematics calls of one solve towards an
    unreachable target are counted (scipy's evaluation = 1 + n calls with its finite-difference
    Jacobian) and ikpy is given IKPY_BUDGET_FACTOR budgets. The fastest of 5 runs is taken: on a
    shared machine the least disturbed run is the closest to the solver's own speed.
    """
    per_unit = []
    for _ in range(5):
        if adapter.name == 'ikpy':
            counter = {'n': 0}
            fk = adapter.ichain.forward_kinematics

            def counting(*a, counter=counter, fk=fk, **k):
                counter['n'] += 1
                return fk(*a, **k)
            adapter.ichain.forward_kinematics = counting
            adapter.set_cap(CALIBRATION_UNITS)
            far = Target(target.T.copy(), target.position * 100.0 + 10.0, target.quat_xyzw)
            args = adapter.prepare(far, q_seed)
            t0 = time.perf_counter()
            adapter.solve(*args)
            dt = time.perf_counter() - t0
            del adapter.ichain.forward_kinematics
            # scipy's max_nfev does not count the n finite-difference calls per Jacobian
            per_unit.append(dt / max(1, counter['n']) * (adapter.mask.sum() + 1))
        else:
            if adapter.name == 'kdl_lma':
                adapter.set_cap(CALIBRATION_UNITS, eps=0.0, eps_joints=0.0)
            else:
                adapter.set_cap(CALIBRATION_UNITS, eps=0.0)
            args = adapter.prepare(target, q_seed)
            t0 = time.perf_counter()
            adapter.solve(*args)
            per_unit.append((time.perf_counter() - t0) / CALIBRATION_UNITS)
    allowed_s = budget_s * (IKPY_BUDGET_FACTOR if adapter.name == 'ikpy' else 1.0)
    cap = max(1, int(allowed_s / float(np.min(per_unit))))
    adapter.set_cap(cap)
    adapter.settings['cap_calibration'] = {'seconds_per_unit': float(np.min(per_unit)),
                                           'cap': cap, 'cap_time_s': allowed_s}
    return cap


def build_adapters(robot: Robot, task: str, args, factories, params, targets, q_mid, caps,
                   skipped: Dict[str, str]):
    """The solvers for one robot/task; ``caps`` caches calibrated caps per (robot, task, peer)."""
    adapters = []
    for name in sorted(ik_node.SOLVERS):
        if args.solvers and name not in args.solvers:
            continue
        try:
            adapters.append(peers.IkNodeAdapter(robot, task, name, params.get(name, {}),
                                                args.budget_ms / 1000.0))
        except Skip as exc:
            skipped[name] = str(exc)
    for f in factories:
        if args.solvers and f.name not in args.solvers:
            continue
        if f.why_not:
            skipped[f.name] = f'not installed ({f.why_not})'
            continue
        try:
            if f.name in ('pinocchio_clik', 'optik', 'tracik'):  # bounded by time
                adapter = f.build(robot, task, args.budget_ms / 1000.0)
            else:
                adapter = f.build(robot, task, 100)
                key = (robot.name, task, f.name)
                if key not in caps:
                    caps[key] = calibrate(adapter, targets[0], q_mid, args.budget_ms / 1000.0)
                    cal = adapter.settings['cap_calibration']
                    log(f'  {f.name} on {robot.name}/{task}: cap {caps[key]} '
                        f'({"evaluations" if f.name == "ikpy" else "iterations"}) ~ '
                        f'{cal["cap_time_s"] * 1e3:g} ms')
                else:
                    adapter.set_cap(caps[key])
            adapters.append(adapter)
        except Skip as exc:
            skipped[f.name] = str(exc)
        except Exception as exc:  # a peer's own failure must not stop the benchmark
            skipped[f.name] = f'failed to set up: {type(exc).__name__}: {exc}'
    return adapters


# ------------------------------------------------------------------------------ measuring
def run_block(robot: Robot, task: str, seed_kind: str, adapters, targets, q_seeds,
              budget_s: float, label: str):
    chain = robot.chain
    n = len(targets)
    k = len(adapters)
    rec = {a.name: {'t': np.full(n, np.nan), 'wall': np.full(n, np.nan),
                    'cpu': np.full(n, np.nan), 'pos': np.full(n, np.inf),
                    'rot': np.full(n, np.inf), 'lim': np.zeros(n, bool), 'exc': 0, 'it': [],
                    'inner': []}
           for a in adapters}
    q_mid = chain.mid_configuration()
    # warm-up: caches, lazy imports, first-call allocation
    for a in adapters:
        for i in range(min(3, n)):
            try:
                a.joints(a.solve(*a.prepare(targets[i], q_mid)))
            except Exception:
                pass
    every = max(1, n // 4)
    gc.collect()
    gc.disable()  # collector pauses would land on whichever solver is running
    try:
        for i, target in enumerate(targets):
            q_seed = q_mid if seed_kind == 'mid' else q_seeds[i]
            for j in range(k):
                a = adapters[(i + j) % k]
                r = rec[a.name]
                args = a.prepare(target, q_seed.copy())
                failed = False
                try:
                    c0 = time.process_time()
                    t0 = time.perf_counter()
                    raw = a.solve(*args)
                except Exception:
                    failed = True
                t1 = time.perf_counter()
                c1 = time.process_time()
                # The lesser of wall and process CPU time: wall time includes what the shared
                # machine took from the process (preemption, steal); CPU time counts every
                # thread of the process (TRAC-IK starts two per solve).
                r['wall'][i], r['cpu'][i] = t1 - t0, c1 - c0
                r['t'][i] = min(t1 - t0, c1 - c0)
                if not failed:
                    try:
                        q = a.joints(raw)
                        it = a.iterations(raw)
                        inner = a.inner_time(raw)
                    except Exception:
                        failed = True
                if failed:
                    r['exc'] += 1
                    continue
                if it is not None:
                    r['it'].append(it)
                if inner is not None:
                    r['inner'].append(inner)
                if q.shape != (chain.n,) or not np.all(np.isfinite(q)):
                    continue
                T = chain.fk(q)
                r['pos'][i] = float(np.linalg.norm(T[:3, 3] - target.position))
                r['rot'][i] = rotation_error_rad(T[:3, :3], target.T[:3, :3])
                r['lim'][i] = bool(np.all(q >= chain.lower - 1e-9) and
                                   np.all(q <= chain.upper + 1e-9))
            if (i + 1) % every == 0 or i + 1 == n:
                parts = []
                for a in adapters:
                    s = summarize(rec[a.name], task, budget_s, i + 1)
                    parts.append(f'{a.name} {s["success_pct"]:.1f}% {s["median_ms"]:.3f}ms')
                log(f'[{label}] {i + 1}/{n}  ' + ' | '.join(parts))
    finally:
        gc.enable()
    return {a.name: summarize(rec[a.name], task, budget_s, n) for a in adapters}


def summarize(r, task: str, budget_s: float, upto: int) -> Dict[str, Any]:
    t, pos, rot, lim = r['t'][:upto], r['pos'][:upto], r['rot'][:upto], r['lim'][:upto]
    accurate = pos < POSITION_TOL_M
    if task == '6d':
        accurate &= rot < ORIENTATION_TOL_RAD
    elif task == 'tracik':
        accurate &= rot < TRACIK_TOL_RAD
    in_budget = t <= budget_s
    success = accurate & in_budget & lim
    pct = lambda m: 100.0 * float(np.mean(m)) if upto else float('nan')  # noqa: E731
    out = {
        'n': int(upto),
        'success_pct': pct(success),
        'accurate_pct': pct(accurate),
        'in_limits_pct': pct(lim),
        'in_budget_pct': pct(in_budget),
        'exceptions': int(r['exc']),
        'mean_ms': 1e3 * float(np.mean(t)),
        'median_ms': 1e3 * float(np.median(t)),
        'p95_ms': 1e3 * float(np.percentile(t, 95)),
        # failed solves whose wall time passed the budget while their CPU time did not: the
        # process was off the CPU (preempted, stolen) and the solver's wall-clock timeout ended it
        'failed_preempted': int(np.sum(~success & (r['wall'][:upto] > budget_s) &
                                       (r['cpu'][:upto] <= budget_s))),
        'median_wall_ms': 1e3 * float(np.median(r['wall'][:upto])),
        'p95_wall_ms': 1e3 * float(np.percentile(r['wall'][:upto], 95)),
        'median_cpu_ms': 1e3 * float(np.median(r['cpu'][:upto])),
        'p95_cpu_ms': 1e3 * float(np.percentile(r['cpu'][:upto], 95)),
        'median_success_ms': 1e3 * float(np.median(t[success])) if success.any() else None,
        # the same solves judged against a 1 ms budget (a solve is deterministic up to the
        # clock: one stopped at 1 ms would have had exactly these first iterations)
        'success_within_1ms_pct': pct(accurate & lim & (t <= 1e-3)),
        'median_position_error_m': float(np.median(pos)),
    }
    if task in ('6d', 'tracik'):
        out['median_orientation_error_rad'] = float(np.median(rot))
    if r['it']:
        out['median_iterations_reported'] = float(np.median(r['it']))
    if r['inner']:
        # the solver's own timing of its core, without the solve() wrapper: shown, never used
        out['median_inner_ms_reported'] = 1e3 * float(np.median(r['inner']))
    return out


def add_ratios(solvers: Dict[str, Dict[str, Any]], peer_names) -> None:
    """Each figure also as a ratio to the best peer in the same block."""
    peer_stats = [solvers[p] for p in peer_names if p in solvers]
    if not peer_stats:
        return
    best = {'success_pct': max(s['success_pct'] for s in peer_stats)}
    for key in ('mean_ms', 'median_ms', 'p95_ms'):
        best[key] = min(s[key] for s in peer_stats)
    for s in solvers.values():
        s['ratio_to_best_peer'] = {k: (s[k] / v if v else None) for k, v in best.items()}


def hip_knee_stream(robot: Robot, targets, params) -> Optional[Dict[str, Any]]:
    """analytic_hip_knee solving a stream back to back, as the node does (each solve seeded
    with the previous solution); per-call time with time.perf_counter.

    The interleaved blocks run every peer between two of its solves, which evicts the
    interpreter's caches; this is the figure for a solver serving a target stream.
    """
    if 'analytic_hip_knee' not in ik_node.SOLVERS:
        return None
    try:
        solver = ik_node.make_solver('analytic_hip_knee', robot.chain, params)
    except Exception as exc:
        return {'error': f'{type(exc).__name__}: {exc}'}
    q = robot.chain.mid_configuration()
    times = []
    # Passes over the targets until 20 000 solves are timed (one pass of 300 lasts ~4 ms, so
    # one pass's median swung 14-27 us with the machine's load); the first pass warms up.
    passes = 1 + max(2, -(-20000 // max(len(targets), 1)))
    for k in range(passes):
        for target in targets:
            t0 = time.perf_counter()
            r = solver.solve(target.position, None, q)
            if k:
                times.append(time.perf_counter() - t0)
            q = r.joint_positions
    return {'robot': robot.name, 'n': len(targets), 'solves_timed': len(times),
            'median_us': float(np.median(times) * 1e6),
            'p95_us': float(np.percentile(times, 95) * 1e6)}


def run_out_of_reach(robot: Robot, args, params) -> Dict[str, Any]:
    """ik_node's position solvers on out-of-reach targets (see ``out_of_reach.py``): time,
    and the excess of the error over the best a long multi-start search found."""
    chain = robot.chain
    budget_s = args.budget_ms / 1000.0
    solvers, skipped = {}, {}
    for name in sorted(ik_node.SOLVERS):
        if args.solvers and name not in args.solvers:
            continue
        cls = ik_node.solver_class(name)
        p = dict(params.get(name, {}))
        if 'timeout' in cls.param_specs() and 'timeout' not in p:
            p['timeout'] = budget_s
        try:
            solvers[name] = ik_node.make_solver(name, chain, p)
        except ik_node.IkError as exc:
            skipped[name] = f'{type(exc).__name__}: {exc}'
    checker = ik_node.make_solver('damped_jacobian', chain, {'timeout': 0.05})
    check_rng = np.random.default_rng(args.rng_seed + 4)
    lower, upper = sampling_box(chain)

    def reachable(target) -> bool:  # an FK-checked answer proves it
        return any(checker.solve(target, None, seed).reachable
                   for seed in (None, check_rng.uniform(lower, upper)))
    t0 = time.perf_counter()
    kinds = out_of_reach.make_targets(chain, args.oor_n, args.rng_seed, args.reference_starts,
                                      reachable, log=log)
    reference_s = time.perf_counter() - t0
    summary = out_of_reach.measure(chain, solvers, kinds, args.rng_seed, budget_s,
                                   f'{robot.name} | out of reach', log=log)
    return {'robot': robot.name, 'dof': chain.n, 'reach_m': kinds['beyond']['reach_m'],
            'reference_starts': args.reference_starts, 'reference_s': reference_s,
            'settings': {name: dict(s.params) for name, s in solvers.items()},
            'skipped': skipped, 'kinds': summary}


def fabrik_iterations(robot: Robot, targets, params) -> Optional[Dict[str, Any]]:
    """fabrik at 1e-4 m on planar4, mid seed: share converged within 10 iterations.

    Measured two ways: (a) max_iterations = 10 and the error measured by FK (does not trust the
    solver's iteration count); (b) uncapped, the share with reported iterations <= 10 and a
    measured error < 1e-4 m.
    """
    if 'fabrik' not in ik_node.SOLVERS:
        return None
    chain = robot.chain
    q_mid = chain.mid_configuration()
    out = {'robot': robot.name, 'n': len(targets), 'tolerance_m': 1e-4}
    try:
        capped = ik_node.make_solver('fabrik', chain, {**params, 'position_tolerance': 1e-4,
                                                       'max_iterations': 10})
        free = ik_node.make_solver('fabrik', chain, {**params, 'position_tolerance': 1e-4})
    except Exception as exc:
        return {'error': f'{type(exc).__name__}: {exc}'}
    ok_capped = ok_free = 0
    for target in targets:
        try:
            r = capped.solve(target.position, None, q_mid)
            err = np.linalg.norm(chain.fk(r.joint_positions)[:3, 3] - target.position)
            ok_capped += bool(err < 1e-4)
            r = free.solve(target.position, None, q_mid)
            err = np.linalg.norm(chain.fk(r.joint_positions)[:3, 3] - target.position)
            ok_free += bool(err < 1e-4 and r.iterations <= 10)
        except Exception:
            pass
    out['capped_at_10_pct'] = 100.0 * ok_capped / len(targets)
    out['reported_le_10_pct'] = 100.0 * ok_free / len(targets)
    return out


# ---------------------------------------------------------------------------------- main
def machine_conditions() -> tuple:
    """(1-minute load average, steal jiffies, all jiffies) of the machine now."""
    try:
        with open('/proc/stat') as f:
            values = [int(v) for v in f.readline().split()[1:]]
        steal, total = (values[7] if len(values) > 7 else 0), sum(values)
    except (OSError, ValueError):
        steal = total = 0
    return __import__('os').getloadavg()[0], steal, total


def conditions_text(start: tuple, end: tuple) -> str:
    """The load average at the start and end of the run and the hypervisor's steal over it."""
    steal = 100.0 * (end[1] - start[1]) / max(end[2] - start[2], 1)
    return (f'load average {start[0]:.1f} at the start, {end[0]:.1f} at the end; steal '
            f'{steal:.1f} % over the run')


def environment(args, factories) -> Dict[str, Any]:
    try:
        commit = subprocess.run(['git', '-C', str(REPO), 'rev-parse', '--short', 'HEAD'],
                                capture_output=True, text=True, timeout=5).stdout.strip()
        dirty = subprocess.run(['git', '-C', str(REPO), 'status', '--porcelain', 'ik_node'],
                               capture_output=True, text=True, timeout=5).stdout.strip()
    except Exception:
        commit, dirty = '', ''
    return {
        'date': datetime.datetime.now().isoformat(timespec='seconds'),
        'command': ' '.join(['python -m benchmarks.solvers.bench'] + sys.argv[1:]),
        'python': f'{platform.python_implementation()} {platform.python_version()} '
                  f'({sys.executable})',
        'machine': f'{platform.machine()}, {platform.processor() or "?"}, '
                   f'{__import__("os").cpu_count()} cpus',
        'numpy': np.__version__,
        'solver_path': kernels.serving(),
        'ik_node': f'{ik_node.__version__} at {Path(ik_node.__file__).parent} '
                   f'(git {commit}{", ik_node/ has uncommitted changes" if dirty else ""})',
        'peers': {f.name: (f.version if not f.why_not else f'missing: {f.why_not}')
                  for f in factories},
        'label': args.label,
        'n_targets': args.n, 'rng_seed': args.rng_seed, 'budget_ms': args.budget_ms,
        'criteria': {'position_error_m_below': POSITION_TOL_M,
                     'orientation_error_rad_below': ORIENTATION_TOL_RAD,
                     'solve_time_at_most_ms': args.budget_ms, 'joints_within_limits': True},
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--n', type=int, default=500, help='targets per robot (default 500)')
    ap.add_argument('--quick', action='store_true', help='smoke run: 10 targets')
    ap.add_argument('--robots', nargs='+', help=f'subset of: {", ".join(KNOWN_ROBOTS)}')
    ap.add_argument('--solvers', nargs='+', help='subset of ik_node solvers and peers')
    ap.add_argument('--tasks', nargs='+', choices=TASKS,
                    help='default: 6d and tracik on chains with >= 6 joints, position and '
                         'out_of_reach on all')
    ap.add_argument('--seeds', nargs='+', choices=SEEDS, default=list(SEEDS))
    ap.add_argument('--urdf', action='append', help='extra URDF file (repeatable)')
    ap.add_argument('--base', action='append', default=[], help='base link of each --urdf')
    ap.add_argument('--tip', action='append', default=[], help='tip link of each --urdf')
    ap.add_argument('--param', action='append', default=[],
                    help='ik_node solver parameter, SOLVER.NAME=VALUE (repeatable)')
    ap.add_argument('--budget-ms', type=float, default=5.0, help='time budget per solve [ms]')
    ap.add_argument('--oor-n', type=int, default=100,
                    help='out-of-reach targets per kind and robot (default 100; --quick: 5)')
    ap.add_argument('--reference-starts', type=int, default=100,
                    help='random starts of the long search rating out-of-reach answers '
                         '(default 100; --quick: 20)')
    ap.add_argument('--rng-seed', type=int, default=0)
    ap.add_argument('--out', type=Path, default=None,
                    help='results folder (default: benchmarks/results; with --quick a temporary '
                         'folder, so a smoke run never overwrites the committed results)')
    ap.add_argument('--name', default='results',
                    help='file name of the results: NAME.json, NAME.md (default results)')
    ap.add_argument('--no-plot', action='store_true')
    ap.add_argument('--label', default='', help='free text recorded in the results (e.g. what '
                    'source tree was measured)')
    args = ap.parse_args(argv)
    if args.out is None:
        args.out = Path(tempfile.mkdtemp(prefix='bench_quick_')) if args.quick \
            else RESULTS
    if args.quick:
        args.n = 10
        args.oor_n = min(args.oor_n, 5)
        args.reference_starts = min(args.reference_starts, 20)
    params = parse_params(args.param)
    factories = peers.peer_factories()
    known = sorted(ik_node.SOLVERS) + [f.name for f in factories]
    unknown = [s for s in (args.solvers or []) + list(params) if s not in known]
    if unknown:
        ap.error(f'unknown solver(s) {", ".join(unknown)}. Available: {", ".join(known)}')
    unknown = [r for r in args.robots or []
               if r not in KNOWN_ROBOTS and r not in [Path(u).stem for u in args.urdf or []]]
    if unknown:
        ap.error(f'unknown robot(s) {", ".join(unknown)}. Available: '
                 f'{", ".join(KNOWN_ROBOTS)} (others with --urdf/--base/--tip)')
    for f in factories:
        log(f'peer {f.name}: ' + (f'{f.package} {f.version}' if not f.why_not
                                  else f'SKIPPED, {f.why_not}'))
    # The path a user's solves take once the node runs: the compiled kernels where numba may
    # serve (loaded before the first timed solve), else pure Python (IK_NODE_NO_NUMBA=1).
    kernels.wait()
    log(kernels.serving())
    robots = load_robots(args)
    if not robots:
        log('no robot to benchmark')
        return 2
    peer_names = [f.name for f in factories]
    caps: Dict = {}
    blocks = []
    unreachable = []
    fabrik = stream = None
    t_start = time.perf_counter()
    conditions_start = machine_conditions()
    for robot in robots:
        targets, q_seeds = make_targets(robot.chain, args.n, args.rng_seed)
        q_mid = robot.chain.mid_configuration()
        tasks = args.tasks or [t for t in TASKS if t not in ('6d', 'tracik') or
                               robot.chain.n >= 6]
        for task in [t for t in tasks if t != 'out_of_reach']:
            skipped: Dict[str, str] = {}
            task_params = params
            if task == 'tracik':  # its tolerance on the rotation, for the solvers that take it
                task_params = {name: {**({'orientation_tolerance': TRACIK_TOL_RAD} if
                                         'orientation_tolerance' in
                                         ik_node.solver_class(name).param_specs() else {}),
                                      **params.get(name, {})} for name in ik_node.SOLVERS}
            adapters = build_adapters(robot, '6d' if task == 'tracik' else task, args, factories,
                                      task_params, targets, q_mid, caps, skipped)
            for name, why in skipped.items():
                log(f'  {robot.name}/{task}: {name} skipped: {why}')
            for seed_kind in args.seeds:
                label = f'{robot.name} | {task} | {seed_kind} seed'
                solvers = run_block(robot, task, seed_kind, adapters, targets, q_seeds,
                                    args.budget_ms / 1000.0, label)
                add_ratios(solvers, peer_names)
                blocks.append({'robot': robot.name, 'urdf': str(robot.urdf_path),
                               'base': robot.base, 'tip': robot.tip, 'dof': robot.chain.n,
                               'task': task, 'seed': seed_kind, 'solvers': solvers,
                               'settings': {a.name: a.settings for a in adapters},
                               'skipped': skipped})
        if 'out_of_reach' in tasks:
            unreachable.append(run_out_of_reach(robot, args, params))
        if robot.name == 'leg3' and (not args.solvers or 'analytic_hip_knee' in args.solvers):
            stream = hip_knee_stream(robot, targets, params.get('analytic_hip_knee', {}))
            if stream:
                log(f'[analytic_hip_knee stream, leg3] {stream}')
        if robot.name == 'planar4' and (not args.solvers or 'fabrik' in args.solvers):
            fabrik = fabrik_iterations(robot, targets, params.get('fabrik', {}))
            if fabrik:
                log(f'[fabrik iterations, planar4] {fabrik}')
    meta = environment(args, factories)
    meta['conditions'] = conditions_text(conditions_start, machine_conditions())
    results = {'meta': meta, 'blocks': blocks,
               'out_of_reach': unreachable,
               'fabrik_iterations': fabrik, 'hip_knee_stream': stream,
               'elapsed_s': time.perf_counter() - t_start}
    results['target_checks'] = report.checks(results)
    args.out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = args.out / f'{args.name}.json', args.out / f'{args.name}.md'
    json_path.write_text(json.dumps(results, indent=1, default=_jsonable))
    md_path.write_text(report.markdown(results))
    log(f'wrote {json_path} and {md_path}')
    if not args.no_plot:
        try:
            from benchmarks.common import plot as plot_results
            png = plot_results.plot(results, args.out / 'solvers.png')
            log(f'wrote {png}')
        except ImportError as exc:
            log(f'plot skipped: {exc} (pip install matplotlib)')
    for line in target_checks.log_lines(results['target_checks']):
        log(line)
    return 0


def _jsonable(value):
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    return str(value)


if __name__ == '__main__':
    sys.exit(main())
