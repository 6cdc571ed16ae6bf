"""What the node leaves out of an answer while nobody reads it, over real DDS: the marker arrays
are built only for a subscriber of ``~/markers``, and one that subscribes later still gets the
markers of the last answer; a fragile reached solution is WARN in its status."""

from __future__ import annotations

import threading
import time

import numpy as np

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import PointStamped
from sensor_msgs.msg import JointState
from rclpy.qos import DurabilityPolicy, QoSProfile
from visualization_msgs.msg import Marker, MarkerArray

from harness import (answers, chain_of, stamp_text, values,
                     wait_for)

#: leg3 at hip_yaw 0.004 rad inside its upper limit (1.2): reached, near a limit (fragile).
Q_NEAR_HIP_YAW_LIMIT = np.array([1.196, 0.4, -0.9])


def start_without_marker_subscriber(harness):
    """An ik node on leg3 whose marker arrays are counted as they are built, and a client that
    sends targets and records statuses and joint states (the node's timer re-publishes them:
    its ticks) but does not subscribe to ``~/markers``."""
    name, ik = harness.start_alone('leg3', reachability_samples=0)
    ns = f'/{name}'
    built = []
    result = ik._markers.result

    def counted(*args, **kwargs):
        built.append(time.monotonic())
        return result(*args, **kwargs)
    ik._markers.result = counted
    client = harness.ros.node('lean_client')
    lock = threading.Lock()
    statuses = []

    def on_diagnostics(msg):
        with lock:
            statuses.extend(s for s in msg.status if s.name == f'{name}: ik')
    client.create_subscription(DiagnosticArray, f'{ns}/diagnostics', on_diagnostics, 100)
    ticks = []
    client.create_subscription(JointState, f'{ns}/joint_states', ticks.append, 100)
    pub = client.create_publisher(PointStamped, f'{ns}/target_point', 10)
    wait_for('the target subscription', lambda: pub.get_subscription_count() > 0)
    wait_for('the idle status', lambda: statuses, lock)

    def send(xyz) -> DiagnosticStatus:
        msg = PointStamped()
        msg.header.frame_id = 'base_link'
        msg.header.stamp = client.get_clock().now().to_msg()
        msg.point.x, msg.point.y, msg.point.z = (float(v) for v in xyz)
        key = [stamp_text(msg.header)]
        pub.publish(msg)
        return wait_for('the answer', lambda: next(
            (s for s in statuses if answers(s, key)), None), lock)
    return ns, client, built, send, ticks


def test_markers_are_built_only_for_a_subscriber_and_reach_one_that_comes_later(harness):
    ns, client, built, send, ticks = start_without_marker_subscriber(harness)
    target = chain_of('leg3').fk(np.array([0.3, 0.5, -1.0]))[:3, 3]
    status = send(target)
    assert values(status)['reachable'] == 'true'
    n = len(ticks)
    wait_for("three ticks of the node's timer", lambda: len(ticks) >= n + 3)
    assert not built, 'marker arrays built while nobody subscribes to ~/markers'
    arrays = []
    client.create_subscription(
        MarkerArray, f'{ns}/markers', arrays.append,
        QoSProfile(depth=10, durability=DurabilityPolicy.TRANSIENT_LOCAL))

    def target_sphere():
        return [m for a in list(arrays) for m in a.markers
                if m.action == Marker.ADD and m.type == Marker.SPHERE and np.allclose(
                    [m.pose.position.x, m.pose.position.y, m.pose.position.z], target,
                    atol=1e-9)]
    sphere = wait_for("the last answer's target sphere, sent to the late subscriber",
                      target_sphere)
    assert sphere[-1].color.g > sphere[-1].color.r  # green: reached
    assert len(built) == 1


def test_a_fragile_reached_solution_is_warn_in_its_status(harness):
    _, _, _, send, _ = start_without_marker_subscriber(harness)
    status = send(chain_of('leg3').fk(Q_NEAR_HIP_YAW_LIMIT)[:3, 3])
    assert values(status)['reachable'] == 'true'
    assert status.level == DiagnosticStatus.WARN
    assert 'fragile: hip_yaw' in status.message


def test_joint_state_stamps_follow_the_node_clock_wall_or_sim_time(harness):
    # Wall (system) time; with use_sim_time the time of /clock; wall time again without.
    from rosgraph_msgs.msg import Clock
    from harness import random_reachable_q
    ik, probe = harness.start('leg3', reachability_samples=0)
    chain = chain_of('leg3')
    rng = np.random.default_rng(5)
    clock_pub = probe.node.create_publisher(Clock, '/clock', 10)

    def answer_stamp():
        target = chain.fk(random_reachable_q(chain, rng))[:3, 3]
        mark = probe.mark()
        probe.send_point(target)
        js = probe.joint_state_at(chain, target, mark[0])  # the first reaching the target
        return js.header.stamp.sec + js.header.stamp.nanosec * 1e-9

    before = time.time()
    stamp = answer_stamp()
    assert before <= stamp <= time.time()
    assert probe.set_param('use_sim_time', True).successful
    sim = Clock()
    sim.clock.sec, sim.clock.nanosec = 4242, 500_000_000

    def sim_clock_in_force():
        clock_pub.publish(sim)
        return ik.get_clock().now().nanoseconds == 4_242_500_000_000
    wait_for('the node clock to read /clock', sim_clock_in_force)
    assert answer_stamp() == 4242.5
    assert probe.set_param('use_sim_time', False).successful
    before = time.time()
    stamp = answer_stamp()
    assert before <= stamp <= time.time()
