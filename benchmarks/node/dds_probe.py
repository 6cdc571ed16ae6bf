"""The two ends of ``benchmarks.node.latency`` on DDS: the target publisher (this process) and
the recorder of ``/joint_states`` and ``/diagnostics`` (a process of its own), and the readings
of the node's CPU and the hypervisor's steal from ``/proc``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import List

import numpy as np


def cpu_seconds(pid: int) -> float:
    fields = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def steal_jiffies() -> tuple:
    """(steal, total) jiffies of all CPUs from /proc/stat ((0, 0) where there is none): the
    time the hypervisor gave this virtual machine's CPUs to others."""
    try:
        with open('/proc/stat') as f:
            values = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    return (values[7] if len(values) > 7 else 0), sum(values)


def stamp_ns(text: str) -> int:
    """``'sec.nanosec'`` (the node's ``target_stamp`` / ``joint_state_stamp`` text) as ns."""
    sec, _, nsec = text.partition('.')
    return int(sec) * 1_000_000_000 + int(nsec or 0)


def recorder_main(conn, domain: int) -> None:
    """Child process: record /joint_states, and the node's skip count and stamp pairs from
    /diagnostics.

    Commands on ``conn``: 'count' -> number of JointStates recorded, 'reset' (-> skip count),
    'collect' -> (JointStates as (receive time, header stamp [ns], positions), skip count,
    diagnostics' (target_stamp, joint_state_stamp) pairs), 'stop'. Receiving in its own process
    keeps the publisher's pacing and the receive callbacks from competing for one interpreter
    lock.
    """
    os.environ['ROS_DOMAIN_ID'] = str(domain)
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState

    from ik_node.ros.app.run import make_executor
    rclpy.init()
    node = rclpy.create_node('ik_latency_recorder')
    received: List = []
    pairs: List = []
    skipped = [None]

    def on_joints(msg):
        stamp = msg.header.stamp
        received.append((time.monotonic_ns(), stamp.sec * 1_000_000_000 + stamp.nanosec,
                         tuple(msg.position)))

    def on_diag(msg):
        for status in msg.status:
            values = {kv.key: kv.value for kv in status.values}
            if values.get('skipped_targets'):
                skipped[0] = int(values['skipped_targets'])
            if values.get('target_stamp') and values.get('joint_state_stamp'):
                pairs.append((values['target_stamp'], values['joint_state_stamp']))

    node.create_subscription(JointState, '/joint_states', on_joints,
                             QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))
    node.create_subscription(DiagnosticArray, '/diagnostics', on_diag, 100)
    executor = make_executor()  # the node's own choice: events where rclpy has them
    executor.add_node(node)
    try:
        while True:
            executor.spin_once(timeout_sec=0.01)
            if not conn.poll():
                continue
            cmd = conn.recv()
            if cmd == 'count':
                conn.send(len(received))
            elif cmd == 'reset':
                received.clear()
                pairs.clear()
                conn.send(skipped[0])
            elif cmd == 'collect':
                conn.send((list(received), skipped[0], list(pairs)))
            elif cmd == 'stop':
                break
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


class Recorder:
    """Handle on the recorder process."""

    def __init__(self, domain: int):
        import multiprocessing
        ctx = multiprocessing.get_context('spawn')
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=recorder_main, args=(child, domain), daemon=True)
        self.proc.start()

    def ask(self, cmd: str):
        self.conn.send(cmd)
        return self.conn.recv()

    def close(self):
        try:
            self.conn.send('stop')
        except Exception:
            pass
        self.proc.join(timeout=5)
        if self.proc.is_alive():
            self.proc.terminate()


class Publisher:
    """Target publishers of this process, paced by sleeping to each send time.

    Every target is stamped with the wall clock [ns] just before it is published, made strictly
    greater than the previous stamp of this publisher, so a stamp names one target.
    """

    def __init__(self, base_link: str):
        import rclpy
        from geometry_msgs.msg import Pose, PoseArray, PointStamped, PoseStamped
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        self.PointStamped, self.PoseStamped = PointStamped, PoseStamped
        self.Pose, self.PoseArray = Pose, PoseArray
        self.base_link = base_link
        self.node = rclpy.create_node('ik_latency_publisher')
        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        self.pub_point = self.node.create_publisher(PointStamped, '/ik_node/target_point', qos)
        self.pub_pose = self.node.create_publisher(PoseStamped, '/ik_node/target_pose', qos)
        self.pub_poses = self.node.create_publisher(PoseArray, '/ik_node/target_poses', qos)
        self._last_stamp_ns = 0

    def messages(self, positions: np.ndarray, quats) -> List:
        """One message per target: positions ``(n, 3)`` (PointStamped, or PoseStamped with
        ``quats``), or ``(n, tips, 3)`` (one PoseArray per target, poses in tip order, each
        orientation all zeros: position only)."""
        positions = np.asarray(positions, dtype=float)
        if positions.ndim == 3:
            out = []
            for feet in positions:
                msg = self.PoseArray()
                msg.header.frame_id = self.base_link
                for p in feet:
                    pose = self.Pose()
                    pose.position.x, pose.position.y, pose.position.z = (float(v) for v in p)
                    pose.orientation.w = 0.0
                    msg.poses.append(pose)
                out.append(msg)
            return out
        out = []
        for k, p in enumerate(positions):
            if quats is None:
                msg = self.PointStamped()
                msg.point.x, msg.point.y, msg.point.z = (float(v) for v in p)
            else:
                msg = self.PoseStamped()
                msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = \
                    (float(v) for v in p)
                o = msg.pose.orientation
                o.x, o.y, o.z, o.w = (float(v) for v in quats[k])
            msg.header.frame_id = self.base_link
            out.append(msg)
        return out

    def publish_paced(self, msgs, rate_hz: float):
        """Publish ``msgs`` at ``rate_hz``; (send times by ``time.monotonic_ns``, their unique
        header stamps = wall-clock send times [ns])."""
        pub = (self.pub_point if isinstance(msgs[0], self.PointStamped) else
               self.pub_poses if isinstance(msgs[0], self.PoseArray) else self.pub_pose)
        period = 1e9 / rate_hz
        sent = np.zeros(len(msgs), dtype=np.int64)
        stamps = np.zeros(len(msgs), dtype=np.int64)
        t0 = time.monotonic_ns()
        for k, msg in enumerate(msgs):
            wait = t0 + k * period - time.monotonic_ns()
            if wait > 0:
                time.sleep(wait * 1e-9)
            stamp = max(time.time_ns(), self._last_stamp_ns + 1)
            self._last_stamp_ns = stamp
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp, 1_000_000_000)
            sent[k], stamps[k] = time.monotonic_ns(), stamp
            pub.publish(msg)
        return sent, stamps

    def close(self):
        self.node.destroy_node()
