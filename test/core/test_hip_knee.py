"""The analytic_hip_knee solver: exact on reachable targets, honest on the rest.

Expected values come from the URDF numbers written down here (hip centre, thigh and shin lengths)
and from an independent law-of-cosines computation, never from the solver's own output.
"""

import math
from pathlib import Path

import numpy as np
import pytest

from ik_node import Chain, ChainError, ConfigError, IkStatus, make_solver

REPO = Path(__file__).resolve().parents[2]
from reference_robots import SHARED_ROBOTS, skip_reason  # noqa: E402
TOL = 1e-5  # the default position_tolerance [m]

# The leg geometry as written in the URDF files: hip pitch centre in the base frame, lengths [m].
LEGS = {
    'ours': dict(path=REPO / 'urdf' / 'leg3.urdf', hip=np.array([0.0, 0.0, -0.05]),
                 l1=0.30, l2=0.28),
    'shared': dict(path=SHARED_ROBOTS / 'leg3.urdf', hip=np.zeros(3), l1=0.4, l2=0.4),
}


def leg(name):
    spec = LEGS[name]
    if not spec['path'].is_file():
        pytest.skip(skip_reason(spec["path"]))
    return Chain.from_urdf_file(spec['path'], 'base_link', 'foot'), spec


def leg_urdf(yaw_xyz='0 0 0', yaw_rpy='0 0 0', yaw_axis='0 0 1', pitch_xyz='0 0 -0.05',
             pitch_axis='0 1 0', knee_xyz='0 0 -0.30', knee_axis='0 1 0', foot_xyz='0 0 -0.28',
             knee_type='revolute', knee_limits=(-2.6, 2.6), yaw_limits=(-1.2, 1.2),
             pitch_limits=(-1.6, 1.6)):
    """A 3-joint leg as URDF text, with every origin and axis a parameter."""
    def limit(lo_hi):
        return f'<limit lower="{lo_hi[0]}" upper="{lo_hi[1]}" effort="1" velocity="1"/>'
    knee_limit = '' if knee_type == 'continuous' else limit(knee_limits)
    return f"""<robot name="leg">
  <link name="base_link"/><link name="hip"/><link name="thigh"/><link name="shin"/>
  <link name="foot"/>
  <joint name="hip_yaw" type="revolute"><parent link="base_link"/><child link="hip"/>
    <origin xyz="{yaw_xyz}" rpy="{yaw_rpy}"/><axis xyz="{yaw_axis}"/>{limit(yaw_limits)}</joint>
  <joint name="hip_pitch" type="revolute"><parent link="hip"/><child link="thigh"/>
    <origin xyz="{pitch_xyz}"/><axis xyz="{pitch_axis}"/>{limit(pitch_limits)}</joint>
  <joint name="knee" type="{knee_type}"><parent link="thigh"/><child link="shin"/>
    <origin xyz="{knee_xyz}"/><axis xyz="{knee_axis}"/>{knee_limit}</joint>
  <joint name="foot_joint" type="fixed"><parent link="shin"/><child link="foot"/>
    <origin xyz="{foot_xyz}"/></joint>
</robot>"""


# A planar 2-link arm about z: links 0.5 and 0.3 m along x, its base turned and moved.
PLANAR2_L1, PLANAR2_L2 = 0.5, 0.3
PLANAR2_URDF = """<robot name="planar2">
  <link name="base_link"/><link name="link1"/><link name="link2"/><link name="tip"/>
  <joint name="j1" type="revolute"><parent link="base_link"/><child link="link1"/>
    <origin xyz="0.1 -0.2 0.3" rpy="0.3 -0.4 1.0"/><axis xyz="0 0 1"/>
    <limit lower="-3.1416" upper="3.1416" effort="1" velocity="1"/></joint>
  <joint name="j2" type="continuous"><parent link="link1"/><child link="link2"/>
    <origin xyz="0.5 0 0"/><axis xyz="0 0 1"/></joint>
  <joint name="tip_joint" type="fixed"><parent link="link2"/><child link="tip"/>
    <origin xyz="0.3 0 0"/></joint>
</robot>"""


def solver(chain, **params):
    return make_solver('analytic_hip_knee', chain, params)


def knee_bend(r, l1, l2):
    """|knee angle| [rad] putting the tip at distance r from the hip (law of cosines)."""
    return math.acos((r * r - l1 * l1 - l2 * l2) / (2 * l1 * l2))


