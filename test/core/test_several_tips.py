"""Solves of several tips: no plain target on a chain with several tips, independent legs leg by
leg with every solver, damped_jacobian on trees with a shared trunk (positions and poses, per-tip
weights), honest per-tip results, and the configurations that refuse what cannot be solved.

Every check is FK of the answer against the target, never a copied number.
"""

import math
from pathlib import Path

import numpy as np
import pytest
import transforms3d

from ik_node import Chain, make_solver
from ik_node.config.launch_plan import plan_from_arguments
from ik_node.config.node_config import build_chain, build_solver, config_from_mapping
from ik_node.errors import ChainError, ConfigError, IkError, TargetError
from ik_node.solvers.base import IkStatus
from ik_node.solvers.damped_jacobian.tree import TreeDampedLeastSquares
from ik_node.solvers.results import combined_status
from ik_node.solvers.trees.several_tips import tip_targets_from_input
from tree_models import HANDS, QUAD_FEET, quad_leg3_urdf, waist_two_arms_urdf

REPO = Path(__file__).resolve().parents[2]
NO_CLOCK = {'timeout': 60.0}
SOLVER_NAMES = ('analytic_hip_knee', 'damped_jacobian', 'fabrik')
TOL = 1e-5


def quad() -> Chain:
    return Chain.from_urdf_string(quad_leg3_urdf(), 'trunk', list(QUAD_FEET))


def twin() -> Chain:
    return Chain.from_urdf_file(REPO / 'urdf' / 'twin_arm.urdf', 'base_link', list(HANDS))


def waist_arms() -> Chain:
    return Chain.from_urdf_string(waist_two_arms_urdf(), 'base_link', list(HANDS))


def quat_xyzw(R: np.ndarray) -> list:
    w, x, y, z = transforms3d.quaternions.mat2quat(R)
    return [x, y, z, w]


def params_of(name: str) -> dict:
    return {} if name == 'analytic_hip_knee' else dict(NO_CLOCK)


# ----------------------------------------------------------------- no silent wrong tip
@pytest.mark.parametrize('name', SOLVER_NAMES)
def test_a_plain_target_on_four_legs_is_refused_naming_every_foot(name):
    solver = make_solver(name, quad(), params_of(name))
    with pytest.raises(TargetError) as info:
        solver.solve([0.25, 0.12, -0.5])
    for foot in QUAD_FEET:
        assert foot in str(info.value)
    assert 'targets=' in str(info.value)


@pytest.mark.parametrize('name', ['damped_jacobian', 'fabrik'])
def test_a_plain_target_on_a_tree_with_a_trunk_is_refused_naming_both_hands(name):
    solver = make_solver(name, twin())
    with pytest.raises(TargetError, match='left_hand, right_hand'):
        solver.solve([0.3, 0.2, 0.6])


def test_the_analytic_solver_refuses_a_tree_whose_hands_share_the_waist():
    with pytest.raises(ChainError) as info:
        make_solver('analytic_hip_knee', twin())
    assert 'left_hand and right_hand share waist' in str(info.value)


def test_a_leg_the_solver_does_not_fit_is_refused_naming_the_leg():
    chain = Chain.from_urdf_string(waist_two_arms_urdf(), 'torso', list(HANDS))  # two 6-joint arms
    with pytest.raises(ChainError, match="leg 'left_hand'"):
        make_solver('analytic_hip_knee', chain)


def test_damped_jacobian_transpose_refuses_a_tree_with_a_trunk_and_takes_legs():
    with pytest.raises(ChainError, match='method dls'):
        make_solver('damped_jacobian', twin(), {'method': 'transpose'})
    make_solver('damped_jacobian', quad(), {'method': 'transpose'})


def test_per_tip_weights_must_give_one_value_per_tip():
    for name in ('damped_jacobian', 'fabrik'):
        with pytest.raises(ConfigError, match='left_hand, right_hand'):
            make_solver(name, twin(), {'weights': [1.0, 2.0, 3.0]})


def _twin_config(solver: str) -> dict:
    return {'urdf_file': str(REPO / 'urdf' / 'twin_arm.urdf'), 'base_link': 'base_link',
            'tip_links': list(HANDS), 'solver': solver}


