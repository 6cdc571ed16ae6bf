#!/usr/bin/env python3
"""Latency of the running ik_node: target published -> /joint_states received.

Starts the node (``benchmarks/traced_node.py --ros-args --params-file config/<robot>.yaml``:
ik_node's ``main`` with a trace of every answer) as a subprocess on a private DDS domain
(localhost only), then publishes targets from this process at each rate (default 100 Hz and
1 kHz) for a fixed time, while a recorder process records every /joint_states message.

Matching, by stamp: every target carries a unique header stamp (its wall-clock send time). The
node is started through ``benchmarks/traced_node.py``, which records for every solve the pair of
stamps its diagnostics carry (``target_stamp``, ``joint_state_stamp``: /diagnostics publishes
them only at ``diagnostics_rate``) and writes them out when the node ends; the recorder process
receives the JointState with that ``joint_state_stamp``. So every answer is timed, reachable or
not. Latency = receive time - publish time of the target, both by ``time.monotonic_ns`` (one
system clock for both processes); node-side latency = the JointState's stamp (the node's clock)
- the target's stamp (this process's wall clock). Reported for the targets in reach, those pushed
out of reach (``--out-of-reach``), and pooled; also the solver's own solve time of each. A target
never answered was skipped (the node solves the newest target only, and its subscription keeps
one message); the node's own count is read from /diagnostics (key ``skipped_targets``).
Node CPU = its utime + stime from /proc/<pid>/stat over the phase's wall time (100 % = one core).
A growing backlog would show as latency rising during the phase: the slope of a line fitted to
latency against send time is reported.

Usage::

    python benchmarks/bench_node_latency.py                    # leg3 and arm6, 10 s per rate
    python benchmarks/bench_node_latency.py --configs leg3 arm6 --rates 1000 --duration 5 \
        --out-of-reach 0.5 --repeat 3                          # half the stream out of reach
    python benchmarks/bench_node_latency.py --configs quad12 --rates 1000 --duration 5 \
        --repeat 3 --stem node_latency_quad12                  # four feet, one PoseArray each

A config naming several tips (``tip_links``) is sent one ``geometry_msgs/PoseArray`` per target
on ``~/target_poses``: every tip's position from a smooth joint-space path, orientations all
zeros (position only); its answer is one JointState.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if (REPO / 'ik_node').is_dir() and str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

import target_checks  # noqa: E402

MATCH_TOLERANCE_M = 1e-4
TARGET_P99_MS = 3.0


def log(msg: str) -> None:
    print(msg, flush=True)


def read_config(path: Path) -> Dict[str, Any]:
    import yaml
    params = yaml.safe_load(path.read_text())['ik_node']['ros__parameters']
    return params


def trajectory(chain, n: int, rate_hz: float, speed_scale: float, rng_seed: int = 0):
    """``n`` configurations of a smooth joint-space path sampled at ``rate_hz``.

    Every joint moves sinusoidally within the middle 60 % of its range, at its own frequency
    (0.3 .. 0.7 Hz times ``speed_scale``), so the tip never rests.
    """
    rng = np.random.default_rng(rng_seed)
    lo = np.where(np.isfinite(chain.lower), chain.lower, -math.pi)
    hi = np.where(np.isfinite(chain.upper), chain.upper, math.pi)
    mid, amp = 0.5 * (lo + hi), 0.3 * (hi - lo)
    freq = rng.uniform(0.3, 0.7, chain.n) * speed_scale
    phase = rng.uniform(0, 2 * math.pi, chain.n)
    t = np.arange(n)[:, None] / rate_hz
    return mid + amp * np.sin(2 * math.pi * freq * t + phase)


def out_of_reach_mask(n: int, rate_hz: float, share: float, period_s: float = 2.0) -> np.ndarray:
    """Which of ``n`` targets sent at ``rate_hz`` :func:`leave_reach` pushes out of reach: the
    last ``share`` of every ``period_s`` window."""
    if share <= 0.0:
        return np.zeros(n, dtype=bool)
    t = np.arange(n) / rate_hz
    return (t % period_s) >= (1.0 - share) * period_s


def leave_reach(chain, targets: np.ndarray, rate_hz: float, share: float,
                period_s: float = 2.0) -> np.ndarray:
    """``targets`` with the stream out of reach ``share`` of the time (0: unchanged).

    In each ``period_s`` window the last ``share`` of the time (:func:`out_of_reach_mask`) the
    target is pushed along the ray from the chain's first joint to 1.05-1.25 times its summed
    bone lengths (provably out of reach; the factor drifts smoothly), as a teleop target leaving
    the workspace and coming back.
    """
    if share <= 0.0:
        return targets
    from ik_node.model.chain import chain_lengths
    origin = chain.joint_frames(np.zeros(chain.n))[0, :3, 3]
    reach = float(sum(chain_lengths(chain)))
    t = np.arange(len(targets)) / rate_hz
    out_now = out_of_reach_mask(len(targets), rate_hz, share, period_s)
    d = targets - origin
    factor = reach * (1.15 + 0.1 * np.sin(2 * math.pi * t / (3.1 * period_s)))
    pushed = origin + d / np.linalg.norm(d, axis=1)[:, None] * factor[:, None]
    return np.where(out_now[:, None], pushed, targets)


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


def _percentiles(values: np.ndarray, prefix: str) -> Dict[str, Any]:
    if not values.size:
        return {f'{prefix}_p50_ms': None, f'{prefix}_p99_ms': None, f'{prefix}_max_ms': None}
    return {f'{prefix}_p50_ms': float(np.percentile(values, 50)),
            f'{prefix}_p99_ms': float(np.percentile(values, 99)),
            f'{prefix}_max_ms': float(values.max())}


def analyse(out_mask: np.ndarray, sent: np.ndarray, stamps: np.ndarray, received,
            answers: Dict[int, tuple], diag_pairs) -> Dict[str, Any]:
    """Match answers to targets by stamp; latency per kind of target, skipped, backlog slope.

    ``answers`` (the node's trace): target stamp [ns] -> (JointState stamp [ns], reached,
    solve time [s], status). ``received``: the recorder's (receive time, JointState stamp,
    positions). End-to-end latency = recorder receive time of the answering JointState - send
    time (monotonic clock); node side = the JointState's stamp - the target's stamp (both the
    wall clock: when the node published - when this process published).
    """
    n = len(stamps)
    receive_by_stamp = {stamp: t for t, stamp, _ in received}
    e2e = np.full(n, np.nan)
    node_side = np.full(n, np.nan)
    solve_ms = np.full(n, np.nan)
    reached = np.zeros(n, dtype=bool)
    answered = np.zeros(n, dtype=bool)
    not_received = 0
    for k, stamp in enumerate(stamps.tolist()):
        answer = answers.get(stamp)
        if answer is None:
            continue
        js_stamp, ok, solve_s, _ = answer
        answered[k], reached[k], solve_ms[k] = True, ok, solve_s * 1e3
        node_side[k] = (js_stamp - stamp) * 1e-6
        t = receive_by_stamp.get(js_stamp)
        if t is None:
            not_received += 1
        else:
            e2e[k] = (t - sent[k]) * 1e-6
    # the node's own echo in /diagnostics (the statuses its rate gate let through) must agree
    mine = set(stamps.tolist())
    checked = [(stamp_ns(t), stamp_ns(j)) for t, j in diag_pairs if ',' not in t]
    checked = [(t, j) for t, j in checked if t in mine]
    mismatched = sum(1 for t, j in checked if answers.get(t, (None,))[0] != j)
    # runs of consecutive unanswered targets: many short ones = steady overload, few long ones =
    # stalls (of the node, or of this machine)
    gaps, run = [], 0
    for ok in answered:
        if ok:
            if run:
                gaps.append(run)
            run = 0
        else:
            run += 1
    if run:
        gaps.append(run)
    out: Dict[str, Any] = {
        'sent': n, 'sent_out_of_reach': int(out_mask.sum()),
        'answered': int(answered.sum()), 'answered_out_of_reach': int((answered & out_mask).sum()),
        'not_answered': int((~answered).sum()),
        'answers_not_received': not_received,
        'reported_reached_in_reach': int((reached & ~out_mask).sum()),
        'reported_reached_out_of_reach': int((reached & out_mask).sum()),
        'diagnostics_pairs_checked': len(checked), 'diagnostics_pairs_mismatched': mismatched,
        'unanswered_runs': len(gaps), 'longest_unanswered_run': max(gaps, default=0),
        'achieved_rate_hz': (n - 1) / ((sent[-1] - sent[0]) * 1e-9) if n > 1 else None}
    timed = ~np.isnan(e2e)
    for kind, mask in (('', np.ones(n, dtype=bool)), ('in_reach_', ~out_mask),
                       ('out_of_reach_', out_mask)):
        out.update(_percentiles(e2e[timed & mask], f'{kind}latency'))
        out.update(_percentiles(node_side[answered & mask], f'{kind}node_side'))
        out.update(_percentiles(solve_ms[answered & mask], f'{kind}solve'))
    solved = answered & ~np.isnan(solve_ms)
    out['solve_mean_ms'] = float(solve_ms[solved].mean()) if solved.any() else None
    if timed.any():
        lat = e2e[timed]
        ts = (sent[timed] - sent[0]) * 1e-9
        first, last = lat[ts < 1.0], lat[ts > ts.max() - 1.0]
        out.update({
            'latency_mean_ms': float(lat.mean()),
            'backlog_slope_ms_per_s': float(np.polyfit(ts, lat, 1)[0]) if lat.size > 2 else 0.0,
            'median_first_second_ms': float(np.median(first)) if first.size else None,
            'median_last_second_ms': float(np.median(last)) if last.size else None,
        })
    return out


def wait_for_answers(chain, publisher, recorder, pose: bool, log_path: Path) -> None:
    """Send one target every 0.1 s until the node answers it (DDS discovery of our publisher
    can take seconds; targets sent before it completes are lost and would count as skipped).
    The target is reachable, so its answer is recognised by FK."""
    q = trajectory(chain, 1, 10.0, 1.0, rng_seed=99)
    if len(chain.tip_links) > 1:
        return _wait_for_tree_answers(chain, q[0], publisher, recorder, log_path)
    T = chain.fk(q)
    quats = None
    if pose:
        import transforms3d
        quats = [np.roll(transforms3d.quaternions.mat2quat(T[0, :3, :3]), -1)]
    msgs = publisher.messages(T[:, :3, 3], quats)
    recorder.ask('reset')
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        publisher.publish_paced(msgs, 10.0)
        time.sleep(0.1)
        received, _, _ = recorder.ask('collect')
        for _, _, positions in received:
            p = chain.fk(np.asarray(positions))[:3, 3]
            if np.linalg.norm(p - T[0, :3, 3]) < MATCH_TOLERANCE_M:
                return
    raise RuntimeError(f'the node answered no target in 30 s; see {log_path}')


def wait_for_relay(chain, publisher, recorder, pose: bool, proc, log_path: Path) -> None:
    """:func:`wait_for_answers` for the relay: it publishes nothing but answers, so any
    JointState received is one."""
    q = trajectory(chain, 1, 10.0, 1.0, rng_seed=99)
    if len(chain.tip_links) > 1:
        msgs = publisher.messages(tip_positions(chain, q), None)
    else:
        msgs = publisher.messages(chain.fk(q)[:, :3, 3], [[0.0, 0.0, 0.0, 1.0]] if pose else None)
    recorder.ask('reset')
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f'relay exited with {proc.returncode}; see {log_path}')
        publisher.publish_paced(msgs, 10.0)
        time.sleep(0.1)
        if recorder.ask('count'):
            return
    raise RuntimeError(f'the relay answered no target in 30 s; see {log_path}')


def wait_for_map(params: Dict[str, Any], node_params: List[str], log_path: Path,
                 timeout_s: float = 180.0) -> None:
    """Wait until the node has published its reachability map (its log says so), unless
    ``reachability_samples`` is 0: the map is built in a thread of the node after start-up, a
    one-off cost that would otherwise fall into the first phases' CPU per answer."""
    samples = next((p.split(':=', 1)[1] for p in node_params
                    if p.startswith('reachability_samples:=')),
                   params.get('reachability_samples', 1))
    if int(samples) == 0:
        return
    deadline = time.monotonic() + timeout_s
    while 'reachability map published' not in log_path.read_text():
        if time.monotonic() > deadline:
            raise RuntimeError(f'no reachability map in {timeout_s:g} s; see {log_path}')
        time.sleep(0.2)


