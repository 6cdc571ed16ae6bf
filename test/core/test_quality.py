"""Tests of ik_node.model.quality: manipulability and the smallest singular value checked against a
finite-difference Jacobian and numpy's SVD, joint-limit distances against a brute-force scan;
seeded random configurations."""

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

from ik_node import Chain, ChainError, ConfigError, TargetError
from ik_node.model.quality import SolutionQuality, nearest_limit, solution_quality
from urdf_texts import MIXED_URDF

REPO = Path(__file__).resolve().parents[2]
H = 1e-6  # finite-difference step [rad]


@pytest.fixture(scope='module')
def mixed():
    return Chain.from_urdf_string(MIXED_URDF, 'base', 'tool')


def _random_q(chain, rng):
    low = np.where(np.isfinite(chain.lower), chain.lower, -math.pi)
    high = np.where(np.isfinite(chain.upper), chain.upper, math.pi)
    return rng.uniform(low, high)


def _fd_jacobian(chain, q):
    """6 x n Jacobian by central differences of FK: position, then the rotation vector of
    ``R(q + h) R(q - h)^T`` over ``2h`` (base frame; from its skew part, exact to h^2)."""
    J = np.zeros((6, chain.n))
    for i in range(chain.n):
        dq = np.zeros(chain.n)
        dq[i] = H
        Tp, Tm = chain.fk(q + dq), chain.fk(q - dq)
        J[:3, i] = (Tp[:3, 3] - Tm[:3, 3]) / (2 * H)
        dR = Tp[:3, :3] @ Tm[:3, :3].T
        J[3:, i] = 0.5 * np.array([dR[2, 1] - dR[1, 2], dR[0, 2] - dR[2, 0],
                                   dR[1, 0] - dR[0, 1]]) / (2 * H)
    return J


def test_position_only_manipulability_is_sqrt_det_of_the_finite_difference_jacobian(leg):
    rng = np.random.default_rng(1)
    for _ in range(20):
        q = _random_q(leg, rng)
        quality = solution_quality(leg, q)
        assert quality.position_only  # 3 joints: position only by default
        J = _fd_jacobian(leg, q)[:3]
        expected = math.sqrt(max(0.0, np.linalg.det(J @ J.T)))
        assert quality.manipulability == pytest.approx(expected, rel=1e-5, abs=1e-9)
        sigma = np.linalg.svd(J, compute_uv=False)
        assert quality.min_singular_value == pytest.approx(sigma[-1], rel=1e-5, abs=1e-9)


def test_full_pose_measures_match_svd_of_the_finite_difference_jacobian(arm6):
    rng = np.random.default_rng(2)
    for _ in range(20):
        q = _random_q(arm6, rng)
        quality = solution_quality(arm6, q)
        assert not quality.position_only  # 6 joints: the full pose
        sigma = np.linalg.svd(_fd_jacobian(arm6, q), compute_uv=False)
        assert quality.min_singular_value == pytest.approx(sigma[-1], rel=1e-5, abs=1e-8)
        assert quality.manipulability == pytest.approx(np.prod(sigma), rel=1e-5, abs=1e-8)


def test_redundant_arm_manipulability_is_sqrt_det_j_jt(shared_robot):
    panda = Chain.from_urdf_file(shared_robot('panda.urdf'), 'panda_link0', 'panda_hand_tcp')
    rng = np.random.default_rng(3)
    for _ in range(10):
        q = _random_q(panda, rng)
        J = panda.jacobian(q)
        quality = solution_quality(panda, q)
        assert quality.manipulability == pytest.approx(math.sqrt(np.linalg.det(J @ J.T)),
                                                       rel=1e-9)
        assert quality.min_singular_value == pytest.approx(
            np.linalg.svd(J, compute_uv=False)[5], rel=1e-9)


def test_position_only_can_be_asked_for_on_a_six_joint_arm(arm6):
    q = _random_q(arm6, np.random.default_rng(4))
    quality = solution_quality(arm6, q, position_only=True)
    J = arm6.jacobian(q)[:3]
    assert quality.position_only
    assert quality.manipulability == pytest.approx(math.sqrt(np.linalg.det(J @ J.T)), rel=1e-9)


