"""analytic_hip_knee on real legs: abduction about the forward axis, lateral and axis offsets.

Legs: every foot of Go1, Solo 12 and ANYmal C (../shared/robots, skipped when absent), the
packaged quad12, and legs written here: a HyQ-type leg (the pitch axis 8 cm from the abduction
axis), a Bolt-type leg with both offsets. Every check is on FK of the returned joints, against
targets made by FK of random in-limit joints or against an independent long search
(test/closest_reference.py), never against the solver's own numbers.
"""

import math
from pathlib import Path

import numpy as np
import pytest

from closest_reference import long_search
from ik_node import Chain, ChainError, IkStatus, make_solver

REPO = Path(__file__).resolve().parents[2]
REACHED_M = 1e-9

SHARED_LEGS = {
    'go1': ('go1.urdf', 'trunk', ('FR_foot', 'FL_foot', 'RR_foot', 'RL_foot')),
    'solo12': ('solo12.urdf', 'base_link', ('FL_FOOT', 'FR_FOOT', 'HL_FOOT', 'HR_FOOT')),
    'anymal_c': ('anymal_c.urdf', 'base', ('LF_FOOT', 'RF_FOOT', 'LH_FOOT', 'RH_FOOT')),
}
QUAD12_FEET = ('FL_foot', 'FR_foot', 'RL_foot', 'RR_foot')


def abduction_leg_urdf(pitch_xyz='0 0 0', knee_xyz='0 0 -0.35', foot_xyz='0 0 -0.35',
                       first_axis='1 0 0', limits=((-1.2, 1.2), (-2.5, 2.5), (-2.8, 2.8))):
    """A leg hanging along -z: abduction about ``first_axis``, then pitch and knee about y."""
    def limit(lo_hi):
        return f'<limit lower="{lo_hi[0]}" upper="{lo_hi[1]}" effort="1" velocity="1"/>'
    return f"""<robot name="leg">
  <link name="trunk"/><link name="hip"/><link name="thigh"/><link name="shank"/>
  <link name="foot"/>
  <joint name="haa" type="revolute"><parent link="trunk"/><child link="hip"/>
    <origin xyz="0.3 -0.1 0.02" rpy="0 0 0.1"/><axis xyz="{first_axis}"/>{limit(limits[0])}
  </joint>
  <joint name="hfe" type="revolute"><parent link="hip"/><child link="thigh"/>
    <origin xyz="{pitch_xyz}"/><axis xyz="0 1 0"/>{limit(limits[1])}</joint>
  <joint name="kfe" type="revolute"><parent link="thigh"/><child link="shank"/>
    <origin xyz="{knee_xyz}"/><axis xyz="0 1 0"/>{limit(limits[2])}</joint>
  <joint name="foot_joint" type="fixed"><parent link="shank"/><child link="foot"/>
    <origin xyz="{foot_xyz}"/></joint>
</robot>"""


#: Synthetic legs: (URDF keyword arguments, lateral offset h [m], axis offset D [m]).
SYNTHETIC = {
    'hyq_type': (dict(pitch_xyz='0 0 -0.08'), 0.0, 0.08),
    'bolt_type': (dict(pitch_xyz='0.02 -0.05 -0.06', foot_xyz='0.03 -0.02 -0.3'), 0.07, 0.06),
}
LEG_IDS = ([f'{robot}:{foot}' for robot, (_, _, feet) in SHARED_LEGS.items() for foot in feet]
           + [f'quad12:{foot}' for foot in QUAD12_FEET] + list(SYNTHETIC))


@pytest.fixture
def leg_chain(shared_robot):
    """The chain of a leg id (``robot:foot`` or a synthetic leg's name)."""
    def get(leg_id: str) -> Chain:
        if leg_id in SYNTHETIC:
            return Chain.from_urdf_string(abduction_leg_urdf(**SYNTHETIC[leg_id][0]), 'trunk',
                                          'foot')
        robot, foot = leg_id.split(':')
        if robot == 'quad12':
            return Chain.from_urdf_file(REPO / 'urdf' / 'quad12.urdf', 'base_link', foot)
        name, base, _ = SHARED_LEGS[robot]
        return Chain.from_urdf_file(shared_robot(name), base, foot)
    return get


def solver(chain, **params):
    return make_solver('analytic_hip_knee', chain, params)


def random_q(chain, rng):
    """Random joints within the limits (spans over a full turn sampled in +-pi)."""
    lower = np.maximum(chain.lower, -math.pi)
    upper = np.minimum(chain.upper, math.pi)
    return rng.uniform(lower, upper)


