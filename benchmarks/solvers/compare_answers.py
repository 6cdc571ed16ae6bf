#!/usr/bin/env python3
"""Are two checkouts' answers the same? damped_jacobian and fabrik, solved with the clock lifted.

Solves the same random reachable targets with ``timeout`` 60 s, so the answers do not depend on
the machine's load, and writes every answer (status, iteration count, joint positions) per
group to ``OUT.npy``; ``--compare A B`` counts, per group, the solves whose answers differ (not
bit-identical), those whose status or iterations differ, and the largest joint difference. A
change that leaves these answers bit-identical leaves the solvers' success and iteration counts
unchanged on such targets; its timing differences are then the cost of the code it adds.

The groups: ``damped_jacobian`` (6D and position targets on the reference arms, from a random
and the mid seed); ``fabrik`` (position targets on three arms: the serial passes); ``fabrik_tree``
(the FABRIK passes over a whole tree: quad12's four feet, twin_arm's two hands); each fabrik
group twice, with the compiled kernels (loaded before the first solve) and on the pure-Python
path (``*_python``: this module again in a process with ``IK_NODE_NO_NUMBA=1``).

Usage::

    python -m benchmarks.solvers.compare_answers /tmp/after.npy        # this checkout
    python -m benchmarks.solvers.compare_answers --compare /tmp/before.npy /tmp/after.npy
    python -m benchmarks.ab answers --against main      # both steps for a git revision

"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable, Dict, List, Tuple

import numpy as np

import transforms3d
import yaml

from ik_node import kernels
from ik_node.model.chain import Chain
from ik_node.solvers import make_solver

from benchmarks.common.robots import SHARED_ROBOTS
from benchmarks.solvers.several_tips import fabrik_tree_solver

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / 'benchmarks' / 'results'

ARMS = {'ur5': ('ur5.urdf', 'base_link', 'tool0'), 'ur10': ('ur10.urdf', 'base_link', 'tool0'),
        'panda': ('panda.urdf', 'panda_link0', 'panda_hand_tcp'),
        'iiwa14': ('iiwa14.urdf', 'iiwa_link_0', 'iiwa_link_ee'),
        'jaco2': ('kinova_j2s6s200.urdf', 'j2s6s200_link_base', 'j2s6s200_end_effector'),
        'baxter': ('baxter.urdf', 'base', 'right_hand_link')}
#: The arms of the ``fabrik`` group.
FABRIK_ARMS = ('ur5', 'panda', 'iiwa14')
GROUPS = ('damped_jacobian', 'fabrik', 'fabrik_tree')
TIMEOUT_S = 60.0
#: One answer: status, iterations, joint positions.
Answer = Tuple[str, int, np.ndarray]


def _answer(result) -> Answer:
    return (result.status.value, int(result.iterations), np.asarray(result.joint_positions))


def _arm(name: str) -> Chain:
    file, base, tip = ARMS[name]
    return Chain.from_urdf_file(SHARED_ROBOTS / file, base, tip)


def _targets(chain: Chain, n: int) -> Tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    lo, hi = np.maximum(chain.lower, -np.pi), np.minimum(chain.upper, np.pi)
    return rng.uniform(lo, hi, (n, chain.n)), rng.uniform(lo, hi, (n, chain.n))


def damped_jacobian_answers(n: int) -> List[Answer]:
    """6D and position targets on every arm, from a random and the mid seed."""
    out = []
    for name in ARMS:
        chain = _arm(name)
        solver = make_solver('damped_jacobian', chain, {'timeout': TIMEOUT_S})
        for q, seed in zip(*_targets(chain, n)):
            T = chain.fk(q)
            w, x, y, z = transforms3d.quaternions.mat2quat(T[:3, :3])
            for start in (seed, chain.mid_configuration()):
                for quat in ([x, y, z, w], None):
                    out.append(_answer(solver.solve(T[:3, 3], quat, start)))
    return out


def fabrik_answers(n: int) -> List[Answer]:
    """Position targets on :data:`FABRIK_ARMS`, from a random and the mid seed."""
    out = []
    for name in FABRIK_ARMS:
        chain = _arm(name)
        solver = make_solver('fabrik', chain, {'timeout': TIMEOUT_S})
        for q, seed in zip(*_targets(chain, n)):
            for start in (seed, chain.mid_configuration()):
                out.append(_answer(solver.solve(chain.fk(q)[:3, 3], None, start)))
    return out


def fabrik_tree_answers(n: int) -> List[Answer]:
    """The FABRIK passes over a whole tree: quad12's four feet (called on the tree directly:
    the solver splits independent legs) and twin_arm's two hands (its config's parameters),
    from the mid configuration."""
    quad = Chain.from_urdf_file(REPO / 'urdf' / 'quad12.urdf', 'base_link',
                                ['FL_foot', 'FR_foot', 'RL_foot', 'RR_foot'])
    params = yaml.safe_load((REPO / 'config' / 'twin_arm.yaml').read_text())
    params = params['ik_node']['ros__parameters']
    twin = Chain.from_urdf_file(REPO / 'urdf' / 'twin_arm.urdf', params['base_link'],
                                params['tip_links'])
    twin_solver = make_solver('fabrik', twin, {**params.get('fabrik', {}), 'timeout': TIMEOUT_S})
    cases: List[Tuple[Chain, Callable]] = [
        (quad, fabrik_tree_solver(quad, {'timeout': TIMEOUT_S})),
        (twin, lambda targets, seed: twin_solver.solve(targets=targets, seed=seed))]
    out = []
    for chain, solve in cases:
        rng = np.random.default_rng(0)
        for _ in range(n):
            T = chain.fk_tips(rng.uniform(chain.lower, chain.upper))
            targets = {tip: T[tip][:3, 3] for tip in chain.tip_links}
            out.append(_answer(solve(targets, chain.mid_configuration())))
    return out


def answers(n: int, groups=GROUPS) -> Dict[str, List[Answer]]:
    """Per group its answers: ``n`` targets per arm (damped_jacobian), a quarter of that per
    arm or tree (fabrik); the fabrik groups also on the pure-Python path."""
    if os.environ.get('IK_NODE_NO_NUMBA', '') in ('', '0'):
        kernels.wait()  # the compiled kernels serve from the first solve
    runs = {'damped_jacobian': lambda: damped_jacobian_answers(n),
            'fabrik': lambda: fabrik_answers(max(n // 4, 1)),
            'fabrik_tree': lambda: fabrik_tree_answers(max(n // 4, 1))}
    out = {group: runs[group]() for group in groups}
    python = [group for group in groups if group.startswith('fabrik')]
    if python and os.environ.get('IK_NODE_NO_NUMBA', '') in ('', '0'):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / 'python.npy'
            subprocess.run([sys.executable, '-m', 'benchmarks.solvers.compare_answers',
                            str(path), '--n', str(n), '--groups', *python], cwd=REPO,
                           env={**os.environ, 'IK_NODE_NO_NUMBA': '1'}, check=True)
            out.update({f'{group}_python': answers_ for group, answers_ in _load(path).items()})
    return out


def _load(path: Path) -> Dict[str, List[Answer]]:
    return np.load(path, allow_pickle=True).item()


def compare(before: Dict[str, List[Answer]], after: Dict[str, List[Answer]]) -> bool:
    """Print each group's differences; True when every answer is bit-identical."""
    same = True
    for group in sorted(set(before) | set(after)):
        a, b = before.get(group, []), after.get(group, [])
        if len(a) != len(b):
            print(f'{group}: {len(a)} and {len(b)} solves')
            same = False
            continue
        differ = sum(x[:2] != y[:2] or not np.array_equal(x[2], y[2]) for x, y in zip(a, b))
        outcome = sum(x[:2] != y[:2] for x, y in zip(a, b))
        largest = max((float(np.max(np.abs(x[2] - y[2]))) for x, y in zip(a, b)), default=0.0)
        print(f'{group}: {len(a)} solves, {differ} differ, {outcome} in status or iterations, '
              f'largest joint difference {largest:.3g}')
        same = same and differ == 0
    return same