def test_fewer_joints_than_task_rows_is_singular(leg):
    quality = solution_quality(leg, np.array([0.1, 0.2, -0.7]), position_only=False)
    assert quality.manipulability == 0.0 and quality.min_singular_value == 0.0
    assert quality.near_singular and quality.fragile


def test_stretched_limbs_are_singular(leg, arm6):
    straight_leg = solution_quality(leg, np.array([0.3, 0.4, 0.0]))  # knee straight
    assert straight_leg.min_singular_value < 1e-9 and straight_leg.near_singular
    bent_leg = solution_quality(leg, np.array([0.3, 0.4, -1.0]))
    assert bent_leg.min_singular_value > 0.02 and not bent_leg.near_singular
    straight_arm = solution_quality(arm6, np.array([0.2, -0.5, 0.0, 0.3, 0.7, 0.1]))  # elbow 0
    assert straight_arm.min_singular_value < 1e-9 and straight_arm.near_singular


def test_limit_distance_is_the_brute_force_nearest_limit(leg, arm6):
    rng = np.random.default_rng(5)
    for chain in (leg, arm6):
        for _ in range(20):
            q = _random_q(chain, rng)
            gaps = [(q[i] - chain.lower[i], chain.joint_names[i], 'lower') for i in range(chain.n)]
            gaps += [(chain.upper[i] - q[i], chain.joint_names[i], 'upper')
                     for i in range(chain.n)]
            distance, joint, side = min(gaps)
            quality = solution_quality(chain, q)
            assert quality.limit_distance == pytest.approx(distance, abs=1e-12)
            assert (quality.limit_joint, quality.limit_side) == (joint, side)


def test_continuous_joints_have_no_limit_and_prismatic_ones_count_in_metres(mixed):
    quality = solution_quality(mixed, np.array([100.0, 0.45, 0.0]))  # yaw far out: no limit
    assert (quality.limit_joint, quality.limit_side) == ('lift', 'upper')
    assert quality.limit_distance == pytest.approx(0.05)
    assert nearest_limit(mixed, np.array([3.0, 0.2, 0.2]), joints=[0]) == (math.inf, None, None)


def test_outside_a_limit_the_distance_is_negative(leg):
    quality = solution_quality(leg, np.array([0.0, 1.7, -1.0]))
    assert quality.limit_joint == 'hip_pitch' and quality.limit_side == 'upper'
    assert quality.limit_distance == pytest.approx(-0.1)
    assert quality.near_limit and quality.fragile


def test_thresholds_decide_the_flags(leg):
    q = np.array([0.0, 1.5, -1.0])  # 0.1 rad from the hip pitch limit
    assert solution_quality(leg, q, limit_threshold=0.2).near_limit
    assert not solution_quality(leg, q, limit_threshold=0.05).near_limit
    sigma = solution_quality(leg, q).min_singular_value
    assert solution_quality(leg, q, singular_threshold=sigma * 1.01).near_singular
    assert not solution_quality(leg, q, singular_threshold=sigma * 0.99).near_singular


def test_the_result_is_immutable(leg):
    quality = solution_quality(leg, np.array([0.0, 0.2, -1.0]))
    assert isinstance(quality, SolutionQuality)
    with pytest.raises(dataclasses.FrozenInstanceError):
        quality.manipulability = 1.0


def test_tip_of_a_branched_chain_uses_that_tips_joints():
    twin = Chain.from_urdf_file(REPO / 'urdf' / 'twin_arm.urdf', 'base_link',
                                ['left_hand', 'right_hand'])
    q = _random_q(twin, np.random.default_rng(6))
    quality = solution_quality(twin, q, 'right_hand')
    joints = twin.joints_of_tip('right_hand')
    J = twin.jacobian(q, 'right_hand')[:3, joints]
    assert quality.tip_link == 'right_hand'
    assert quality.manipulability == pytest.approx(math.sqrt(np.linalg.det(J @ J.T)), rel=1e-9)
    assert quality.limit_joint in [twin.joint_names[i] for i in joints]