def wait_for_kernels(log_path: Path, timeout_s: float = 120.0) -> str:
    """Wait until the node's solvers run on the path that serves from then on: the last
    ``solver path:`` line of its log says no longer that compiled kernels load in the
    background (they are compiled or loaded in a thread of the node, a one-off cost). Returns
    that line ('' without one), or the line with ``(still loading)`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        lines = [ln for ln in log_path.read_text().splitlines() if 'solver path:' in ln]
        last = lines[-1].split('solver path:', 1)[1].strip() if lines else ''
        if 'background' not in last:
            return last
        if time.monotonic() > deadline:
            return f'{last} (still loading)'
        time.sleep(0.2)


def tip_positions(chain, q: np.ndarray) -> np.ndarray:
    """``(n, tips, 3)``: every tip's position [m] at each configuration of ``q`` ``(n, dof)``."""
    return np.stack([chain.fk(q, tip)[..., :3, 3] for tip in chain.tip_links], axis=1)


def _wait_for_tree_answers(chain, q: np.ndarray, publisher, recorder, log_path: Path) -> None:
    """:func:`wait_for_answers` for a chain with several tips: one PoseArray of every tip's
    position at ``q``, recognised by FK of every tip."""
    feet = tip_positions(chain, q[None, :])
    msgs = publisher.messages(feet, None)
    recorder.ask('reset')
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        publisher.publish_paced(msgs, 10.0)
        time.sleep(0.1)
        received, _, _ = recorder.ask('collect')
        for _, _, positions in received:
            got = tip_positions(chain, np.asarray(positions)[None, :])
            if np.max(np.linalg.norm(got - feet, axis=2)) < MATCH_TOLERANCE_M:
                return
    raise RuntimeError(f'the node answered no target in 30 s; see {log_path}')


