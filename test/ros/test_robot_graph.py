"""ik_node in a real robot's ROS graph, over DDS with the node in its own process.

* The Panda from a user params file driving ros2_control's forward_position_controller
  (``output: position_command``), seeded from a measured state that this test process
  publishes and moves: every command reaches its target and stays near the measured joints.
* ``output: joint_trajectory`` timed by the URDF velocity limits.
* A UR5 and a Panda side by side in namespaces /r1 and /r2: no cross-talk.
* ``robot_description`` by topic after start-up, then replaced by another robot; a bad one is
  refused with the reason while the old chain stays in force.
The reference URDFs are read in place from ../shared/robots.

Over 450 lines on purpose: each test builds a robot's whole graph (controllers, measured state,
namespaces, TF, description topic) in a few dozen lines; they share the harness's graph probe
and nothing else, so a split would only scatter them.
"""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectory

from harness import (PANDA, REPO, UR5, Ros, answers, robot_params, stamp_text, start_node,
                     stop, values, write_params)
from ik_node import Chain

#: Every test here talks to ik_node in its own process (or runs a script that starts one).
pytestmark = pytest.mark.slow

TIMEOUT_S = 20.0


# ---------------------------------------------------------------------------------- tests
def test_panda_drives_a_position_controller_seeded_from_the_measured_moving_state(
        graph, shared_robot, tmp_path):
    # What is tested is the seed and the command: a budget no loaded machine runs out of (the
    # first solves run while the compiled kernels load beside them).
    params = write_params(tmp_path, 'panda', robot_params(
        shared_robot, PANDA, output='position_command', state_topic='/measured/joint_states',
        state_timeout=1.0, **{'damped_jacobian.timeout': 1.0}))
    chain = Chain.from_urdf_file(shared_robot(PANDA[0]), PANDA[1], PANDA[2])
    commands = graph.listen(Float64MultiArray, '/forward_position_controller/commands')
    joint_states = graph.listen(JointState, '/joint_states')
    diags = graph.diagnostics('ik_node')
    proc = start_node(params)
    try:
        graph.wait_for('the node', lambda: diags, procs=[proc])
        state_pub = graph.publisher(JointState, '/measured/joint_states')
        graph.wait_for('the node subscribed to the measured state',
                       lambda: state_pub.get_subscription_count() > 0, procs=[proc])
        rng = np.random.default_rng(3)
        q_measured = chain.mid_configuration()
        for step in range(6):
            # The robot moves: the measured state walks, with the fingers and an unknown joint
            # in the message (merged by name), in another order than the chain's.
            q_measured = chain.clip(q_measured + rng.uniform(-0.15, 0.15, chain.n))
            state = JointState()
            state.name = ['panda_finger_joint1', 'other'] + chain.joint_names[::-1]
            state.position = [0.01, 5.0] + [float(v) for v in q_measured[::-1]]
            deadline = time.monotonic() + 0.3
            while time.monotonic() < deadline:  # a robot publishes its state continuously
                state_pub.publish(state)
                time.sleep(0.02)
            q_target = chain.clip(q_measured + rng.uniform(-0.05, 0.05, chain.n))
            T_target = chain.fk(q_target)
            n_before = len(commands)
            key = graph.send_pose('/ik_node/target_pose', PANDA[1], T_target)
            status = graph.answer(diags, key, procs=[proc])
            v = values(status)
            assert v['reachable'] == 'true', v
            assert v['seed'] == 'measured' and v['output'] == 'position_command', v
            command = graph.wait_for('a command', lambda n=n_before: commands[n:])[-1]
            q = np.array(command.data)
            assert q.shape == (chain.n,) and chain.within_limits(q)
            assert np.linalg.norm(chain.fk(q)[:3, 3] - T_target[:3, 3]) < 1e-4
            # Seeded from where the robot is, the answer is the nearby configuration, not
            # another branch: within the target's offset (0.05 per joint) plus margin.
            assert np.max(np.abs(q - q_measured)) < 0.25, (step, q - q_measured)
        # No JointState from a node that drives a controller (the robot publishes those).
        assert not joint_states
        # A measured state that stops: the seed falls back to the last solution, and says so.
        time.sleep(1.2)
        key = graph.send_pose('/ik_node/target_pose', PANDA[1], chain.fk(q_measured))
        v = values(graph.answer(diags, key, procs=[proc]))
        assert v['seed'].startswith('last solution') and 'stale' in v['seed'], v
    finally:
        stop(proc)


