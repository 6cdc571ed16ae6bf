"""The node's MoveIt services from another process, over DDS, with the real moveit_msgs: a
client that calls ``~/compute_ik`` exactly as MoveIt's srv_kinematics_plugin does, on the UR5e
with its collision meshes; every error code; FK; Cartesian paths; a flood of bad requests.

Every SUCCESS answer is checked here: forward kinematics of the solution against the target,
the URDF's limits, and the collision check of the meshes at the solution."""

import math
import threading

import numpy as np
import pytest

from moveit_client import (COLLISION_PREFIX, call, moveit_env, plugin_request,
                           pose_error, moveit_msgs_on_path, set_pose, solution_of)

from harness import (Ros, output_tail, start_process, stop_process,
                     unique, write_params)
from ik_node import Chain
from reference_robots import SHARED_ROBOTS

srv = None  # moveit_msgs.srv, while this module's tests run (the fixture below)


@pytest.fixture(scope='module', autouse=True)
def moveit_srv():
    global srv
    with moveit_msgs_on_path() as module:
        srv = module
        yield


UR5E = SHARED_ROBOTS / 'ur5e.urdf'
JOINTS_OUTSIDE = ['gripper_finger_joint']  # in the request's state, not in the URDF's chain


@pytest.fixture(scope='module')
def ur5e(tmp_path_factory):
    """A node process on the UR5e with its meshes, a client node, and the chain."""
    if not UR5E.is_file() or not COLLISION_PREFIX.is_dir():
        pytest.skip(f'{UR5E} or its meshes ({COLLISION_PREFIX}) are not present (set '
                    'IK_NODE_ROBOTS_DIR to the folder of the reference robots)')
    directory = tmp_path_factory.mktemp('services')
    name = unique('ik_srv')
    params = write_params(directory, name, {
        'urdf_file': str(UR5E), 'base_link': 'base_link', 'tip_link': 'tool0',
        'solver': 'damped_jacobian', 'reachability_samples': 0})
    env = moveit_env(COLLISION_PREFIX)
    env['IK_NODE_CACHE_DIR'] = str(directory / 'cache')
    proc = start_process('--params-file', str(params), '-r', f'__node:={name}',
                         '-r', f'/joint_states:=/{name}/joint_states', env_extra=env,
                         log=directory / f'{name}.log')
    ros = Ros()
    client = ros.node('moveit')
    clients = {
        'ik': client.create_client(srv.GetPositionIK, f'/{name}/compute_ik'),
        'fk': client.create_client(srv.GetPositionFK, f'/{name}/compute_fk'),
        'path': client.create_client(srv.GetCartesianPath, f'/{name}/compute_cartesian_path')}
    chain = Chain.from_urdf_file(UR5E, 'base_link', 'tool0')
    try:
        yield {'name': name, 'proc': proc, 'client': client, 'clients': clients,
               'chain': chain}
    finally:
        ros.close()
        stop_process(proc)


def checker(chain):
    import os
    os.environ.setdefault('AMENT_PREFIX_PATH', '')
    os.environ['AMENT_PREFIX_PATH'] = os.pathsep.join([str(COLLISION_PREFIX),
                                                       os.environ['AMENT_PREFIX_PATH']])
    from ik_node import collision
    return collision.checker_for(chain)


def ask(ur5e, kind, request):
    if ur5e['proc'].poll() is not None:
        raise AssertionError(f'the node exited: {output_tail(ur5e["proc"])}')
    return call(ur5e['client'], ur5e['clients'][kind], request, timeout=60.0)


def plugin_call(ur5e, T, seed=None, group='manipulator'):
    chain = ur5e['chain']
    names = chain.joint_names + JOINTS_OUTSIDE
    seed = np.zeros(chain.n) if seed is None else seed
    request = plugin_request(srv, group, names, list(seed) + [0.02], 'base_link', ['tool0'],
                             [T])
    return ask(ur5e, 'ik', request)


def free_reachable_targets(chain, check, count, seed):
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        q = rng.uniform(np.maximum(chain.lower, -math.pi), np.minimum(chain.upper, math.pi))
        if check.is_free(q):
            out.append(chain.fk(q))
    return out


def test_plugin_calls_on_free_reachable_targets_succeed_with_free_answers_on_target(ur5e):
    chain = ur5e['chain']
    check = checker(chain)
    for T in free_reachable_targets(chain, check, 8, seed=11):
        response = plugin_call(ur5e, T)
        assert response.error_code.val == 1, response.error_code.message  # SUCCESS
        q = solution_of(response, chain.joint_names)
        position_error, angle = pose_error(chain.fk(q), T)
        assert position_error < 1e-4 and angle < 1e-3
        assert chain.within_limits(q)
        assert check.is_free(q), 'a SUCCESS answer collides'
        # the joints outside the group come back as the request gave them
        assert solution_of(response, JOINTS_OUTSIDE)[0] == 0.02