def read_trace(path: Path) -> Dict[int, tuple]:
    """The traced node's answers: target stamp [ns] -> (JointState stamp [ns], reached, solve
    time [s], status). A branched solve answers several targets (comma-separated stamps)."""
    answers = {}
    for targets, js_stamp, reached, solve_s, status in json.loads(path.read_text()):
        if not js_stamp:
            continue
        for target in targets.split(','):
            answers[stamp_ns(target)] = (stamp_ns(js_stamp), reached, solve_s, status)
    return answers


def run_config(name: str, args, domain: int, relay: bool = False) -> Dict[str, Any]:
    """One node (``relay``: the relay of ``relay_node.py`` instead) with config ``name``, every
    rate of ``args`` in turn; its phases' figures."""
    import ik_node
    config_file = REPO / 'config' / f'{name}.yaml'
    params = read_config(config_file)
    urdf = Path(params['urdf_file'])
    if not urdf.is_absolute():
        urdf = REPO / 'urdf' / urdf.name
    tips = params.get('tip_links') or [params['tip_link']]
    chain = ik_node.Chain.from_urdf_file(urdf, params['base_link'],
                                         tips if len(tips) > 1 else tips[0])
    several = len(tips) > 1  # one PoseArray of every tip's position per target
    solver = next((p.split(':=', 1)[1] for p in args.node_param if p.startswith('solver:=')),
                  params['solver'])  # a --node-param solver:=... overrides the config's
    pose = solver != 'analytic_hip_knee' and chain.n >= 6 and not args.points and \
        not several
    kind = 'relay' if relay else 'node'
    trace_path = args.out / f'trace_{name}_{kind}.json'
    trace_path.unlink(missing_ok=True)
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain), ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST',
               IK_NODE_TRACE=str(trace_path),
               PYTHONPATH=os.pathsep.join([str(REPO if relay else args.node_repo or REPO)] + [
                   p for p in [os.environ.get('PYTHONPATH')] if p]))
    if args.profile and not relay:
        env['IK_NODE_PROFILE'] = str(args.out / f'profile_{name}.pstats')
    log_path = args.out / f'{kind}_{name}.log'
    with open(log_path, 'w') as node_log:
        extra = [a for p in args.node_param for a in ('-p', p)]
        command = [sys.executable, str(HERE / 'relay_node.py'), str(config_file)] if relay \
            else [sys.executable, str((args.node_repo or REPO) / 'benchmarks' / 'traced_node.py'),
                  '--ros-args', '--params-file',
                  str(config_file), *extra]
        proc = subprocess.Popen(command, cwd=str(REPO), env=env, stdout=node_log,
                                stderr=subprocess.STDOUT)
    try:
        recorder = Recorder(domain)
        publisher = Publisher(params['base_link'])
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    result: Dict[str, Any] = {'config': name, 'solver': 'relay' if relay else solver,
                              'dof': chain.n,
                              'target': f'PoseArray ({len(tips)} tips)' if several else
                              'PoseStamped' if pose else 'PointStamped', 'phases': []}
    raw = []
    try:
        deadline = time.monotonic() + 30
        while not relay and not recorder.ask('count'):
            if proc.poll() is not None:
                raise RuntimeError(f'node exited with {proc.returncode}; see {log_path}:\n'
                                   + log_path.read_text()[-2000:])
            if time.monotonic() > deadline:
                raise RuntimeError(f'no /joint_states from the node in 30 s; see {log_path}')
            time.sleep(0.1)
        if relay:
            wait_for_relay(chain, publisher, recorder, pose, proc, log_path)
        else:
            wait_for_answers(chain, publisher, recorder, pose, log_path)
            wait_for_map(params, args.node_param, log_path)
            # analytic_hip_knee solves one leg in Python: no kernel loads for it
            result['solver_path'] = wait_for_kernels(log_path) if several or \
                solver != 'analytic_hip_knee' else 'pure Python (one leg: no compiled kernel)'
        phases = [(True, args.warmup_rate, 1.0)] + [(False, r, args.duration) for r in args.rates]
        for warm, rate, seconds in phases:
            n = int(rate * seconds)
            q = trajectory(chain, n, rate, args.speed)
            if several:  # every tip's position; --out-of-reach is for serial chains
                share = 0.0
                msgs = publisher.messages(tip_positions(chain, q), None)
            else:
                T = chain.fk(q)
                share = 0.0 if warm else args.out_of_reach
                targets = leave_reach(chain, T[:, :3, 3], rate, share)
                quats = None
                if pose:
                    import transforms3d
                    quats = [np.roll(transforms3d.quaternions.mat2quat(R), -1)
                             for R in T[:, :3, :3]]
                msgs = publisher.messages(targets, quats)
            time.sleep(0.3)
            skipped0 = recorder.ask('reset') or 0
            cpu0, wall0 = cpu_seconds(proc.pid), time.monotonic()
            rec0, own0 = cpu_seconds(recorder.proc.pid), time.process_time()
            steal0 = steal_jiffies()
            sent, stamps = publisher.publish_paced(msgs, rate)
            cpu1, wall1 = cpu_seconds(proc.pid), time.monotonic()
            rec1, own1 = cpu_seconds(recorder.proc.pid), time.process_time()
            steal1 = steal_jiffies()
            time.sleep(0.6)  # stragglers, and a /diagnostics update
            received, skipped1, pairs = recorder.ask('collect')
            raw.append((warm, out_of_reach_mask(n, rate, share), sent, stamps, received, pairs, {
                'rate_hz': rate, 'duration_s': seconds, 'out_of_reach_share': share,
                'load_avg_1min': os.getloadavg()[0],
                'node_cpu_pct': 100.0 * (cpu1 - cpu0) / (wall1 - wall0),
                'node_cpu_s': cpu1 - cpu0,
                # the harness's share of the 2 cores: the recorder and this (publishing) process
                'recorder_cpu_pct': 100.0 * (rec1 - rec0) / (wall1 - wall0),
                'publisher_cpu_pct': 100.0 * (own1 - own0) / (wall1 - wall0),
                # CPU time the hypervisor took away (share of all CPUs' time): a slow phase
                # on a shared virtual machine shows here
                'steal_pct': 100.0 * (steal1[0] - steal0[0]) / max(steal1[1] - steal0[1], 1),
                'skipped_reported_by_node': (skipped1 or 0) - skipped0}))
    finally:
        publisher.close()
        recorder.close()
        proc.terminate()  # the traced node writes its trace as it ends
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if not trace_path.exists():
        raise RuntimeError(f'the node wrote no trace (exit status {proc.returncode}); see '
                           f'{log_path}')
    answers = read_trace(trace_path)
    for warm, out_mask, sent, stamps, received, pairs, info in raw:
        stats = analyse(out_mask, sent, stamps, received, answers, pairs)
        if warm:
            log(f'[{name}] warm-up: {stats["answered"]}/{stats["sent"]} answered')
            continue
        stats.update(info)
        # the node's CPU per answer: what one target costs it, less sensitive to the machine's
        # other load than the latency is
        stats['node_cpu_ms_per_answer'] = 1e3 * info['node_cpu_s'] / stats['answered'] \
            if stats['answered'] else None
        result['phases'].append(stats)
        log(phase_line(name, stats))
    return result