def test_joint_trajectory_point_is_timed_by_the_velocity_limits(graph, shared_robot, tmp_path):
    params = write_params(tmp_path, 'ur5', robot_params(
        shared_robot, UR5, output='joint_trajectory', trajectory_velocity_scaling=0.5,
        command_joints=['wrist_3_joint', 'wrist_2_joint', 'wrist_1_joint', 'elbow_joint',
                        'shoulder_lift_joint', 'shoulder_pan_joint']))
    chain = Chain.from_urdf_file(shared_robot(UR5[0]), UR5[1], UR5[2])
    trajectories = graph.listen(JointTrajectory, '/joint_trajectory_controller/joint_trajectory')
    diags = graph.diagnostics('ik_node')
    proc = start_node(params)
    try:
        graph.wait_for('the node', lambda: diags, procs=[proc])
        q_target = np.array([0.3, -1.2, 1.4, -0.6, 0.8, 0.4])
        key = graph.send_pose('/ik_node/target_pose', UR5[1], chain.fk(q_target))
        assert values(graph.answer(diags, key, procs=[proc]))['reachable'] == 'true'
        msg = graph.wait_for('a trajectory', lambda: trajectories)[-1]
        assert list(msg.joint_names) == ['wrist_3_joint', 'wrist_2_joint', 'wrist_1_joint',
                                         'elbow_joint', 'shoulder_lift_joint',
                                         'shoulder_pan_joint']
        (point,) = msg.points
        by_name = dict(zip(msg.joint_names, point.positions))
        q = np.array([by_name[n] for n in chain.joint_names])
        assert np.linalg.norm(chain.fk(q)[:3, 3] - chain.fk(q_target)[:3, 3]) < 1e-4
        # From the start configuration (zeros: no measured state), each joint at half its URDF
        # velocity limit: the slowest one sets the time.
        velocity = {j.name: j.limit.velocity for j in chain.robot.joints if j.limit}
        expected = max(abs(by_name[n]) / (0.5 * velocity[n]) for n in msg.joint_names)
        t = point.time_from_start.sec + 1e-9 * point.time_from_start.nanosec
        assert t == pytest.approx(max(expected, 0.02), rel=1e-6, abs=1e-6)
    finally:
        stop(proc)


def test_a_command_joint_that_is_not_in_the_chain_stops_the_start_with_one_line(
        shared_robot, tmp_path):
    params = write_params(tmp_path, 'ur5', robot_params(
        shared_robot, UR5, output='position_command', command_joints=['shoulder_pan_joint',
                                                                      'gripper']))
    proc = start_node(params)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2, err
    assert 'gripper not a moving joint of the chain' in err and 'Traceback' not in err


