"""Collision retries of damped_jacobian's compiled start, and the one-call check of an answer.

On the vendors' UR5e from ../shared/robots (skipped when absent): a 6D answer in collision is
retried from new seeds by the solver's compiled start (:meth:`DampedJacobianSolver.
_compiled_retry`), and what comes back is collision-free with FK at the target;
:meth:`CollisionChecker.answer_is_free` says what :meth:`CollisionChecker.is_free` says.
"""

import math

import numpy as np
import pytest
import transforms3d

from ik_node import make_solver
from ik_node.collision import CollisionSettings, checker_for
from ik_node import kernels

from collision_robots import chain_of, free_targets

#: Needs the collision extra (skipped, naming what is missing, without it: test/core/conftest.py).
pytestmark = pytest.mark.collision


@pytest.fixture(scope='module')
def compiled_kernels():
    """The compiled kernels loaded (the compiled start serves), or skip where they cannot."""
    kernels.start()
    kernels.wait(300.0)
    if not kernels.ready():
        pytest.skip('the compiled kernels do not load here (numba missing?)')


def test_answers_in_collision_are_retried_by_the_compiled_start(collision_robot,
                                                                compiled_kernels):
    chain = chain_of(collision_robot, 'ur5e')
    checker = checker_for(chain)
    budget = {'timeout': 0.05, 'collision_retry_time': 0.2}  # the clock decides nothing here
    on = make_solver('damped_jacobian', chain, budget)
    off = make_solver('damped_jacobian', chain, {'self_collision': False, **budget})
    retries = []
    compiled_retry = on._compiled_retry

    def counted(*args):
        found = compiled_retry(*args)
        retries.append(found)
        return found
    on._compiled_retry = counted
    rng = np.random.default_rng(23)
    lower, upper = np.maximum(chain.lower, -math.pi), np.minimum(chain.upper, math.pi)
    retried = 0
    for _q, position, quat in free_targets(chain, checker, rng, 40):
        seed = rng.uniform(lower, upper)
        unchecked = off.solve(position, quat, seed)
        if not unchecked.reachable or checker.is_free(unchecked.joint_positions):
            continue
        before = len(retries)
        checked = on.solve(position, quat, seed)
        assert len(retries) > before  # the compiled start retried it
        assert any(r is not None for r in retries[before:])  # and served
        if checked.reachable:
            retried += 1
            assert 'collision-free answer from restart' in checked.message
            assert checker.is_free(checked.joint_positions), checked.message
            T = chain.fk(checked.joint_positions)
            x, y, z, w = quat
            R = transforms3d.quaternions.quat2mat((w, x, y, z))
            assert np.linalg.norm(T[:3, 3] - position) <= on.params['position_tolerance']
            angle = math.acos(np.clip(0.5 * (np.trace(T[:3, :3].T @ R) - 1.0), -1.0, 1.0))
            assert angle <= on.params['orientation_tolerance']
            assert chain.within_limits(checked.joint_positions)
    assert retried >= 3  # the UR5e's answers collide often enough for the test to mean it


def test_answer_is_free_says_what_is_free_says(collision_robot):
    chain = chain_of(collision_robot, 'ur5e')
    rng = np.random.default_rng(29)
    lower, upper = np.maximum(chain.lower, -math.pi), np.minimum(chain.upper, math.pi)
    configurations = rng.uniform(lower, upper, size=(300, chain.n))
    for ground in (None, 0.0):  # no world (the one-call case), and a ground plane
        checker = checker_for(chain, CollisionSettings(ground_z=ground))
        verdicts = [checker.is_free(q) for q in configurations]
        assert any(verdicts) and not all(verdicts)  # both kinds among them
        assert [checker.answer_is_free(q) for q in configurations] == verdicts
        # other inputs than float64 vectors take the general check
        assert checker.answer_is_free(configurations[0].tolist()) == verdicts[0]
        assert checker.answer_is_free(configurations[1].astype(np.float32)) == \
            checker.is_free(configurations[1].astype(np.float32))