def test_out_of_reach_answers_no_ik_solution_with_the_closest_pose(ur5e):
    chain = ur5e['chain']
    T = np.eye(4)
    T[:3, 3] = [2.0, 0.5, 0.4]
    response = plugin_call(ur5e, T)
    assert response.error_code.val == -31  # NO_IK_SOLUTION
    q = solution_of(response, chain.joint_names)
    assert q is not None and chain.within_limits(q)
    tip = chain.fk(q)[:3, 3]
    # stretched toward the target: farther than the arm's reach from the base it cannot be
    assert np.linalg.norm(tip - T[:3, 3]) < np.linalg.norm(T[:3, 3]) - 0.5


def test_bad_requests_get_the_code_of_their_cause_and_the_node_answers_after(ur5e):
    chain = ur5e['chain']
    good = free_reachable_targets(chain, checker(chain), 1, seed=5)[0]
    nan = good.copy()
    nan[0, 3] = math.nan
    response = plugin_call(ur5e, nan)
    assert response.error_code.val == -16 and 'not finite' in response.error_code.message
    response = plugin_call(ur5e, good, group='no_such_group')
    assert response.error_code.val == -15 and 'manipulator' in response.error_code.message
    request = plugin_request(srv, '', chain.joint_names, np.zeros(6), 'base_link', ['flange'],
                             [good])
    assert ask(ur5e, 'ik', request).error_code.val == -18  # INVALID_LINK_NAME
    request = plugin_request(srv, '', chain.joint_names, np.zeros(6), 'no_frame', ['tool0'],
                             [good])
    assert ask(ur5e, 'ik', request).error_code.val == -21  # FRAME_TRANSFORM_FAILURE
    request = plugin_request(srv, '', chain.joint_names, np.zeros(6), 'base_link', ['tool0'],
                             [good])
    request.ik_request.pose_stamped.pose.orientation.w = 0.0
    request.ik_request.pose_stamped.pose.orientation.x = 0.0
    request.ik_request.pose_stamped.pose.orientation.y = 0.0
    request.ik_request.pose_stamped.pose.orientation.z = 0.0
    response = ask(ur5e, 'ik', request)
    assert response.error_code.val == -16 and 'zero quaternion' in response.error_code.message
    request = plugin_request(srv, '', chain.joint_names, np.zeros(6), 'base_link',
                             ['tool0', 'flange'], [good, good])
    request.ik_request.ik_link_names = ['tool0']
    assert ask(ur5e, 'ik', request).error_code.val == -18  # sizes differ
    request = plugin_request(srv, '', chain.joint_names, [0.0] * 5, 'base_link', ['tool0'],
                             [good])
    assert ask(ur5e, 'ik', request).error_code.val == -17  # INVALID_ROBOT_STATE
    from moveit_msgs.msg import VisibilityConstraint
    request = plugin_request(srv, '', chain.joint_names, np.zeros(6), 'base_link', ['tool0'],
                             [good])
    request.ik_request.constraints.visibility_constraints = [VisibilityConstraint()]
    assert ask(ur5e, 'ik', request).error_code.val == -16  # not supported: refused
    # a multi-DOF state of a joint of the URDF would move its frames: refused, named
    request = plugin_request(srv, '', chain.joint_names, np.zeros(6), 'base_link', ['tool0'],
                             [good])
    multi = request.ik_request.robot_state.multi_dof_joint_state
    multi.joint_names = ['shoulder_pan_joint']
    from geometry_msgs.msg import Transform
    multi.transforms = [Transform()]
    response = ask(ur5e, 'ik', request)
    assert response.error_code.val == -17 and 'shoulder_pan_joint' in response.error_code.message
    # an SRDF's virtual joint above the URDF: kept as given, the pose solved
    multi.joint_names = ['virtual_joint']
    multi.transforms[0].translation.x = 1.5
    response = ask(ur5e, 'ik', request)
    assert response.error_code.val == 1, response.error_code.message
    assert list(response.solution.multi_dof_joint_state.joint_names) == ['virtual_joint']
    assert response.solution.multi_dof_joint_state.transforms[0].translation.x == 1.5
    assert plugin_call(ur5e, good).error_code.val == 1