def test_two_namespaced_robots_side_by_side_do_not_talk_to_each_other(
        graph, shared_robot, tmp_path):
    # What is tested is the namespacing: a budget no loaded machine runs out of.
    budget = {'damped_jacobian.timeout': 1.0}
    procs = {
        'r1': start_node(write_params(tmp_path, 'ur5', robot_params(shared_robot, UR5, **budget)),
                         '-r', '__ns:=/r1'),
        'r2': start_node(write_params(tmp_path, 'panda',
                                      robot_params(shared_robot, PANDA, **budget)),
                         '-r', '__ns:=/r2'),
    }
    chains = {'r1': Chain.from_urdf_file(shared_robot(UR5[0]), UR5[1], UR5[2]),
              'r2': Chain.from_urdf_file(shared_robot(PANDA[0]), PANDA[1], PANDA[2])}
    bases = {'r1': UR5[1], 'r2': PANDA[1]}
    js = {ns: graph.listen(JointState, f'/{ns}/joint_states') for ns in procs}
    root_js = graph.listen(JointState, '/joint_states')
    diags = {ns: graph.diagnostics(f'{ns}/ik_node') for ns in procs}
    try:
        for ns in procs:
            graph.wait_for(f'{ns} up', lambda ns=ns: diags[ns] and js[ns],
                           procs=list(procs.values()))
        for ns, other in (('r1', 'r2'), ('r2', 'r1')):
            chain = chains[ns]
            q_target = chain.clip(chain.mid_configuration() + 0.2)
            n_other = len(js[other])
            key = graph.send_pose(f'/{ns}/ik_node/target_pose', bases[ns], chain.fk(q_target))
            v = values(graph.answer(diags[ns], key, procs=list(procs.values())))
            assert v['reachable'] == 'true', v
            assert not any(key in values(s).get('target_stamp', '') for s in diags[other])
            stamp = v['joint_state_stamp']
            msg = graph.wait_for('the joint state of the answer', lambda ns=ns, stamp=stamp: next(
                (m for m in js[ns] if f'{m.header.stamp.sec}.{m.header.stamp.nanosec:09d}'
                 == stamp), None))
            index = {n: i for i, n in enumerate(msg.name)}
            q = np.array([msg.position[index[n]] for n in chain.joint_names])
            assert np.linalg.norm(chain.fk(q)[:3, 3] - chain.fk(q_target)[:3, 3]) < 1e-4
            # The other robot's joint states still carry only its own joints, unmoved.
            others = js[other][n_other:]
            assert all(set(m.name).isdisjoint(chain.joint_names) for m in others)
        assert not root_js, 'a namespaced node published on /joint_states'
    finally:
        for proc in procs.values():
            stop(proc)


def test_robot_description_by_topic_after_start_then_another_robot_then_a_bad_one(
        graph, shared_robot, tmp_path):
    params = write_params(tmp_path, 'topic', {'base_link': 'base_link', 'tip_link': 'tool0'})
    diags = graph.diagnostics('ik_node')
    js = graph.listen(JointState, '/joint_states')
    proc = start_node(params)
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
    try:
        waiting = graph.wait_for('the waiting status', lambda: next(
            (s for s in diags if values(s).get('status') == 'waiting'), None), procs=[proc])
        assert waiting.level == b'\x01' and 'waiting for robot_description' in waiting.message
        key = graph.send_point('/ik_node/target_point', 'base_link', [0.3, 0.1, 0.4])
        refused = values(graph.answer(diags, key, procs=[proc]))
        assert refused['status'] == 'waiting' and 'target refused' in refused['message']
        assert not js, 'joint states before there is a robot'

        description = graph.publisher(String, '/robot_description', latched)
        for urdf in (shared_robot(UR5[0]), REPO / 'urdf' / 'arm6.urdf'):
            chain = Chain.from_urdf_file(urdf, 'base_link', 'tool0')
            description.publish(String(data=Path(urdf).read_text()))
            graph.wait_for(f'joint states of {urdf.name}', lambda chain=chain: any(
                set(chain.joint_names) <= set(m.name) for m in js), procs=[proc])
            q_target = chain.clip(chain.mid_configuration() + 0.3)
            for _ in range(2):  # the 5 ms budget of a first solve may run out (load)
                key = graph.send_pose('/ik_node/target_pose', 'base_link', chain.fk(q_target))
                v = values(graph.answer(diags, key, procs=[proc]))
                if v['status'] != 'timeout':
                    break
            assert v['reachable'] == 'true', (urdf.name, v)

        # A description without the configured links: refused with the reason, arm6 stays.
        n_diag = len(diags)
        description.publish(String(data=(REPO / 'urdf' / 'leg3.urdf').read_text()))
        error = graph.wait_for('the refusal', lambda: next(
            (s for s in diags[n_diag:] if s.level == b'\x02'), None), procs=[proc])
        assert 'refused' in error.message and 'tool0' in error.message, error.message
        key = graph.send_pose('/ik_node/target_pose', 'base_link', chain.fk(q_target + 0.05))
        assert values(graph.answer(diags, key, procs=[proc]))['reachable'] == 'true'
    finally:
        stop(proc)