def _ms(p: Dict[str, Any], key: str, digits: int = 2) -> str:
    return '-' if p.get(key) is None else f'{p[key]:.{digits}f}'


def phase_line(name: str, p: Dict[str, Any]) -> str:
    return (f'[{name} {p["rate_hz"]:g} Hz, {p["out_of_reach_share"]:g} out] sent {p["sent"]} '
            f'answered {p["answered"]} e2e p50/p99 {_ms(p, "latency_p50_ms")}/'
            f'{_ms(p, "latency_p99_ms")} ms (in reach {_ms(p, "in_reach_latency_p50_ms")}/'
            f'{_ms(p, "in_reach_latency_p99_ms")}, out {_ms(p, "out_of_reach_latency_p50_ms")}/'
            f'{_ms(p, "out_of_reach_latency_p99_ms")}) node side p99 '
            f'{_ms(p, "node_side_p99_ms")} solve p99 in/out {_ms(p, "in_reach_solve_p99_ms")}/'
            f'{_ms(p, "out_of_reach_solve_p99_ms")} ms cpu {p["node_cpu_pct"]:.0f}% '
            f'({_ms(p, "node_cpu_ms_per_answer")} ms/answer; recorder '
            f'{p.get("recorder_cpu_pct", float("nan")):.0f}%, publisher '
            f'{p.get("publisher_cpu_pct", float("nan")):.0f}%) '
            f'steal {p.get("steal_pct", float("nan")):.1f}% '
            f'skipped(node) {p["skipped_reported_by_node"]} slope '
            f'{_ms(p, "backlog_slope_ms_per_s", 3)} ms/s load {p["load_avg_1min"]:.1f}')