def test_the_node_configuration_refuses_a_solver_that_cannot_solve_the_tips_with_the_reason():
    config = config_from_mapping(_twin_config('analytic_hip_knee'))
    with pytest.raises(ChainError, match='share waist'):
        build_solver(config, build_chain(config))
    config = config_from_mapping(_twin_config('damped_jacobian'))
    assert build_solver(config, build_chain(config)).name == 'damped_jacobian'


def test_the_launch_check_refuses_a_solver_that_cannot_solve_the_tips_with_the_reason():
    with pytest.raises(IkError, match='share waist'):
        plan_from_arguments({'robot': 'twin_arm', 'solver': 'analytic_hip_knee'}, REPO)
    plan_from_arguments({'robot': 'twin_arm', 'solver': 'damped_jacobian'}, REPO)


# ------------------------------------------------------------------ independent legs
@pytest.mark.parametrize('name', SOLVER_NAMES)
def test_four_legs_in_one_solve_put_every_foot_on_its_target(name):
    chain = quad()
    solver = make_solver(name, chain, params_of(name))
    assert solver.legs is not None and len(solver.legs.legs) == 4
    rng = np.random.default_rng(3)
    for _ in range(30):
        q_true = rng.uniform(chain.lower, chain.upper)
        T = chain.fk_tips(q_true)
        seed = rng.uniform(chain.lower, chain.upper)
        result = solver.solve(targets={f: T[f][:3, 3] for f in QUAD_FEET}, seed=seed)
        assert result.reachable and result.status in (IkStatus.CONVERGED, IkStatus.DEGENERATE)
        assert chain.within_limits(result.joint_positions)
        T_out = chain.fk_tips(result.joint_positions)
        for foot in QUAD_FEET:
            error = np.linalg.norm(T_out[foot][:3, 3] - T[foot][:3, 3])
            assert error <= TOL
            assert result.tips[foot].position_error == pytest.approx(error, abs=1e-12)
            assert result.tips[foot].status in (IkStatus.CONVERGED, IkStatus.DEGENERATE)
        assert result.position_error == max(t.position_error for t in result.tips.values())


@pytest.mark.parametrize('name', SOLVER_NAMES)
def test_legs_without_a_target_keep_their_joints(name):
    chain = quad()
    solver = make_solver(name, chain, params_of(name))
    rng = np.random.default_rng(4)
    seed = rng.uniform(chain.lower, chain.upper)
    T = chain.fk_tips(rng.uniform(chain.lower, chain.upper))
    result = solver.solve(targets={'FR_foot': T['FR_foot'][:3, 3]}, seed=seed)
    moved = chain.joints_of_tip('FR_foot')
    for j in range(chain.n):
        if j not in moved:
            assert result.joint_positions[j] == seed[j]
    assert set(result.tips) == {'FR_foot'} and result.reachable


@pytest.mark.parametrize('name', SOLVER_NAMES)
def test_a_foot_out_of_reach_is_unreachable_with_its_bound_and_the_others_still_converge(name):
    chain = quad()
    solver = make_solver(name, chain, params_of(name))
    T = chain.fk_tips(np.full(chain.n, 0.3))
    targets = {f: T[f][:3, 3] for f in QUAD_FEET}
    targets['RL_foot'] = np.array([-0.25, 0.12, -2.0])  # 1.95 m below the hip: legs are 0.63 m
    result = solver.solve(targets=targets)
    far = result.tips['RL_foot']
    assert far.status is IkStatus.UNREACHABLE and not far.reachable
    assert far.min_residual is not None and far.min_residual > 1.0
    assert far.position_error >= far.min_residual - 1e-9
    for foot in ('FL_foot', 'FR_foot', 'RR_foot'):
        assert result.tips[foot].reachable and result.tips[foot].status is IkStatus.CONVERGED
    assert result.status is IkStatus.UNREACHABLE and not result.reachable
    assert result.min_residual == far.min_residual
    assert 'RL_foot' in result.message


def test_a_position_only_solver_says_it_ignored_the_feet_orientations():
    chain = quad()
    solver = make_solver('analytic_hip_knee', chain)
    T = chain.fk_tips(np.full(chain.n, 0.2))
    result = solver.solve(targets={f: (T[f][:3, 3], quat_xyzw(T[f][:3, :3])) for f in QUAD_FEET})
    assert result.reachable and result.orientation_ignored
    assert all(t.orientation_error is None for t in result.tips.values())