def test_state_topic_equal_to_its_own_output_is_refused_at_start(tmp_path):
    params = write_params(tmp_path, 'loop', {'urdf_file': 'leg3.urdf', 'base_link': 'base_link',
                                             'tip_link': 'foot', 'state_topic': 'joint_states'})
    proc = start_node(params)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2 and 'its own output' in err and 'Traceback' not in err, err


def test_targets_in_a_frame_outside_the_urdf_are_refused_without_tf2_or_looked_up_with_it(
        graph, tmp_path):
    """Without tf2_ros (the pip install) the refusal says tf2_ros is needed; with it (a ROS 2
    install) a frame TF does not know is an ERROR naming the frame once the new TF listener's
    warm-up is over; until then the node keeps such a target, answers the next one at once, and
    drops the kept one as skipped (a newer target of its tip came). Either way the node goes on
    solving."""
    params = write_params(tmp_path, 'leg', {'urdf_file': 'leg3.urdf', 'base_link': 'base_link',
                                            'tip_link': 'foot', 'solver': 'analytic_hip_knee',
                                            'tf_timeout': 0.05})
    diags = graph.diagnostics('ik_node')
    try:
        import tf2_ros  # noqa: F401
        from ik_node.ros.inputs.tf_frames import TF_WARM_UP_S
    except ImportError:
        TF_WARM_UP_S = None
    proc = start_node(params)
    try:
        graph.wait_for('the node', lambda: diags, procs=[proc])
        key = graph.send_point('/ik_node/target_point', 'camera_optical_frame', [0.1, 0, -0.4])
        # Taken by the node before the next target (which would replace it in the queue).
        if TF_WARM_UP_S is None:  # refused at once: no tf2_ros
            v = values(graph.answer(diags, key, procs=[proc]))
        else:  # kept: the TF listener it made subscribes to /tf
            graph.wait_for('the TF listener of the first target',
                           lambda: graph.node.count_subscribers('/tf') > 0, procs=[proc])
            listening_since = time.monotonic()
        later = graph.send_point('/ik_node/target_point', 'base_link', [0.1, 0.05, -0.45])
        done = values(graph.answer(diags, later, procs=[proc]))
        assert done['reachable'] == 'true', done
        if TF_WARM_UP_S is None:
            assert v['status'] == 'error' and 'tf2_ros' in v['message'], v
        else:
            # The warm-up of the listener the first target made (TF_WARM_UP_S from the time it
            # was seen subscribing, so at least that long after it was made) is over.
            graph.wait_for('the end of the TF warm-up',
                           lambda: time.monotonic() > listening_since + TF_WARM_UP_S,
                           timeout=TF_WARM_UP_S + TIMEOUT_S, procs=[proc])
            assert not any(answers(s, [key]) for s in diags)  # kept, then dropped
            key = graph.send_point('/ik_node/target_point', 'camera_optical_frame',
                                   [0.1, 0, -0.4])
            v = values(graph.answer(diags, key, procs=[proc]))
            assert v['status'] == 'error' and 'no TF transform' in v['message'], v
            assert int(v['skipped_targets']) > int(done['skipped_targets']), (v, done)
        assert 'camera_optical_frame' in v['message'], v
    finally:
        stop(proc)


