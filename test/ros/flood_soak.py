#!/usr/bin/env python3
"""Flood and soak the real ik_node: targets at a high rate from another process, for a while.

Three processes on a private DDS domain:

* the node under test: ``python -m ik_node.node --ros-args --params-file config/<robot>.yaml``
  (renamed to a unique name, ``/joint_states`` remapped below it);
* a publisher process streaming targets at ``--rate`` Hz for ``--duration`` s, as the robot
  takes them (:mod:`flood_inputs`: ``PointStamped`` on ``~/target_point``, per hand on
  ``~/<tip>/target_point`` for twin_arm, every foot in one ``PoseArray`` for quad12): FK of
  random in-limit configurations (reachable by construction), with ``--bad-fraction`` of them
  bad (NaN, inf, 1e12 m, an unknown frame; a PoseArray also with NaN in one pose, one pose too
  few or too many) to exercise the error path under load;
* this process, the monitor: it checks every ``JointState`` (the chain's names, finite, within
  the limits read from the URDF by urdf_parser_py) and every diagnostic status, matches joint
  states to the target they solve (FK of the received positions, looked up in a 1 mm grid of
  the sent targets) to measure latency (send -> first joint state reaching it), and samples the
  node's resident memory (``VmRSS`` in ``/proc/<pid>/status``).

Criteria (exit status 1 when one fails, 0 when all pass):

* the node is alive at the end and still solves a fresh target after the flood;
* with ``--swap-every``, every description swap (a ``robot_description`` parameter set) is
  accepted and answered within ``--max-swap-answer-s`` (default 1 s) during the flood;
* bad targets are answered with the errors of their kind only;
* every published message is valid (no NaN, no limit break, names of the chain);
* resident memory grows by less than ``--max-rss-growth-mb`` (default 10) from after warm-up to
  the end, both read with the node's reachability map built (a description swap starts a new
  build in a background thread, whose samples take memory while it runs: the soak waits for
  the map of the last swap before it reads the end's RSS; the largest RSS seen is reported);
* the node's latency (target sent -> stamp of the joint state that solves it, both wall clock)
  has a p99 of at most ``--max-latency-ms`` in every third of the run (bounded and not growing;
  by default 50 ms, or twice the solver's ``timeout`` where that is longer: twin_arm's fabrik
  has 50 ms, and a target may wait for the solve in progress, then take its own).
  The end-to-end latency (-> received here) is reported too; on a small machine it is dominated
  by this monitor process waiting for a CPU, since the publisher and the node keep two busy;
* the publisher achieved at least ``--min-rate-fraction`` of the requested rate (else the run was
  not the flood it claims to be).

Usage::

    export PYTHONPATH=$PWD:$PWD/test             # the checkout and the shared test helpers
    python test/ros/flood_soak.py                # 10 kHz for 30 s on leg3
    python test/ros/flood_soak.py --rate 2000 --duration 3 --json-out /tmp/flood.json
    python test/ros/flood_soak.py --robot quad12 --duration 60 --bad-fraction 0.2 --swap-every 2

``test/ros/test_flood.py`` runs it briefly with the timing criteria switched off.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np
import yaml

from flood_inputs import (ERROR_KEYS, INPUT, TIPS, TargetSender, bad_kind, is_bad, make_targets,
                          publish_serialized)
from urdf_limits import urdf_limits  # read straight from the URDF

REPO = Path(__file__).resolve().parents[2]

GRID_M = 1e-3          # cell of the sent-target lookup grid [m]
MATCH_TOL_M = 2e-4     # a joint state solves a target when every tip is this close [m]


# ----------------------------------------------------------------------------- publisher
def publisher_main(name: str, base: str, rate: float, duration: float, robot: str, seed: int,
                   bad_every: int, send_times, sent_count, ready, go) -> None:
    """Publish target i at t0 + i / rate (catching up in bursts if late); record send times
    (of target i's last message)."""
    import rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    targets = make_targets(robot, len(send_times), seed)
    rclpy.init()
    node = rclpy.create_node(f'flood_publisher_{os.getpid()}')
    sender = TargetSender(node, name, robot, base, QoSProfile(
        depth=10, reliability=ReliabilityPolicy.RELIABLE))
    n_total = int(rate * duration)
    # Serialized before the flood: publishing bytes costs no Python-to-C conversion per message,
    # so one Python process can reach the rate on a small machine.
    payloads = [sender.serialized(i, targets[i], bad_kind(robot, i, bad_every))
                for i in range(n_total)]
    deadline = time.monotonic() + 30.0
    while not sender.matched() and time.monotonic() < deadline:
        time.sleep(0.05)
    ready.set()
    go.wait()
    t0 = time.monotonic()
    i = 0
    while i < n_total:
        now = time.monotonic()
        due = min(n_total, int((now - t0) * rate) + 1)
        if i >= due:
            time.sleep(max(0.0, t0 + i / rate - now))
            continue
        while i < due:
            publish_serialized(payloads[i])
            send_times[i] = time.time()  # wall clock: comparable with message stamps
            i += 1
        sent_count.value = i
    time.sleep(0.5)  # let the last messages leave before the participant goes
    node.destroy_node()
    rclpy.shutdown()


# ------------------------------------------------------------------------------- helpers
def rss_mb(pid: int) -> Optional[float]:
    """Resident set size [MB] of a process, from /proc/<pid>/status (None if gone)."""
    try:
        for line in Path(f'/proc/{pid}/status').read_text().splitlines():
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


def percentile(values: List[float], p: float) -> float:
    return float(np.percentile(values, p)) if values else math.nan




class Monitor:
    """Subscribes to the node's outputs; validates every message; matches targets."""

    def __init__(self, rclpy, name: str, robot: str, targets: np.ndarray, send_times,
                 bad_every: int):
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import JointState
        from visualization_msgs.msg import MarkerArray

        from ik_node import Chain
        xml = (REPO / 'urdf' / f'{robot}.urdf').read_text()
        self.chain = Chain.from_urdf_string(xml, 'base_link', TIPS[robot])
        self.tips = TIPS[robot]
        self.lower, self.upper = urdf_limits(xml, self.chain.joint_names)
        self.xml = xml
        self._order: Dict[tuple, tuple] = {}  # names published -> (chain order, their limits)
        self.name, self.robot = name, robot
        self.targets = targets
        self.send_times = send_times
        self.grid: Dict[tuple, List[int]] = {}
        for i, p in enumerate(targets):
            if not is_bad(i, bad_every):
                self.grid.setdefault(self._cell(p[0]), []).append(i)
        self.lock = threading.Lock()
        self.joint_states = 0
        self.invalid: List[str] = []
        self.diagnostics = 0
        self.levels = {0: 0, 1: 0, 2: 0}
        self.last_values: Dict[str, str] = {}
        self.error_messages: Dict[str, int] = {}
        self.matched: Dict[int, float] = {}        # target index -> latency [s]
        self.matched_at: Dict[int, float] = {}     # target index -> receive time
        # target index -> joint state stamp - send time [s]: the node's share of the latency
        # (the rest is delivery to, and queueing in, this monitor process)
        self.node_latency: Dict[int, float] = {}
        self.last_q: Optional[np.ndarray] = None
        self.node = rclpy.create_node(f'flood_monitor_{os.getpid()}')
        self.node.create_subscription(JointState, f'/{name}/joint_states', self._on_js, 1000)
        self.node.create_subscription(DiagnosticArray, '/diagnostics', self._on_diag, 1000)
        self.maps_published = 0  # reachability maps received (not counting the empty ones)
        self.node.create_subscription(MarkerArray, f'/{name}/reachability', self._on_map,
                                      QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                                                 durability=DurabilityPolicy.TRANSIENT_LOCAL))

    def _on_map(self, msg) -> None:
        if any(m.action == m.ADD and m.points for m in msg.markers):
            with self.lock:
                self.maps_published += 1

    def wait_for_map(self, after: int, timeout_s: float) -> bool:
        """Wait until more than ``after`` maps have come (True), or ``timeout_s`` passed."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self.lock:
                if self.maps_published > after:
                    return True
            time.sleep(0.1)
        return False

    def tip_positions(self, q: np.ndarray) -> np.ndarray:
        """(tips, 3) positions [m] of the tips at ``q``."""
        if len(self.tips) == 1:
            return self.chain.fk(q)[:3, 3][None, :]
        frames = self.chain.fk_tips(q)
        return np.array([frames[tip][:3, 3] for tip in self.tips])

    def _names(self, names: tuple) -> Optional[tuple]:
        """For the joint names of a joint state: (index of each chain joint in it, the lower
        and upper limits of every joint in it), or None when names repeat or a chain joint is
        missing. Every moving joint of the URDF may be published (twin_arm's fingers too)."""
        if names not in self._order:
            if len(set(names)) != len(names) or not set(self.chain.joint_names) <= set(names):
                self._order[names] = None
            else:
                try:
                    lower, upper = urdf_limits(self.xml, names)
                except KeyError:  # a name the URDF does not have
                    self._order[names] = None
                else:
                    self._order[names] = (np.array([names.index(n)
                                                    for n in self.chain.joint_names]),
                                          lower, upper)
        return self._order[names]

    @staticmethod
    def _cell(p) -> tuple:
        return tuple(int(math.floor(v / GRID_M)) for v in p)

    def _on_js(self, msg) -> None:
        now = time.time()
        stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        positions = np.array(msg.position, dtype=float)
        problem, q = None, None
        order = self._names(tuple(msg.name))
        if order is None:
            problem = f'joint names {list(msg.name)}'
        elif positions.shape != (len(msg.name),) or not np.all(np.isfinite(positions)):
            problem = f'non-finite positions {positions.tolist()}'
        elif np.any(positions < order[1] - 1e-9) or np.any(positions > order[2] + 1e-9):
            problem = f'positions outside the limits {positions.tolist()}'
        match = None
        if problem is None:
            q = positions[order[0]]
            match = self._match(self.tip_positions(q), now)
        with self.lock:
            self.joint_states += 1
            if problem is not None:
                self.invalid.append(problem)
                return
            self.last_q = q
            if match is not None and match not in self.matched:
                self.matched[match] = now - self.send_times[match]
                self.node_latency[match] = stamp - self.send_times[match]
                self.matched_at[match] = now

    def _match(self, tips: np.ndarray, now: float) -> Optional[int]:
        """The target sent last before ``now`` (wall clock) that ``tips`` are all on, or None."""
        cx, cy, cz = self._cell(tips[0])
        best, best_time = None, -math.inf
        for dx in (-1, 0, 1):
            for dy in (-1, 0, 1):
                for dz in (-1, 0, 1):
                    for i in self.grid.get((cx + dx, cy + dy, cz + dz), ()):
                        sent = self.send_times[i]
                        if 0.0 < sent <= now and sent > best_time and np.all(
                                np.linalg.norm(self.targets[i] - tips, axis=1) < MATCH_TOL_M):
                            best, best_time = i, sent
        return best

    def _on_diag(self, msg) -> None:
        for status in msg.status:
            if status.name != f'{self.name}: ik':  # the whole solve; per-tip ones follow it
                continue
            values = {kv.key: kv.value for kv in status.values}
            level = status.level[0] if isinstance(status.level, bytes) else int(status.level)
            problem = None
            if level not in (0, 1, 2):
                problem = f'diagnostic level {level}'
            err = values.get('position_error_m', '')
            if err and not math.isfinite(float(err)):
                problem = f'non-finite position_error_m {err}'
            with self.lock:
                self.diagnostics += 1
                self.levels[level] = self.levels.get(level, 0) + 1
                self.last_values = values
                if level == 2:
                    key = values.get('message', status.message).split(':')[0]
                    key = key.split(' for tip ')[0]  # 'bad target for tip left_hand'
                    self.error_messages[key] = self.error_messages.get(key, 0) + 1
                if problem:
                    self.invalid.append(problem)


# ---------------------------------------------------------------------------------- main
def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--robot', default='leg3', choices=sorted(TIPS))
    p.add_argument('--solver', default=None, help='override the config\'s solver')
    p.add_argument('--rate', type=float, default=10000.0, help='targets per second [Hz]')
    p.add_argument('--duration', type=float, default=30.0, help='flood duration [s]')
    p.add_argument('--warmup', type=float, default=2.0, help='warm-up before RSS baseline [s]')
    p.add_argument('--bad-fraction', type=float, default=0.05,
                   help='fraction of bad targets (NaN, inf, 1e12 m, unknown frame)')
    p.add_argument('--max-rss-growth-mb', type=float, default=10.0)
    p.add_argument('--max-latency-ms', type=float, default=None,
                   help='bound on the node latency p99 of every third of the run [ms]; '
                        'default 50, or twice the solver\'s timeout where that is longer (a '
                        'target may wait for the solve in progress, then take its own)')
    p.add_argument('--min-rate-fraction', type=float, default=0.9,
                   help='least fraction of --rate the publisher must achieve')
    p.add_argument('--seed', type=int, default=1)
    p.add_argument('--json-out', type=Path, default=None, help='write the summary as JSON')
    p.add_argument('--swap-every', type=float, default=0.0, metavar='S',
                   help='during the flood, set the node\'s robot_description every S seconds '
                        '(the same robot, a new text each time: a full chain rebuild); 0: never')
    p.add_argument('--max-swap-answer-s', type=float, default=1.0,
                   help='bound on the time a description swap waits for its answer [s]')
    p.add_argument('--settle-timeout', type=float, default=120.0,
                   help='how long to wait for a reachability map before reading RSS [s]')
    p.add_argument('--workdir', type=Path, default=None,
                   help='folder for the node\'s params file and log (default: a temporary one, '
                        'removed at the end unless the run failed)')
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    env = os.environ
    env.setdefault('ROS_DOMAIN_ID', str(random.Random(os.getpid()).randint(101, 200)))
    env.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    import rclpy
    import rclpy.executors

    name = f'ik_flood_{os.getpid()}'
    count = int(args.rate * args.duration)
    bad_every = int(round(1.0 / args.bad_fraction)) if args.bad_fraction > 0 else 0
    targets = make_targets(args.robot, count, args.seed)
    base = 'base_link'

    data = yaml.safe_load((REPO / 'config' / f'{args.robot}.yaml').read_text())
    params = data['ik_node']['ros__parameters']
    if args.solver:
        params['solver'] = args.solver
    max_latency_ms = args.max_latency_ms
    if max_latency_ms is None:  # 50 ms, or twice the solver's timeout where that is longer
        solver_timeout = (params.get(params['solver']) or {}).get('timeout', 0.0)
        max_latency_ms = max(50.0, 2e3 * float(solver_timeout))
    own_workdir = args.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix='flood_soak_')) if own_workdir else args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    params_path = workdir / 'params.yaml'
    params_path.write_text(yaml.safe_dump({name: {'ros__parameters': params}}))
    log_path = workdir / 'node.log'
    node_env = dict(env)
    node_env['PYTHONPATH'] = str(REPO) + os.pathsep + node_env.get('PYTHONPATH', '')
    log = open(log_path, 'w')
    node_proc = subprocess.Popen(
        [sys.executable, '-m', 'ik_node.node', '--ros-args', '-r', f'__node:={name}',
         '-r', f'/joint_states:=/{name}/joint_states', '--params-file', str(params_path)],
        stdout=log, stderr=subprocess.STDOUT, env=node_env, cwd=REPO)
    print(f'node {name} pid {node_proc.pid} ({args.robot}, solver {params["solver"]}), '
          f'domain {env["ROS_DOMAIN_ID"]}, log {log_path}', flush=True)

    ctx = mp.get_context('spawn')
    send_times = ctx.Array('d', count, lock=False)
    sent_count = ctx.Value('l', 0, lock=False)
    ready, go = ctx.Event(), ctx.Event()
    publisher = ctx.Process(target=publisher_main, args=(
        name, base, args.rate, args.duration, args.robot, args.seed,
        bad_every, send_times, sent_count, ready, go), daemon=True)

    rclpy.init()
    monitor = Monitor(rclpy, name, args.robot, targets, send_times, bad_every)
    executor = rclpy.executors.SingleThreadedExecutor()
    executor.add_node(monitor.node)
    spin = threading.Thread(target=executor.spin, daemon=True)
    spin.start()
    failures: List[str] = []
    summary: Dict[str, object] = {}
    swapper = None
    try:
        deadline = time.monotonic() + 30.0
        while monitor.joint_states == 0:
            if node_proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f'the node did not start; log {log_path}')
            time.sleep(0.05)
        publisher.start()
        if not ready.wait(timeout=300.0):
            raise RuntimeError('the publisher did not come up')

        # Warm-up: a slow stream from this process, then the RSS baseline.
        warm = _warmup(rclpy, monitor, name, base, args.warmup)
        if not monitor.wait_for_map(0, args.settle_timeout):
            raise RuntimeError(f'no reachability map within {args.settle_timeout} s')
        # The compiled kernels load in the background from the first solve of a solver that
        # uses them (tens of MB): the baseline is read once the node says which path serves
        # for good, or after KERNELS_WAIT_S without that (a solver that loads none: fabrik).
        if not _wait_for_log(log_path, KERNELS_SETTLED, KERNELS_WAIT_S):
            print(f'the node did not say within {KERNELS_WAIT_S:.0f} s that its solver path is '
                  'settled: its solver loads no kernels', flush=True)
        rss_before = rss_mb(node_proc.pid)
        print(f'warm-up: {warm} targets solved; node RSS {rss_before:.1f} MB', flush=True)

        go.set()
        t_start = time.monotonic()
        rss_samples = []
        last = (t_start, 0, 0)
        swapper = _Swapper(monitor, name, args.robot, args.swap_every,
                           args.max_swap_answer_s)
        while publisher.is_alive() and node_proc.poll() is None:
            swapper.sleep(1.0)
            now = time.monotonic()
            with monitor.lock:
                js, matched = monitor.joint_states, len(monitor.matched)
                solves = monitor.last_values.get('solve_count', '?')
                skipped = monitor.last_values.get('skipped_targets', '?')
            sent = sent_count.value
            rss = rss_mb(node_proc.pid)
            rss_samples.append(rss)
            dt = now - last[0]
            print(f'  t={now - t_start:5.1f} s  sent {sent:8d} ({(sent - last[1]) / dt:7.0f}/s)  '
                  f'joint_states {js:7d} ({(js - last[2]) / dt:6.0f}/s)  solves {solves}  '
                  f'matched {matched}  skipped {skipped}  RSS {rss:.1f} MB', flush=True)
            last = (now, sent, js)
        t_flood = time.monotonic() - t_start
        if swapper.refused:
            failures.append(f'description swaps refused or unanswered within '
                            f'{args.max_swap_answer_s} s: {len(swapper.refused)}, e.g. '
                            f'{swapper.refused[:3]}')
        publisher.join(timeout=10.0)
        time.sleep(1.0)  # let the last solves and diagnostics arrive
        settled = monitor.wait_for_map(swapper.maps_at_last_swap, args.settle_timeout) \
            if swapper.done else True
        if not settled:
            failures.append(f'no reachability map within {args.settle_timeout} s of the last '
                            'description swap: RSS read while one was building')
        alive = node_proc.poll() is None
        rss_after = rss_mb(node_proc.pid) if alive else None
        final_ok = _final_check(rclpy, monitor, name, base) if alive else False

        with monitor.lock:
            lat_ms = sorted(1e3 * v for v in monitor.matched.values())
            node_ms = sorted(1e3 * v for v in monitor.node_latency.values())
            thirds = _p99_by_third(monitor.matched_at, monitor.matched)
            node_thirds = _p99_by_third(monitor.matched_at, monitor.node_latency)
            sent = sent_count.value
            span = send_times[sent - 1] - send_times[0] if sent > 1 else 0.0
            achieved = (sent - 1) / span if span > 0 else 0.0
            summary = {
                'robot': args.robot, 'solver': params['solver'],
                'requested_rate_hz': args.rate, 'duration_s': args.duration,
                'targets_sent': sent, 'achieved_rate_hz': achieved,
                'bad_targets_sent': sum(1 for i in range(sent) if is_bad(i, bad_every)),
                'joint_states_received': monitor.joint_states,
                'joint_state_rate_hz': monitor.joint_states / t_flood if t_flood else 0.0,
                'solve_count': int(monitor.last_values.get('solve_count') or 0),
                'skipped_targets': int(monitor.last_values.get('skipped_targets') or 0),
                'diagnostics_received': monitor.diagnostics,
                'diagnostics_by_level': {'OK': monitor.levels.get(0, 0),
                                         'WARN': monitor.levels.get(1, 0),
                                         'ERROR': monitor.levels.get(2, 0)},
                'error_messages': monitor.error_messages,
                'targets_matched': len(lat_ms),
                'latency_ms': {'p50': percentile(lat_ms, 50), 'p99': percentile(lat_ms, 99),
                               'max': max(lat_ms) if lat_ms else math.nan,
                               'p99_by_third': thirds},
                'node_latency_ms': {'p50': percentile(node_ms, 50),
                                    'p99': percentile(node_ms, 99),
                                    'max': max(node_ms) if node_ms else math.nan,
                                    'p99_by_third': node_thirds},
                'rss_mb': {'before': rss_before, 'after': rss_after,
                           'max': max((r for r in rss_samples if r is not None), default=None),
                           'growth': (rss_after - rss_before) if rss_after else None},
                'invalid_messages': len(monitor.invalid),
                'invalid_examples': monitor.invalid[:5],
                'node_alive': alive, 'solves_after_flood': final_ok,
            }
        if not alive:
            failures.append(f'the node died (exit {node_proc.returncode}); log {log_path}')
        if not final_ok:
            failures.append('the node did not solve a fresh target after the flood')
        unexpected = set(summary['error_messages']) - ERROR_KEYS[INPUT[args.robot]]
        if unexpected:
            failures.append(f'errors other than bad targets reported: {sorted(unexpected)}')
        if summary['invalid_messages']:
            failures.append(f'{summary["invalid_messages"]} invalid messages, e.g. '
                            f'{summary["invalid_examples"][:2]}')
        growth = summary['rss_mb']['growth']
        if growth is None or growth >= args.max_rss_growth_mb:
            failures.append(f'RSS grew by {growth} MB (limit {args.max_rss_growth_mb} MB)')
        if not lat_ms:
            failures.append('no target was matched to a joint state: latency unknown')
        elif any(p > max_latency_ms for p in node_thirds if not math.isnan(p)):
            failures.append(f'node latency p99 by third {[round(p, 2) for p in node_thirds]} ms '
                            f'exceeds {max_latency_ms} ms')
        if summary['achieved_rate_hz'] < args.min_rate_fraction * args.rate:
            failures.append(f'publisher achieved {summary["achieved_rate_hz"]:.0f} Hz, below '
                            f'{args.min_rate_fraction:.0%} of {args.rate:.0f} Hz')
    except Exception as exc:
        failures.append(f'{type(exc).__name__}: {exc}')
    finally:
        go.set()
        if publisher.is_alive():
            publisher.terminate()
            publisher.join(timeout=5)
        if node_proc.poll() is None:
            node_proc.send_signal(signal.SIGINT)
            try:
                node_proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                node_proc.kill()
                node_proc.wait(timeout=5)
        # Stop spinning before tearing down: destroying a node (or exiting the interpreter)
        # while the spin thread still waits in rcl aborts the process.
        executor.shutdown(timeout_sec=5.0)
        spin.join(timeout=5.0)
        monitor.node.destroy_node()
        rclpy.try_shutdown()
        log.close()

    summary['description_swaps'] = swapper.done if swapper is not None else 0
    summary['swap_answer_s'] = swapper.answer_summary() if swapper is not None else {}
    summary['failures'] = failures
    summary['passed'] = not failures
    _print_summary(summary)
    if args.json_out:
        args.json_out.write_text(json.dumps(summary, indent=2, default=str))
    if own_workdir and not failures:
        shutil.rmtree(workdir, ignore_errors=True)
    elif own_workdir:
        print(f'node log kept in {workdir}', flush=True)
    return 0 if not failures else 1


