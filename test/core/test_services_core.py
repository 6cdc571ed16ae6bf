"""What the MoveIt services' answers mean, without ROS (ik_node.services): groups of an SRDF,
checked requests, error codes, constraints, Cartesian paths and their timing.

Answers are checked by forward kinematics of the answer against the target, never against a
copied number."""

import math

import numpy as np
import pytest

from ik_node import Chain
from ik_node.config.node_config import load_config
from ik_node.services.cartesian import (PathSettings, compute_path, segment_poses, timed,
                                        velocities)
from ik_node.services.constraints import quat_xyzw_of
from ik_node.services.error_codes import MoveItCode, ServiceError
from ik_node.services.group_solvers import GroupSolvers
from ik_node.services.groups import (DEFAULT_GROUP, PlanningGroup, groups_from_srdf,
                                     with_configured_chain)
from ik_node.services.requests import (Constraints, IkRequest, JointBound, PoseGoal,
                                       PositionGoal, Region, checked_pose, checked_state,
                                       timeout_seconds)

ARM_SRDF = """<robot name="arm6">
  <group name="arm"><chain base_link="base_link" tip_link="tool0"/></group>
  <group name="to_wrist"><chain base_link="base_link" tip_link="wrist_2_link"/></group>
  <group name="joints"><joint name="shoulder_pan"/><joint name="shoulder_lift"/>
    <joint name="elbow"/></group>
  <group name="hand"><link name="tool0"/></group>
  <group name="both"><group name="arm"/><group name="to_wrist"/></group>
</robot>"""


@pytest.fixture(scope='module')
def arm():
    config = load_config('arm6.yaml')
    return config, Chain.from_urdf_string(config.urdf_xml(), 'base_link', 'tool0')


def pose_request(chain, q, group='', **kw):
    T = chain.fk(q)
    return IkRequest(group, kw.pop('state', {}),
                     (PoseGoal('', '', (0, 0), T[:3, 3], quat_xyzw_of(T[:3, :3])),), **kw), T


# ----------------------------------------------------------------------------------- groups
def test_srdf_groups_give_chains_joint_trees_and_groups_of_groups(arm):
    _, chain = arm
    srdf = groups_from_srdf(ARM_SRDF, chain.robot)
    assert srdf.groups['arm'].tip_links == ('tool0',)
    assert srdf.groups['to_wrist'].tip_links == ('wrist_2_link',)
    assert srdf.groups['joints'] == PlanningGroup('joints', 'base_link', ('forearm_link',))
    assert set(srdf.groups['both'].tip_links) == {'tool0', 'wrist_2_link'}
    assert 'hand' in srdf.refused and 'end effector' in srdf.refused['hand']


def test_the_configured_chain_takes_the_srdf_name_of_its_chain_else_manipulator(arm):
    _, chain = arm
    groups, name = with_configured_chain(groups_from_srdf(ARM_SRDF, chain.robot), 'base_link',
                                         ['tool0'])
    assert name == 'arm'
    groups, name = with_configured_chain(groups_from_srdf(None, chain.robot), 'base_link',
                                         ['tool0'])
    assert name == DEFAULT_GROUP and set(groups) == {DEFAULT_GROUP}
    _, name = with_configured_chain(groups_from_srdf(None, chain.robot), 'base_link',
                                    ['tool0'], 'my_arm')
    assert name == 'my_arm'


def test_a_malformed_srdf_is_refused(arm):
    with pytest.raises(Exception, match='malformed SRDF'):
        groups_from_srdf('<robot><group', arm[1].robot)


# --------------------------------------------------------------------------------- requests
@pytest.mark.parametrize('position, quat, words', [
    ((math.nan, 0, 0), (0, 0, 0, 1), 'not finite'),
    ((0, 0, 0), (0, 0, 0, 0), 'zero quaternion'),
    ((1e9, 0, 0), (0, 0, 0, 1), 'beyond'),
    ((0, 0, 0), (0, math.inf, 0, 1), 'not finite'),
])
def test_a_bad_pose_is_refused_naming_it(position, quat, words):
    with pytest.raises(ServiceError, match=words) as info:
        checked_pose(position, quat, 'pose_stamped')
    assert info.value.code == MoveItCode.INVALID_GOAL_CONSTRAINTS


def test_a_bad_robot_state_is_refused():
    with pytest.raises(ServiceError) as info:
        checked_state(['a', 'b'], [0.0])
    assert info.value.code == MoveItCode.INVALID_ROBOT_STATE
    with pytest.raises(ServiceError, match='a'):
        checked_state(['a'], [math.nan])


