"""The node's MoveIt services beside its target stream (IkNode in this process, clients over
DDS): SRDF groups and trees by name, answers never commanded, a stream answered target by
target while four clients call, and the node without moveit_msgs."""

import math
import threading
import time

import numpy as np
import pytest

from moveit_client import (call, plugin_request, quat_xyzw,
                           moveit_msgs_on_path, solution_of)

from harness import (REPO, chain_of, positions_of, random_reachable_q,
                     start_process, stop_process, unique, values, wait_for)
from ik_node import Chain

srv = None  # moveit_msgs.srv, while this module's tests run (the fixture below)


@pytest.fixture(scope='module', autouse=True)
def moveit_srv():
    global srv
    with moveit_msgs_on_path() as module:
        srv = module
        yield


ARM_SRDF = """<robot name="arm6">
  <group name="arm"><chain base_link="base_link" tip_link="tool0"/></group>
  <group name="to_wrist"><chain base_link="base_link" tip_link="wrist_2_link"/></group>
  <group name="gripper"><link name="tool0"/></group>
</robot>"""
TWIN_SRDF = """<robot name="twin_arm">
  <group name="left"><chain base_link="base_link" tip_link="left_hand"/></group>
  <group name="right"><chain base_link="base_link" tip_link="right_hand"/></group>
  <group name="both"><group name="left"/><group name="right"/></group>
</robot>"""


def client_of(harness, ik, srv_type, name):
    node = harness.ros.node('moveit')
    return node, node.create_client(srv_type, f'/{ik.get_name()}/{name}')


def test_srdf_groups_are_solved_by_name_and_others_refused(harness):
    ik, probe = harness.start('arm6', robot_description_semantic=ARM_SRDF)
    node, client = client_of(harness, ik, srv.GetPositionIK, 'compute_ik')
    chain = chain_of('arm6')
    wrist = Chain.from_urdf_file(REPO / 'urdf' / 'arm6.urdf', 'base_link', 'wrist_2_link')
    q = np.array([0.3, -1.1, 1.3, -0.6, 0.7, 0.0])
    for group, sub, tip in (('arm', chain, 'tool0'), ('to_wrist', wrist, 'wrist_2_link')):
        T = sub.fk(q[:sub.n])
        request = plugin_request(srv, group, chain.joint_names, np.zeros(6), 'base_link',
                                 [tip], [T])
        request.ik_request.avoid_collisions = False
        response = call(node, client, request)
        assert response.error_code.val == 1, response.error_code.message
        solved = solution_of(response, sub.joint_names)
        assert np.linalg.norm(sub.fk(solved)[:3, 3] - T[:3, 3]) < 1e-4
        if sub is wrist:  # wrist_3 is not in the group: as the request gave it
            assert solution_of(response, ['wrist_3'])[0] == 0.0
    for group in ('gripper', 'nope'):
        request = plugin_request(srv, group, chain.joint_names, np.zeros(6), 'base_link',
                                 ['tool0'], [chain.fk(q)])
        response = call(node, client, request)
        assert response.error_code.val == -15  # INVALID_GROUP_NAME
        assert 'arm' in response.error_code.message and 'to_wrist' in response.error_code.message


def test_a_group_of_two_arms_takes_both_poses_at_once(harness):
    ik, probe = harness.start('twin_arm', tips=('left_hand', 'right_hand'),
                              robot_description_semantic=TWIN_SRDF)
    node, client = client_of(harness, ik, srv.GetPositionIK, 'compute_ik')
    tips = ['left_hand', 'right_hand']
    chain = Chain.from_urdf_file(REPO / 'urdf' / 'twin_arm.urdf', 'base_link', tips)
    q = random_reachable_q(chain, np.random.default_rng(2))
    Ts = [chain.fk(q, tip) for tip in tips]
    request = plugin_request(srv, 'both', chain.joint_names, np.zeros(chain.n), 'base_link',
                             tips, Ts)
    request.ik_request.avoid_collisions = False
    response = call(node, client, request)
    # fabrik solves positions only: SUCCESS only where the orientations are met too, else the
    # closest pose with NO_IK_SOLUTION; the positions are reached either way
    solved = solution_of(response, chain.joint_names)
    for tip, T in zip(tips, Ts):
        assert np.linalg.norm(chain.fk(solved, tip)[:3, 3] - T[:3, 3]) < 1e-3
    assert response.error_code.val in (1, -31)
    request.ik_request.ik_link_names = ['left_hand', 'nope']
    assert call(node, client, request).error_code.val == -18


def test_an_answer_is_not_commanded_and_the_stream_goes_on(harness):
    ik, probe = harness.start('arm6')
    node, client = client_of(harness, ik, srv.GetPositionIK, 'compute_ik')
    chain = chain_of('arm6')
    probe.wait_for('a joint state', lambda: probe.joint_states)
    before = probe.current_q()
    far_q = before + 0.8
    request = plugin_request(srv, '', chain.joint_names, before, 'base_link', ['tool0'],
                             [chain.fk(chain.clip(far_q))])
    request.ik_request.avoid_collisions = False
    count = len(probe.joint_states)
    assert call(node, client, request).error_code.val == 1
    # The steady re-publishes (20 Hz) after the answer: the position commanded before, still.
    probe.wait_for('three re-publishes', lambda: len(probe.joint_states) >= count + 3)
    with probe.lock:
        after = [positions_of(m, chain.joint_names) for m in probe.joint_states[count:]]
    assert all(np.allclose(q, before) for q in after)