@pytest.mark.parametrize('q', [[0.0, 0.1], [0.0, 0.1, 0.2, 0.3], [0.0, math.nan, 0.1]])
def test_bad_q_raises_target_error_naming_the_joints(leg, q):
    with pytest.raises(TargetError, match='hip_yaw'):
        solution_quality(leg, q)


@pytest.mark.parametrize('kwargs', [{'singular_threshold': -1.0},
                                    {'limit_threshold': math.inf},
                                    {'limit_threshold': 'x'}])
def test_bad_threshold_raises_config_error(leg, kwargs):
    with pytest.raises(ConfigError, match=next(iter(kwargs))):
        solution_quality(leg, np.zeros(3), **kwargs)


def test_unknown_tip_raises_chain_error(leg):
    with pytest.raises(ChainError, match='foot'):
        solution_quality(leg, np.zeros(3), 'hand')


def test_a_planar_chain_is_measured_in_its_plane_not_as_always_singular():
    from ik_node.model.quality import task_rank
    from ik_node.model.resources import urdf_path
    chain = Chain.from_urdf_file(urdf_path('planar4'), 'base_link', 'tip')
    assert task_rank(chain, position_only=True) == 2
    q = np.array([0.3, 0.6, -0.4, 0.5])
    plain = solution_quality(chain, q, position_only=True)
    assert plain.min_singular_value < 1e-12 and plain.near_singular  # the out-of-plane row
    in_plane = solution_quality(chain, q, position_only=True, rank=2)
    sigma = np.linalg.svd(chain.jacobian(q)[:3], compute_uv=False)
    assert in_plane.min_singular_value == pytest.approx(sigma[1])
    assert in_plane.manipulability == pytest.approx(sigma[0] * sigma[1])
    assert not in_plane.near_singular


def _report_from_solution_quality(chain, q, tips, position_only, singular, limit):
    """fragility_report's key-values and reason, built from solution_quality (the reference)."""
    from ik_node.model.quality import cached_task_rank
    qualities = [solution_quality(chain, q, tip, position_only=position_only or None,
                                  singular_threshold=singular, limit_threshold=limit,
                                  rank=cached_task_rank(chain, tip, position_only))
                 for tip in tips]
    worst = min(qualities, key=lambda x: x.min_singular_value)
    nearest = min(qualities, key=lambda x: x.limit_distance)
    values = {'manipulability': f'{min(x.manipulability for x in qualities):.4g}',
              'min_singular_value': f'{worst.min_singular_value:.4g}',
              'limit_margin': f'{nearest.limit_distance:.4g}',
              'limit_joint': nearest.limit_joint or ''}
    return values, (worst.near_singular, worst.min_singular_value, nearest.near_limit,
                    nearest.limit_joint, nearest.limit_side)


@pytest.mark.parametrize('robot, tips', [
    ('leg3', ['foot']), ('arm6', ['tool0']), ('planar4', ['tip']),
    ('twin_arm', ['left_hand', 'right_hand']), ('mixed', ['tool'])])
def test_fragility_report_gives_solution_qualitys_measures(robot, tips, mixed):
    """The node's cached fast path reports what solution_quality measures, on random
    configurations, near limits and outside them, position-only or not."""
    from ik_node.model.quality import fragility_report
    chain = mixed if robot == 'mixed' else Chain.from_urdf_file(
        REPO / 'urdf' / f'{robot}.urdf', 'base_link', tips if len(tips) > 1 else tips[0])
    rng = np.random.default_rng(11)
    for trial in range(60):
        q = _random_q(chain, rng)
        if trial % 3 == 1:  # at or past a limit
            i = int(rng.integers(chain.n))
            if math.isfinite(chain.upper[i]):
                q[i] = chain.upper[i] + rng.choice([0.0, 0.01, -0.01])
        position_only = bool(trial % 2)
        singular, limit = (0.05, 0.1) if trial % 4 < 2 else (0.0, 0.0)
        values, why = fragility_report(chain, q, tips, position_only, singular, limit)
        expected, (near_singular, sigma, near_limit, joint, side) = \
            _report_from_solution_quality(chain, q, tips, position_only, singular, limit)
        assert values == expected
        assert ('near a singularity' in why) == near_singular
        assert (f'from its {side} limit' in why) == near_limit
        if near_limit:
            assert why.split(', ')[-1].startswith(f'{joint} ')