def test_timeouts_zero_or_negative_mean_the_configured_budget_and_long_ones_are_cut():
    assert timeout_seconds(0, 0) == 0.0
    assert timeout_seconds(-1, 0) == 0.0
    assert timeout_seconds(0, 20_000_000) == pytest.approx(0.02)
    assert timeout_seconds(1_000_000, 0) == 10.0


# ---------------------------------------------------------------------------------- answers
def test_reachable_targets_answer_success_and_reach_them(arm):
    config, chain = arm
    solvers = GroupSolvers(config, config.collision)
    rng = np.random.default_rng(3)
    for _ in range(10):
        q = rng.uniform(np.maximum(chain.lower, -3), np.minimum(chain.upper, 3))
        request, T = pose_request(chain, q, state={'shoulder_pan': 0.0})
        answer = solvers.solve(request)
        assert answer.code == MoveItCode.SUCCESS, answer.message
        reached = chain.fk(np.array([answer.state[n] for n in chain.joint_names]))
        assert np.linalg.norm(reached[:3, 3] - T[:3, 3]) < 1e-4
        assert chain.within_limits(answer.q)


def test_out_of_reach_answers_no_ik_solution_with_the_closest_pose(arm):
    config, chain = arm
    solvers = GroupSolvers(config, config.collision)
    request, T = pose_request(chain, np.zeros(6))
    far = dataclass_replace_goal(request, T[:3, 3] * 0 + np.array([3.0, 0.0, 0.5]))
    answer = solvers.solve(far)
    assert answer.code == MoveItCode.NO_IK_SOLUTION
    tip = chain.fk(answer.q)[:3, 3]
    # the closest pose points the arm at the target: nearer than the seed's tip
    assert np.linalg.norm(tip - [3.0, 0.0, 0.5]) < np.linalg.norm(T[:3, 3] - [3.0, 0.0, 0.5])
    assert answer.result.min_residual is None or answer.result.min_residual > 0


def dataclass_replace_goal(request, position):
    import dataclasses
    goal = dataclasses.replace(request.goals[0], position=np.asarray(position, dtype=float))
    return dataclasses.replace(request, goals=(goal,))


def test_unknown_group_link_and_joint_constraint_are_refused_with_their_codes(arm):
    config, chain = arm
    solvers = GroupSolvers(config, config.collision)
    request, _ = pose_request(chain, np.full(6, 0.2), group='nope')
    with pytest.raises(ServiceError) as info:
        solvers.solve(request)
    assert info.value.code == MoveItCode.INVALID_GROUP_NAME and 'manipulator' in str(info.value)
    import dataclasses
    request, _ = pose_request(chain, np.full(6, 0.2))
    bad_link = dataclasses.replace(request, goals=(dataclasses.replace(request.goals[0],
                                                                       link='elbow_link'),))
    with pytest.raises(ServiceError) as info:
        solvers.solve(bad_link)
    assert info.value.code == MoveItCode.INVALID_LINK_NAME
    bad_frame = dataclasses.replace(request, goals=(dataclasses.replace(request.goals[0],
                                                                        frame='map'),))
    with pytest.raises(ServiceError) as info:
        solvers.solve(bad_frame)
    assert info.value.code == MoveItCode.FRAME_TRANSFORM_FAILURE


def test_a_joint_constraint_narrows_the_answer_or_fails_it(arm):
    config, chain = arm
    solvers = GroupSolvers(config, config.collision)
    q = np.array([0.4, -1.0, 1.2, -0.5, 0.9, 0.3])
    bound = JointBound('shoulder_pan', 0.3, 0.5)
    request, T = pose_request(chain, q, constraints=Constraints(joints=(bound,)),
                              timeout_s=0.5)
    answer = solvers.solve(request)
    assert answer.code == MoveItCode.SUCCESS, answer.message
    assert 0.3 - 1e-9 <= answer.state['shoulder_pan'] <= 0.5 + 1e-9
    assert np.linalg.norm(chain.fk(answer.q)[:3, 3] - T[:3, 3]) < 1e-4
    impossible = JointBound('shoulder_pan', 2.0, 2.1)  # the pose needs about 0.4
    request, _ = pose_request(chain, q, constraints=Constraints(joints=(impossible,)),
                              timeout_s=0.05)
    answer = solvers.solve(request)
    assert answer.code != MoveItCode.SUCCESS


def test_a_position_constraint_the_pose_leaves_fails_the_answer(arm):
    config, chain = arm
    solvers = GroupSolvers(config, config.collision)
    q = np.array([0.4, -1.0, 1.2, -0.5, 0.9, 0.3])
    T = chain.fk(q)
    inside = Region('sphere', (0.05,), _translation(T[:3, 3]))
    outside = Region('box', (0.1, 0.1, 0.1), _translation(T[:3, 3] + [0.5, 0, 0]))
    for region, ok in ((inside, True), (outside, False)):
        goal = PositionGoal('tool0', '', np.zeros(3), (region,))
        request, _ = pose_request(chain, q, constraints=Constraints(positions=(goal,)),
                                  timeout_s=0.05)
        answer = solvers.solve(request)
        assert (answer.code == MoveItCode.SUCCESS) == ok, answer.message
        if not ok:
            assert answer.code == MoveItCode.GOAL_CONSTRAINTS_VIOLATED


