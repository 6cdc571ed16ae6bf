#!/usr/bin/env python3
"""Latency of the running ik_node: target published -> /joint_states received.

Starts the node (``benchmarks/node/traced.py --ros-args --params-file config/<robot>.yaml``:
ik_node's ``main`` with a trace of every answer) as a subprocess on a private DDS domain
(localhost only), then publishes targets from this process at each rate (default 100 Hz and
1 kHz) for a fixed time, while a recorder process records every /joint_states message.

Matching, by stamp: every target carries a unique header stamp (its wall-clock send time). The
node is started through ``benchmarks/node/traced.py``, which records for every solve the pair of
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

    python -m benchmarks.node.latency                    # leg3 and arm6, 10 s per rate
    python -m benchmarks.node.latency --configs leg3 arm6 --rates 1000 --duration 5 \
        --out-of-reach 0.5 --repeat 3                          # half the stream out of reach
    python -m benchmarks.node.latency --configs quad12 --rates 1000 --duration 5 \
        --repeat 3 --stem node_latency_quad12                  # four feet, one PoseArray each

A config naming several tips (``tip_links``) is sent one ``geometry_msgs/PoseArray`` per target
on ``~/target_poses``: every tip's position from a smooth joint-space path, orientations all
zeros (position only); its answer is one JointState.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

import numpy as np

from benchmarks.common import target_checks
from benchmarks.common.paths import (leave_reach, out_of_reach_mask, read_config, tip_positions,
                                     trajectory)
from benchmarks.node.dds_probe import Publisher, Recorder, cpu_seconds, stamp_ns, steal_jiffies
from benchmarks.node.latency_report import (against_relay, analyse, checks, markdown,
                                            phase_line, relay_checks)

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / 'benchmarks' / 'results'

MATCH_TOLERANCE_M = 1e-4



def log(msg: str) -> None:
    print(msg, flush=True)


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
    """One node (``relay``: the relay of ``node/relay.py`` instead) with config ``name``, every
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
               PYTHONPATH=os.pathsep.join([str(REPO)] + [
                   p for p in [os.environ.get('PYTHONPATH')] if p]))
    if args.profile and not relay:
        env['IK_NODE_PROFILE'] = str(args.out / f'profile_{name}.pstats')
    log_path = args.out / f'{kind}_{name}.log'
    with open(log_path, 'w') as node_log:
        extra = [a for p in args.node_param for a in ('-p', p)]
        command = [sys.executable, '-m', 'benchmarks.node.relay', str(config_file)] if relay \
            else [sys.executable, '-m', 'benchmarks.node.traced', '--ros-args', '--params-file',
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
                    help='skip the relay (node/relay.py: the same executor, QoS and message '
                         'types, no solve) that each node run is compared with')
    ap.add_argument('--label', default='', help='free text recorded in the results')
    ap.add_argument('--node-param', action='append', default=[], metavar='NAME:=VALUE',
                    help='extra node parameter (repeatable), e.g. reachability_samples:=0')
    ap.add_argument('--profile', action='store_true',
                    help='run the node under cProfile, stats in profile_<config>.pstats '
                         '(slows the node: do not quote its latencies)')
    ap.add_argument('--out', type=Path, default=RESULTS)
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
        'command': ' '.join(['python -m benchmarks.node.latency'] + sys.argv[1:]),
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