def _modules_outside(root: Path) -> List[str]:
    """The loaded ``ik_node`` modules whose file is not below ``root``."""
    return sorted(name for name, module in list(sys.modules.items())
                  if name.split('.')[0] == 'ik_node' and getattr(module, '__file__', None)
                  and root not in Path(module.__file__).resolve().parents)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('out', nargs='?', type=Path, help='write the answers to this .npy')
    parser.add_argument('--n', type=int, default=200, help='targets per arm (damped_jacobian; '
                        'fabrik: a quarter of it per arm or tree)')
    parser.add_argument('--groups', nargs='+', choices=GROUPS, default=list(GROUPS))
    parser.add_argument('--compare', nargs=2, type=Path, metavar=('BEFORE', 'AFTER'))
    args = parser.parse_args(argv)
    if args.compare:
        return 0 if compare(*(_load(path) for path in args.compare)) else 1
    if args.out is None:
        parser.error('give OUT.npy or --compare BEFORE AFTER')
    result = np.empty((), dtype=object)
    result[()] = answers(args.n, args.groups)
    foreign = _modules_outside(REPO)
    if foreign:  # an editable install elsewhere fills in modules this tree lacks
        print(f'compare_answers: these ik_node modules come from outside {REPO}: '
              f'{", ".join(foreign)}; the answers are not this tree\'s (a revision older than a '
              'module this script imports cannot be compared by it)', file=sys.stderr)
        return 2
    np.save(args.out, result, allow_pickle=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
