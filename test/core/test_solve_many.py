"""solve_many: arrays of targets in one call, the same answers as solve() one target at a time,
each checked by FK; bad inputs refused with the row named."""

import numpy as np
import pytest
import transforms3d

from ik_node import Chain, TargetError, make_solver
from ik_node import kernels
from ik_node.solvers.batch import COLLIDING, FREE, NOT_CHECKED, solve_many

#: Budgets large enough that no solve here ends by its wall time (the batch kernel has none).
SLOW_CLOCK = {'timeout': 2.0, 'collision_retry_time': 5.0}


def _targets(chain, count, seed, free=None):
    """Poses of random configurations (reachable by construction): positions, quaternions
    (x, y, z, w). ``free``: a mask function keeping collision-free configurations only."""
    rng = np.random.default_rng(seed)
    Q = rng.uniform(chain.lower, chain.upper, size=(4 * count, chain.n))
    if free is not None:
        Q = Q[free(Q)]
    Q = Q[:count]
    positions, quats = [], []
    for q in Q:
        T = chain.fk(q)
        positions.append(T[:3, 3])
        w, x, y, z = transforms3d.quaternions.mat2quat(T[:3, :3])
        quats.append([x, y, z, w])
    return np.array(positions), np.array(quats)


def _ur5e(shared_robot, params):
    chain = Chain.from_urdf_file(str(shared_robot('ur5e.urdf')), 'base_link', 'tool0')
    return chain, make_solver('damped_jacobian', chain, dict(SLOW_CLOCK, **params))


def _same_as_single(chain, batch, single, positions, quats, seeds):
    """Every row of ``batch`` equals ``single.solve`` of that target, and reached answers
    reach their target by FK."""
    for i, status in enumerate(batch.statuses()):
        answer = single.solve(positions[i], None if quats is None else quats[i],
                              None if seeds is None else seeds[i])
        assert status is answer.status, (i, status, answer.status, answer.message)
        np.testing.assert_allclose(batch.joints[i], answer.joint_positions, atol=1e-9)
        assert batch.reachable[i] == answer.reachable
        if answer.reachable:
            T = chain.fk(batch.joints[i])
            assert np.linalg.norm(T[:3, 3] - positions[i]) <= single.params['position_tolerance']
            assert batch.position_error[i] <= single.params['position_tolerance']
            assert chain.lower.min() - 1e-12 <= batch.joints[i].min()


def test_pose_batch_answers_equal_single_answers_on_ur5e(shared_robot):
    chain, solver = _ur5e(shared_robot, {'self_collision': False})
    _, single = _ur5e(shared_robot, {'self_collision': False})
    positions, quats = _targets(chain, 120, seed=3)
    # Out of reach (proven, and beyond the measured reach) and a far pose: handed to solve().
    positions[:3] = [[3.0, 0.0, 0.0], [0.0, 0.0, 1.2], [0.9, 0.2, 0.1]]
    seeds = np.random.default_rng(4).uniform(chain.lower, chain.upper, size=(120, chain.n))
    seeds[:40] = chain.mid_configuration()
    batch = solve_many(solver, positions, quats, seeds)
    if kernels.available():
        assert batch.compiled.sum() >= 100  # the common case ran in the batch kernel
    else:  # the pure-Python path: every target through solve()
        assert not batch.compiled.any()
    assert not batch.compiled[0] and not batch.reachable[0]
    assert (batch.collision == NOT_CHECKED).all()
    _same_as_single(chain, batch, single, positions, quats, seeds)


def test_position_batch_answers_equal_single_answers_on_ur5e(shared_robot):
    chain, solver = _ur5e(shared_robot, {'self_collision': False})
    _, single = _ur5e(shared_robot, {'self_collision': False})
    positions, _ = _targets(chain, 60, seed=5)
    positions[0] = [2.0, 1.0, 0.0]
    batch = solve_many(solver, positions)
    assert np.isnan(batch.orientation_error).all()
    _same_as_single(chain, batch, single, positions, None, None)