def test_solo12_and_anymal_c_legs_in_one_solve_with_damped_jacobian(shared_robot):
    for urdf, base, feet in (
            ('solo12.urdf', 'base_link', ('FL_FOOT', 'FR_FOOT', 'HL_FOOT', 'HR_FOOT')),
            ('anymal_c.urdf', 'base', ('LF_FOOT', 'RF_FOOT', 'LH_FOOT', 'RH_FOOT'))):
        chain = Chain.from_urdf_file(shared_robot(urdf), base, list(feet))
        rng = np.random.default_rng(5)
        for name in ('damped_jacobian',):  # fabrik on these legs: test_real_legs.py
            solver = make_solver(name, chain, NO_CLOCK)
            assert solver.legs is not None
            for _ in range(10):
                T = chain.fk_tips(rng.uniform(chain.lower, chain.upper))
                result = solver.solve(targets={f: T[f][:3, 3] for f in feet})
                T_out = chain.fk_tips(result.joint_positions)
                assert result.reachable, (urdf, name, result.message)
                for f in feet:
                    assert np.linalg.norm(T_out[f][:3, 3] - T[f][:3, 3]) <= TOL


# ------------------------------------------------------------ damped_jacobian on a tree
def test_tree_jacobian_matches_finite_differences_of_the_weighted_residual():
    chain = waist_arms()
    tree = TreeDampedLeastSquares(chain, make_solver('damped_jacobian', chain,
                                                     {'weights': [1.0, 3.0]}).params)
    rng = np.random.default_rng(6)
    q_true = rng.uniform(chain.lower, chain.upper)
    T = chain.fk_tips(q_true)
    targets = tip_targets_from_input(
        {'left_hand': (T['left_hand'][:3, 3], quat_xyzw(T['left_hand'][:3, :3])),
         'right_hand': T['right_hand'][:3, 3]}, chain.tip_links)
    active = list(range(chain.n))
    evaluate = tree._evaluator(targets, active)
    left_rotation_rows = [3, 4, 5]  # the left hand's pose target: rows 0-5; the right's: 6-8
    position_rows = [0, 1, 2, 6, 7, 8]
    for near in (False, True):
        for _ in range(5):
            x = (q_true + rng.normal(0.0, 1e-5, chain.n) if near else
                 rng.uniform(chain.lower, chain.upper)).tolist()
            cost, _, e, J = evaluate(x)
            assert cost == pytest.approx(float(e @ e), rel=1e-9)
            h = 1e-6
            for k in range(chain.n):
                xp, xm = list(x), list(x)
                xp[k] += h
                xm[k] -= h
                # e is target minus actual: its derivative is minus the Jacobian
                numeric = -(evaluate(xp)[2] - evaluate(xm)[2]) / (2 * h)
                np.testing.assert_allclose(J[position_rows, k], numeric[position_rows],
                                           atol=1e-6)
                if near:  # the rotation vector's derivative is the angular Jacobian at 0
                    np.testing.assert_allclose(J[left_rotation_rows, k],
                                               numeric[left_rotation_rows], atol=1e-4)


def test_damped_jacobian_reaches_both_hands_of_twin_arm_on_compatible_targets():
    chain = twin()
    solver = make_solver('damped_jacobian', chain, NO_CLOCK)
    rng = np.random.default_rng(7)
    reached = 0
    for _ in range(100):
        T = chain.fk_tips(rng.uniform(chain.lower, chain.upper))
        result = solver.solve(targets={h: T[h][:3, 3] for h in HANDS},
                              seed=rng.uniform(chain.lower, chain.upper))
        assert chain.within_limits(result.joint_positions)
        T_out = chain.fk_tips(result.joint_positions)
        errors = [np.linalg.norm(T_out[h][:3, 3] - T[h][:3, 3]) for h in HANDS]
        for h, error in zip(HANDS, errors):
            assert result.tips[h].position_error == pytest.approx(error, abs=1e-12)
        assert result.reachable == all(e <= TOL for e in errors)
        reached += result.reachable
    assert reached == 100