def test_a_target_in_a_tf_frame_is_transformed_into_the_base(graph, tmp_path):
    """Where tf2_ros is importable (a ROS 2 install): a static transform world -> base_link,
    a target in world sent as soon as the node answers, and the foot lands where the transform
    puts it. With the default tf_timeout (0.05 s): the listener made by this first target waits
    for DDS to match its subscriptions (1-3 s right after the node's start) instead of refusing
    the target (it did, in 1 run of 4, with tf_timeout 1 s)."""
    tf2_ros = pytest.importorskip('tf2_ros', reason='tf2_ros comes with a ROS 2 install; the '
                                  'PyPI wheels do not have it')
    from geometry_msgs.msg import TransformStamped
    params = write_params(tmp_path, 'leg', {'urdf_file': 'leg3.urdf', 'base_link': 'base_link',
                                            'tip_link': 'foot', 'solver': 'analytic_hip_knee'})
    diags = graph.diagnostics('ik_node')
    js = graph.listen(JointState, '/joint_states')
    broadcaster = tf2_ros.StaticTransformBroadcaster(graph.node)
    tf = TransformStamped()
    tf.header.frame_id, tf.child_frame_id = 'world', 'base_link'
    tf.transform.translation.x, tf.transform.translation.z = 0.5, 1.0
    tf.transform.rotation.w = 1.0
    broadcaster.sendTransform(tf)
    proc = start_node(params)
    try:
        graph.wait_for('the node', lambda: diags, procs=[proc])
        p_base = np.array([0.1, 0.05, -0.45])
        key = graph.send_point('/ik_node/target_point', 'world', p_base + [0.5, 0.0, 1.0])
        v = values(graph.answer(diags, key, procs=[proc]))
        assert v['reachable'] == 'true', v
        chain = Chain.from_urdf_file(REPO / 'urdf' / 'leg3.urdf', 'base_link', 'foot')
        msg = graph.wait_for('its joint state', lambda: next(
            (m for m in js if f'{m.header.stamp.sec}.{m.header.stamp.nanosec:09d}'
             == v['joint_state_stamp']), None))
        assert np.linalg.norm(chain.fk(np.array(msg.position))[:3, 3] - p_base) < 1e-4
    finally:
        stop(proc)


LOOKUP_AT_ONCE = """
import json, sys, time
import rclpy
from ik_node.config.ros_graph import GraphConfig
from ik_node.ros.inputs.tf_frames import TfFrames
from ik_node.ros.inputs.targets import TfWarmingUp
rclpy.init()
node = rclpy.create_node('ik_side_' + sys.argv[1])
tf_frames = TfFrames(node)
tries = 0
try:
    while True:  # as the node does: a target kept while TF warms up is tried again
        tries += 1
        T = tf_frames.lookup('base_link', 'world', (0, 0), GraphConfig().tf_timeout)
        if not isinstance(T, TfWarmingUp):
            break
        time.sleep(0.1)
    print(tries, file=sys.stderr)
    print(json.dumps(T.tolist()))
finally:
    tf_frames.close()
    node.destroy_node()
    rclpy.shutdown()
"""


def test_the_first_tf_lookups_say_warming_up_not_refused_until_the_transform_comes(tmp_path):
    """Where tf2_ros is importable: a TF publisher just made, and the node's TF side in a new
    process (a launch file starting both together) looking up at once with the default
    tf_timeout of 0.05 s. Discovering the new participant and matching the listener's new
    subscriptions takes DDS longer than that: the first lookups return TfWarmingUp (the node
    keeps the target and tries again), not a refusal, and a later one returns the published
    transform."""
    tf2_ros = pytest.importorskip('tf2_ros', reason='tf2_ros comes with a ROS 2 install; the '
                                  'PyPI wheels do not have it')
    import json
    import subprocess
    import sys
    from geometry_msgs.msg import TransformStamped
    publisher_side = Ros()
    try:
        broadcaster = tf2_ros.StaticTransformBroadcaster(publisher_side.node('tf_publisher'))
        tf = TransformStamped()
        tf.header.frame_id, tf.child_frame_id = 'world', 'base_link'
        tf.transform.translation.x, tf.transform.translation.z = 0.5, 1.0
        tf.transform.rotation.w = 1.0
        broadcaster.sendTransform(tf)
        run = subprocess.run([sys.executable, '-c', LOOKUP_AT_ONCE, tmp_path.name], cwd=REPO,
                             capture_output=True, text=True, timeout=60)
        assert run.returncode == 0 and 'Traceback' not in run.stderr, run.stderr
        T = np.array(json.loads(run.stdout.strip().splitlines()[-1]))
        assert np.allclose(T[:3, 3], [-0.5, 0.0, -1.0]) and np.allclose(T[:3, :3], np.eye(3))
    finally:
        publisher_side.close()