def assert_solution(chain, result, target):
    q = result.joint_positions
    assert np.all(np.isfinite(q))
    assert chain.within_limits(q)
    assert np.linalg.norm(chain.fk(q)[:3, 3] - target) <= TOL


# ------------------------------------------------------------------------ reachable targets
@pytest.mark.parametrize('name', ['ours', 'shared'])
def test_random_reachable_targets_are_solved_within_limits(name):
    chain, _ = leg(name)
    s = solver(chain)
    rng = np.random.default_rng(1)
    for _ in range(300):
        target = chain.fk(rng.uniform(chain.lower, chain.upper))[:3, 3]
        result = s.solve(target, seed=rng.uniform(chain.lower, chain.upper))
        assert result.reachable, (target, result)
        assert result.status is IkStatus.CONVERGED
        assert result.iterations == 1
        assert result.min_residual == 0.0
        assert_solution(chain, result, target)


@pytest.mark.parametrize('branch', ['forward', 'backward', 'closest'])
def test_every_branch_setting_solves_targets_reachable_with_both_knee_signs(branch):
    chain, _ = leg('ours')
    s = solver(chain, branch=branch)
    rng = np.random.default_rng(2)
    for _ in range(100):
        q = np.array([rng.uniform(-1.2, 1.2), rng.uniform(-0.3, 0.3), rng.uniform(0.3, 1.0)])
        target = chain.fk(q * rng.choice([1, -1], size=3))[:3, 3]
        assert_solution(chain, s.solve(target), target)


def test_a_turned_and_moved_base_is_handled():
    chain = Chain.from_urdf_string(leg_urdf(yaw_xyz='0.3 -0.1 0.7', yaw_rpy='0.4 -0.3 2.0'),
                                   'base_link', 'foot')
    s = solver(chain)
    rng = np.random.default_rng(3)
    for _ in range(200):
        target = chain.fk(rng.uniform(chain.lower, chain.upper))[:3, 3]
        result = s.solve(target, seed=rng.uniform(chain.lower, chain.upper))
        assert result.reachable
        assert_solution(chain, result, target)


def test_knee_axis_opposite_to_pitch_axis_is_handled():
    chain = Chain.from_urdf_string(leg_urdf(knee_axis='0 -1 0'), 'base_link', 'foot')
    s = solver(chain)
    rng = np.random.default_rng(4)
    for _ in range(200):
        target = chain.fk(rng.uniform(chain.lower, chain.upper))[:3, 3]
        assert_solution(chain, s.solve(target), target)


def test_orientation_is_ignored_and_said_so():
    chain, _ = leg('ours')
    target = chain.fk(np.array([0.3, 0.2, 0.5]))[:3, 3]
    result = solver(chain).solve(target, target_orientation=[0, 0, 0, 1])
    assert result.orientation_ignored
    assert result.orientation_error is None
    assert result.reachable


def test_record_history_keeps_one_error():
    chain, _ = leg('ours')
    target = chain.fk(np.array([0.3, 0.2, 0.5]))[:3, 3]
    assert solver(chain).solve(target).history is None
    history = solver(chain, record_history=True).solve(target).history
    assert len(history) == 1 and history[0] <= TOL


# ---------------------------------------------------------------------- unreachable targets
def random_directions(rng, n):
    v = rng.normal(size=(n, 3))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.mark.parametrize('name', ['ours', 'shared'])
def test_targets_beyond_full_reach_report_the_annulus_distance(name):
    chain, spec = leg(name)
    s = solver(chain)
    rng = np.random.default_rng(5)
    reach = spec['l1'] + spec['l2']
    for direction in random_directions(rng, 200):
        extra = rng.uniform(1e-3, 1.0)
        result = s.solve(spec['hip'] + (reach + extra) * direction)
        assert not result.reachable
        assert result.status is IkStatus.UNREACHABLE
        assert result.min_residual == pytest.approx(extra, abs=1e-9)
        assert result.position_error >= extra - 1e-9
        assert chain.within_limits(result.joint_positions)


