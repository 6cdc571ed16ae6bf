#!/usr/bin/env python3
"""ik_node's main job: the real node, fed a scripted stream of targets by a separate client.

For each demo robot (the 3-DOF leg and the planar 4-link arm) this starts `ik_node` as its own
process with the robot's config, then a client node in this process publishes targets along a
path that leaves the reachable region and comes back, over real ROS 2 topics
(`/ik_node/target_point`). For every target it waits for the node's `/diagnostics` status and
`/joint_states`, and prints one line: reachable or not, position error, minimum residual and
solve time. Then the quadruped `quad12` trots: its four feet follow a trot's foot paths over the
ground (`gait.py`), one `geometry_msgs/PoseArray` of the four feet per step on
`/ik_node/target_poses`, a few footholds in a hole out of reach; one line per step says which
feet the node reached (one diagnostics status per foot). Finally it draws pictures (robot poses
along the path, the trot's foot paths and legs, the leg's reachability map, solver convergence)
into `demo_output/`.

Run it through `./quickstart.sh demo` (which sets up the environment), or directly with a Python
that has ik_node, rclpy and matplotlib: `python demo/main_job.py [--robots leg3 planar4]`.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ik_node import Chain  # noqa: E402

ROBOTS = {
    # robot: (config file, base link, tip link, drawing plane)
    'leg3': ('leg3.yaml', 'base_link', 'foot', 'xz'),
    'planar4': ('planar4.yaml', 'base_link', 'tip', 'xy'),
}
#: The quadruped that trots: (config file, base link, feet in the order of its tip_links).
GAIT_ROBOT = 'quad12'
GAIT = ('quad12.yaml', 'base_link', ('FL_foot', 'FR_foot', 'RL_foot', 'RR_foot'))


@dataclass
class Outcome:
    """What the node said and published for one target."""

    target: np.ndarray
    values: Dict[str, str]
    level: int
    q: Optional[np.ndarray]
    round_trip_ms: float
    tips: Optional[Dict[str, Dict[str, str]]] = None  # per foot: its own status's key-values


def target_path(robot: str, n: int) -> List[np.ndarray]:
    """A path that starts inside the reach, leaves it and comes back [m, base frame]."""
    s = np.linspace(0.0, 1.0, n)
    if robot == 'leg3':
        # Forward and down from below the hip, out past the 0.63 m reach, and back.
        out = 0.5 - 0.5 * np.cos(2 * math.pi * s)  # 0 -> 1 -> 0
        x = 0.05 + 0.62 * out
        z = -0.40 - 0.25 * out
        y = 0.12 * np.sin(2 * math.pi * s)
        return [np.array([a, b, c]) for a, b, c in zip(x, y, z)]
    # planar4: a spiral in the plane whose radius passes the 1.10 m reach and comes back.
    radius = 0.55 + 0.75 * (0.5 - 0.5 * np.cos(2 * math.pi * s))
    angle = -0.6 + 1.8 * s
    return [np.array([r * math.cos(a), r * math.sin(a), 0.0]) for r, a in zip(radius, angle)]


def config_file(name: str) -> Path:
    return REPO / 'config' / name


class DemoClient:
    """A plain rclpy client: publishes targets, collects diagnostics and joint states."""

    def __init__(self, rclpy):
        from diagnostic_msgs.msg import DiagnosticArray
        from geometry_msgs.msg import Pose, PoseArray, PointStamped
        from sensor_msgs.msg import JointState

        self.rclpy = rclpy
        self.node = rclpy.create_node('ik_demo_client')
        self.PointStamped, self.Pose, self.PoseArray = PointStamped, Pose, PoseArray
        self.pub = self.node.create_publisher(PointStamped, '/ik_node/target_point', 10)
        self.pub_poses = self.node.create_publisher(PoseArray, '/ik_node/target_poses', 10)
        self.joint_states: List = []
        self.diagnostics: List = []
        self.tip_statuses: List = []
        self._last_stamp = (0, 0)
        self.joint_names: List[str] = []
        self.node.create_subscription(JointState, '/joint_states', self._on_joint_state, 50)
        self.node.create_subscription(DiagnosticArray, '/diagnostics', self._on_diag, 50)

    def _on_joint_state(self, msg) -> None:
        if list(msg.name) == self.joint_names:  # the robot of this round only
            self.joint_states.append(msg)

    def _on_diag(self, msg) -> None:
        for status in msg.status:
            if 'ik_node' not in status.name:
                continue
            keys = {kv.key for kv in status.values}
            if 'tip' in keys:  # one status per tip of a solve of several tips
                self.tip_statuses.append(status)
            elif 'solver' in keys:
                self.diagnostics.append(status)

    def spin_until(self, predicate, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            self.rclpy.spin_once(self.node, timeout_sec=0.02)
        return predicate()

    def wait_for_node(self, timeout: float) -> bool:
        """True once the node publishes joint states and sees our target publisher."""
        return self.spin_until(
            lambda: bool(self.joint_states) and self.pub.get_subscription_count() > 0, timeout)

    def wait_for_poses_subscriber(self, timeout: float) -> bool:
        """True once the node subscribes to ``/ik_node/target_poses``."""
        return self.spin_until(lambda: self.pub_poses.get_subscription_count() > 0, timeout)

    def _next_stamp(self):
        stamp = self.node.get_clock().now().to_msg()
        if stamp.sec == self._last_stamp[0] and stamp.nanosec <= self._last_stamp[1]:
            stamp.nanosec = self._last_stamp[1] + 1  # unique even on a coarse clock
        self._last_stamp = (stamp.sec, stamp.nanosec)
        return stamp, f'{stamp.sec}.{stamp.nanosec:09d}'

    def send_feet(self, targets: Dict[str, np.ndarray], feet, frame: str,
                  timeout: float = 5.0) -> Optional[Outcome]:
        """Send every foot's target in one PoseArray (poses in ``feet`` order, orientations all
        zeros: position targets) and wait for the status that answers it, each foot's own
        status and the JointState it names."""
        msg = self.PoseArray()
        msg.header.frame_id = frame
        msg.header.stamp, key = self._next_stamp()
        for foot in feet:
            pose = self.Pose()
            pose.position.x, pose.position.y, pose.position.z = (float(v) for v in targets[foot])
            pose.orientation.w = 0.0
            msg.poses.append(pose)
        start = time.perf_counter()
        self.pub_poses.publish(msg)
        outcome = self._answer(key, np.array([targets[f] for f in feet]), start, timeout)
        if outcome is None:
            return None

        def tips():
            found = {}
            for status in self.tip_statuses:
                values = {kv.key: kv.value for kv in status.values}
                if values.get('target_stamp') == key:
                    found[values['tip']] = values
            return found if len(found) == len(feet) else None
        if self.spin_until(lambda: tips() is not None, 2.0):
            outcome.tips = tips()
        return outcome

    def send(self, target: np.ndarray, frame: str, timeout: float = 5.0) -> Optional[Outcome]:
        """Send one target and wait for the status that answers it.

        The answer is matched by the target's header stamp, which the node echoes as
        ``target_stamp``; the idle status, heartbeats and answers to earlier targets carry
        another stamp. The joint state is the one whose stamp the answer names.
        """
        msg = self.PointStamped()
        msg.header.frame_id = frame
        msg.header.stamp, key = self._next_stamp()
        msg.point.x, msg.point.y, msg.point.z = (float(v) for v in target)
        start = time.perf_counter()
        self.pub.publish(msg)
        return self._answer(key, target, start, timeout)

    def _answer(self, key: str, target: np.ndarray, start: float,
                timeout: float) -> Optional[Outcome]:
        """The status answering the target stamped ``key``, and the JointState it names."""
        def answer():
            for status in reversed(self.diagnostics):
                values = {kv.key: kv.value for kv in status.values}
                if key in values.get('target_stamp', '').split(','):
                    return status, values
            return None

        if not self.spin_until(lambda: answer() is not None, timeout):
            return None
        round_trip = (time.perf_counter() - start) * 1e3
        status, values = answer()
        js_key = values.get('joint_state_stamp', '')

        def joint_state():
            for js in reversed(self.joint_states):
                if f'{js.header.stamp.sec}.{js.header.stamp.nanosec:09d}' == js_key:
                    return js
            return None
        q = None
        if js_key and self.spin_until(lambda: joint_state() is not None, 2.0):
            q = np.array(joint_state().position)
        level = status.level if isinstance(status.level, int) else ord(status.level)
        return Outcome(target, values, level, q, round_trip)

    def close(self) -> None:
        self.node.destroy_node()


def start_node(config: Path, log_path: Path) -> subprocess.Popen:
    log = open(log_path, 'w')
    return subprocess.Popen(
        [sys.executable, '-m', 'ik_node.node', '--ros-args', '--params-file', str(config)],
        stdout=log, stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True)


def stop_node(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def fmt(values: Dict[str, str], key: str, scale: float = 1.0, digits: int = 3) -> str:
    try:
        value = float(values.get(key, 'nan'))
    except ValueError:
        return values.get(key, '-') or '-'
    if not math.isfinite(value):
        return '-'
    return f'{value * scale:.{digits}f}'


def run_robot(client: DemoClient, robot: str, n_targets: int, out_dir: Path) -> List[Outcome]:
    config, base, tip, _ = ROBOTS[robot]
    print(f'\n== {robot}: starting ik_node with config/{config} ==', flush=True)
    proc = start_node(config_file(config), out_dir / f'ik_node_{robot}.log')
    outcomes: List[Outcome] = []
    try:
        client.joint_states.clear()
        client.diagnostics.clear()
        client.joint_names = Chain.from_urdf_file(REPO / 'urdf' / f'{robot}.urdf', base,
                                                  tip).joint_names
        if not client.wait_for_node(timeout=30.0):
            print(f'ik_node for {robot} did not come up; see {out_dir}/ik_node_{robot}.log')
            return outcomes
        header = (f'{"#":>3}  {"target x, y, z [m]":<24} {"reachable":<9} {"status":<14} '
                  f'{"pos err [mm]":>12} {"min resid [mm]":>14} {"solve [ms]":>10}')
        print(f'targets in frame {base}, solved for tip {tip}')
        print(header)
        print('-' * len(header))
        for i, target in enumerate(target_path(robot, n_targets)):
            outcome = client.send(target, base)
            if outcome is None:
                print(f'{i:>3}  no answer from ik_node within 5 s')
                continue
            outcomes.append(outcome)
            v = outcome.values
            xyz = ', '.join(f'{c:+.3f}' for c in target)
            print(f'{i:>3}  {xyz:<24} {v.get("reachable", "?"):<9} {v.get("status", "?"):<14} '
                  f'{fmt(v, "position_error_m", 1e3):>12} {fmt(v, "min_residual_m", 1e3):>14} '
                  f'{fmt(v, "solve_time_ms", 1.0):>10}'
                  + (f'  {v.get("message", "")}' if v.get('status') == 'error' else ''),
                  flush=True)
        if outcomes:
            solver = outcomes[0].values.get('solver', '?')
            reached = sum(o.values.get('reachable') == 'true' for o in outcomes)
            print(f'{robot}: solver {solver}: {reached}/{len(outcomes)} targets reached; '
                  'the others are out of reach and got the closest pose (status says why)')
    finally:
        stop_node(proc)
    return outcomes


def run_gait(client: DemoClient, steps: int, out_dir: Path) -> List[Outcome]:
    """quad12 trots: one PoseArray of the four feet per gait step, one line per answer."""
    import gait
    config, base, feet = GAIT
    print(f'\n== {GAIT_ROBOT}: starting ik_node with config/{config} ==', flush=True)
    proc = start_node(config_file(config), out_dir / f'ik_node_{GAIT_ROBOT}.log')
    chain = Chain.from_urdf_file(REPO / 'urdf' / f'{GAIT_ROBOT}.urdf', base, list(feet))
    outcomes: List[Outcome] = []
    try:
        client.joint_states.clear()
        client.diagnostics.clear()
        client.tip_statuses.clear()
        client.joint_names = chain.joint_names
        if not client.spin_until(lambda: bool(client.joint_states), 30.0) or \
                not client.wait_for_poses_subscriber(timeout=10.0):
            print(f'ik_node for {GAIT_ROBOT} did not come up; see '
                  f'{out_dir}/ik_node_{GAIT_ROBOT}.log')
            return outcomes
        trot = gait.trot(chain, steps, rate_hz=steps / 1.6, period_s=0.8)
        print(f'a trot over 2 cycles: every foot\'s target in frame {base} in one PoseArray on '
              '/ik_node/target_poses; ok = the foot reached its target, -- = not reached')
        header = f'{"#":>3}  {"t [s]":>5}  ' + '  '.join(f'{f:<10}' for f in feet) + \
            '  status          solve [ms]'
        print(header)
        print('-' * len(header))
        for i, step in enumerate(trot):
            outcome = client.send_feet(step.targets, feet, base)
            if outcome is None:
                print(f'{i:>3}  no answer from ik_node within 5 s')
                continue
            outcome.target = step
            outcomes.append(outcome)
            marks = '  '.join(f'{_mark(outcome, step, f):<10}' for f in feet)
            v = outcome.values
            print(f'{i:>3}  {step.t:5.2f}  {marks}  {v.get("status", "?"):<14}  '
                  f'{fmt(v, "solve_time_ms", 1.0):>10}', flush=True)
        missed_holes = sum(tips_reached(o, f) for o in outcomes for f in feet
                           if o.target.far[f])
        reached = sum(tips_reached(o, f) for o in outcomes for f in feet
                      if not o.target.far[f])
        others = sum(1 for o in outcomes for f in feet if not o.target.far[f])
        print(f'{GAIT_ROBOT}: solver {outcomes[0].values.get("solver", "?") if outcomes else "?"}'
              f': {reached}/{others} foot targets on the ground path reached; '
              f'{missed_holes} of the footholds in the hole reached (they are out of reach)')
    finally:
        stop_node(proc)
    return outcomes


def _mark(outcome: Outcome, step, foot: str) -> str:
    """``ok`` or ``--`` (reached or not), ``hole`` after a foothold out of reach on purpose."""
    return ('ok' if tips_reached(outcome, foot) else '--') + (' hole' if step.far[foot] else '')


def tips_reached(outcome: Outcome, foot: str) -> bool:
    """Whether the node said ``foot`` reached its target in ``outcome``."""
    return (outcome.tips or {}).get(foot, {}).get('reachable') == 'true'


def draw_pictures(results: Dict[str, List[Outcome]], out_dir: Path) -> None:
    try:
        import pictures
    except ImportError as exc:  # matplotlib missing: the table is still the main output
        print(f'\n(no pictures: {exc}; install matplotlib, e.g. pip install ".[demo]")')
        return
    print('\n== pictures ==', flush=True)
    chains = {}
    for robot, (_, base, tip, plane) in ROBOTS.items():
        if robot not in results:
            continue
        chain = Chain.from_urdf_file(REPO / 'urdf' / f'{robot}.urdf', base, tip)
        chains[robot] = chain
        outcomes = [o for o in results.get(robot, []) if o.q is not None]
        if not outcomes:
            continue
        path = out_dir / f'{robot}_path.png'
        pictures.plot_pose_sequence(
            chain, [o.q for o in outcomes], [o.target for o in outcomes],
            [o.values.get('reachable') == 'true' for o in outcomes],
            f'{robot}: poses published by ik_node along a target path', path, plane=plane)
        print(f'wrote {path}', flush=True)
    trot = [o for o in results.get(GAIT_ROBOT, []) if o.q is not None]
    if trot:
        _, base, feet = GAIT
        quad = Chain.from_urdf_file(REPO / 'urdf' / f'{GAIT_ROBOT}.urdf', base, list(feet))
        path = out_dir / f'{GAIT_ROBOT}_gait.png'
        pictures.plot_gait(quad, [o.target.targets for o in trot], [o.q for o in trot],
                           [{f: tips_reached(o, f) for f in feet} for o in trot],
                           f'{GAIT_ROBOT}: a trot through ik_node (/ik_node/target_poses)', path)
        print(f'wrote {path}', flush=True)
    if 'leg3' not in chains:
        return
    path = out_dir / 'leg3_reachability.png'
    print('computing the leg\'s reachability map ...', flush=True)
    pictures.plot_reachability_map(chains['leg3'], path)
    print(f'wrote {path}', flush=True)
    path = out_dir / 'reachability_maps.png'
    print('building the sampled reachability maps of leg3 and arm6 ...', flush=True)
    from ik_node.config.node_config import build_chain, load_config
    arm6 = build_chain(load_config(REPO / 'config' / 'arm6.yaml'))  # base and tip from there
    maps = pictures.plot_sampled_reachability(chains['leg3'], arm6, path)
    print(f'wrote {path}', flush=True)
    for robot, reach_map in maps.items():
        print(f'  {robot}: {reach_map}')
    path = out_dir / 'convergence.png'
    finals = pictures.plot_convergence(path, chains['leg3'], chains['planar4'])
    print(f'wrote {path}', flush=True)
    for name, err in (finals or {}).items():
        print(f'  {err:9.2e} m  final position error of {name}')


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--robots', nargs='+', default=list(ROBOTS) + [GAIT_ROBOT],
                        choices=list(ROBOTS) + [GAIT_ROBOT])
    parser.add_argument('--targets', type=int, default=16, help='targets per robot')
    parser.add_argument('--gait-steps', type=int, default=40,
                        help=f'PoseArrays of the {GAIT_ROBOT} trot (two gait cycles)')
    parser.add_argument('--out', type=Path, default=REPO / 'demo_output')
    parser.add_argument('--no-pictures', action='store_true')
    parser.add_argument('--domain-id', type=int, default=None,
                        help='ROS_DOMAIN_ID to run on (default: a private one, so other ROS 2 '
                             'programs on this machine neither disturb nor see the demo)')
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    domain = args.domain_id if args.domain_id is not None else 1 + os.getpid() % 100
    os.environ['ROS_DOMAIN_ID'] = str(domain)
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    print(f'ROS_DOMAIN_ID={domain}; node logs and pictures go to {args.out}', flush=True)

    import rclpy

    rclpy.init()
    client = DemoClient(rclpy)
    results: Dict[str, List[Outcome]] = {}
    try:
        for robot in args.robots:
            if robot == GAIT_ROBOT:
                results[robot] = run_gait(client, args.gait_steps, args.out)
            else:
                results[robot] = run_robot(client, robot, args.targets, args.out)
    except KeyboardInterrupt:
        print('interrupted')
        return 130
    finally:
        client.close()
        rclpy.try_shutdown() if hasattr(rclpy, 'try_shutdown') else rclpy.shutdown()
    if not args.no_pictures:
        draw_pictures(results, args.out)
    answered = sum(len(v) for v in results.values())
    expected = sum(args.gait_steps if robot == GAIT_ROBOT else args.targets
                   for robot in args.robots)
    print(f'\n{answered}/{expected} targets answered by ik_node; output in {args.out}')
    return 0 if answered == expected else 1


if __name__ == '__main__':
    os.environ.setdefault('RCUTILS_COLORIZED_OUTPUT', '0')
    sys.exit(main())
