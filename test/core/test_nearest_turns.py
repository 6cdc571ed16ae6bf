"""Whole turns nearest the seed: the pure helper of ik_node.model.chain and every solver's results.

A revolute joint whose range spans a full turn (UR5's +-2 pi) or a continuous joint can reach one
angle at several values; :func:`ik_node.model.chain.nearest_turns` picks, among those within the
limits, the one nearest the seed, and every solver returns that one (a jump of 2 pi between
consecutive solves of a stream is the same pose, yet a controller would turn the joint a full
turn). The helper is checked against a brute-force search over whole turns; the solvers
against the same definition on random targets and far-off seeds; FK against the unwrapped values.
"""

import math
from pathlib import Path

import numpy as np
import pytest
import transforms3d

from ik_node.model.chain import Chain, full_turn_joints, nearest_turns
from ik_node.solvers import make_solver

REPO_URDF = Path(__file__).resolve().parents[2] / 'urdf'
TWO_PI = 2.0 * math.pi
INF = math.inf
# Solves end at an iteration cap, never at the clock: results do not depend on machine load.
DETERMINISTIC = {'timeout': 60.0}


def _joint(name, kind, parent, child, xyz, axis, limits=None):
    limit = '' if limits is None else \
        f'<limit lower="{limits[0]!r}" upper="{limits[1]!r}" effort="1" velocity="1"/>'
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/>'
            f'<child link="{child}"/><origin xyz="{xyz}" rpy="0 0 0"/>'
            f'<axis xyz="{axis}"/>{limit}</joint>')


def _robot(joints, links):
    return (f'<robot name="turns">{"".join(f"<link name={chr(34)}{k}{chr(34)}/>" for k in links)}'
            f'{"".join(joints)}</robot>')


#: Every kind of joint: continuous, revolute over exactly one turn, over two turns, over less
#: than a turn, and a prismatic joint whose range is longer than 2 pi (metres: never wrapped).
MIXED_URDF = _robot([
    _joint('cont', 'continuous', 'l0', 'l1', '0 0 0.1', '0 0 1'),
    _joint('one_turn', 'revolute', 'l1', 'l2', '0.2 0 0', '0 1 0', (-math.pi, math.pi)),
    _joint('two_turns', 'revolute', 'l2', 'l3', '0.2 0 0', '0 1 0', (-TWO_PI, TWO_PI)),
    _joint('short', 'revolute', 'l3', 'l4', '0.15 0 0', '1 0 0', (-2.0, 2.5)),
    _joint('slide', 'prismatic', 'l4', 'l5', '0.1 0 0', '1 0 0', (-5.0, 5.0)),
    '<joint name="tip_joint" type="fixed"><parent link="l5"/><child link="tip"/>'
    '<origin xyz="0.1 0.05 0"/></joint>'], ['l0', 'l1', 'l2', 'l3', 'l4', 'l5', 'tip'])

#: A tree with continuous and two-turn joints on both branches (for branched FABRIK).
TREE_URDF = _robot([
    _joint('waist', 'continuous', 'base', 'torso', '0 0 0.2', '0 0 1'),
    _joint('l_shoulder', 'continuous', 'torso', 'l_upper', '0 0.2 0.3', '0 1 0'),
    _joint('l_elbow', 'revolute', 'l_upper', 'l_fore', '0.3 0 0', '0 1 0', (-TWO_PI, TWO_PI)),
    _joint('r_shoulder', 'revolute', 'torso', 'r_upper', '0 -0.2 0.3', '0 1 0',
           (-TWO_PI, TWO_PI)),
    _joint('r_elbow', 'continuous', 'r_upper', 'r_fore', '0.3 0 0', '0 1 0'),
    '<joint name="l_hand_joint" type="fixed"><parent link="l_fore"/><child link="l_hand"/>'
    '<origin xyz="0.25 0 0"/></joint>',
    '<joint name="r_hand_joint" type="fixed"><parent link="r_fore"/><child link="r_hand"/>'
    '<origin xyz="0.25 0 0"/></joint>'],
    ['base', 'torso', 'l_upper', 'l_fore', 'l_hand', 'r_upper', 'r_fore', 'r_hand'])