def test_stretched_leg_toward_a_far_target_misses_by_exactly_the_excess():
    chain, spec = leg('ours')
    s = solver(chain)
    rng = np.random.default_rng(6)
    for _ in range(100):
        q = np.array([rng.uniform(-1.2, 1.2), rng.uniform(-1.6, 1.6), 0.0])
        direction = chain.fk(q)[:3, 3] - spec['hip']
        direction /= np.linalg.norm(direction)
        extra = rng.uniform(1e-3, 0.5)
        result = s.solve(spec['hip'] + (spec['l1'] + spec['l2'] + extra) * direction)
        assert result.status is IkStatus.UNREACHABLE
        assert result.position_error == pytest.approx(extra, abs=1e-9)


def test_targets_inside_the_inner_radius_report_the_annulus_distance():
    chain, spec = leg('ours')
    s = solver(chain)
    inner = spec['l1'] - spec['l2']
    rng = np.random.default_rng(7)
    for direction in random_directions(rng, 100):
        r = rng.uniform(1e-4, inner - 1e-4)
        result = s.solve(spec['hip'] + r * direction)
        assert not result.reachable
        assert result.status is IkStatus.UNREACHABLE
        assert result.min_residual == pytest.approx(inner - r, abs=1e-9)
        assert chain.within_limits(result.joint_positions)


@pytest.mark.parametrize('name', ['ours', 'shared'])
def test_min_residual_is_a_true_lower_bound_for_any_target(name):
    chain, _ = leg(name)
    s = solver(chain)
    rng = np.random.default_rng(8)
    for target in rng.uniform(-1.0, 1.0, size=(300, 3)):
        result = s.solve(target, seed=rng.uniform(chain.lower, chain.upper))
        assert np.all(np.isfinite(result.joint_positions))
        assert chain.within_limits(result.joint_positions)
        if result.min_residual is not None:
            assert result.position_error >= result.min_residual - 1e-9
        if result.min_residual == 0.0:
            assert result.reachable


# --------------------------------------------------------------------------------- branches
def test_forward_and_backward_reach_the_same_target_with_opposite_knee_signs():
    chain, spec = leg('ours')
    forward, backward = solver(chain, branch='forward'), solver(chain, branch='backward')
    rng = np.random.default_rng(9)
    for _ in range(100):
        q = np.array([rng.uniform(-1.0, 1.0), rng.uniform(-0.4, 0.4), rng.uniform(0.3, 1.0)])
        target = chain.fk(q)[:3, 3]
        bend = knee_bend(np.linalg.norm(target - spec['hip']), spec['l1'], spec['l2'])
        fwd, bwd = forward.solve(target), backward.solve(target)
        assert fwd.reachable and bwd.reachable
        assert fwd.joint_positions[2] == pytest.approx(bend, abs=1e-9)
        assert bwd.joint_positions[2] == pytest.approx(-bend, abs=1e-9)
        assert_solution(chain, fwd, target)
        assert_solution(chain, bwd, target)


def test_forward_branch_puts_the_knee_ahead_of_the_hip_foot_line():
    chain, spec = leg('ours')
    target = np.array([0.05, 0.0, -0.45])  # in front of and below the hip, yaw 0
    q = solver(chain, branch='forward').solve(target).joint_positions
    knee = chain.joint_frames(q)[2, :3, 3]
    t = (knee[2] - spec['hip'][2]) / (target[2] - spec['hip'][2])
    line_x = spec['hip'][0] + t * (target[0] - spec['hip'][0])
    assert knee[0] > line_x + 0.05


def test_closest_picks_the_branch_nearest_the_seed():
    chain, spec = leg('ours')
    s = solver(chain)
    yaw, pitch, knee = 0.2, 0.1, 0.8
    target = chain.fk(np.array([yaw, pitch, knee]))[:3, 3]
    # The backward branch mirrors the thigh about the hip-foot line (pitch 0 = thigh down).
    d = target - spec['hip']
    line = math.atan2(-(d[0] * math.cos(yaw) + d[1] * math.sin(yaw)), -d[2])
    forward, backward = [yaw, pitch, knee], [yaw, 2 * line - pitch, -knee]
    for expected in (forward, backward):
        seed = [expected[0] - 0.05, expected[1] + 0.05, math.copysign(0.05, expected[2])]
        result = s.solve(target, seed=seed)
        np.testing.assert_allclose(result.joint_positions, expected, atol=1e-9)