def test_a_seed_outside_the_limits_is_clipped_and_said(arm):
    config, chain = arm
    solvers = GroupSolvers(config, config.collision)
    request, _ = pose_request(chain, np.full(6, 0.2), state={'elbow': 100.0})
    answer = solvers.solve(request)
    assert 'clipped' in answer.message and 'elbow' in answer.message


def _translation(p):
    T = np.eye(4)
    T[:3, 3] = p
    return T


# -------------------------------------------------------------------------- Cartesian paths
def test_segments_step_at_most_max_step_and_end_on_the_waypoint():
    start = (np.zeros(3), np.array([0, 0, 0, 1.0]))
    goal = (np.array([0.1, 0.0, 0.0]), np.array([0, 0, math.sin(0.5), math.cos(0.5)]))
    poses = segment_poses(start, goal, PathSettings(max_step=0.01))
    steps = np.diff([start[0]] + [p for p, _ in poses], axis=0)
    assert np.all(np.linalg.norm(steps, axis=1) <= 0.01 + 1e-12)
    assert np.allclose(poses[-1][0], goal[0]) and np.allclose(poses[-1][1], goal[1])


def test_the_path_stops_at_the_first_point_out_of_reach_and_the_fraction_says_where():
    # a 1-joint prismatic toy: q = x, reachable for x <= 0.5
    def solve(position, quat, seed):
        return (np.array([position[0]]), '') if position[0] <= 0.5 + 1e-12 else \
            (None, 'NO_IK_SOLUTION')
    start = (np.zeros(3), np.array([0, 0, 0, 1.0]))
    waypoint = (np.array([1.0, 0, 0]), np.array([0, 0, 0, 1.0]))
    points, fraction, stopped = compute_path(solve, np.zeros(1), start, [waypoint],
                                             PathSettings(max_step=0.1), [True])
    assert fraction == pytest.approx(0.5, abs=0.1 + 1e-9)
    assert max(p[0] for p in points) <= 0.5 + 1e-12 and 'NO_IK_SOLUTION' in stopped


def test_a_joint_step_over_the_threshold_stops_the_path():
    def solve(position, quat, seed):  # a flip half way
        return np.array([position[0] + (3.0 if position[0] > 0.55 else 0.0)]), ''
    start = (np.zeros(3), np.array([0, 0, 0, 1.0]))
    waypoint = (np.array([1.0, 0, 0]), np.array([0, 0, 0, 1.0]))
    for settings in (PathSettings(max_step=0.1, revolute_jump_threshold=0.5),
                     PathSettings(max_step=0.1, jump_threshold=2.0)):
        points, fraction, stopped = compute_path(solve, np.zeros(1), start, [waypoint],
                                                 settings, [False])
        steps = np.abs(np.diff([p[0] for p in points]))
        assert np.all(steps < 1.0) and fraction < 0.7 and stopped


def test_points_are_timed_within_the_velocity_limits():
    points = [np.array([0.0, 0.0]), np.array([0.5, 0.1]), np.array([0.6, 1.1])]
    times = timed(points, [1.0, 2.0], PathSettings(max_step=0.1, velocity_scaling=0.5))
    for k in range(1, 3):
        dt = times[k] - times[k - 1]
        speeds = np.abs(points[k] - points[k - 1]) / dt
        assert np.all(speeds <= np.array([1.0, 2.0]) * 0.5 + 1e-9)


def test_point_velocities_stay_within_the_limits_and_rest_at_the_ends():
    rng = np.random.default_rng(5)
    points = [np.zeros(3)] + [rng.uniform(-0.3, 0.3, size=3) for _ in range(8)]
    limits = np.array([1.0, 2.0, 0.5])
    times = timed(points, limits, PathSettings(max_step=0.1, velocity_scaling=0.5))
    v = velocities(points, times)
    assert len(v) == len(points)
    assert np.all(v[0] == 0.0) and np.all(v[-1] == 0.0)
    assert all(np.all(np.abs(vk) <= 0.5 * limits + 1e-9) for vk in v)
    # each inner velocity points the way the joints go over its two steps
    for k in range(1, len(points) - 1):
        assert np.allclose(v[k] * (times[k + 1] - times[k - 1]), points[k + 1] - points[k - 1])