#: A planar 2-link chain of continuous joints (for the analytic solver).
PLANAR2_URDF = _robot([
    _joint('shoulder', 'continuous', 'l0', 'l1', '0 0 0', '0 0 1'),
    _joint('elbow', 'continuous', 'l1', 'l2', '0.3 0 0', '0 0 1'),
    '<joint name="tip_joint" type="fixed"><parent link="l2"/><child link="tip"/>'
    '<origin xyz="0.25 0 0"/></joint>'], ['l0', 'l1', 'l2', 'tip'])


def _brute_force_nearest(v, seed, lo, hi):
    """The value v + 2 pi k within [lo, hi] nearest ``seed``, by trying k in -12 .. 12."""
    candidates = [v + k * TWO_PI for k in range(-12, 13) if lo <= v + k * TWO_PI <= hi]
    return min(candidates, key=lambda c: abs(c - seed))


def _random_within(rng, lower, upper, size=None):
    lo = np.where(np.isfinite(lower), lower, -3.0 * TWO_PI)
    hi = np.where(np.isfinite(upper), upper, 3.0 * TWO_PI)
    return rng.uniform(lo, hi, size)


def _assert_nearest_the_seed(chain, q, seed):
    """Each full-turn joint of ``q`` is nearest ``seed`` among its in-limit 2 pi equivalents."""
    for i in full_turn_joints(chain):
        lo, hi = chain.lower[i], chain.upper[i]
        toward = q[i] + math.copysign(TWO_PI, seed[i] - q[i])
        nearer_allowed = abs(toward - seed[i]) < abs(q[i] - seed[i]) - 1e-9 and \
            lo <= toward <= hi
        assert not nearer_allowed, (f'joint {chain.joint_names[i]} = {q[i]:.6f} with seed '
                                    f'{seed[i]:.6f}: {toward:.6f} is nearer and within '
                                    f'[{lo:g}, {hi:g}]')


# --------------------------------------------------------------------------- the pure helper
@pytest.mark.slow
@pytest.mark.parametrize('lo, hi', [(-TWO_PI, TWO_PI), (-math.pi, math.pi), (-3 * math.pi, 1.0),
                                    (-INF, INF), (0.0, 5 * math.pi), (-1.0, 1.0)])
def test_nearest_turns_equals_a_brute_force_search_over_whole_turns(lo, hi):
    rng = np.random.default_rng(11)
    span_lo, span_hi = max(lo, -4 * TWO_PI), min(hi, 4 * TWO_PI)
    for _ in range(2000):
        v, seed = rng.uniform(span_lo, span_hi, 2)
        if rng.random() < 0.1:  # values at the limits
            v = span_lo if rng.random() < 0.5 else span_hi
        (got,) = nearest_turns([v], [seed], [lo], [hi], [0])
        assert lo <= got <= hi
        assert got == pytest.approx(_brute_force_nearest(v, seed, lo, hi), abs=1e-9)
        assert abs(math.remainder(got - v, TWO_PI)) < 1e-9  # whole turns only


def test_nearest_turns_leaves_joints_not_listed_unchanged():
    q, seed = [6.0, 6.0, 6.0], [-6.0, -6.0, -6.0]
    limits = [-TWO_PI] * 3, [TWO_PI] * 3
    assert nearest_turns(q, seed, *limits, [1]) == [6.0, 6.0 - TWO_PI, 6.0]
    assert nearest_turns(q, seed, *limits, []) == q


def test_nearest_turns_keeps_a_value_whose_equivalents_are_all_beyond_the_limits():
    # One-turn range: at -3.0 the equivalent nearer a seed of 3.1 (3.28) is past pi.
    assert nearest_turns([-3.0], [3.1], [-math.pi], [math.pi], [0]) == [-3.0]
    # At the limit itself both ends are the same angle: the end nearer the seed is taken.
    (got,) = nearest_turns([-math.pi], [3.0], [-math.pi], [math.pi], [0])
    assert got == pytest.approx(math.pi, abs=1e-12)


def test_full_turn_joints_are_continuous_and_full_turn_revolute_joints_never_prismatic():
    chain = Chain.from_urdf_string(MIXED_URDF, 'l0', 'tip')
    assert [chain.joint_names[i] for i in full_turn_joints(chain)] == \
        ['cont', 'one_turn', 'two_turns']
    arm6 = Chain.from_urdf_file(REPO_URDF / 'arm6.urdf', 'base_link', 'tool0')
    assert full_turn_joints(arm6) == tuple(range(6))  # elbow spans exactly one turn
    leg3 = Chain.from_urdf_file(REPO_URDF / 'leg3.urdf', 'base_link', 'foot')
    assert full_turn_joints(leg3) == ()