def test_a_flood_of_bad_requests_from_several_clients_leaves_the_node_answering(ur5e):
    chain = ur5e['chain']
    good = free_reachable_targets(chain, checker(chain), 1, seed=6)[0]
    nan = good.copy()
    nan[1, 3] = math.inf
    answered, errors = [], []

    def flood(client):
        try:
            for _ in range(50):
                response = call(ur5e['client'], client, plugin_request(
                    srv, 'manipulator', chain.joint_names, np.zeros(6), 'base_link',
                    ['tool0'], [nan]))
                answered.append(response.error_code.val)
        except Exception as exc:  # reported below
            errors.append(exc)
    clients = [ur5e['client'].create_client(srv.GetPositionIK, ur5e['clients']['ik'].srv_name)
               for _ in range(4)]
    threads = [threading.Thread(target=flood, args=(client,)) for client in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert answered == [-16] * 200
    assert plugin_call(ur5e, good).error_code.val == 1


def test_fk_places_links_in_the_requested_frame(ur5e):
    chain = ur5e['chain']
    q = np.array([0.3, -1.2, 1.1, -0.4, 0.8, 0.2])
    request = srv.GetPositionFK.Request()
    request.header.frame_id = 'base_link'
    request.fk_link_names = ['tool0', 'wrist_1_link']
    request.robot_state.joint_state.name = chain.joint_names
    request.robot_state.joint_state.position = q.tolist()
    response = ask(ur5e, 'fk', request)
    assert response.error_code.val == 1
    p = response.pose_stamped[0].pose.position
    assert np.allclose([p.x, p.y, p.z], chain.fk(q)[:3, 3], atol=1e-9)
    assert np.allclose(_position(response.pose_stamped[1]),
                       chain.link_transform('wrist_1_link', q)[:3, 3], atol=1e-9)
    request.header.frame_id = 'tool0'  # a link frame: tool0 in its own frame is the origin
    response = ask(ur5e, 'fk', request)
    assert np.allclose(_position(response.pose_stamped[0]), 0.0, atol=1e-9)
    request.fk_link_names = ['no_link']
    assert ask(ur5e, 'fk', request).error_code.val == -18


def _position(pose_stamped):
    p = pose_stamped.pose.position
    return np.array([p.x, p.y, p.z])


def test_a_cartesian_line_is_followed_in_small_steps_timed_within_the_velocity_limits(ur5e):
    chain = ur5e['chain']
    q0 = np.array([0.3, -1.4, 1.6, -1.8, -1.57, 0.2])
    T0 = chain.fk(q0)
    T1 = T0.copy()
    T1[2, 3] -= 0.15
    from geometry_msgs.msg import Pose
    request = srv.GetCartesianPath.Request()
    request.header.frame_id = 'base_link'
    request.start_state.joint_state.name = chain.joint_names
    request.start_state.joint_state.position = q0.tolist()
    pose = Pose()
    set_pose(pose, T1)
    request.waypoints = [pose]
    request.max_step = 0.01
    request.revolute_jump_threshold = 0.3
    request.avoid_collisions = True
    response = ask(ur5e, 'path', request)
    assert response.error_code.val == 1 and response.fraction == pytest.approx(1.0)
    points = response.solution.joint_trajectory.points
    qs = np.array([p.positions for p in points])
    assert len(points) >= 16
    assert np.all(np.abs(np.diff(qs, axis=0)) <= 0.3)
    tips = np.array([chain.fk(q)[:3, 3] for q in qs])
    assert np.all(np.linalg.norm(np.diff(tips, axis=0), axis=1) <= 0.01 + 1e-4)
    assert pose_error(chain.fk(qs[-1]), T1)[0] < 1e-4
    times = np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec
                      for p in points])
    speeds = np.abs(np.diff(qs, axis=0)) / np.diff(times)[:, None]
    velocity = np.array([math.pi] * 6)  # the UR5e's URDF limits are >= pi rad/s
    assert np.all(speeds <= velocity + 1e-6)
    velocities = np.array([p.velocities for p in points])
    assert velocities.shape == qs.shape
    assert np.all(velocities[0] == 0.0) and np.all(velocities[-1] == 0.0)
    assert np.all(np.abs(velocities) <= velocity + 1e-6)
    # beyond the reach: the path stops short, fraction says how far
    far = T0.copy()
    far[0, 3] += 2.0
    set_pose(pose, far)
    request.waypoints = [pose]
    response = ask(ur5e, 'path', request)
    assert response.error_code.val == 1 and 0.0 <= response.fraction < 1.0
    assert 'waypoint 0, step' in response.error_code.message  # where and why it stopped
    kept = len(response.solution.joint_trajectory.points) - 1
    assert kept / 201 == pytest.approx(response.fraction)  # 201 steps of 0.01 m