@pytest.mark.parametrize('knee_sign', [1.0, -1.0])
def test_closest_follows_a_path_without_jumps(knee_sign):
    chain, _ = leg('ours')
    s = solver(chain)
    t = np.linspace(0.0, 1.0, 200)[:, None]
    path = np.hstack([-1.0 + 2.0 * t, 0.6 * np.sin(6.0 * t), knee_sign * (0.2 + 1.5 * t)])
    q = path[0]
    for q_true in path:
        target = chain.fk(q_true)[:3, 3]
        result = s.solve(target, seed=q)
        assert result.reachable
        assert np.max(np.abs(result.joint_positions - q)) < 0.1  # no branch jump
        np.testing.assert_allclose(result.joint_positions, q_true, atol=1e-8)
        q = result.joint_positions


# ------------------------------------------------------------------------------- degenerate
@pytest.mark.parametrize('name', ['ours', 'shared'])
def test_target_on_the_yaw_axis_keeps_the_seed_yaw(name):
    chain, spec = leg(name)
    s = solver(chain)
    for fraction in (0.5, 0.8, 0.95):  # of the full reach; the knee bends less than 2.6 rad
        target = spec['hip'] - np.array([0.0, 0.0, fraction * (spec['l1'] + spec['l2'])])
        seed = [0.7, 0.2, 1.0]
        result = s.solve(target, seed=seed)
        assert result.status is IkStatus.DEGENERATE
        assert result.reachable
        assert 'yaw axis' in result.message
        assert result.joint_positions[0] == seed[0]
        assert_solution(chain, result, target)


def test_target_at_the_hip_centre_is_degenerate_and_reached_by_a_foldable_leg():
    # Equal thighs and shins and a continuous knee: folding the knee reaches the hip centre.
    chain = Chain.from_urdf_string(leg_urdf(foot_xyz='0 0 -0.30', knee_type='continuous'),
                                   'base_link', 'foot')
    seed = [0.4, -0.7, 1.0]
    result = solver(chain).solve([0.0, 0.0, -0.05], seed=seed)
    assert result.status is IkStatus.DEGENERATE
    assert result.reachable
    assert 'hip pitch origin' in result.message
    assert result.joint_positions[:2].tolist() == seed[:2]
    assert_solution(chain, result, np.array([0.0, 0.0, -0.05]))


def test_target_at_the_hip_centre_of_our_leg_is_unreachable_without_nan():
    chain, spec = leg('ours')
    result = solver(chain).solve(spec['hip'], seed=[0.4, -0.7, 1.0])
    assert np.all(np.isfinite(result.joint_positions))
    assert chain.within_limits(result.joint_positions)
    assert not result.reachable
    assert result.status is IkStatus.UNREACHABLE
    assert result.min_residual == pytest.approx(spec['l1'] - spec['l2'], abs=1e-12)
    assert 'hip pitch origin' in result.message


def test_target_at_the_hip_centre_of_the_shared_leg_folds_the_knee_to_its_limit():
    chain, spec = leg('shared')
    result = solver(chain).solve(spec['hip'])
    assert np.all(np.isfinite(result.joint_positions))
    assert not result.reachable
    assert result.status is IkStatus.JOINT_LIMITED
    assert result.joint_positions[2] == pytest.approx(2.6)  # the most folded knee allowed
    folded = math.sqrt(spec['l1'] ** 2 + spec['l2'] ** 2 +
                       2 * spec['l1'] * spec['l2'] * math.cos(2.6))
    assert result.position_error == pytest.approx(folded, abs=1e-9)


# ----------------------------------------------------------------------------------- limits
def test_the_other_branch_is_used_when_the_requested_one_breaks_the_knee_limit():
    chain, _ = leg('shared')  # knee limits [0, 2.6]: only the forward branch exists
    s = solver(chain, branch='backward')
    rng = np.random.default_rng(10)
    for _ in range(100):
        target = chain.fk(rng.uniform(chain.lower, chain.upper))[:3, 3]
        result = s.solve(target)
        assert result.reachable
        assert result.joint_positions[2] >= 0.0
        assert_solution(chain, result, target)