@pytest.mark.parametrize('robot', ['mixed', 'arm6'])
def test_fk_is_unchanged_by_the_whole_turns_nearest_turns_adds(robot):
    chain = Chain.from_urdf_string(MIXED_URDF, 'l0', 'tip') if robot == 'mixed' else \
        Chain.from_urdf_file(REPO_URDF / 'arm6.urdf', 'base_link', 'tool0')
    joints = full_turn_joints(chain)
    rng = np.random.default_rng(12)
    moved = 0
    for _ in range(300):
        q = _random_within(rng, chain.lower, chain.upper)
        seed = _random_within(rng, chain.lower, chain.upper)
        q_near = np.array(nearest_turns(q.tolist(), seed.tolist(), chain.lower.tolist(),
                                        chain.upper.tolist(), joints))
        moved += int(np.any(q_near != q))
        np.testing.assert_allclose(chain.fk(q_near), chain.fk(q), atol=1e-12)
        assert chain.within_limits(q_near, tol=0.0)
        prismatic = [i for i, j in enumerate(chain.joints) if j.is_prismatic]
        np.testing.assert_array_equal(q_near[prismatic], q[prismatic])
    assert moved > 100  # the random values did exercise whole turns


# ------------------------------------------------------------------------------ the solvers
def _quat_xyzw(R):
    w, x, y, z = transforms3d.quaternions.mat2quat(R)
    return [x, y, z, w]


CASES = {
    # name: (urdf text or file, base, tip(s), solver, params, 6D)
    'arm6 damped_jacobian 6D': ('arm6.urdf', 'base_link', 'tool0', 'damped_jacobian',
                                DETERMINISTIC, True),
    'arm6 damped_jacobian position': ('arm6.urdf', 'base_link', 'tool0', 'damped_jacobian',
                                      DETERMINISTIC, False),
    'mixed damped_jacobian transpose': (MIXED_URDF, 'l0', 'tip', 'damped_jacobian',
                                        {'method': 'transpose', 'max_iterations': 300}, False),
    'arm6 fabrik': ('arm6.urdf', 'base_link', 'tool0', 'fabrik', {}, False),
    # (fabrik refuses the mixed chain's prismatic joint; arm6's +-2 pi joints test it)
    'tree fabrik branched': (TREE_URDF, 'base', ['l_hand', 'r_hand'], 'fabrik', {}, False),
    'planar2 analytic_hip_knee': (PLANAR2_URDF, 'l0', 'tip', 'analytic_hip_knee', {}, False),
}


@pytest.mark.slow
@pytest.mark.parametrize('case', sorted(CASES))
def test_every_solver_returns_full_turn_joints_nearest_the_seed(case):
    source, base, tip, name, params, six_d = CASES[case]
    chain = Chain.from_urdf_file(REPO_URDF / source, base, tip) if source.endswith('.urdf') \
        else Chain.from_urdf_string(source, base, tip)
    solver = make_solver(name, chain, params)
    rng = np.random.default_rng(13)
    far = 0
    for _ in range(60):
        q_target = _random_within(rng, chain.lower, chain.upper)
        # Seeds a turn or more away from the target's values, where they can be.
        seed = _random_within(rng, chain.lower, chain.upper)
        if isinstance(tip, list):
            T = chain.fk_tips(q_target)
            result = solver.solve(targets={t: T[t][:3, 3] for t in tip}, seed=seed)
            T_result = chain.fk_tips(result.joint_positions)
            error = max(float(np.linalg.norm(T_result[t][:3, 3] - T[t][:3, 3])) for t in tip)
        else:
            T = chain.fk(q_target)
            result = solver.solve(T[:3, 3], _quat_xyzw(T[:3, :3]) if six_d else None, seed)
            error = float(np.linalg.norm(chain.fk(result.joint_positions)[:3, 3] - T[:3, 3]))
        q = result.joint_positions
        assert chain.within_limits(q, tol=0.0)
        _assert_nearest_the_seed(chain, q, seed)
        assert result.position_error == pytest.approx(error, abs=1e-12)  # FK of what is returned
        far += int(np.any(np.abs(q - q_target)[list(full_turn_joints(chain))] > math.pi))
    assert far > 0  # some answers did differ from the target's values by turns