def _p99_by_third(received_at: Dict[int, float], latency: Dict[int, float]) -> List[float]:
    """Latency p99 [ms] in each third of the run (by receive time): bounded, and not growing."""
    by_time = sorted((received_at[i], 1e3 * v) for i, v in latency.items())
    if not by_time:
        return []
    t0, t1 = by_time[0][0], by_time[-1][0]
    out = []
    for k in range(3):
        lo, hi = t0 + k * (t1 - t0) / 3, t0 + (k + 1) * (t1 - t0) / 3
        out.append(percentile([v for t, v in by_time if lo <= t <= hi], 99))
    return out


class _Swapper:
    """Sets the node's robot_description every ``period`` seconds (0: never) while sleeping."""

    def __init__(self, monitor: Monitor, name: str, robot: str, period: float,
                 max_answer_s: float) -> None:
        node = monitor.node
        self.monitor = monitor
        self.maps_at_last_swap = 0  # maps received when the last swap was accepted
        self.period, self.done, self.refused = period, 0, []
        self.max_answer_s = max_answer_s
        self.answer_s: List[float] = []  # request sent -> answer received, per swap [s]
        self.next = time.monotonic() + period
        if period > 0:
            from rcl_interfaces.srv import SetParameters
            data = yaml.safe_load((REPO / 'config' / f'{robot}.yaml').read_text())
            self.xml = (REPO / 'urdf' / data['ik_node']['ros__parameters']['urdf_file']).read_text()
            self.client = node.create_client(SetParameters, f'/{name}/set_parameters')

    def sleep(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while self.period > 0 and self.next < end:
            time.sleep(max(0.0, self.next - time.monotonic()))
            self._swap()
            self.next += self.period
        time.sleep(max(0.0, end - time.monotonic()))

    def _swap(self) -> None:
        from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
        from rcl_interfaces.srv import SetParameters
        xml = self.xml.replace('<robot', f'<!-- swap {self.done} -->\n<robot', 1)
        request = SetParameters.Request(parameters=[Parameter(
            name='robot_description',
            value=ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=xml))])
        if not self.client.wait_for_service(timeout_sec=5.0):
            self.refused.append('parameter service not available')
            return
        sent = time.monotonic()
        future = self.client.call_async(request)
        deadline = sent + 10.0
        while not future.done() and time.monotonic() < deadline:
            time.sleep(0.001)
        if not future.done():
            self.answer_s.append(math.inf)
            self.refused.append('no answer within 10 s')
            return
        waited = time.monotonic() - sent
        self.answer_s.append(waited)
        result = future.result().results[0]
        if not result.successful:
            self.refused.append(result.reason)
        elif waited > self.max_answer_s:
            self.refused.append(f'answered after {waited:.2f} s')
        else:
            self.done += 1
        with self.monitor.lock:
            self.maps_at_last_swap = self.monitor.maps_published

    def answer_summary(self) -> Dict[str, float]:
        """Swaps sent, and the median and largest time one waited for its answer [s]."""
        if not self.answer_s:
            return {'sent': 0}
        return {'sent': len(self.answer_s), 'median': float(np.median(self.answer_s)),
                'max': max(self.answer_s)}