def test_the_other_branch_is_used_when_the_requested_one_breaks_the_pitch_limit():
    chain, spec = leg('ours')
    target = chain.fk(np.array([0.0, -0.6, -1.2]))[:3, 3]  # backward knee
    # Independently: the forward branch mirrors the thigh about the hip-foot line, and the yaw
    # flip needs a yaw of pi, both beyond the limits.
    d = target - spec['hip']
    line = math.atan2(-d[0], -d[2])  # pitch angle of the hip-foot line (thigh down = 0)
    r = np.linalg.norm(d)
    offset = math.atan2(spec['l2'] * math.sin(1.2), spec['l1'] + spec['l2'] * math.cos(1.2))
    assert -0.6 == pytest.approx(line + offset)
    assert line - offset < -1.6 and knee_bend(r, spec['l1'], spec['l2']) < 2.6
    result = solver(chain, branch='forward').solve(target)
    assert result.reachable
    assert result.joint_positions[2] == pytest.approx(-1.2, abs=1e-9)
    assert_solution(chain, result, target)


def grid_min_error(chain, target, steps=41):
    axes = [np.linspace(lo, hi, steps) for lo, hi in zip(chain.lower, chain.upper)]
    q = np.stack(np.meshgrid(*axes, indexing='ij'), axis=-1).reshape(-1, 3)
    return float(np.min(np.linalg.norm(chain.fk(q)[:, :3, 3] - target, axis=1)))


KNEE_MAX = 2.6  # our leg's knee limit [rad]
YAW_MAX = 1.2  # our leg's yaw limit [rad]


@pytest.mark.slow
@pytest.mark.parametrize('target', [
    [0.0, 0.3, -0.2], [0.05, -0.25, -0.3], [-0.02, 0.2, 0.1],  # azimuth beyond the yaw limits
    [0.05, 0.0, -0.15], [0.0, 0.08, -0.12],  # closer to the hip than the folded knee allows
])
def test_when_limits_forbid_every_solution_the_pose_is_the_nearest_within_limits(target):
    chain, spec = leg('ours')
    target = np.array(target)
    l1, l2 = spec['l1'], spec['l2']
    d = target - spec['hip']
    r = np.linalg.norm(d)
    assert l1 - l2 < r < l1 + l2  # inside the annulus: geometrically reachable
    # ... but not within limits: the leg's plane only turns to azimuths within YAW_MAX of the
    # x axis (either side of the yaw axis), or the hip-tip distance needs a bend past KNEE_MAX.
    azimuth = math.atan2(d[1], d[0])
    plane_out_of_reach = YAW_MAX < abs(azimuth) < math.pi - YAW_MAX
    r_min = math.sqrt(l1 * l1 + l2 * l2 + 2 * l1 * l2 * math.cos(KNEE_MAX))
    assert plane_out_of_reach or r < r_min
    result = solver(chain).solve(target)
    assert not result.reachable
    assert result.status is IkStatus.JOINT_LIMITED
    assert result.min_residual is None
    assert chain.within_limits(result.joint_positions)
    assert result.position_error <= grid_min_error(chain, target) + 1e-9
    assert 'joint limit' in result.message


@pytest.mark.slow
def test_nearest_pose_within_limits_beats_a_grid_for_random_targets():
    chain, _ = leg('shared')
    s = solver(chain)
    rng = np.random.default_rng(11)
    for target in rng.uniform(-0.9, 0.9, size=(12, 3)):
        result = s.solve(target)
        assert result.position_error <= grid_min_error(chain, target, steps=31) + 1e-9


# --------------------------------------------------------------------------- planar 2-link
def planar2():
    return Chain.from_urdf_string(PLANAR2_URDF, 'base_link', 'tip')


def planar2_frame(chain):
    """Origin and in-plane unit vectors of the planar arm's first joint, from its URDF origin."""
    T = chain.joints[0].T_parent_joint
    return T[:3, 3], T[:3, 0], T[:3, 1], T[:3, 2]


def test_planar_2_link_reaches_exactly_the_annulus():
    chain = planar2()
    s = solver(chain)
    origin, ex, ey, ez = planar2_frame(chain)
    inner, outer = PLANAR2_L1 - PLANAR2_L2, PLANAR2_L1 + PLANAR2_L2
    rng = np.random.default_rng(12)
    for _ in range(300):
        r = rng.uniform(0.0, 1.2)
        if min(abs(r - inner), abs(r - outer)) < 1e-6:
            continue
        angle = rng.uniform(-math.pi, math.pi)
        target = origin + r * (math.cos(angle) * ex + math.sin(angle) * ey)
        result = s.solve(target, seed=rng.uniform(-3, 3, size=2))
        inside = inner <= r <= outer
        assert result.reachable == inside, r
        assert np.all(np.isfinite(result.joint_positions))
        if inside:
            assert_solution(chain, result, target)
        else:
            assert result.status is IkStatus.UNREACHABLE
            assert result.min_residual == pytest.approx(max(inner - r, r - outer), abs=1e-9)


