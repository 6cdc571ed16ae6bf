"""The benchmark's ROS side: the node and the echo server as processes, a client node in this
process (its executor in a thread), requests as MoveIt's srv_kinematics_plugin sends them."""

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import rclpy
import yaml
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from moveit_msgs import srv
from rclpy.executors import SingleThreadedExecutor

from benchmarks.common.robots import SHARED_ROBOTS

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / 'shared'
#: The reference robots (``IK_NODE_ROBOTS_DIR``, by default ``../shared/robots``).
ROBOTS_DIR = SHARED_ROBOTS
#: Where the benchmark's node processes write their logs (outside the checkout).
LOGS = Path(tempfile.gettempdir())
MOVEIT_PREFIX = SHARED / 'ros_prefix' / 'moveit_msgs'
COLLISION_PREFIX = ROBOTS_DIR / 'collision_prefix'


def process_env() -> dict:
    """This environment with the checkout, moveit_msgs and the meshes' prefix."""
    env = dict(os.environ)
    site = MOVEIT_PREFIX / 'lib' / f'python{sys.version_info[0]}.{sys.version_info[1]}' / \
        'site-packages'
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(REPO), str(site),
                                                      env.get('PYTHONPATH', '')]))
    env['AMENT_PREFIX_PATH'] = os.pathsep.join(filter(None, [
        str(MOVEIT_PREFIX), str(COLLISION_PREFIX), env.get('AMENT_PREFIX_PATH', '')]))
    return env


def start_node(name: str, params: dict, log: Path) -> subprocess.Popen:
    """``python -m ik_node.node`` named ``name`` with ``params``."""
    path = Path(tempfile.mkdtemp()) / f'{name}.yaml'
    path.write_text(yaml.safe_dump({'/**': {'ros__parameters': params}}))
    out = open(log, 'w')
    return subprocess.Popen([sys.executable, '-m', 'ik_node.node', '--ros-args', '--params-file',
                             str(path), '-r', f'__node:={name}',
                             '-r', f'/joint_states:=/{name}/joint_states'],
                            cwd=REPO, env=process_env(), stdout=out, stderr=subprocess.STDOUT)


def start_echo(service: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, '-m', 'benchmarks.services.echo_server', service],
                            cwd=REPO, env=process_env())


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()


class Client:
    """A client node spun in its own thread; blocking calls from any thread."""

    def __init__(self, node_name: str) -> None:
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(f'bench_client_{os.getpid()}', context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.statuses = []
        self._name = f'{node_name}: ik'
        self.node.create_subscription(DiagnosticArray, '/diagnostics', self._on_diag, 100)
        self.targets = self.node.create_publisher(PoseStamped, f'/{node_name}/target_pose', 100)
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._running = True
        self._thread.start()

    def _spin(self):
        while self._running:
            try:
                self.executor.spin_once(timeout_sec=0.05)
            except Exception:
                if self._running:
                    raise

    def _on_diag(self, msg):
        self.statuses.extend(s for s in msg.status if s.name == self._name)

    def service(self, srv_type, name: str, wait: float = 60.0):
        client = self.node.create_client(srv_type, name)
        if not client.wait_for_service(timeout_sec=wait):
            raise RuntimeError(f'no service {name} within {wait} s')
        return client

    @staticmethod
    def call(client, request, timeout: float = 60.0):
        """(response, round trip [s])."""
        done = threading.Event()
        start = time.perf_counter()
        future = client.call_async(request)
        future.add_done_callback(lambda _: done.set())
        if not done.wait(timeout):
            raise RuntimeError(f'no answer from {client.srv_name} within {timeout} s')
        return future.result(), time.perf_counter() - start

    def close(self):
        self._running = False
        self._thread.join(5)
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


def quat_xyzw(R):
    from transforms3d.quaternions import mat2quat
    w, x, y, z = mat2quat(R)
    return [float(x), float(y), float(z), float(w)]


def plugin_request(group, names, seed, base_frame, tip, T, timeout_s=0.0):
    """``GetPositionIK`` as srv_kinematics_plugin sends it (one tip), optionally a timeout."""
    request = srv.GetPositionIK.Request()
    ik = request.ik_request
    ik.avoid_collisions = True
    ik.group_name = group
    ik.robot_state.joint_state.name = list(names)
    ik.robot_state.joint_state.position = [float(v) for v in seed]
    ik.pose_stamped.header.frame_id = base_frame
    set_pose(ik.pose_stamped.pose, T)
    ik.ik_link_name = tip
    sec = int(timeout_s)
    ik.timeout.sec, ik.timeout.nanosec = sec, int(round((timeout_s - sec) * 1e9))
    return request


def set_pose(pose, T):
    pose.position.x, pose.position.y, pose.position.z = (float(v) for v in T[:3, 3])
    o = pose.orientation
    o.x, o.y, o.z, o.w = quat_xyzw(T[:3, :3])


def solution_of(response, names):
    index = {n: i for i, n in enumerate(response.solution.joint_state.name)}
    return np.array([response.solution.joint_state.position[index[n]] for n in names])


def diag_value(status, key):
    return next((kv.value for kv in status.values if kv.key == key), '')


def cpu_ticks():
    """``(steal, idle, total)`` jiffies of all CPUs so far, from ``/proc/stat`` ((0, 0, 0)
    where it cannot be read)."""
    try:
        with open('/proc/stat') as f:
            values = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return 0, 0, 0
    values += [0] * (8 - len(values))
    # user nice system idle iowait irq softirq steal (guest, guest_nice: counted in user, nice)
    return values[7], values[3] + values[4], sum(values[:8])


def cpu_shares(before, after):
    """``(steal, busy)`` between two :func:`cpu_ticks` readings [% of all CPUs' time]: the
    hypervisor's steal, and the time the CPUs ran anything (this benchmark, its node, other
    processes)."""
    total = after[2] - before[2]
    if total <= 0:
        return float('nan'), float('nan')
    steal = after[0] - before[0]
    idle = after[1] - before[1]
    return 100.0 * steal / total, 100.0 * (total - idle - steal) / total