def test_damped_jacobian_reaches_six_d_targets_of_both_hands_of_a_tree():
    chain = waist_arms()
    solver = make_solver('damped_jacobian', chain, NO_CLOCK)
    rng = np.random.default_rng(8)
    tol_r = solver.params['orientation_tolerance']
    reached = 0
    for _ in range(40):
        T = chain.fk_tips(rng.uniform(chain.lower, chain.upper))
        result = solver.solve(targets={h: (T[h][:3, 3], quat_xyzw(T[h][:3, :3]))
                                       for h in HANDS})
        T_out = chain.fk_tips(result.joint_positions)
        for h in HANDS:
            R_err = T_out[h][:3, :3].T @ T[h][:3, :3]
            angle = math.acos(max(-1.0, min(1.0, 0.5 * (np.trace(R_err) - 1.0))))
            assert result.tips[h].orientation_error == pytest.approx(angle, abs=1e-7)
            if result.tips[h].reachable:
                assert np.linalg.norm(T_out[h][:3, 3] - T[h][:3, 3]) <= TOL
                assert angle <= tol_r
        reached += result.reachable
    assert reached >= 38


def test_an_untargeted_hand_keeps_its_joints_in_a_tree_solve():
    chain = twin()
    solver = make_solver('damped_jacobian', chain, NO_CLOCK)
    rng = np.random.default_rng(9)
    seed = rng.uniform(chain.lower, chain.upper)
    T = chain.fk_tips(rng.uniform(chain.lower, chain.upper))
    result = solver.solve(targets={'left_hand': T['left_hand'][:3, 3]}, seed=seed)
    assert result.reachable
    left = set(chain.joints_of_tip('left_hand'))
    for j in range(chain.n):
        if j not in left:
            assert result.joint_positions[j] == seed[j]


def test_tree_weights_favour_the_heavier_hand_when_targets_conflict():
    chain = twin()
    rng = np.random.default_rng(10)
    favoured = 0
    for _ in range(10):
        T_a = chain.fk_tips(rng.uniform(chain.lower, chain.upper))
        T_b = chain.fk_tips(rng.uniform(chain.lower, chain.upper))
        targets = {'left_hand': T_a['left_hand'][:3, 3], 'right_hand': T_b['right_hand'][:3, 3]}
        errors = {}
        for weights in ([10.0, 1.0], [1.0, 10.0]):
            solver = make_solver('damped_jacobian', chain, {**NO_CLOCK, 'weights': weights,
                                                            'restarts': 3})
            result = solver.solve(targets=targets)
            errors[weights[0]] = {h: result.tips[h].position_error for h in HANDS}
        if not all(errors[w][h] <= TOL for w in errors for h in HANDS):  # a conflict
            favoured += (errors[10.0]['left_hand'] <= errors[1.0]['left_hand'] + TOL and
                         errors[1.0]['right_hand'] <= errors[10.0]['right_hand'] + TOL)
        else:
            favoured += 1
    assert favoured >= 9


def test_a_hand_beyond_reach_in_a_tree_is_unreachable_with_its_proven_bound():
    chain = twin()
    solver = make_solver('damped_jacobian', chain, NO_CLOCK)
    T = chain.fk_tips(np.array([0.2, 0.3, 0.5, -1.0, -0.2, 0.4, -0.8, 0.1]))
    far = np.array([3.0, 2.0, 1.0])
    result = solver.solve(targets={'left_hand': far, 'right_hand': T['right_hand'][:3, 3]})
    left = result.tips['left_hand']
    assert left.status is IkStatus.UNREACHABLE and left.min_residual > 1.0
    assert left.position_error >= left.min_residual - 1e-9
    assert result.status is IkStatus.UNREACHABLE and not result.reachable
    assert result.tips['right_hand'].min_residual is None


# -------------------------------------------------------------------- inputs, statuses
@pytest.mark.parametrize('targets, words', [
    ({'nose': [0.1, 0.2, 0.3]}, ['nose', 'FL_foot', 'RR_foot']),
    ({'FL_foot': [0.1, math.nan, 0.3]}, ['FL_foot', 'NaN']),
    ({'FL_foot': ([0.1, 0.2, 0.3], [0.0, 0.0, 0.0, 0.0])}, ['FL_foot', 'zero length']),
    ({'FL_foot': ([0.1, 0.2, 0.3], [0.0, 0.0, 1.0])}, ['FL_foot', 'quaternion']),
    ({}, ['FL_foot']),
])
def test_bad_targets_of_several_tips_are_refused_naming_the_tip(targets, words):
    solver = make_solver('analytic_hip_knee', quad())
    with pytest.raises(TargetError) as info:
        solver.solve(targets=targets)
    for word in words:
        assert word in str(info.value)