def markdown(results) -> str:
    m = results['meta']
    lines = ['# ik_node latency: target published -> /joint_states received', '',
             f'Run {m["date"]}: `{m["command"]}`  ', f'Python {m["python"]}; {m["machine"]}  ',
             *([f'{m["label"]}  '] if m.get('label') else []), '',
             'Every answer is matched to its target by stamp: each target carries a unique '
             'header stamp (the wall-clock send time); the node, run with a trace of every '
             'solve (benchmarks/traced_node.py), records the pair (target_stamp, '
             'joint_state_stamp) that its /diagnostics carry for the statuses they publish, and '
             'the recorder receives the JointState with that stamp. **e2e**: send time in this '
             'process just before publish -> receive time in a separate recorder process, in '
             'its callback (system monotonic clock; rclpy dispatch on both sides included; the '
             'recorder spins the executor the node uses, the EventsExecutor where rclpy has it). '
             '**node side**: the target\'s stamp -> the stamp of the JointState answering it '
             '(both wall clock), i.e. without the delivery to the recorder. **solve**: the '
             'solver\'s own solve time for the answered targets. **in reach / out**: targets of '
             'the smooth path / the same pushed beyond the reach (`--out-of-reach` share of '
             'every 2 s). "answered" counts targets whose solution was published; the others '
             'were superseded by a newer target before the node got to them (it solves the '
             'newest only); "skipped (node)" is the node\'s own count from /diagnostics; gaps: '
             'runs of consecutive unanswered targets (many short ones = steady overload, a long '
             'one = a stall). Backlog slope: a line fitted to e2e latency against send time '
             '(about 0 = no backlog). CPU ms / answer: the node\'s CPU time over the phase per '
             'answered target. Harness CPU %: the recorder process / this publishing process '
             '(the three share the 2 cores). Steal: CPU time the hypervisor gave to other '
             'VMs during the phase, share of all CPUs\' time (/proc/stat). Load: 1-minute load '
             'average of the shared 2-core machine at the end of the phase.', '',
             '| config | solver | target | run | rate Hz | out share | achieved Hz | sent | '
             'answered (out) | gaps (longest) | skipped (node) | e2e p50 / p99 ms | '
             'in reach p50 / p99 | out of reach p50 / p99 | e2e max ms | node side p50 / p99 | '
             'solve p99 in / out | slope ms/s | node CPU % | CPU ms / answer | harness CPU % | '
             'steal % | load |',
             '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|'
             '---|']
    for r in results['configs']:
        if 'error' in r:
            lines.append(f'| {r["config"]} | error: {r["error"]} |')
            continue
        for p in r['phases']:
            def f(k, d=2, p=p):
                return _ms(p, k, d)

            def pair(a, b, p=p):
                return f'{_ms(p, a)} / {_ms(p, b)}'
            lines.append(
                f'| {r["config"]} | {r["solver"]} | {r["target"]} | {r["run"]} | '
                f'{p["rate_hz"]:g} | {p["out_of_reach_share"]:g} | {f("achieved_rate_hz", 0)} | '
                f'{p["sent"]} | {p["answered"]} ({p["answered_out_of_reach"]}) | '
                f'{p["unanswered_runs"]} ({p["longest_unanswered_run"]}) | '
                f'{p["skipped_reported_by_node"]} | '
                f'{pair("latency_p50_ms", "latency_p99_ms")} | '
                f'{pair("in_reach_latency_p50_ms", "in_reach_latency_p99_ms")} | '
                f'{pair("out_of_reach_latency_p50_ms", "out_of_reach_latency_p99_ms")} | '
                f'{f("latency_max_ms")} | {pair("node_side_p50_ms", "node_side_p99_ms")} | '
                f'{pair("in_reach_solve_p99_ms", "out_of_reach_solve_p99_ms")} | '
                f'{f("backlog_slope_ms_per_s", 3)} | {f("node_cpu_pct", 0)} | '
                f'{f("node_cpu_ms_per_answer")} | {f("recorder_cpu_pct", 0)} / '
                f'{f("publisher_cpu_pct", 0)} | {f("steal_pct", 1)} | '
                f'{f("load_avg_1min", 1)} |')
    if results.get('against_relay'):
        lines += [''] + relay_markdown(results['against_relay'])
    lines += [''] + target_checks.markdown(results['target_checks'])
    return '\n'.join(lines) + '\n'


