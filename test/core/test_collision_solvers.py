"""Every solver's reachable answer is collision-free: answers that self-collide with the check off
are free with it on, a target reachable only in collision is answered ``in_collision`` with the
pair named, and without collision geometry nothing changes.

On the vendors' UR5e and FR3 from ../shared/robots (skipped when absent); targets are the tips
of random collision-free configurations, seeded.
"""

import functools
import math

import numpy as np
import pytest
import transforms3d

from ik_node import make_solver
from ik_node.collision import checker_for
from ik_node.solvers.results import IkStatus

from collision_robots import ROBOTS, chain_of, free_targets  # noqa: F401

#: Needs the collision extra (skipped, naming what is missing, without it: test/core/conftest.py).
pytestmark = pytest.mark.collision


@pytest.mark.slow
@pytest.mark.parametrize('robot, solver, pose', [('ur5e', 'damped_jacobian', True),
                                                 ('ur5e', 'damped_jacobian', False),
                                                 ('ur5e', 'fabrik', False),
                                                 ('fr3', 'damped_jacobian', True)])
def test_answers_that_collide_unchecked_are_collision_free_when_checked(collision_robot, robot,
                                                                       solver, pose):
    chain = chain_of(collision_robot, robot)
    checker = checker_for(chain)
    # budgets far above a solve's time, so that the clock does not decide what is reached
    budget = {'timeout': 0.05, 'collision_retry_time': 0.2}
    on = make_solver(solver, chain, budget)
    off = make_solver(solver, chain, {'self_collision': False, **budget})
    rng = np.random.default_rng(11)
    colliding_unchecked = reached = 0
    targets = free_targets(chain, checker, rng, 60)
    for _q, position, quat in targets:
        seed = rng.uniform(np.maximum(chain.lower, -math.pi), np.minimum(chain.upper, math.pi))
        orientation = quat if pose else None
        unchecked = off.solve(position, orientation, seed)
        checked = on.solve(position, orientation, seed)
        if unchecked.reachable and not checker.is_free(unchecked.joint_positions):
            colliding_unchecked += 1
        if checked.reachable:
            reached += 1
            assert checker.is_free(checked.joint_positions), checked.message
            # still a real answer: FK of the joints meets the target
            assert np.linalg.norm(chain.fk(checked.joint_positions)[:3, 3] - position) <= \
                on.params['position_tolerance']
        else:
            assert checked.status is not IkStatus.CONVERGED
        assert chain.within_limits(checked.joint_positions)
    if robot == 'ur5e':
        assert colliding_unchecked > 0  # the check had something to correct
    assert reached >= 0.9 * len(targets)


def weighted_pose_distance(chain, position, R, weight, q):
    """|tip - position| + weight * angle(tip rotation, R) of configuration ``q``, by FK."""
    T = chain.fk(np.asarray(q))
    angle = math.acos(np.clip(0.5 * (np.trace(T[:3, :3].T @ R) - 1.0), -1.0, 1.0))
    return np.linalg.norm(T[:3, 3] - position) + weight * angle


def test_retry_seeds_are_the_free_configurations_nearest_the_target_pose(collision_robot):
    """The guard's retry seeds for a 6D target: collision-free configurations whose tip is
    nearest it by position plus orientation_weight times the angle, by FK of the seeds."""
    chain = chain_of(collision_robot, 'ur5e')
    solver = make_solver('damped_jacobian', chain, {'collision_restarts': 5})
    guard, checker = solver._collision, checker_for(chain)
    weight = solver.params['orientation_weight']
    rng = np.random.default_rng(13)
    for _q, position, quat in free_targets(chain, checker, rng, 5):
        x, y, z, w = quat
        R = transforms3d.quaternions.quat2mat((w, x, y, z))
        pose_distance = functools.partial(weighted_pose_distance, chain, position, R, weight)
        seeds = guard._pool_seeds(position, R, weight)
        assert len(seeds) == 5 and all(checker.is_free(np.asarray(q)) for q in seeds)
        distances = [pose_distance(q) for q in seeds]
        assert distances == sorted(distances)
        # none of the pool's other configurations is nearer than the last seed
        pool_distances = sorted(pose_distance(q) for q in guard._pool)
        assert distances[-1] <= pool_distances[4] + 1e-9
        # the position alone ranks them otherwise: the orientation counts
        by_position = [pose_distance(q) for q in guard._pool_seeds(position)]
        assert distances[0] <= by_position[0] + 1e-9