def test_the_status_of_several_tips_claims_only_what_every_tip_allows():
    S = IkStatus
    assert combined_status([S.CONVERGED, S.CONVERGED]) is S.CONVERGED
    assert combined_status([S.CONVERGED, S.DEGENERATE]) is S.DEGENERATE
    assert combined_status([S.TIMEOUT, S.UNREACHABLE, S.CONVERGED]) is S.UNREACHABLE
    assert combined_status([S.MAX_ITERATIONS, S.JOINT_LIMITED]) is S.JOINT_LIMITED
    assert combined_status([S.DEGENERATE, S.MAX_ITERATIONS]) is S.MAX_ITERATIONS


def test_targets_on_a_one_tip_chain_answer_like_the_plain_call_with_the_tip_result():
    chain = quad().serial_chain('FL_foot')
    solver = make_solver('damped_jacobian', chain, NO_CLOCK)
    p = chain.fk(np.array([0.3, 0.4, -0.9]))[:3, 3]
    a, b = solver.solve(p), solver.solve(targets={'FL_foot': p})
    assert np.array_equal(a.joint_positions, b.joint_positions)
    assert b.tips['FL_foot'].position_error == a.position_error
    assert b.tips['FL_foot'].status is a.status


def test_serial_chain_of_a_leg_has_the_tree_kinematics_of_its_foot():
    chain = quad()
    rng = np.random.default_rng(11)
    for foot in QUAD_FEET:
        leg = chain.serial_chain(foot)
        joints = chain.joints_of_tip(foot)
        assert leg.joint_names == [chain.joint_names[j] for j in joints]
        for _ in range(5):
            q = rng.uniform(chain.lower, chain.upper)
            np.testing.assert_allclose(leg.fk(q[joints]), chain.fk_tips(q)[foot], atol=1e-12)


# --------------------------------------------------------- the analytic solver on real legs
def test_the_quad12_config_solves_all_four_feet_with_the_analytic_solver_leg_by_leg():
    from ik_node.config.node_config import load_config
    config = load_config(REPO / 'config' / 'quad12.yaml')
    chain = build_chain(config)
    solver = build_solver(config, chain)
    assert solver.name == 'analytic_hip_knee' and len(solver.legs.legs) == 4
    rng = np.random.default_rng(12)
    for _ in range(100):
        T = chain.fk_tips(rng.uniform(chain.lower, chain.upper))
        result = solver.solve(targets={f: T[f][:3, 3] for f in chain.tip_links},
                              seed=rng.uniform(chain.lower, chain.upper))
        assert result.reachable and chain.within_limits(result.joint_positions)
        T_out = chain.fk_tips(result.joint_positions)
        for foot in chain.tip_links:
            assert np.linalg.norm(T_out[foot][:3, 3] - T[foot][:3, 3]) <= TOL


def test_solo12_and_anymal_c_all_four_feet_with_the_analytic_solver(shared_robot):
    for urdf, base, feet in (
            ('solo12.urdf', 'base_link', ('FL_FOOT', 'FR_FOOT', 'HL_FOOT', 'HR_FOOT')),
            ('anymal_c.urdf', 'base', ('LF_FOOT', 'RF_FOOT', 'LH_FOOT', 'RH_FOOT'))):
        chain = Chain.from_urdf_file(shared_robot(urdf), base, list(feet))
        solver = make_solver('analytic_hip_knee', chain)
        rng = np.random.default_rng(13)
        for _ in range(50):
            T = chain.fk_tips(rng.uniform(chain.lower, chain.upper))
            result = solver.solve(targets={f: T[f][:3, 3] for f in feet})
            assert result.reachable, (urdf, result.message)
            T_out = chain.fk_tips(result.joint_positions)
            for f in feet:
                assert np.linalg.norm(T_out[f][:3, 3] - T[f][:3, 3]) <= TOL