def tip(chain, q):
    return chain.fk(q)[:3, 3]


# ------------------------------------------------------------------------------ structure
@pytest.mark.parametrize('leg_id', list(SYNTHETIC))
def test_synthetic_legs_have_the_offsets_they_are_written_with(leg_id):
    # Guards the fixtures: the offsets are there, measured independently of the solver.
    chain = Chain.from_urdf_string(abduction_leg_urdf(**SYNTHETIC[leg_id][0]), 'trunk', 'foot')
    _, h, d = SYNTHETIC[leg_id]
    frames = chain.joint_frames(np.zeros(3))
    a, o = frames[0, :3, :3] @ chain.joints[0].axis, frames[0, :3, 3]
    u = frames[1, :3, :3] @ chain.joints[1].axis
    assert abs(np.dot(frames[1, :3, 3] - o, np.cross(u, a))) == pytest.approx(d, abs=1e-12)
    assert abs(np.dot(tip(chain, np.zeros(3)) - o, u)) == pytest.approx(h, abs=1e-12)


def test_a_first_axis_not_perpendicular_to_the_pitch_axis_is_refused_naming_the_roles():
    chain = Chain.from_urdf_string(abduction_leg_urdf(first_axis='1 0.2 0'), 'trunk', 'foot')
    with pytest.raises(ChainError, match=r"first axis \(hip yaw or abduction\) of 'haa' must be "
                                         r"perpendicular to the hip pitch axis of 'hfe'"):
        solver(chain)


# ------------------------------------------------------------------------ reachable targets
@pytest.mark.parametrize('leg_id', LEG_IDS)
def test_random_reachable_targets_are_reached_within_1e_9_m_and_the_limits(leg_chain, leg_id):
    chain = leg_chain(leg_id)
    s = solver(chain)
    rng = np.random.default_rng(23)
    for _ in range(150):
        target = tip(chain, random_q(chain, rng))
        result = s.solve(target, seed=random_q(chain, rng))
        assert result.status is IkStatus.CONVERGED, result.message
        assert np.linalg.norm(tip(chain, result.joint_positions) - target) <= REACHED_M
        assert chain.within_limits(result.joint_positions)


@pytest.mark.parametrize('leg_id', LEG_IDS)
def test_seeded_at_a_solution_the_default_branch_returns_that_solution(leg_chain, leg_id):
    # Every abduction and knee branch is found: the one nearest the seed is the seed itself.
    chain = leg_chain(leg_id)
    s = solver(chain)
    rng = np.random.default_rng(7)
    for _ in range(100):
        q = random_q(chain, rng)
        result = s.solve(tip(chain, q), seed=q)
        np.testing.assert_allclose(result.joint_positions, q, atol=1e-6)


@pytest.mark.parametrize('leg_id', ['solo12:FL_FOOT', 'anymal_c:RH_FOOT', 'bolt_type'])
def test_forward_and_backward_bend_the_knee_opposite_ways_to_the_same_target(leg_chain, leg_id):
    if leg_id == 'bolt_type':  # with limits wide enough for both branches everywhere
        wide = ((-3.1, 3.1),) * 3
        chain = Chain.from_urdf_string(abduction_leg_urdf(**SYNTHETIC[leg_id][0], limits=wide),
                                       'trunk', 'foot')
    else:
        chain = leg_chain(leg_id)
    rng = np.random.default_rng(3)
    forward, backward = solver(chain, branch='forward'), solver(chain, branch='backward')
    for _ in range(40):
        q = random_q(chain, rng)
        if abs(math.sin(q[2])) < 0.1:
            continue  # nearly straight: the two branches nearly coincide
        target = tip(chain, q)
        bends = []
        for s in (forward, backward):
            result = s.solve(target, seed=random_q(chain, rng))
            assert np.linalg.norm(tip(chain, result.joint_positions) - target) <= REACHED_M
            frames = chain.joint_frames(result.joint_positions)
            knee, foot = frames[2, :3, 3], tip(chain, result.joint_positions)
            hip_axis = frames[1, :3, :3] @ chain.joints[1].axis
            # The knee bend's sign: the shank turned from the thigh about the pitch axis.
            thigh, shank = knee - frames[1, :3, 3], foot - knee
            bends.append(float(np.dot(np.cross(thigh, shank), hip_axis)))
        assert bends[0] * bends[1] < 0.0, bends