def test_collision_aware_batch_equals_single_and_reports_free_answers(collision_robot):
    path = str(collision_robot('ur5e.urdf'))
    chain = Chain.from_urdf_file(path, 'base_link', 'tool0')
    solver = make_solver('damped_jacobian', chain, SLOW_CLOCK)
    single = make_solver('damped_jacobian', chain, SLOW_CLOCK)
    checker = solver._collision.checker
    positions, quats = _targets(chain, 40, seed=8, free=checker.free_mask)
    batch = solve_many(solver, positions, quats)
    _same_as_single(chain, batch, single, positions, quats, None)
    for i in range(len(positions)):
        verdict = FREE if checker.is_free(batch.joints[i]) else COLLIDING
        assert batch.collision[i] == verdict
        if batch.reachable[i]:
            assert verdict == FREE


def test_nearest_seeds_answer_as_solve_from_them_and_as_often_as_from_mid(shared_robot):
    chain, solver = _ur5e(shared_robot, {'self_collision': False})
    _, single = _ur5e(shared_robot, {'self_collision': False})
    positions, quats = _targets(chain, 150, seed=13)
    positions[0] = [3.0, 0.0, 0.0]  # out of reach: a seed still, and solve()'s verdict
    batch = solve_many(solver, positions, quats, seeds='nearest')
    assert np.all(chain.lower <= batch.seeds) and np.all(batch.seeds <= chain.upper)
    assert len(np.unique(batch.seeds, axis=0)) > 100  # a seed per target, not one for all
    _same_as_single(chain, batch, single, positions, quats, batch.seeds)
    from_mid = solve_many(solver, positions, quats)
    assert batch.reachable.sum() >= from_mid.reachable.sum()
    again = solve_many(solver, positions[:20], quats[:20], seeds='nearest')
    np.testing.assert_array_equal(again.seeds, batch.seeds[:20])  # the same table each call
    position_only = solve_many(solver, positions[:30], seeds='nearest')
    _same_as_single(chain, position_only, single, positions[:30], None, position_only.seeds)


def test_nearest_seeds_of_a_collision_aware_solver_are_free(collision_robot):
    chain = Chain.from_urdf_file(str(collision_robot('ur5e.urdf')), 'base_link', 'tool0')
    solver = make_solver('damped_jacobian', chain, SLOW_CLOCK)
    single = make_solver('damped_jacobian', chain, SLOW_CLOCK)
    checker = solver._collision.checker
    positions, quats = _targets(chain, 30, seed=14, free=checker.free_mask)
    batch = solve_many(solver, positions, quats, seeds='nearest')
    assert checker.free_mask(batch.seeds).all()
    _same_as_single(chain, batch, single, positions, quats, batch.seeds)
    assert all(batch.collision[batch.reachable] == FREE)


def test_other_solvers_are_answered_by_solve(shared_robot):
    chain = Chain.from_urdf_file(str(shared_robot('ur5e.urdf')), 'base_link', 'tool0')
    solver = make_solver('fabrik', chain, dict(SLOW_CLOCK, self_collision=False))
    single = make_solver('fabrik', chain, dict(SLOW_CLOCK, self_collision=False))
    positions, _ = _targets(chain, 10, seed=9)
    batch = solve_many(solver, positions)
    assert not batch.compiled.any()
    _same_as_single(chain, batch, single, positions, None, None)


@pytest.mark.parametrize('bad, words', [
    (dict(positions=[[0.3, 0.1, 0.2], [np.nan, 0.0, 0.0]]), 'positions row 1'),
    (dict(positions=[[0.3, 0.1, 0.2], [1e9, 0.0, 0.0]]), 'positions row 1'),
    (dict(positions=[[0.3, 0.1]]), 'shape'),
    (dict(positions=[[0.3, 0.1, 0.2]], orientations=[[0.0, 0.0, 0.0, 0.0]]),
     'orientations row 0'),
    (dict(positions=[[0.3, 0.1, 0.2]], orientations=[[0.0, 0.0, 1.0]]), 'shape'),
    (dict(positions=[[0.3, 0.1, 0.2]], seeds=[[0.0] * 5 + [np.inf]]), 'seeds row 0'),
    (dict(positions=[[0.3, 0.1, 0.2]], seeds='closest'), "'nearest'"),
])
def test_bad_inputs_raise_naming_the_row(shared_robot, bad, words):
    _, solver = _ur5e(shared_robot, {'self_collision': False})
    with pytest.raises(TargetError, match=words):
        solve_many(solver, **bad)