def test_the_node_listens_to_tf_only_once_a_target_names_a_frame_outside_the_urdf(
        graph, tmp_path):
    """Where tf2_ros is importable: targets in the base frame and in a link of the URDF need no
    TF, so the node does not subscribe to /tf and /tf_static (on a real robot, the whole TF
    stream); the first target in a TF frame makes the listener, and the node still exits
    without a traceback (its listener's thread stops before the context)."""
    tf2_ros = pytest.importorskip('tf2_ros', reason='tf2_ros comes with a ROS 2 install; the '
                                  'PyPI wheels do not have it')
    from geometry_msgs.msg import TransformStamped
    params = write_params(tmp_path, 'leg', {'urdf_file': 'leg3.urdf', 'base_link': 'base_link',
                                            'tip_link': 'foot', 'solver': 'analytic_hip_knee'})
    diags = graph.diagnostics('ik_node')
    broadcaster = tf2_ros.StaticTransformBroadcaster(graph.node)
    tf = TransformStamped()
    tf.header.frame_id, tf.child_frame_id = 'world', 'base_link'
    tf.transform.translation.z = 1.0
    tf.transform.rotation.w = 1.0
    broadcaster.sendTransform(tf)

    def tf_topics():
        found = graph.node.get_subscriber_names_and_types_by_node('ik_node', '/')
        return sorted(name for name, _ in found if name in ('/tf', '/tf_static'))
    proc = start_node(params)
    try:
        graph.wait_for('the node', lambda: diags, procs=[proc])
        for frame, p in (('base_link', [0.1, 0.05, -0.45]), ('', [0.1, 0.05, -0.45]),
                         ('hip_link', [0.1, 0.05, -0.4])):
            key = graph.send_point('/ik_node/target_point', frame, p)
            assert values(graph.answer(diags, key, procs=[proc]))['status'] != 'error'
        graph.wait_for('the node\'s target subscription in the graph', lambda: any(
            name == '/ik_node/target_point' for name, _ in
            graph.node.get_subscriber_names_and_types_by_node('ik_node', '/')))
        assert tf_topics() == []
        key = graph.send_point('/ik_node/target_point', 'world', [0.1, 0.05, 0.55])
        assert values(graph.answer(diags, key, procs=[proc]))['reachable'] == 'true'
        graph.wait_for('the TF subscriptions', lambda: tf_topics() == ['/tf', '/tf_static'])
    finally:
        stop(proc)  # exit 0, no traceback