#: What the node logs once the solver path is settled: the kernels loaded, or Python for good.
KERNELS_SETTLED = ('solver path: compiled kernels', 'solver path: pure Python (')
KERNELS_WAIT_S = 45.0  # loading them from numba's cache takes seconds on a quiet machine


def _wait_for_log(path: Path, phrases: Tuple[str, ...], timeout: float) -> bool:
    """Wait until the node's log holds one of ``phrases``; False after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            text = Path(path).read_text(errors='replace')
        except OSError:
            text = ''
        if any(phrase in text for phrase in phrases):
            return True
        time.sleep(0.2)
    return False


def _warmup(rclpy, monitor: Monitor, name: str, base: str, seconds: float) -> int:
    """Send a slow stream of reachable targets for ``seconds``, then a few out of reach; how
    many were solved."""
    sender = TargetSender(monitor.node, name, monitor.robot, base, 10)
    deadline = time.monotonic() + 10.0
    while not sender.matched() and time.monotonic() < deadline:
        time.sleep(0.05)
    extra = make_targets(monitor.robot, 200, 999)
    end, k = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        sender.send(k, extra[k % len(extra)], None)
        k += 1
        time.sleep(0.005)
    # Then targets out of reach (every tip 20 times farther out): the closest-pose search's
    # first call starts loading its compiled kernels, which should happen before the baseline.
    for _ in range(5):
        sender.send(k, 20.0 * extra[0], None)
        time.sleep(0.05)
    time.sleep(0.3)
    for pub in sender.pubs:
        monitor.node.destroy_publisher(pub)
    with monitor.lock:
        return int(monitor.last_values.get('solve_count') or 0)


def _final_check(rclpy, monitor: Monitor, name: str, base: str) -> bool:
    """After the flood: one fresh reachable target must be solved within 5 s."""
    sender = TargetSender(monitor.node, name, monitor.robot, base, 10)
    deadline = time.monotonic() + 10.0
    while not sender.matched() and time.monotonic() < deadline:
        time.sleep(0.05)
    target = make_targets(monitor.robot, 1, 4242)[0]
    end = time.monotonic() + 5.0
    while time.monotonic() < end:
        sender.send(1, target, None)
        time.sleep(0.2)
        with monitor.lock:
            q = monitor.last_q
        if q is not None and np.all(
                np.linalg.norm(monitor.tip_positions(q) - target, axis=1) < MATCH_TOL_M):
            return True
    return False


def _print_summary(s: Dict[str, object]) -> None:
    print('\n=== flood/soak summary ===')
    if 'targets_sent' in s:
        lat, rss = s['latency_ms'], s['rss_mb']
        print(f"robot {s['robot']}, solver {s['solver']}: {s['targets_sent']} targets in "
              f"{s['duration_s']} s, requested {s['requested_rate_hz']:.0f} Hz, achieved "
              f"{s['achieved_rate_hz']:.0f} Hz ({s['bad_targets_sent']} bad)")
        print(f"node: {s['solve_count']} solves, {s['skipped_targets']} skipped targets "
              f"(newest wins), {s['joint_states_received']} joint states "
              f"({s['joint_state_rate_hz']:.0f}/s), diagnostics {s['diagnostics_by_level']}")
        print(f"errors reported: {s['error_messages']}")
        print(f"latency send -> joint state ({s['targets_matched']} targets matched): "
              f"p50 {lat['p50']:.2f} ms, p99 {lat['p99']:.2f} ms, max {lat['max']:.2f} ms, "
              f"p99 by third {[round(v, 2) for v in lat['p99_by_third']]} ms")
        nl = s['node_latency_ms']
        print(f"node latency (send -> joint state stamp): p50 {nl['p50']:.2f} ms, "
              f"p99 {nl['p99']:.2f} ms, max {nl['max']:.2f} ms, "
              f"p99 by third {[round(v, 2) for v in nl['p99_by_third']]} ms")
        print(f"RSS: before {rss['before']} MB, after {rss['after']} MB, max {rss['max']} MB, "
              f"growth {rss['growth']} MB")
        print(f"invalid messages: {s['invalid_messages']}; node alive: {s['node_alive']}; "
              f"solves after the flood: {s['solves_after_flood']}")
    if s.get('swap_answer_s', {}).get('sent'):
        sw = s['swap_answer_s']
        print(f"description swaps: {s['description_swaps']} of {sw['sent']} accepted in time; "
              f"answer median {sw['median']:.3f} s, max {sw['max']:.3f} s")
    for f in s['failures']:
        print(f'FAIL: {f}')
    print('PASS' if s['passed'] else 'FAILED', flush=True)


if __name__ == '__main__':
    sys.exit(main())
