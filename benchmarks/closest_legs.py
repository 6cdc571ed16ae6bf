"""The closest pose on real legs and arms: each iterative solver against a long search.

    python benchmarks/closest_legs.py                                 # the legs, 4 target sets
    python benchmarks/closest_legs.py --robots go1 panda --n 40 --sets 7

For every robot and target set (``--sets``: RNG seeds), the benchmark's out-of-reach targets
(:mod:`out_of_reach`: beyond the reach, in the inner hole, behind the limits; each rated by a
100-start long search) are solved by ``damped_jacobian`` and ``fabrik`` from random seeds with a
``--timeout`` budget, and counted: within 1 mm (or 0.1 %) of the best known error ("closest"),
the mean iterations, and the statuses. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import out_of_reach as oor  # noqa: E402

from ik_node import Chain, make_solver  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / 'shared' / 'robots'
ROBOTS = {
    'go1': (SHARED / 'go1.urdf', 'base', 'FL_foot'),
    'anymal_c': (SHARED / 'anymal_c.urdf', 'base', 'LF_FOOT'),
    'solo12': (SHARED / 'solo12.urdf', 'base_link', 'FL_FOOT'),
    'leg3': (REPO / 'urdf' / 'leg3.urdf', 'base_link', 'foot'),
    'planar4': (REPO / 'urdf' / 'planar4.urdf', 'base_link', 'tip'),
    'arm6': (REPO / 'urdf' / 'arm6.urdf', 'base_link', 'tool0'),
    'ur5': (SHARED / 'ur5.urdf', 'base_link', 'tool0'),
    'ur10': (SHARED / 'ur10.urdf', 'base_link', 'tool0'),
    'panda': (SHARED / 'panda.urdf', 'panda_link0', 'panda_hand_tcp'),
    'iiwa14': (SHARED / 'iiwa14.urdf', 'iiwa_link_0', 'iiwa_link_ee'),
    'jaco2': (SHARED / 'kinova_j2s6s200.urdf', 'j2s6s200_link_base', 'j2s6s200_end_effector'),
    'baxter': (SHARED / 'baxter.urdf', 'base', 'right_hand_link'),
}
SOLVERS = ('damped_jacobian', 'fabrik')


def run(robot: str, n: int, target_set: int, timeout_s: float) -> dict:
    path, base, tip = ROBOTS[robot]
    chain = Chain.from_urdf_file(path, base, tip)
    check = make_solver('damped_jacobian', chain, {'timeout': 0.05})
    kinds = oor.make_targets(chain, n, target_set, 100, lambda t: check.solve(t).reachable,
                             log=lambda *a: None)
    targets = [(t, best) for kind in oor.KINDS for t, best, _ in kinds[kind]['targets']]
    rng = np.random.default_rng(target_set + 3)
    lower = np.where(np.isfinite(chain.lower), chain.lower, -np.pi)
    upper = np.where(np.isfinite(chain.upper), chain.upper, np.pi)
    seeds = [rng.uniform(lower, upper) for _ in targets]
    out = {}
    for name in SOLVERS:
        solver = make_solver(name, chain, {'timeout': timeout_s})
        closest, iterations, statuses, worst = 0, [], Counter(), 0.0
        for (target, best), seed in zip(targets, seeds):
            r = solver.solve(target, None, seed.copy())
            excess = r.position_error - best
            closest += excess <= oor.allowed_excess(chain, target)
            worst = max(worst, excess)
            iterations.append(r.iterations)
            statuses[r.status.value] += 1
        out[name] = {'n': len(targets), 'closest': closest, 'worst_excess_m': worst,
                     'iterations_mean': float(np.mean(iterations)) if iterations else 0.0,
                     'statuses': dict(statuses)}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--robots', nargs='+', default=['go1', 'anymal_c', 'solo12'],
                    choices=sorted(ROBOTS))
    ap.add_argument('--n', type=int, default=100, help='targets per kind and set')
    ap.add_argument('--sets', type=int, nargs='+', default=[7, 8, 9, 10])
    ap.add_argument('--timeout', type=float, default=0.05, help='solve budget [s]')
    args = ap.parse_args(argv)
    print('| robot | set | solver | targets | closest | worst excess [mm] | mean iterations '
          '| statuses |')
    print('|---|---|---|---|---|---|---|---|')
    start = time.monotonic()
    for robot in args.robots:
        for target_set in args.sets:
            for name, r in run(robot, args.n, target_set, args.timeout).items():
                statuses = ', '.join(f'{k} {v}' for k, v in sorted(r['statuses'].items()))
                print(f'| {robot} | {target_set} | {name} | {r["n"]} | {r["closest"]} | '
                      f'{1e3 * r["worst_excess_m"]:.2f} | {r["iterations_mean"]:.1f} | '
                      f'{statuses} |', flush=True)
    print(f'\n({time.monotonic() - start:.0f} s)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