def test_swaps_under_a_1khz_stream_never_mix_two_chains(graph, shared_robot, tmp_path):
    """Description swaps (UR5 <-> arm6), solver switches and chain changes while targets stream
    at 1 kHz from this process into the node's process: every JointState is one model's whole
    joint list, the joint states change model once per description swap and never go back, a
    target sent after a swap returned is never answered on an older chain, the node lives."""
    from rcl_interfaces.msg import Parameter as ParameterMsg, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters
    ur5_xml = shared_robot(UR5[0]).read_text()
    arm6_xml = (REPO / 'urdf' / 'arm6.urdf').read_text()
    models = {'ur5': Chain.from_urdf_string(ur5_xml, 'base_link', 'tool0'),
              'arm6': Chain.from_urdf_string(arm6_xml, 'base_link', 'tool0')}
    names = {k: tuple(c.joint_names) for k, c in models.items()}
    params = write_params(tmp_path, 'swap', {'robot_description': ur5_xml,
                                             'base_link': 'base_link', 'tip_link': 'tool0',
                                             'solver': 'damped_jacobian',
                                             'reachability_samples': 0})
    js = graph.listen(JointState, '/joint_states', 1000)
    diags = graph.diagnostics('ik_node')
    proc = start_node(params)
    client = graph.node.create_client(SetParameters, '/ik_node/set_parameters')

    def set_param(name, value):
        kind = ParameterType.PARAMETER_STRING
        request = SetParameters.Request(parameters=[ParameterMsg(
            name=name, value=ParameterValue(type=kind, string_value=value))])
        assert client.wait_for_service(timeout_sec=TIMEOUT_S)
        future = client.call_async(request)
        graph.wait_for(f'set {name}', future.done, procs=[proc])
        (result,) = future.result().results
        assert result.successful, result.reason

    halt = threading.Event()
    sent = []

    def stream():
        rng = np.random.default_rng(8)
        while not halt.is_set():
            p = rng.uniform([-0.4, -0.4, 0.1], [0.4, 0.4, 0.5])
            before = time.monotonic()  # read before the publish: a target counted as sent
            # after a swap was surely published after it (a thread switch may follow publish)
            sent.append((before, graph.send_point('/ik_node/target_point', 'base_link', p)))
            time.sleep(0.001)  # the stream's pace (1 kHz), not an order between events

    def streamed_and_answered() -> None:
        """Until 200 more targets are sent and one of them is answered with a joint state that
        this process has received."""
        n_before = len(sent)

        def done() -> bool:
            keys = [key for _, key in sent[n_before:]]
            if len(keys) < 200:
                return False
            received = {stamp_text(m.header) for m in js}
            return any(answers(s, keys) and values(s).get('joint_state_stamp') in received
                       for s in diags)
        graph.wait_for('200 targets streamed and answered', done, procs=[proc])

    try:
        graph.wait_for('the node', lambda: diags and js, procs=[proc])
        streamer = threading.Thread(target=stream, daemon=True)
        streamer.start()
        in_force = 'ur5'
        described = ['ur5']  # the model of each description in turn
        swaps = []  # (monotonic time a description swap returned, its index in `described`)
        for step in range(6):
            streamed_and_answered()
            if step % 3 == 0:
                in_force = 'arm6' if in_force == 'ur5' else 'ur5'
                set_param('robot_description', arm6_xml if in_force == 'arm6' else ur5_xml)
                described.append(in_force)
                swaps.append((time.monotonic(), len(described) - 1))
            elif step % 3 == 1:
                set_param('solver', 'fabrik' if step % 2 else 'damped_jacobian')
            else:
                set_param('tip_link', 'wrist_3_link' if step % 2 == 0 else 'tool0')
                set_param('tip_link', 'tool0')
        streamed_and_answered()
        halt.set()
        streamer.join(timeout=5)
        assert proc.poll() is None, 'the node died'
        with graph.lock:
            states = list(js)
            statuses = list(diags)
        assert len(sent) > 1000
        # The joint states of one publisher arrive in the order sent: split into runs of one
        # model's names, they are the descriptions in turn, each once (an old chain's joint
        # state after the new one's would start a run of its own).
        runs = []  # the names of each run
        run_of = {}  # joint state stamp -> its run's index
        for m in states:
            assert all(math.isfinite(v) for v in m.position)
            if not runs or runs[-1] != tuple(m.name):
                runs.append(tuple(m.name))
            run_of[stamp_text(m.header)] = len(runs) - 1
        assert runs == [names[model] for model in described], runs  # never a mix of two chains
        # A target sent after a description swap returned is answered on that description or
        # a later one (one sent while the next swap is under way may be solved after it: the
        # node applies a swap before its answer reaches this process).
        answered_with = {}  # target stamp -> the joint state stamp its status names
        for s in statuses:
            v = values(s)
            for key in v.get('target_stamp', '').split(','):
                if key and v.get('joint_state_stamp'):
                    answered_with[key] = v['joint_state_stamp']
        checked = 0
        for t_sent, key in sent:
            at_least = max((index for t_swap, index in swaps if t_swap < t_sent), default=None)
            if at_least is None or answered_with.get(key) not in run_of:
                continue
            assert run_of[answered_with[key]] >= at_least, (key, described[at_least])
            checked += 1
        # Each wait after the first swap saw one such target answered (streamed_and_answered).
        assert checked >= 6, f'only {checked} answered targets could be checked'
    finally:
        halt.set()
        stop(proc)