def checks(results) -> List[Dict[str, Any]]:
    """p99 <= 3 ms at 1 kHz, no growing backlog: medians over the runs of each config."""
    by_config: Dict[tuple, List[Dict[str, Any]]] = {}
    for r in results['configs']:
        if r.get('solver') == 'relay':
            continue
        for p in r.get('phases', []):
            if p['rate_hz'] == 1000:
                by_config.setdefault((r['config'], r['solver'], p['out_of_reach_share']),
                                     []).append(p)
    out = []
    for (config, solver, share), phases in by_config.items():
        target = (f'{config} ({solver}) at 1 kHz, {share:g} of the stream out of reach: p99 <= '
                  f'{TARGET_P99_MS:g} ms over all answers, no growing backlog (median of '
                  f'{len(phases)} run{"s" if len(phases) > 1 else ""})')
        done = [p for p in phases if p.get('latency_p99_ms') is not None]
        if not done:
            out.append(target_checks.check(target, 'no answers', False))
            continue

        def median(key, done=done):
            values = [p[key] for p in done if p.get(key) is not None]
            return float(np.median(values)) if values else math.nan
        p99, slope = median('latency_p99_ms'), median('backlog_slope_ms_per_s')
        # "no backlog": latency may not climb by more than 1 ms over the phase
        within = p99 <= TARGET_P99_MS and abs(slope) * done[0]['duration_s'] < 1.0
        out.append(target_checks.check(target, (
            f'e2e p99 {p99:.2f} ms (in reach {median("in_reach_latency_p99_ms"):.2f}, out of '
            f'reach {median("out_of_reach_latency_p99_ms"):.2f}; node side '
            f'{median("node_side_p99_ms"):.2f}), slope {slope:.3f} ms/s'), within))
    return out


#: Node CPU per answer may exceed the relay's plus the solve time by this much [ms].
CPU_OVER_FLOOR_MS = 0.05
#: e2e p99 target [ms] in phases whose steal stays below STEAL_LIMIT_PCT.
FLOOR_P99_MS = 1.0
STEAL_LIMIT_PCT = 1.0