def test_planar_2_link_counts_the_distance_off_its_plane():
    chain = planar2()
    origin, ex, _, ez = planar2_frame(chain)
    target = origin + 0.6 * ex + 0.03 * ez
    result = solver(chain).solve(target)
    assert not result.reachable
    assert result.status is IkStatus.UNREACHABLE
    assert result.min_residual == pytest.approx(0.03, abs=1e-9)
    assert result.position_error == pytest.approx(0.03, abs=1e-9)


def test_planar_2_link_target_on_its_first_axis_keeps_the_seed_thigh_without_nan():
    chain = planar2()
    origin, _, _, ez = planar2_frame(chain)
    result = solver(chain).solve(origin + 0.1 * ez, seed=[0.7, 0.0])
    assert np.all(np.isfinite(result.joint_positions))
    assert result.joint_positions[0] == 0.7
    assert result.status is IkStatus.UNREACHABLE
    inner = PLANAR2_L1 - PLANAR2_L2
    assert result.min_residual == pytest.approx(math.hypot(inner, 0.1), abs=1e-9)
    assert 'first joint' in result.message


def test_planar_2_link_branches_have_opposite_elbow_signs():
    chain = planar2()
    origin, ex, ey, _ = planar2_frame(chain)
    target = origin + 0.4 * ex + 0.3 * ey
    bend = knee_bend(0.5, PLANAR2_L1, PLANAR2_L2)
    fwd = solver(chain, branch='forward').solve(target)
    bwd = solver(chain, branch='backward').solve(target)
    assert fwd.joint_positions[1] == pytest.approx(bend, abs=1e-9)
    assert bwd.joint_positions[1] == pytest.approx(-bend, abs=1e-9)
    assert_solution(chain, fwd, target)
    assert_solution(chain, bwd, target)


# --------------------------------------------------------------------------- chain refusals
def test_ur5_is_refused_for_its_joint_count():
    path = SHARED_ROBOTS / 'ur5.urdf'
    if not path.is_file():
        pytest.skip(skip_reason(path))
    with pytest.raises(ChainError, match=r'found 6 moving joints'):
        solver(Chain.from_urdf_file(path, 'base_link', 'tool0'))


def test_ur5_shoulder_and_elbow_are_refused_because_the_tip_lies_on_the_elbow_axis():
    path = SHARED_ROBOTS / 'ur5.urdf'
    if not path.is_file():
        pytest.skip(skip_reason(path))
    with pytest.raises(ChainError, match=r"tip 'forearm_link' lies on the knee axis of "
                                         r"'elbow_joint'"):
        solver(Chain.from_urdf_file(path, 'base_link', 'forearm_link'))


def test_planar4_is_refused_for_its_joint_count():
    chain = Chain.from_urdf_file(REPO / 'urdf' / 'planar4.urdf', 'base_link', 'tip')
    with pytest.raises(ChainError, match=r'found 4 moving joints.*joint1 \(revolute\)'):
        solver(chain)


def test_planar4_cut_at_link2_is_refused_because_its_tip_is_on_the_last_axis():
    chain = Chain.from_urdf_file(REPO / 'urdf' / 'planar4.urdf', 'base_link', 'link2')
    with pytest.raises(ChainError, match=r"tip 'link2' lies on the knee axis of 'joint2'"):
        solver(chain)


def test_planar4_cut_at_link3_is_refused_as_a_leg_without_a_yaw_axis():
    chain = Chain.from_urdf_file(REPO / 'urdf' / 'planar4.urdf', 'base_link', 'link3')
    with pytest.raises(ChainError, match=r"first axis \(hip yaw or abduction\) of 'joint1' "
                                         r"must be perpendicular"):
        solver(chain)