def test_position_retry_seeds_are_the_free_configurations_nearest_the_target(collision_robot):
    """The guard's retry seeds for a position target: collision-free configurations whose tip
    is nearest it, nearest first, by FK of the seeds; a FABRIK answer in collision restarted
    from them is free and meets the target by FK."""
    chain = chain_of(collision_robot, 'ur5e')
    solver = make_solver('fabrik', chain, {'collision_restarts': 4, 'timeout': 0.05,
                                           'collision_retry_time': 0.2})
    off = make_solver('fabrik', chain, {'self_collision': False})
    guard, checker = solver._collision, checker_for(chain)
    rng = np.random.default_rng(29)
    lower, upper = np.maximum(chain.lower, -math.pi), np.minimum(chain.upper, math.pi)
    pool_tips = np.array([chain.fk(q)[:3, 3] for q in guard._pool])
    restarted = 0
    for _q, position, _quat in free_targets(chain, checker, rng, 40):
        seeds = guard._pool_seeds(position)
        assert len(seeds) == 4 and all(checker.is_free(np.asarray(q)) for q in seeds)
        distances = [np.linalg.norm(chain.fk(np.asarray(q))[:3, 3] - position) for q in seeds]
        assert distances == sorted(distances)
        assert distances[-1] <= np.sort(np.linalg.norm(pool_tips - position, axis=1))[3] + 1e-9
        seed = rng.uniform(lower, upper)
        if checker.is_free(np.asarray(off.solve(position, None, seed).joint_positions)):
            continue
        result = solver.solve(position, None, seed)
        assert result.reachable, result.message
        assert 'restart' in result.message
        restarted += 1
        q = np.asarray(result.joint_positions)
        assert checker.is_free(q) and chain.within_limits(q)
        assert np.linalg.norm(chain.fk(q)[:3, 3] - position) <= solver.params['position_tolerance']
        assert result.solve_time > 0.0
    assert restarted > 0  # some FABRIK answers collided and were restarted


def test_a_target_reachable_only_in_collision_is_answered_in_collision_naming_the_pair(
        collision_robot):
    chain = chain_of(collision_robot, 'ur5e')
    solver = make_solver('damped_jacobian', chain, {'collision_restarts': 3})
    # The wrist folded back into the upper arm: the tip sits inside the arm itself.
    q = np.array([0.0, -1.57, 2.9, 0.0, 0.0, 0.0])
    T = chain.fk(q)
    w, x, y, z = transforms3d.quaternions.mat2quat(T[:3, :3])
    result = solver.solve(T[:3, 3], (x, y, z, w), q)
    assert result.status is IkStatus.IN_COLLISION and not result.reachable
    assert ' mm in' in result.message and ' - ' in result.message
    checker = checker_for(chain)
    assert not checker.is_free(q)
    # the joints returned are a collision-free pose (or the colliding answer, said so)
    if 'best collision-free pose' in result.message:
        assert checker.is_free(result.joint_positions)
    measured = np.linalg.norm(chain.fk(result.joint_positions)[:3, 3] - T[:3, 3])
    assert result.position_error == pytest.approx(measured, abs=1e-9)


def test_with_self_collision_off_the_colliding_answer_stays_reachable(collision_robot):
    chain = chain_of(collision_robot, 'ur5e')
    q = np.array([0.0, -1.57, 2.9, 0.0, 0.0, 0.0])
    T = chain.fk(q)
    off = make_solver('damped_jacobian', chain, {'self_collision': False})
    result = off.solve(T[:3, 3], None, q)
    assert result.reachable and result.status is IkStatus.CONVERGED


def test_a_ground_plane_keeps_answers_above_it(collision_robot):
    chain = chain_of(collision_robot, 'ur5e')
    solver = make_solver('damped_jacobian', chain)
    solver.configure_collision(ground_z=0.0)
    checker = checker_for(chain)
    rng = np.random.default_rng(12)
    model = checker.model
    for _q, position, _quat in free_targets(chain, checker, rng, 40):
        if position[2] < 0.1:
            continue
        result = solver.solve(position, None, rng.uniform(-math.pi, math.pi, chain.n))
        if result.reachable:
            T = model.link_transforms(result.joint_positions)
            for k, link in enumerate(model.links):
                if model.moving_joints(k):
                    low = (checker.link_points(k) @ T[k, :3, :3].T + T[k, :3, 3])[:, 2].min()
                    assert low >= solver.params['collision_padding'] - 1e-9, link


def test_a_chain_without_collision_geometry_solves_as_before(arm6):
    solver = make_solver('damped_jacobian', arm6)
    assert solver._collision is None
    result = solver.solve(arm6.fk(np.full(arm6.n, 0.3))[:3, 3], None, None)
    assert result.reachable


def test_the_reachability_map_counts_collision_free_samples_only(collision_robot):
    from ik_node.reachability import build_reachability_map
    chain = chain_of(collision_robot, 'ur5e')
    checker = checker_for(chain)
    options = dict(samples=300, voxel_size=0.1, position_only=True, seed=3)
    free = build_reachability_map(chain, **options)
    every = build_reachability_map(chain, self_collision=False, **options)
    # the same samples drawn (one seeded generator): the map keeps exactly the free ones
    Q = np.random.default_rng(3).uniform(chain.lower, chain.upper, size=(300, chain.n))
    assert int(free.sample_counts.sum()) == int(checker.free_mask(Q).sum())
    assert int(every.sample_counts.sum()) == 300 > int(free.sample_counts.sum())
