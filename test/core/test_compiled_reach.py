"""damped_jacobian's compiled reach checks against the Python ones: the proven bound
(``ReachBound.lower_bound``) and the measured reach's gap (``MeasuredReach.gap``) of the same
targets, near the chain (inside, at the reach's edge) and far from it; and the solver's answers
with them against the pure-Python path's.
"""

import math
from pathlib import Path

import numpy as np
import pytest

from ik_node.model.chain import Chain
from ik_node import kernels
from ik_node.solvers import make_solver
from ik_node.solvers.damped_jacobian import compiled

REPO_URDF = Path(__file__).resolve().parents[2] / 'urdf'
AGREE_M = 1e-12

needs_numba = pytest.mark.skipif(not compiled.available(), reason='numba is not installed')


@pytest.fixture(scope='module')
def loaded():
    if not kernels.wait():
        pytest.skip(kernels.serving())


def chains(shared_robot):
    out = [Chain.from_urdf_file(REPO_URDF / 'arm6.urdf', 'base_link', 'tool0'),
           Chain.from_urdf_file(REPO_URDF / 'planar4.urdf', 'base_link', 'tip'),
           Chain.from_urdf_file(REPO_URDF / 'leg3.urdf', 'base_link', 'foot')]
    for name, base, tip in (('panda.urdf', 'panda_link0', 'panda_hand_tcp'),
                            ('kinova_j2s6s200.urdf', 'j2s6s200_link_base',
                             'j2s6s200_end_effector'), ('iiwa14.urdf', 'iiwa_link_0',
                                                        'iiwa_link_ee')):
        try:
            out.append(Chain.from_urdf_file(shared_robot(name), base, tip))
        except (pytest.skip.Exception, Exception):
            pass
    return out


@needs_numba
def test_the_compiled_checks_give_the_python_bound_and_gap(shared_robot, loaded):
    rng = np.random.default_rng(3)
    checked = 0
    for chain in chains(shared_robot):
        solver = make_solver('damped_jacobian', chain)
        reach = solver._compiled_reach
        assert reach is not None, chain.tip_link
        bound, measured = solver._reach, solver._closest.reach
        lower = np.maximum(chain.lower, -math.pi)
        upper = np.minimum(chain.upper, math.pi)
        for k in range(300):
            p = chain.fk(rng.uniform(lower, upper))[:3, 3]
            p = p * (1.0, 1.02, 1.5, 3.0, 0.3)[k % 5]  # in reach, at the edge, beyond, inside
            b, gap = reach.checks(np.array(p))
            assert abs(b - bound.lower_bound(p.tolist())) <= AGREE_M, (chain.tip_link, p)
            expected = measured.gap(p.tolist()) if measured is not None else -math.inf
            assert gap == expected or abs(gap - expected) <= AGREE_M, (chain.tip_link, p)
            checked += 1
    assert checked >= 900


@needs_numba
def test_position_answers_with_the_compiled_checks_are_the_python_paths(loaded, monkeypatch):
    chain = Chain.from_urdf_file(REPO_URDF / 'arm6.urdf', 'base_link', 'tool0')
    params = {'timeout': 60.0, 'max_iterations': 5000}
    fast = make_solver('damped_jacobian', chain, params)
    with monkeypatch.context() as patch:
        patch.setattr(compiled, 'available', lambda: False)
        slow = make_solver('damped_jacobian', chain, params)
    assert fast._compiled_reach is not None and slow._compiled_reach is None
    rng = np.random.default_rng(4)
    for k in range(60):
        p = chain.fk(rng.uniform(chain.lower, chain.upper))[:3, 3] * (1.0, 1.0, 2.0)[k % 3]
        seed = rng.uniform(chain.lower, chain.upper)
        a, b = fast.solve(p, None, seed), slow.solve(p, None, seed)
        assert (a.status, a.iterations, a.reachable) == (b.status, b.iterations, b.reachable)
        assert np.max(np.abs(a.joint_positions - b.joint_positions)) < 1e-8
        assert (a.min_residual is None) == (b.min_residual is None)
        if a.min_residual is not None:
            assert abs(a.min_residual - b.min_residual) <= AGREE_M
        error = float(np.linalg.norm(chain.fk(a.joint_positions)[:3, 3] - p))
        assert abs(error - a.position_error) <= 1e-12
