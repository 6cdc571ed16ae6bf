"""The closest pose out of reach, on held-out targets drawn fresh every run.

    python -m benchmarks.legs.closest                          # every chain, 200 targets each
    python -m benchmarks.legs.closest --chains go1_FR panda --n 50 --seed 7
    python -m benchmarks.legs.closest --load 2                 # both cores kept busy meanwhile
    python -m benchmarks.legs.closest --timeout 1.0            # the clock lifted (not a default)
    python -m benchmarks.legs.closest --profile --chains go1_FR anymal_c_RH planar4

Targets come from a generator the closest-pose search was not developed on
(``test/closest_reference.py``, :class:`HeldOutTargets`): 60 000 configurations sampled within
the limits per chain; a target lies 0.02-0.30 m beyond the sample tip farthest in a random
direction; its reference is the best of a bounded Levenberg-Marquardt refinement of the 8
sample tips nearest it. Every solver is built with its defaults (5 ms budget; ``--timeout``
overrides it), collision checks off, and solves from the mid configuration, the compiled kernels
loaded first (:func:`ik_node.kernels.wait`; ``IK_NODE_NO_NUMBA=1``: the Python path).
The RNG seed is drawn at random unless ``--seed`` is given, and printed.

Per chain and solver: the share of out-of-reach answers *closest* (within 1 mm of the reference
and not flagged ``best_found``), the flagged ones, the *unflagged misses* (more than 1 mm above
the reference yet not flagged: an answer presented as the closest that is not), the worst gap
[mm] over all answers and over the unflagged ones, any answer outside the joint limits, and the
median solve time [ms] out of reach and on as many reachable targets (tips of random in-limit
configurations), solved interleaved, out of reach first on every other target. ``--load K`` runs
K busy processes (pure Python loops) for the whole run: the condition of a robot's onboard
computer that is rarely idle.

``--profile``: where ``damped_jacobian``'s time out of reach goes, per chain (median per solve
[ms]): the whole solve, the wrap around the solver's own answer (input checks, the clip, the
measurement by forward kinematics, the result), the reach checks, the descents before the
closest-pose search (and the solve's set-up), the closed form or search; and the share of solves
in which a descent ran first. Each part is timed by a wrapper around the solver's method, so
the parts carry a little of the wrappers' own cost.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.common.from_tests import load_test_helper
from ik_node import Chain, make_solver
from ik_node import kernels

from benchmarks.common.robots import SHARED_ROBOTS

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / 'benchmarks' / 'results'
HeldOutTargets = load_test_helper('closest_reference').HeldOutTargets

SHARED = SHARED_ROBOTS
CHAINS = {
    'go1_FR': ('go1.urdf', 'trunk', 'FR_foot'),
    'go1_RL': ('go1.urdf', 'trunk', 'RL_foot'),
    'anymal_c_LF': ('anymal_c.urdf', 'base', 'LF_FOOT'),
    'anymal_c_RH': ('anymal_c.urdf', 'base', 'RH_FOOT'),
    'solo12_FL': ('solo12.urdf', 'base_link', 'FL_FOOT'),
    'planar4': ('planar4.urdf', 'base_link', 'tip'),
    'ur5': ('ur5.urdf', 'base_link', 'tool0'),
    'ur5e': ('ur5e.urdf', 'base_link', 'tool0'),
    'ur10': ('ur10.urdf', 'base_link', 'tool0'),
    'panda': ('panda.urdf', 'panda_link0', 'panda_hand_tcp'),
    'fr3': ('fr3.urdf', 'fr3_link0', 'fr3_hand_tcp'),
    'iiwa14': ('iiwa14.urdf', 'iiwa_link_0', 'iiwa_link_ee'),
    'jaco2': ('kinova_j2s6s200.urdf', 'j2s6s200_link_base', 'j2s6s200_end_effector'),
    'baxter': ('baxter.urdf', 'base', 'right_hand_link'),
}
SOLVERS = ('damped_jacobian', 'fabrik')
#: An answer within this of the reference [m] is the closest.
WITHIN_M = 1e-3

BUSY = 'while True:\n    pass\n'


def run_chain(name: str, n: int, rng: np.random.Generator, params: dict) -> dict:
    path, base, tip = CHAINS[name]
    chain = Chain.from_urdf_file(SHARED / path, base, tip)
    held_out = HeldOutTargets(chain, rng)
    solvers = {s: make_solver(s, chain, params) for s in SOLVERS}
    rows = {s: {'n': 0, 'closest': 0, 'flagged': 0, 'unflagged_misses': 0, 'worst_gap': 0.0,
                'worst_unflagged_gap': 0.0, 'outside_limits': 0, 'ms_out': [], 'ms_in': [],
                'statuses': {}} for s in SOLVERS}
    for k in range(n):
        target = held_out.target(rng)
        reachable = held_out.reachable(rng)
        reference, _ = held_out.reference(target)
        for s, solver in solvers.items():
            row = rows[s]
            # Interleaved in alternating order: the first of the pair follows other work (the
            # reference's numpy, the other solver) and runs with colder caches.
            for kind in (('out', 'in') if k % 2 == 0 else ('in', 'out')):
                start = time.perf_counter()
                if kind == 'out':
                    r = solver.solve(target)
                else:
                    solver.solve(reachable)
                row[f'ms_{kind}'].append(1e3 * (time.perf_counter() - start))
            gap = r.position_error - reference
            row['n'] += 1
            row['worst_gap'] = max(row['worst_gap'], gap)
            row['statuses'][r.status.value] = row['statuses'].get(r.status.value, 0) + 1
            if not chain.within_limits(r.joint_positions, tol=0.0):
                row['outside_limits'] += 1
            if getattr(r, 'best_found', False):
                row['flagged'] += 1
            elif gap <= WITHIN_M:
                row['closest'] += 1
            else:
                row['unflagged_misses'] += 1
                row['worst_unflagged_gap'] = max(row['worst_unflagged_gap'], gap)
    return rows


class _Timer:
    """Wraps a bound method: the time [s] spent in it and its calls since :meth:`reset`."""

    def __init__(self, method):
        self.method, self.seconds, self.calls = method, 0.0, 0

    def __call__(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return self.method(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - start
            self.calls += 1

    def reset(self):
        self.seconds, self.calls = 0.0, 0


def profile_chain(name: str, n: int, rng: np.random.Generator, params: dict) -> dict:
    """The parts of ``damped_jacobian``'s solves of ``n`` held-out targets out of reach
    (median [ms] per solve), and the share of solves with a descent before the search."""
    path, base, tip = CHAINS[name]
    chain = Chain.from_urdf_file(SHARED / path, base, tip)
    held_out = HeldOutTargets(chain, rng)
    solver = make_solver('damped_jacobian', chain, params)
    timers = {}
    for owner, attribute in ((solver, '_raw_solution'), (solver, '_closest_pose'),
                             (solver._compiled_reach, 'checks'),
                             (solver._compiled, 'start'), (solver._descent, 'descend')):
        if owner is not None:
            timers[attribute] = _Timer(getattr(owner, attribute))
            setattr(owner, attribute, timers[attribute])
    parts = {'solve': [], 'wrap': [], 'checks': [], 'descents': [], 'closest': []}
    descended = 0
    for _ in range(n):
        target = held_out.target(rng)
        for timer in timers.values():
            timer.reset()
        start = time.perf_counter()
        solver.solve(target)
        total = time.perf_counter() - start

        def seconds(attribute):
            timer = timers.get(attribute)
            return 0.0 if timer is None else timer.seconds
        parts['solve'].append(total)
        parts['wrap'].append(total - seconds('_raw_solution'))
        parts['checks'].append(seconds('checks'))
        parts['descents'].append(seconds('_raw_solution') - seconds('checks') -
                                 seconds('_closest_pose'))
        parts['closest'].append(seconds('_closest_pose'))
        if any(timers[a].calls for a in ('start', 'descend') if a in timers):
            descended += 1
    out = {k: 1e3 * float(np.median(v)) for k, v in parts.items()}
    out['descended'] = descended / n
    return out


def main_profile(args, seed: int, params: dict) -> int:
    print('| chain | targets | solve | wrap | reach checks | descents and set-up | closed form '
          '/ search | solves with a descent first |')
    print('|---|---|---|---|---|---|---|---|')
    for k, name in enumerate(args.chains):
        rng = np.random.default_rng([seed, k])
        p = profile_chain(name, args.n, rng, params)
        print(f'| {name} | {args.n} | {p["solve"]:.3f} | {p["wrap"]:.3f} | {p["checks"]:.3f} | '
              f'{p["descents"]:.3f} | {p["closest"]:.3f} | {100.0 * p["descended"]:.0f} % |',
              flush=True)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--chains', nargs='+', default=sorted(CHAINS), choices=sorted(CHAINS))
    ap.add_argument('--n', type=int, default=200, help='out-of-reach targets per chain')
    ap.add_argument('--seed', type=int, default=None, help='RNG seed (default: random)')
    ap.add_argument('--load', type=int, default=0, help='busy processes run meanwhile')
    ap.add_argument('--timeout', type=float, default=None, help='solve budget [s] (default: '
                    'the solvers\' default)')
    ap.add_argument('--profile', action='store_true', help="where damped_jacobian's time out "
                    'of reach goes (median ms per part)')
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), 'little')
    # The closest pose within the joint limits is the question: no collision checks (a URDF's
    # meshes may be missing here, and a colliding closest pose would be retried elsewhere).
    params = {'self_collision': False}
    if args.timeout is not None:
        params['timeout'] = args.timeout
    kernels.wait()  # the compiled kernels serve from the first solve, as in a running node
    print(f'seed {seed}, {args.n} targets per chain, load {args.load} busy processes, '
          f'{os.cpu_count()} cores, parameters {params or "defaults"}, load average '
          f'{os.getloadavg()}; {kernels.serving()}')
    if args.profile:
        return main_profile(args, seed, params)
    busy = [subprocess.Popen([sys.executable, '-c', BUSY]) for _ in range(args.load)]
    try:
        print('| chain | solver | targets | closest (within 1 mm, not flagged) | flagged '
              'best_found | unflagged misses | worst gap [mm] | worst unflagged gap [mm] | '
              'outside limits | median ms out of reach | median ms reachable | ratio | '
              'statuses |')
        print('|---|---|---|---|---|---|---|---|---|---|---|---|---|')
        start = time.monotonic()
        for k, name in enumerate(args.chains):
            rng = np.random.default_rng([seed, k])
            for s, row in run_chain(name, args.n, rng, params).items():
                out, reach = np.median(row['ms_out']), np.median(row['ms_in'])
                statuses = ', '.join(f'{k} {v}' for k, v in sorted(row['statuses'].items()))
                print(f'| {name} | {s} | {row["n"]} | {row["closest"]} '
                      f'({100.0 * row["closest"] / row["n"]:.1f} %) | {row["flagged"]} | '
                      f'{row["unflagged_misses"]} | {1e3 * row["worst_gap"]:.2f} | '
                      f'{1e3 * row["worst_unflagged_gap"]:.2f} | {row["outside_limits"]} | '
                      f'{out:.2f} | {reach:.2f} | {out / reach:.2f} | {statuses} |', flush=True)
        print(f'\n({time.monotonic() - start:.0f} s; load average {os.getloadavg()})')
    finally:
        for p in busy:
            p.kill()
            p.wait()
    return 0


if __name__ == '__main__':
    sys.exit(main())
