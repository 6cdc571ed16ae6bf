#!/usr/bin/env python3
"""Are two checkouts' damped_jacobian answers the same? Solves with the clock lifted.

Solves the same random reachable targets (6D and position, from a random and the mid seed) on
the reference arms with ``timeout`` 60 s, so the answers do not depend on the machine's load,
and writes every answer (joint positions and iteration count) to ``OUT.npy``; ``--compare A B``
counts the solves whose answers differ. A change that leaves these answers bit-identical leaves
the solver's success and iteration counts unchanged on such targets; its timing differences are
then the cost of the code it adds.

Usage::

    python -m benchmarks.solvers.compare_answers /tmp/after.npy        # this checkout
    python -m benchmarks.solvers.compare_answers --compare /tmp/before.npy /tmp/after.npy
    python -m benchmarks.ab answers --against main      # both steps for a git revision

"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import transforms3d

from ik_node.model.chain import Chain
from ik_node.solvers import make_solver

from benchmarks.common.robots import SHARED_ROBOTS

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / 'benchmarks' / 'results'

ARMS = {'ur5': ('ur5.urdf', 'base_link', 'tool0'), 'ur10': ('ur10.urdf', 'base_link', 'tool0'),
        'panda': ('panda.urdf', 'panda_link0', 'panda_hand_tcp'),
        'iiwa14': ('iiwa14.urdf', 'iiwa_link_0', 'iiwa_link_ee'),
        'jaco2': ('kinova_j2s6s200.urdf', 'j2s6s200_link_base', 'j2s6s200_end_effector'),
        'baxter': ('baxter.urdf', 'base', 'right_hand_link')}


def answers(n: int) -> np.ndarray:
    """Per solve: the joint positions and the iteration count."""
    out = []
    for file, base, tip in ARMS.values():
        chain = Chain.from_urdf_file(SHARED_ROBOTS / file, base, tip)
        solver = make_solver('damped_jacobian', chain, {'timeout': 60.0})
        rng = np.random.default_rng(0)
        lo, hi = np.maximum(chain.lower, -np.pi), np.minimum(chain.upper, np.pi)
        targets, seeds = rng.uniform(lo, hi, (n, chain.n)), rng.uniform(lo, hi, (n, chain.n))
        for q, seed in zip(targets, seeds):
            T = chain.fk(q)
            w, x, y, z = transforms3d.quaternions.mat2quat(T[:3, :3])
            for start in (seed, chain.mid_configuration()):
                for quat in ([x, y, z, w], None):
                    result = solver.solve(T[:3, 3], quat, start)
                    out.append(np.concatenate([result.joint_positions, [result.iterations]]))
    return np.array(out, dtype=object)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('out', nargs='?', type=Path, help='write the answers to this .npy')
    parser.add_argument('--n', type=int, default=200, help='targets per arm')
    parser.add_argument('--compare', nargs=2, type=Path, metavar=('BEFORE', 'AFTER'))
    args = parser.parse_args(argv)
    if args.compare:
        a, b = (np.load(path, allow_pickle=True) for path in args.compare)
        differ = sum(not np.array_equal(x, y) for x, y in zip(a, b))
        print(f'{len(a)} solves, {differ} differ' + ('' if len(a) == len(b) else
                                                     f' (lengths {len(a)} and {len(b)})'))
        return 0 if differ == 0 and len(a) == len(b) else 1
    if args.out is None:
        parser.error('give OUT.npy or --compare BEFORE AFTER')
    np.save(args.out, answers(args.n), allow_pickle=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