def test_fuzzed_targets_parameter_sets_and_descriptions_over_dds_leave_the_node_valid(
        graph, tmp_path):
    """Random targets (NaN, huge, zero quaternions, unknown frames), random parameter sets
    (every declared name, values of every type) and mutated URDF texts, sent over DDS to the
    node's process: it stays alive, every output is valid, and a good target is still solved."""
    from rcl_interfaces.msg import Parameter as ParameterMsg, ParameterType, ParameterValue
    from rcl_interfaces.srv import ListParameters, SetParameters
    rng = np.random.default_rng(21)
    params = write_params(tmp_path, 'fuzz', {'urdf_file': 'leg3.urdf', 'base_link': 'base_link',
                                             'tip_link': 'foot', 'solver': 'analytic_hip_knee',
                                             'reachability_samples': 0})
    js = graph.listen(JointState, '/joint_states', 1000)
    diags = graph.diagnostics('ik_node')
    proc = start_node(params)
    set_client = graph.node.create_client(SetParameters, '/ik_node/set_parameters')
    list_client = graph.node.create_client(ListParameters, '/ik_node/list_parameters')
    chain = Chain.from_urdf_file(REPO / 'urdf' / 'leg3.urdf', 'base_link', 'foot')
    leg_xml = (REPO / 'urdf' / 'leg3.urdf').read_text()

    def call(client, request):
        assert client.wait_for_service(timeout_sec=TIMEOUT_S)
        future = client.call_async(request)
        graph.wait_for('a service answer', future.done, procs=[proc])
        return future.result()

    def random_value():
        kind = int(rng.integers(6))
        if kind == 0:
            return ParameterValue(type=ParameterType.PARAMETER_DOUBLE,
                                  double_value=float(rng.choice([-1.0, 0.0, 1e300, math.nan,
                                                                 math.inf, 0.5])))
        if kind == 1:
            return ParameterValue(type=ParameterType.PARAMETER_INTEGER,
                                  integer_value=int(rng.choice([-5, 0, 1, 2 ** 40])))
        if kind == 2:
            return ParameterValue(type=ParameterType.PARAMETER_BOOL, bool_value=True)
        if kind == 3:
            return ParameterValue(type=ParameterType.PARAMETER_STRING_ARRAY,
                                  string_array_value=['foot', ' ', 'nope'])
        if kind == 4:  # a mutated URDF text
            cut = int(rng.integers(len(leg_xml)))
            text = leg_xml[:cut] + leg_xml[cut + int(rng.integers(1, 80)):]
            return ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=text)
        return ParameterValue(type=ParameterType.PARAMETER_STRING,
                              string_value=str(rng.choice([' FABRIK ', '', 'x' * 1000, '\x00'])))
    try:
        graph.wait_for('the node', lambda: diags and js, procs=[proc])
        names = list(call(list_client, ListParameters.Request()).result.names)
        assert 'solver' in names and 'robot_description' in names
        for _ in range(60):
            name = str(rng.choice(names + ['robot_description'] * 10))
            call(set_client, SetParameters.Request(parameters=[
                ParameterMsg(name=name, value=random_value())]))
            p = rng.normal(0.0, 1.0, 3) * float(rng.choice([0.3, 1e12]))
            if rng.random() < 0.2:
                p[int(rng.integers(3))] = math.nan
            graph.send_point('/ik_node/target_point',
                             str(rng.choice(['base_link', 'thigh_link', 'nowhere', ''])), p)
        # Back to a known configuration, then a good target must be solved and published.
        call(set_client, SetParameters.Request(parameters=[ParameterMsg(
            name='robot_description',
            value=ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=leg_xml))]))
        for name, value in (('solver', 'analytic_hip_knee'), ('tip_link', 'foot'),
                            ('base_link', 'base_link')):
            call(set_client, SetParameters.Request(parameters=[ParameterMsg(
                name=name, value=ParameterValue(type=ParameterType.PARAMETER_STRING,
                                                string_value=value))]))
        target = chain.fk(np.array([0.2, -0.4, 0.9]))[:3, 3]
        key = graph.send_point('/ik_node/target_point', 'base_link', target)
        v = values(graph.answer(diags, key, procs=[proc]))
        assert v['reachable'] == 'true', v
        assert proc.poll() is None
        with graph.lock:
            for m in js:
                assert all(math.isfinite(x) for x in m.position) and len(m.name) == \
                    len(m.position)
            for s in diags:
                assert s.level in (b'\x00', b'\x01', b'\x02')
                for key_ in ('position_error_m', 'min_residual_m'):
                    text = values(s).get(key_, '')
                    assert not text or math.isfinite(float(text)), (key_, text)
    finally:
        stop(proc)