def test_a_knee_that_bends_one_way_only_takes_the_other_branch_when_asked_for_forward(leg_chain):
    chain = leg_chain('go1:FL_foot')  # knee limits [-2.82, -0.89] rad: backward only
    s = solver(chain, branch='forward')
    rng = np.random.default_rng(5)
    for _ in range(50):
        target = tip(chain, random_q(chain, rng))
        result = s.solve(target, seed=random_q(chain, rng))
        assert result.status is IkStatus.CONVERGED
        assert np.linalg.norm(tip(chain, result.joint_positions) - target) <= REACHED_M
        assert chain.within_limits(result.joint_positions)


def test_target_on_the_abduction_axis_of_a_hyq_type_leg_is_degenerate_and_keeps_the_seed(
        leg_chain):
    chain = leg_chain('hyq_type')
    frames = chain.joint_frames(np.zeros(3))
    a, o = frames[0, :3, :3] @ chain.joints[0].axis, frames[0, :3, 3]
    target = o - 0.3 * a  # the foot 0.3 m behind the hip, on the abduction axis
    for seed in ([0.4, 0.0, 0.5], [-0.7, 0.2, -0.5]):
        result = solver(chain).solve(target, seed=seed)
        assert result.status is IkStatus.DEGENERATE
        assert 'hip abduction axis' in result.message
        assert result.joint_positions[0] == pytest.approx(seed[0], abs=1e-12)
        assert np.linalg.norm(tip(chain, result.joint_positions) - target) <= REACHED_M


# ---------------------------------------------------------------------------- out of reach
def targets_out_of_reach(chain, rng, count):
    """Targets beyond the leg's reach, inside its inner hole and near the first axis."""
    frames = chain.joint_frames(np.zeros(3))
    a, o = frames[0, :3, :3] @ chain.joints[0].axis, frames[0, :3, 3]
    reach = max(np.linalg.norm(tip(chain, random_q(chain, rng)) - o) for _ in range(200))
    out = []
    for k in range(count):
        direction = rng.normal(size=3)
        direction /= np.linalg.norm(direction)
        distance = reach * (1.05 + 0.6 * rng.random()) if k % 3 else 0.02 * rng.random()
        out.append(o + distance * direction + (0.1 * a * rng.normal() if k % 3 == 0 else 0.0))
    return out


@pytest.mark.slow
@pytest.mark.parametrize('leg_id', ['go1:RL_foot', 'solo12:FR_FOOT', 'anymal_c:LF_FOOT',
                                    'quad12:RR_foot', 'hyq_type', 'bolt_type'])
def test_out_of_reach_the_pose_is_the_long_searchs_best_and_min_residual_bounds_it(leg_chain,
                                                                                   leg_id):
    chain = leg_chain(leg_id)
    s = solver(chain)
    rng = np.random.default_rng(29)
    for target in targets_out_of_reach(chain, rng, 6):
        result = s.solve(target, seed=random_q(chain, rng))
        assert chain.within_limits(result.joint_positions)
        best, _ = long_search(chain, target, 10, rng, extra=[result.joint_positions])
        assert result.position_error <= best + 1e-6, (target, result.message)
        if result.min_residual is not None:
            assert result.min_residual <= best + 1e-9
        if result.status is IkStatus.UNREACHABLE and 'limits bind' not in result.message \
                and leg_id != 'bolt_type':
            # The geometry gives the exact distance: the bound is the error.
            assert result.min_residual == pytest.approx(result.position_error, abs=1e-9)


@pytest.mark.parametrize('leg_id', ['go1:FR_foot', 'solo12:HL_FOOT', 'quad12:FL_foot'])
def test_targets_beyond_reach_stop_at_the_exact_distance_from_the_reach(leg_chain, leg_id):
    # The foot stays |h| from the abduction axis and hypot(l1 + l2, h) from the hip centre at
    # most: beyond that sphere, away from the axis, the nearest pose misses by the excess.
    chain = leg_chain(leg_id)
    s = solver(chain)
    centre, _, r_max = s.reach_envelope()
    rng = np.random.default_rng(13)
    frames = chain.joint_frames(np.zeros(3))
    a = frames[0, :3, :3] @ chain.joints[0].axis
    for _ in range(20):
        direction = np.cross(a, rng.normal(size=3)) + 0.3 * rng.normal() * a
        direction /= np.linalg.norm(direction)
        target = centre + (r_max + 0.05) * direction
        result = s.solve(target, seed=random_q(chain, rng))
        if 'limits bind' in result.message:
            continue
        assert result.status is IkStatus.UNREACHABLE
        assert result.position_error == pytest.approx(0.05, abs=1e-9)
        assert result.min_residual == pytest.approx(0.05, abs=1e-9)