def against_relay(results) -> List[Dict[str, Any]]:
    """Every node phase beside the relay's phase of the same run, config and rate: CPU per
    answer, e2e latency, answered share and steal, and the node's CPU per answer above the
    relay's and the solve's."""
    relays = {(r['config'], r['run']): {p['rate_hz']: p for p in r['phases']}
              for r in results['configs'] if r.get('solver') == 'relay' and 'error' not in r}
    out = []
    for r in results['configs']:
        if r.get('solver') == 'relay' or 'error' in r:
            continue
        floors = relays.get((r['config'], r['run']), {})
        for p in r['phases']:
            f = floors.get(p['rate_hz'])
            if f is None:
                continue

            def ratio(key, p=p, f=f):
                a, b = p.get(key), f.get(key)
                return a / b if a is not None and b else None
            cpu, floor_cpu, solve = (p.get('node_cpu_ms_per_answer'),
                                     f.get('node_cpu_ms_per_answer'), p.get('solve_mean_ms'))
            out.append({
                'config': r['config'], 'solver': r['solver'], 'target': r['target'],
                'run': r['run'], 'rate_hz': p['rate_hz'],
                'out_of_reach_share': p['out_of_reach_share'],
                'node_cpu_ms_per_answer': cpu, 'relay_cpu_ms_per_answer': floor_cpu,
                'cpu_ratio': ratio('node_cpu_ms_per_answer'), 'solve_mean_ms': solve,
                'cpu_over_floor_ms': None if None in (cpu, floor_cpu, solve) else
                cpu - floor_cpu - solve,
                'latency_p50_ms': p.get('latency_p50_ms'),
                'relay_latency_p50_ms': f.get('latency_p50_ms'),
                'latency_p50_ratio': ratio('latency_p50_ms'),
                'latency_p99_ms': p.get('latency_p99_ms'),
                'relay_latency_p99_ms': f.get('latency_p99_ms'),
                'latency_p99_ratio': ratio('latency_p99_ms'),
                'sent': p['sent'], 'answered': p['answered'], 'relay_sent': f['sent'],
                'relay_answered': f['answered'], 'steal_pct': p.get('steal_pct'),
                'relay_steal_pct': f.get('steal_pct'), 'load_avg_1min': p.get('load_avg_1min')})
    return out


def _joined(values, digits: int = 2) -> str:
    return ', '.join(f'{v:.{digits}f}' for v in values)