@pytest.mark.parametrize('robot, tips', [
    ('leg3', ['foot']), ('arm6', ['tool0']), ('planar4', ['tip']),
    ('twin_arm', ['left_hand', 'right_hand']),
    ('quad12', ['FL_foot', 'FR_foot', 'RL_foot', 'RR_foot']), ('mixed', ['tool'])])
def test_is_fragile_gives_fragility_reports_verdict(robot, tips, mixed):
    """is_fragile decides as fragility_report's reason does: on random configurations, at and
    past limits, at singular ones (a joint at 0: straight knees and elbows), with the singular
    threshold at the smallest singular value itself and just above it."""
    from ik_node.model.quality import fragility_report, is_fragile
    chain = mixed if robot == 'mixed' else Chain.from_urdf_file(
        REPO / 'urdf' / f'{robot}.urdf', 'base_link', tips if len(tips) > 1 else tips[0])
    rng = np.random.default_rng(5)
    verdicts = set()
    for trial in range(80):
        q = _random_q(chain, rng)
        if trial % 4 == 1:  # at or past a limit
            i = int(rng.integers(chain.n))
            if math.isfinite(chain.upper[i]):
                q[i] = chain.upper[i] + rng.choice([0.0, 0.01, -0.01])
        if trial % 4 == 2:  # singular: a joint straight
            q[int(rng.integers(chain.n))] = 0.0
            q = chain.clip(q)
        position_only = bool(trial % 2)
        singular, limit = [(0.01, 0.05), (0.0, 0.0), (0.3, 0.0), (0.05, 0.1)][trial % 4]
        if trial % 8 == 3:  # the threshold at the tip's smallest singular value, and above
            sigma = float(fragility_report(chain, q, tips, position_only, 1.0, 0.0)[0][
                'min_singular_value'])
            quality = solution_quality(chain, q, tips[0], position_only=position_only or None)
            singular = quality.min_singular_value * (1.0 + 1e-12 * (trial % 16 == 3)) \
                if len(tips) == 1 else sigma
        expected = fragility_report(chain, q, tips, position_only, singular, limit)[1] != ''
        assert is_fragile(chain, q, tips, position_only, singular, limit) == expected, \
            (trial, q.tolist(), singular, limit)
        verdicts.add(expected)
    assert verdicts == {True, False}  # both verdicts were tested


@pytest.mark.parametrize('robot, tips', [('leg3', ['foot']), ('arm6', ['tool0']),
                                         ('quad12', ['FL_foot', 'RR_foot'])])
def test_is_fragile_at_a_singular_configuration_with_tiny_thresholds(robot, tips):
    """At a singular configuration (a knee or elbow straight) the smallest singular value is
    near rounding; is_fragile gives the SVD's verdict with thresholds from 1e-14 to 0.1."""
    from ik_node.model.quality import fragility_report, is_fragile
    chain = Chain.from_urdf_file(REPO / 'urdf' / f'{robot}.urdf', 'base_link',
                                 tips if len(tips) > 1 else tips[0])
    q = chain.clip(np.full(chain.n, 0.4))
    for name in chain.joint_names:
        if 'knee' in name or name == 'elbow':
            q[chain.joint_names.index(name)] = 0.0
    q = chain.clip(q)
    for position_only in (True, False):
        for singular in (1e-14, 1e-12, 1e-10, 1e-8, 1e-6, 1e-4, 1e-2, 0.1):
            expected = fragility_report(chain, q, tips, position_only, singular, 0.0)[1] != ''
            assert is_fragile(chain, q, tips, position_only, singular, 0.0) == expected, \
                (position_only, singular)