def test_target_on_the_abduction_axis_of_an_offset_leg_is_unreachable_by_the_offset(leg_chain):
    chain = leg_chain('solo12:FL_FOOT')  # h = 5.945 cm; no effective limits
    s = solver(chain)
    frames = chain.joint_frames(np.zeros(3))
    a, o = frames[0, :3, :3] @ chain.joints[0].axis, frames[0, :3, 3]
    for along in (-0.1, 0.0, 0.1):
        result = s.solve(o + along * a, seed=[0.3, 0.5, -1.0])
        assert result.status is IkStatus.UNREACHABLE
        assert np.all(np.isfinite(result.joint_positions))
        assert result.position_error == pytest.approx(0.05945, abs=1e-6)
        assert result.min_residual == pytest.approx(result.position_error, abs=1e-9)


def test_joint_limited_targets_get_the_nearest_pose_within_limits(leg_chain):
    chain = leg_chain('anymal_c:RF_FOOT')  # abduction limits [-0.49, 0.72] rad
    s = solver(chain)
    rng = np.random.default_rng(17)
    limited = 0
    for _ in range(40):
        q = rng.uniform(-math.pi, math.pi, size=3)  # mostly beyond the abduction limits
        target = tip(chain, q)
        result = s.solve(target, seed=random_q(chain, rng))
        if result.status is IkStatus.CONVERGED:
            continue
        limited += 1
        assert result.status is IkStatus.JOINT_LIMITED
        assert result.min_residual is None and 'joint limit' in result.message
        assert chain.within_limits(result.joint_positions)
        if limited <= 4:
            best, _ = long_search(chain, target, 6, rng, extra=[result.joint_positions])
            assert result.position_error <= best + 1e-6
    assert limited >= 10


@pytest.mark.parametrize('leg_id', LEG_IDS)
def test_reach_envelope_holds_every_foot_position(leg_chain, leg_id):
    chain = leg_chain(leg_id)
    centre, r_min, r_max = solver(chain).reach_envelope()
    rng = np.random.default_rng(2)
    q = np.array([random_q(chain, rng) for _ in range(400)])
    r = np.linalg.norm(chain.fk(q)[:, :3, 3] - centre, axis=1)
    assert np.all(r >= r_min - 1e-12) and np.all(r <= r_max + 1e-12)


@pytest.mark.parametrize('leg_id, target, held', [
    ('quad12:FL_foot', [0.25, 0.14, -0.03], "knee 'FL_knee' -2.7 rad"),  # needs a tighter fold
    ('quad12:FL_foot', [0.25, 0.9, -0.3], "hip abduction 'FL_hip_abduction' 0.8 rad"),
])
def test_messages_name_the_joints_held_at_a_limit_by_role(leg_chain, leg_id, target, held):
    chain = leg_chain(leg_id)
    result = solver(chain).solve(target)
    assert result.status in (IkStatus.JOINT_LIMITED, IkStatus.UNREACHABLE)
    assert 'at a limit: ' in result.message and held in result.message
    index = [name in held for name in chain.joint_names].index(True)
    value = result.joint_positions[index]
    assert min(abs(value - chain.lower[index]), abs(value - chain.upper[index])) <= 1e-9


def test_a_yaw_legs_limited_message_names_the_hip_yaw():
    chain = Chain.from_urdf_file(REPO / 'urdf' / 'leg3.urdf', 'base_link', 'foot')
    result = solver(chain).solve([0.0, 0.3, -0.2])  # azimuth beyond the yaw limits
    assert result.status is IkStatus.JOINT_LIMITED
    assert "hip yaw 'hip_yaw' 1.2 rad" in result.message


def test_a_target_on_the_hip_pitch_axis_folds_the_leg_and_keeps_the_seeds_thigh(leg_chain):
    # Solo 12's thigh and shank are equally long: folded, the foot sits on the pitch axis, h
    # from the hip centre; every thigh direction reaches that point.
    chain = leg_chain('solo12:FL_FOOT')
    s = solver(chain)
    frames = chain.joint_frames(np.zeros(3))
    pitch_axis = frames[1, :3, :3] @ chain.joints[1].axis
    centre, _, _ = s.reach_envelope()
    lateral = np.dot(tip(chain, np.zeros(3)) - centre, pitch_axis)
    target = centre + lateral * pitch_axis
    for seed in ([0.1, 0.4, 1.0], [-0.2, -1.0, 2.0]):
        result = s.solve(target, seed=seed)
        assert result.status is IkStatus.DEGENERATE and 'hip pitch axis' in result.message
        assert result.joint_positions[1] == pytest.approx(seed[1], abs=1e-12)
        assert np.linalg.norm(tip(chain, result.joint_positions) - target) <= REACHED_M