def test_four_clients_calling_beside_a_target_stream_are_all_answered(harness, monkeypatch):
    # The stream's messages stay fresh (for an hour), and the topic's DDS history and the
    # node's queue hold all of them, so the machine's load (a stall of the test process, or of
    # the node, longer than 50 targets) cannot make the node skip one or lose one: what is
    # tested is that the calls take none away.
    from geometry_msgs.msg import PoseStamped
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from ik_node.ros.inputs import target_flow, target_subscriptions
    monkeypatch.setattr(target_flow, 'TARGET_FRESH_S', 3600.0)
    monkeypatch.setattr(target_flow, 'TARGET_MAX_WAIT_S', 3600.0)
    monkeypatch.setattr(target_subscriptions, 'TARGET_QOS',
                        QoSProfile(depth=5000, reliability=ReliabilityPolicy.RELIABLE))
    monkeypatch.setattr(target_subscriptions, 'TARGET_QUEUE_DEPTH', 5000)
    ik, probe = harness.start('arm6')
    probe.timeout = 120.0
    pub = probe.node.create_publisher(PoseStamped, f'/{probe.ik_name}/target_pose',
                                      target_subscriptions.TARGET_QOS)
    probe.wait_for('the stream publisher to match', lambda: pub.get_subscription_count())
    chain = chain_of('arm6')
    rng = np.random.default_rng(9)
    targets = [chain.fk(random_reachable_q(chain, rng)) for _ in range(40)]
    answers, errors = [], []

    def caller(k):
        try:
            node, client = client_of(harness, ik, srv.GetPositionIK, 'compute_ik')
            for i in range(15):
                T = targets[(k * 15 + i) % len(targets)]
                request = plugin_request(srv, '', chain.joint_names, np.zeros(6), 'base_link',
                                         ['tool0'], [T])
                request.ik_request.avoid_collisions = False
                response = call(node, client, request)
                q = solution_of(response, chain.joint_names)
                answers.append((response.error_code.val,
                                np.linalg.norm(chain.fk(q)[:3, 3] - T[:3, 3])))
        except Exception as exc:  # reported below
            errors.append(exc)
    probe.wait_for('a diagnostics status', lambda: probe.diagnostics)
    count_before = probe.last_solve_count()
    threads = [threading.Thread(target=caller, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    sent = 0
    while any(t.is_alive() for t in threads) or sent < 100:
        T = targets[sent % len(targets)]
        msg = PoseStamped()
        msg.header.frame_id = probe.base
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (float(v)
                                                                         for v in T[:3, 3])
        o = msg.pose.orientation
        o.x, o.y, o.z, o.w = (float(v) for v in quat_xyzw(T[:3, :3]))
        probe.stamp(msg)
        pub.publish(msg)
        sent += 1
        time.sleep(0.01)
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert len(answers) == 60
    assert all(code in (1, -31, -6) for code, _ in answers)
    assert all(error < 1e-4 for code, error in answers if code == 1)
    # every target of the stream was solved (none dropped for a newer one)
    try:
        status = probe.wait_for(
            'the status of the last target',
            lambda: next((s for s in reversed(probe.diagnostics)
                          if int(values(s).get('solve_count') or 0) >= count_before + sent),
                         None))
    except AssertionError as exc:
        with probe.lock:
            last = values(probe.diagnostics[-1]) if probe.diagnostics else {}
        raise AssertionError(f'{exc}: {sent} targets sent after solve_count {count_before}; '
                             f'the last status: {last}') from None
    assert values(status)['skipped_targets'] == '0'


def test_without_moveit_msgs_the_node_says_how_to_get_it_and_runs(tmp_path):
    import subprocess
    import sys
    found = subprocess.run([sys.executable, '-c', 'import moveit_msgs'], capture_output=True)
    if found.returncode == 0:
        pytest.skip('moveit_msgs is importable without the prefix here')
    name = unique('ik_plain')
    proc = start_process('--params-file', str(REPO / 'config' / 'arm6.yaml'),
                         '-r', '__node:=ik_node', '-r', f'/joint_states:=/{name}/js',
                         log=tmp_path / 'node.log')
    try:
        wait_for('the log line', lambda: 'moveit_msgs is not importable' in
                 (tmp_path / 'node.log').read_text() and 'arm6.urdf' in
                 (tmp_path / 'node.log').read_text(), procs=[proc], timeout=30)
    finally:
        code, _, _ = stop_process(proc)
    assert code == 0
    assert math.isfinite(0.0)


def test_ik_solve_service_calls_the_node_and_prints_the_answer(harness):
    import json
    import subprocess
    import sys
    from harness import process_env
    from moveit_client import moveit_env
    ik, probe = harness.start('arm6')
    chain = chain_of('arm6')
    T = chain.fk(np.array([0.3, -1.1, 1.3, -0.6, 0.7, 0.2]))
    x, y, z, w = quat_xyzw(T[:3, :3])

    def run(*extra):
        return subprocess.run(
            [sys.executable, '-m', 'ik_node.cli', 'service', '--node', f'/{ik.get_name()}',
             '--point', *map(str, T[:3, 3]), '--orientation', str(x), str(y), str(z), str(w),
             '--json', '--wait', '30', *extra],
            cwd=REPO, env=process_env(moveit_env()), capture_output=True, text=True, timeout=90)
    done = run()
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out['error_name'] == 'SUCCESS'
    q = np.array([out['joints'][n] for n in chain.joint_names])
    assert np.linalg.norm(chain.fk(q)[:3, 3] - T[:3, 3]) < 1e-4
    done = run('--group', 'nope')
    assert done.returncode == 2 and json.loads(done.stdout)['error_name'] == 'INVALID_GROUP_NAME'