@pytest.mark.parametrize('urdf_args, message', [
    (dict(pitch_axis='0 0 1', knee_axis='0 0 1'), r'must be perpendicular'),
    (dict(pitch_axis='0 1 1', knee_axis='0 1 1'), r'must be perpendicular.* 45 deg'),
    (dict(knee_axis='1 0 0'), r"axes of the hip pitch 'hip_pitch' and the knee 'knee' must be "
                              r"parallel.* 90 deg"),
    (dict(knee_xyz='0 0 0'), r'thigh has no length'),
    (dict(foot_xyz='0 0 0'), r'shin has no length'),
])
def test_legs_of_the_wrong_structure_are_refused_with_the_reason(urdf_args, message):
    chain = Chain.from_urdf_string(leg_urdf(**urdf_args), 'base_link', 'foot')
    with pytest.raises(ChainError, match=message):
        solver(chain)


@pytest.mark.parametrize('urdf_args', [
    dict(knee_xyz='0 0.04 -0.30'),   # the shin 4 cm along the pitch axis (lateral offset)
    dict(foot_xyz='0 -0.02 -0.28'),  # the foot 2 cm back along it
    dict(pitch_xyz='0.03 0 -0.05'),  # the pitch axis 3 cm from the yaw axis
])
def test_legs_with_offsets_off_the_yaw_axis_are_accepted_and_solved(urdf_args):
    chain = Chain.from_urdf_string(leg_urdf(**urdf_args), 'base_link', 'foot')
    s = solver(chain)
    rng = np.random.default_rng(5)
    for _ in range(50):
        target = chain.fk(rng.uniform(chain.lower, chain.upper))[:3, 3]
        result = s.solve(target, seed=rng.uniform(chain.lower, chain.upper))
        assert_solution(chain, result, target)


def test_an_offset_along_the_pitch_axis_that_keeps_the_plane_is_accepted():
    # The pitch joint's origin sits 0.05 m along its own axis; knee and foot return to the plane.
    chain = Chain.from_urdf_string(leg_urdf(pitch_xyz='0 0.05 -0.05', knee_xyz='0 -0.05 -0.30'),
                                   'base_link', 'foot')
    target = chain.fk(np.array([0.3, 0.2, 0.9]))[:3, 3]
    assert_solution(chain, solver(chain).solve(target), target)


def test_a_prismatic_joint_is_refused():
    xml = leg_urdf().replace('name="knee" type="revolute"', 'name="knee" type="prismatic"')
    chain = Chain.from_urdf_string(xml, 'base_link', 'foot')
    with pytest.raises(ChainError, match=r'prismatic joint\(s\) knee'):
        solver(chain)


def test_a_single_joint_is_refused():
    chain = Chain.from_urdf_string(leg_urdf(), 'base_link', 'hip')
    with pytest.raises(ChainError, match=r'found 1 moving joints: hip_yaw'):
        solver(chain)


# --------------------------------------------------------------------------------- params
def test_unknown_parameter_is_a_config_error():
    chain, _ = leg('ours')
    with pytest.raises(ConfigError, match=r"unknown parameter 'knee_side'.*branch"):
        make_solver('analytic_hip_knee', chain, {'knee_side': 'forward'})


def test_bad_branch_value_is_a_config_error_listing_the_choices():
    chain, _ = leg('ours')
    with pytest.raises(ConfigError, match=r"'sideways' is not one of: forward, backward, closest"):
        make_solver('analytic_hip_knee', chain, {'branch': 'sideways'})


def test_solver_declares_position_only_and_its_branch_parameter():
    chain, _ = leg('ours')
    s = solver(chain)
    assert s.supports_orientation is False
    assert s.params['branch'] == 'closest'
    assert s.param_specs()['branch'].choices == ('forward', 'backward', 'closest')


def test_reach_envelope_bounds_every_tip_position_and_is_attained():
    chain, _ = leg('ours')
    centre, r_min, r_max = solver(chain).reach_envelope()
    # The hip centre is where the pitch joint sits (it lies on the yaw axis in this model).
    np.testing.assert_allclose(centre, chain.joint_frames(np.zeros(3))[1, :3, 3], atol=1e-12)
    rng = np.random.default_rng(11)
    q = rng.uniform(chain.lower, chain.upper, size=(500, 3))
    r = np.linalg.norm(chain.fk(q)[:, :3, 3] - centre, axis=1)
    assert np.all(r >= r_min - 1e-12) and np.all(r <= r_max + 1e-12)
    assert r_max == pytest.approx(np.linalg.norm(chain.fk([0.0, 0.0, 0.0])[:3, 3] - centre))
    assert r_min == pytest.approx(abs(0.30 - 0.28))  # thigh and shin of urdf/leg3.urdf