def relay_checks(rows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """At 1 kHz, per config: CPU per answer <= relay's + solve + CPU_OVER_FLOOR_MS (median
    over runs); no target dropped (leg3, arm6: every run); e2e p99 <= FLOOR_P99_MS in every
    phase whose steal stays below STEAL_LIMIT_PCT."""
    by_config: Dict[str, List[Dict[str, Any]]] = {}
    for row in rows:
        if row['rate_hz'] == 1000:
            by_config.setdefault(row['config'], []).append(row)
    out = []
    for config, group in by_config.items():
        over = [g['cpu_over_floor_ms'] for g in group if g['cpu_over_floor_ms'] is not None]
        if over:
            median = float(np.median(over))
            out.append(target_checks.check(
                f'{config} at 1 kHz: node CPU per answer <= the relay\'s + solve + '
                f'{CPU_OVER_FLOOR_MS:g} ms (median of {len(over)} run{"s" * (len(over) > 1)})',
                f'node - relay - solve {median * 1e3:.0f} µs (runs: '
                f'{", ".join(f"{v * 1e3:.0f}" for v in over)} µs; CPU ratio to the relay '
                f'{_joined(g["cpu_ratio"] for g in group if g["cpu_ratio"])})',
                median <= CPU_OVER_FLOOR_MS))
        if config in ('leg3', 'arm6'):
            dropped = [g['sent'] - g['answered'] for g in group]
            out.append(target_checks.check(
                f'{config} at 1 kHz: no target dropped (every run)',
                f'unanswered per run: {", ".join(str(d) for d in dropped)} of '
                f'{group[0]["sent"]}', all(d == 0 for d in dropped)))
        calm = [g for g in group if g['steal_pct'] is not None and
                g['steal_pct'] < STEAL_LIMIT_PCT and g['latency_p99_ms'] is not None]
        out.append(target_checks.check(
            f'{config} at 1 kHz: e2e p99 <= {FLOOR_P99_MS:g} ms where steal < '
            f'{STEAL_LIMIT_PCT:g} %',
            'no phase with steal below the limit' if not calm else
            f'p99 {_joined(g["latency_p99_ms"] for g in calm)} ms (steal '
            f'{_joined((g["steal_pct"] for g in calm), 1)} %)',
            None if not calm else all(g['latency_p99_ms'] <= FLOOR_P99_MS for g in calm)))
    return out


def relay_markdown(rows: List[Dict[str, Any]]) -> List[str]:
    """The node against the relay of the same run, as a markdown section."""
    lines = ['## The node against the relay (same run, same executor, QoS and message types)',
             '', 'relay: benchmarks/relay_node.py answers every target message with one '
             'JointState (the names the node publishes), no solve. **CPU over floor**: node CPU '
             'per answer - relay CPU per answer - the mean solve time of the answered targets.',
             '', '| config | run | rate Hz | node / relay CPU ms per answer | CPU ratio | '
             'solve mean ms | CPU over floor ms | e2e p50 node / relay ms | p50 ratio | '
             'e2e p99 node / relay ms | p99 ratio | answered node / relay of sent | '
             'steal node / relay % | load |', '|---|---|---|---|---|---|---|---|---|---|---|---|'
             '---|---|']

    def f(v, d=3):
        return '-' if v is None else f'{v:.{d}f}'
    for g in rows:
        lines.append(
            f'| {g["config"]} | {g["run"]} | {g["rate_hz"]:g} | '
            f'{f(g["node_cpu_ms_per_answer"])} / {f(g["relay_cpu_ms_per_answer"])} | '
            f'{f(g["cpu_ratio"], 2)} | {f(g["solve_mean_ms"])} | {f(g["cpu_over_floor_ms"])} | '
            f'{f(g["latency_p50_ms"], 2)} / {f(g["relay_latency_p50_ms"], 2)} | '
            f'{f(g["latency_p50_ratio"], 2)} | {f(g["latency_p99_ms"], 2)} / '
            f'{f(g["relay_latency_p99_ms"], 2)} | {f(g["latency_p99_ratio"], 2)} | '
            f'{g["answered"]} / {g["relay_answered"]} of {g["sent"]} | '
            f'{f(g["steal_pct"], 1)} / {f(g["relay_steal_pct"], 1)} | '
            f'{f(g["load_avg_1min"], 1)} |')
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--configs', nargs='+', default=['leg3', 'arm6'],
                    help='config/<name>.yaml to run the node with (default leg3 arm6)')
    ap.add_argument('--rates', nargs='+', type=float, default=[100.0, 1000.0])
    ap.add_argument('--duration', type=float, default=10.0, help='seconds per rate')
    ap.add_argument('--speed', type=float, default=1.0,
                    help='trajectory speed factor (joint frequencies 0.3-0.7 Hz times this)')
    ap.add_argument('--points', action='store_true',
                    help='send PointStamped even to 6-DOF arms (default: PoseStamped there)')
    ap.add_argument('--warmup-rate', type=float, default=100.0)
    ap.add_argument('--out-of-reach', type=float, default=0.0, metavar='SHARE',
                    help='share of the time the target stream is pushed out of reach (0-1; '
                         '0.5: half the stream out of reach). Default 0')
    ap.add_argument('--repeat', type=int, default=1,
                    help='runs of every config (a fresh node each); the target checks use the '
                         'median')
    ap.add_argument('--no-relay', dest='relay', action='store_false',
                    help='skip the relay (relay_node.py: the same executor, QoS and message '
                         'types, no solve) that each node run is compared with')
    ap.add_argument('--node-repo', type=Path, default=None, metavar='CHECKOUT',
                    help='run the node (not the relay) from another checkout of ik_node, e.g. '
                         'to compare two versions in one session (default: this one)')
    ap.add_argument('--label', default='', help='free text recorded in the results')
    ap.add_argument('--node-param', action='append', default=[], metavar='NAME:=VALUE',
                    help='extra node parameter (repeatable), e.g. reachability_samples:=0')
    ap.add_argument('--profile', action='store_true',
                    help='run the node under cProfile, stats in profile_<config>.pstats '
                         '(slows the node: do not quote its latencies)')
    ap.add_argument('--out', type=Path, default=HERE / 'results')
    ap.add_argument('--stem', default='node_latency',
                    help='name of the result files, <stem>.json and <stem>.md (default '
                         'node_latency)')
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    domain = random.Random(os.getpid()).randint(101, 200)
    os.environ['ROS_DOMAIN_ID'] = str(domain)
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    import rclpy
    rclpy.init()
    results: Dict[str, Any] = {'meta': {
        'date': datetime.datetime.now().isoformat(timespec='seconds'),
        'command': ' '.join([Path(sys.argv[0]).name] + sys.argv[1:]),
        'python': f'{platform.python_version()} ({sys.executable})',
        'machine': f'{platform.machine()}, {os.cpu_count()} cpus',
        'label': args.label, 'ros_domain_id': domain}, 'configs': []}
    try:
        for run in range(1, args.repeat + 1):
            for name in args.configs:
                # node and relay interleaved, the order alternating from run to run
                kinds = [False, True] if args.relay else [False]
                for relay in (kinds if run % 2 else kinds[::-1]):
                    what = 'the relay' if relay else 'the node'
                    log(f'run {run}: starting {what} with config/{name}.yaml')
                    try:
                        result = run_config(name, args, domain, relay)
                    except Exception as exc:
                        log(f'[{name}] failed: {exc}')
                        result = {'config': name, 'error': str(exc),
                                  **({'solver': 'relay'} if relay else {})}
                    result['run'] = run
                    results['configs'].append(result)
    finally:
        rclpy.try_shutdown() if hasattr(rclpy, 'try_shutdown') else rclpy.shutdown()
    results['against_relay'] = against_relay(results)
    results['target_checks'] = checks(results) + relay_checks(results['against_relay'])
    (args.out / f'{args.stem}.json').write_text(json.dumps(results, indent=1))
    (args.out / f'{args.stem}.md').write_text(markdown(results))
    log(f'wrote {args.out / f"{args.stem}.json"} and {args.out / f"{args.stem}.md"}')
    for line in target_checks.log_lines(results['target_checks']):
        log(line)
    return 0 if all('error' not in r for r in results['configs']) else 1


if __name__ == '__main__':
    sys.exit(main())