def test_a_position_only_tree_solver_given_poses_solves_the_positions_and_says_so():
    from ik_node.solvers import make_solver
    chain = Chain.from_urdf_file('twin_arm.urdf', 'base_link', ['left_hand', 'right_hand'])
    q = np.full(chain.n, 0.3)
    targets = {tip: (chain.fk(q, tip)[:3, 3], quat_xyzw_of(chain.fk(q, tip)[:3, :3]))
               for tip in chain.tip_links}
    result = make_solver('fabrik', chain, {'timeout': 1.0, 'max_iterations': 1000}).solve(
        targets=targets, seed=np.zeros(chain.n))
    assert result.orientation_ignored
    for tip, (p, _) in targets.items():
        assert np.linalg.norm(chain.fk(result.joint_positions, tip)[:3, 3] - p) < 1e-3


def test_an_answer_keeps_full_turn_joints_nearest_the_requests_seed(arm):
    """A collision retry's or restart's answer is nearest its own seed: the services bring each
    full-turn joint back by whole turns to the value nearest the request's seed."""
    import dataclasses
    from ik_node.model.chain import full_turn_joints
    from ik_node.services.group_solvers import _near_seed
    config, chain = arm
    turning = full_turn_joints(chain)
    assert turning  # arm6 has +-2 pi joints
    solvers = GroupSolvers(config, config.collision)
    q_seed = np.array([0.4, -1.0, 1.2, -0.5, 0.9, 0.3])
    request, T = pose_request(chain, q_seed)
    result = solvers.solve(request).result
    far = result.joint_positions.copy()
    k = turning[0]
    far[k] += 2 * math.pi if far[k] + 2 * math.pi <= chain.upper[k] else -2 * math.pi
    moved = _near_seed(chain, dataclasses.replace(result, joint_positions=far), q_seed)
    assert abs(moved.joint_positions[k] - q_seed[k]) < math.pi
    assert np.allclose(chain.fk(moved.joint_positions), chain.fk(far), atol=1e-9)


# ------------------------------------------------------------------- budgets and restarts
def test_a_solver_limited_to_a_budget_takes_it_and_gets_its_own_back(arm):
    config, chain = arm
    solver = GroupSolvers(config, config.collision).solver(
        GroupSolvers(config, config.collision).group(''), False)
    configured = solver.budget_s
    assert configured == pytest.approx(solver.params['timeout'])
    with solver.limited_to(0.002):
        assert solver.budget_s == pytest.approx(0.002)
        q = np.array([0.3, -1.0, 1.2, -0.4, 0.8, 0.2])
        T = chain.fk(q)
        result = solver.solve(T[:3, 3], quat_xyzw_of(T[:3, :3]), seed=q + 0.05)
        assert np.linalg.norm(chain.fk(result.joint_positions)[:3, 3] - T[:3, 3]) < 1e-4
    assert solver.budget_s == pytest.approx(configured)


def test_restart_seeds_start_nearest_the_target_and_stay_within_the_narrowed_limits(arm):
    from ik_node.services.restart_seeds import NearSeeds
    _, chain = arm
    near = NearSeeds(chain, size=300)
    T = chain.fk(np.array([0.5, -1.2, 1.0, 0.3, -0.6, 0.1]))
    targets = {chain.tip_link: (T[:3, 3], T[:3, :3])}
    lower, upper = chain.lower.copy(), chain.upper.copy()
    lower[0], upper[0] = 0.2, 0.4
    seeds = near.seeds(targets, lower, upper, np.random.default_rng(0))
    first = next(seeds)
    d = near.distances(targets)
    nearest = near.q[int(np.argmin(d))]
    assert np.allclose(first[1:], nearest[1:]) and 0.2 <= first[0] <= 0.4
    rest = [next(seeds) for _ in range(20)]
    assert all(np.all(s >= lower - 1e-12) and np.all(s <= upper + 1e-12) for s in rest)


def test_targets_a_bad_seed_misses_are_answered_success_from_seeds_near_them(arm):
    config, chain = arm
    solvers = GroupSolvers(config, config.collision)
    rng = np.random.default_rng(7)
    # a seed on the joint limits, folded: a poor start for most targets
    folded = {name: float(np.clip(3.0, lo, hi)) for name, lo, hi in
              zip(chain.joint_names, chain.lower, chain.upper)}
    for _ in range(15):
        q = rng.uniform(np.maximum(chain.lower, -3), np.minimum(chain.upper, 3))
        request, T = pose_request(chain, q, state=folded, timeout_s=0.5)
        answer = solvers.solve(request)
        assert answer.code == MoveItCode.SUCCESS, answer.message
        reached = chain.fk(answer.q)
        assert np.linalg.norm(reached[:3, 3] - T[:3, 3]) < 1e-4
        assert chain.within_limits(answer.q)
