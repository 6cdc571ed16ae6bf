"""ik_node's ``~/compute_ik`` called as MoveIt's srv_kinematics_plugin calls it, on the UR5e and
the FR3 with their collision meshes; the stream beside four clients; Cartesian paths.

    python -m benchmarks.services.moveit_client [--robots ur5e fr3] [--n 100] [--seed 47]
        [--stream-s 30] [--lines 20] [--out benchmarks/results/services.md]

Per robot, a node process (``damped_jacobian``, its defaults, collisions on) and a minimal rclpy
``GetPositionIK`` echo server in another process; the client is this process. Held-out targets
(seeded): tips of random configurations whose raw meshes an independent check finds at least
the node's ``collision_padding`` (5 mm) apart (its own MoveIt-style table:
``benchmarks.collisions.bench.MeshCheck``), and
poses beyond the reach (1.6 x the farthest sampled tip, random orientation). Reported:

* answers: the share of free reachable targets answered SUCCESS; SUCCESS answers that miss the
  target (> 1e-4 m or 1e-3 rad by FK), leave the limits or collide by the independent check;
  the codes of the out-of-reach poses;
* round trip (request sent to response received), node and echo interleaved call by call, and
  the median solve of the same requests in this process (the services' own GroupSolvers) and
  of the services' whole handler (message in, answer out, no DDS) on them; the
  hypervisor's steal and the CPUs' busy share (``/proc/stat``) over those calls;
* a 20 ms timeout on tips of configurations in self-collision (their answers collide, so the
  solve retries until its budget ends): round trip less the echo's median;
* on the UR5e: a 1 kHz target stream while 4 threads call ``~/compute_ik`` 100 times a second
  each: targets sent vs solved (the node's ``solve_count``), ``skipped_targets``, calls answered;
* on the UR5e: straight lines of 0.3 m from random configurations whose raw meshes keep 5 mm
  apart (the node's ``collision_padding``; ``max_step`` 0.01 m,
  ``revolute_jump_threshold`` 0.5 rad, ``avoid_collisions``): ``fraction`` against the fraction
  an independent dense walk finds (bounded Levenberg-Marquardt every 2.5 mm, seeded by the
  previous point, raw meshes 5 mm apart by the independent check, no joint step over a quarter
  of the threshold), and the largest joint step of the answers.
"""

import argparse
import math
import platform
import subprocess
import threading
import time

import numpy as np

from benchmarks.collisions.bench import MeshCheck
from benchmarks.common.robots import add_collision_prefix
from benchmarks.services import graph
from benchmarks.services.paths import PADDING_M, cartesian_lines
from ik_node import Chain
from ik_node.config.node_config import config_from_flat
from ik_node.services.group_solvers import GroupSolvers
from ik_node.services.requests import IkRequest, PoseGoal

ROBOTS = {'ur5e': ('base_link', 'tool0'), 'fr3': ('fr3_link0', 'fr3_hand_tcp')}


def params_of(robot):
    base, tip = ROBOTS[robot]
    return {'urdf_file': str(graph.ROBOTS_DIR / f'{robot}.urdf'), 'base_link': base,
            'tip_link': tip, 'solver': 'damped_jacobian', 'reachability_samples': 0}


def free_targets(chain, check, n, rng):
    """Tips of random configurations whose raw meshes keep ``PADDING_M`` apart (the node's
    ``collision_padding``): free as the node defines free."""
    lower, upper = np.maximum(chain.lower, -math.pi), np.minimum(chain.upper, math.pi)
    out = []
    while len(out) < n:
        q = rng.uniform(lower, upper)
        if not check.closer_than(q, PADDING_M):
            out.append(chain.fk(q))
    return out


def colliding_targets(chain, check, n, rng):
    """Tips of random configurations in self-collision: their answers tend to collide, so the
    solve spends its budget on retries."""
    lower, upper = np.maximum(chain.lower, -math.pi), np.minimum(chain.upper, math.pi)
    out = []
    while len(out) < n:
        q = rng.uniform(lower, upper)
        if check.colliding(q):
            out.append(chain.fk(q))
    return out


def far_targets(chain, n, rng):
    lower, upper = np.maximum(chain.lower, -math.pi), np.minimum(chain.upper, math.pi)
    reach = max(np.linalg.norm(chain.fk(rng.uniform(lower, upper))[:3, 3]) for _ in range(2000))
    out = []
    from transforms3d.quaternions import quat2mat
    for _ in range(n):
        d = rng.normal(size=3)
        T = np.eye(4)
        T[:3, :3] = quat2mat(rng.normal(size=4) / 1.0)
        T[:3, 3] = 1.6 * reach * d / np.linalg.norm(d)
        out.append(T)
    return out


def percentile(values, p):
    return float(np.percentile(values, p)) * 1e3 if len(values) else math.nan


def measure_robot(robot, args, rng, lines):
    base, tip = ROBOTS[robot]
    chain = Chain.from_urdf_file(graph.ROBOTS_DIR / f'{robot}.urdf', base, tip)
    name = f'bench_{robot}_{args.seed}'
    node = graph.start_node(name, params_of(robot), graph.LOGS / f'bench_{robot}.log')
    echo = graph.start_echo(f'/{name}_echo/compute_ik')
    client = graph.Client(name)
    try:
        check = MeshCheck(chain, args.table_samples, rng)
        targets = free_targets(chain, check, args.n, rng)
        far = far_targets(chain, max(args.n // 4, 5), rng)
        ik = client.service(graph.srv.GetPositionIK, f'/{name}/compute_ik', wait=120)
        echo_client = client.service(graph.srv.GetPositionIK, f'/{name}_echo/compute_ik')
        seed = np.clip(np.zeros(chain.n), chain.lower, chain.upper)
        # the first call builds the services' solvers: not timed
        client.call(ik, graph.plugin_request('', chain.joint_names, seed, base, tip, targets[0]),
                    timeout=120)
        r = {'success': 0, 'miss': 0, 'limits': 0, 'collide': 0, 'rt': [], 'echo': [],
             'codes': {}, 'far_codes': {}, 'timeout_rt': []}
        ticks = graph.cpu_ticks()
        for T in targets:
            request = graph.plugin_request('', chain.joint_names, seed, base, tip, T)
            r['echo'].append(client.call(echo_client, request)[1])
            response, rt = client.call(ik, request)
            r['rt'].append(rt)
            code = response.error_code.val
            r['codes'][code] = r['codes'].get(code, 0) + 1
            if code != 1:
                continue
            r['success'] += 1
            q = graph.solution_of(response, chain.joint_names)
            T_q = chain.fk(q)
            angle = math.acos(max(-1.0, min(1.0, (np.trace(T_q[:3, :3].T @ T[:3, :3]) - 1) / 2)))
            r['miss'] += np.linalg.norm(T_q[:3, 3] - T[:3, 3]) > 1e-4 or angle > 1e-3
            r['limits'] += not chain.within_limits(q)
            r['collide'] += bool(check.colliding(q))
        r['steal'], r['busy'] = graph.cpu_shares(ticks, graph.cpu_ticks())
        echo_median = float(np.median(r['echo']))
        for T in far:
            request = graph.plugin_request('', chain.joint_names, seed, base, tip, T)
            code = client.call(ik, request)[0].error_code.val
            r['far_codes'][code] = r['far_codes'].get(code, 0) + 1
        r['timeout_codes'] = {}
        for T in colliding_targets(chain, check, max(args.n // 4, 5), rng):
            request = graph.plugin_request('', chain.joint_names, seed, base, tip, T, 0.02)
            response, rt = client.call(ik, request)
            r['timeout_rt'].append(rt - echo_median)
            code = response.error_code.val
            r['timeout_codes'][code] = r['timeout_codes'].get(code, 0) + 1
        r['solve'], r['handler'] = in_process_solves(robot, chain, targets, seed)
        if robot == 'ur5e':
            r['stream_alone'] = stream_beside_clients(client, name, chain, targets, seed, args,
                                                      callers=0)
            r['stream'] = stream_beside_clients(client, name, chain, targets, seed, args)
            r['paths'] = cartesian_lines(client, name, chain, check, rng, lines)
        return r
    finally:
        client.close()
        graph.stop(echo)
        graph.stop(node)


class _Host:
    """What ``ComputeIk`` asks of the services' process: the solvers, no measured state, no
    TF, no diagnostics (timed apart from DDS)."""

    measured = None

    def __init__(self, solvers):
        self._solvers = solvers

    def solvers(self):
        return self._solvers

    def lookup(self, base_link):
        return None

    def report(self, *args, **kwargs):
        pass

    def warn(self, text):
        pass


def in_process_solves(robot, chain, targets, seed):
    """Wall times [s] of each request's solve by the services' own GroupSolvers here, and of
    the services' whole ``~/compute_ik`` handler (message in, message out) on the same
    requests."""
    from ik_node.ros.services.compute_ik import ComputeIk
    config = config_from_flat(params_of(robot))
    solvers = GroupSolvers(config, config.collision)
    solvers.near_seeds(solvers.chain(solvers.group('')))  # as the services' warm-up does
    handler = ComputeIk(_Host(solvers))
    times, handled = [], []
    for k, T in enumerate(targets):
        from benchmarks.services.graph import quat_xyzw
        request = IkRequest('', dict(zip(chain.joint_names, seed)), (
            PoseGoal('', '', (0, 0), T[:3, 3], np.array(quat_xyzw(T[:3, :3]))),), 0.0, True)
        message = graph.plugin_request('', chain.joint_names, seed, chain.base_link,
                                       chain.tip_link, T)
        response = graph.srv.GetPositionIK.Response()
        start = time.perf_counter()
        solvers.solve(request)
        middle = time.perf_counter()
        handler(message, response)
        if k:  # the first builds the solvers
            times.append(middle - start)
            handled.append(time.perf_counter() - middle)
    return times, handled


def stream_beside_clients(client, name, chain, targets, seed, args, callers=4):
    """1 kHz of targets on ~/target_pose while ``callers`` threads call ~/compute_ik at 100 Hz
    each."""
    from geometry_msgs.msg import PoseStamped
    ik = client.service(graph.srv.GetPositionIK, f'/{name}/compute_ik')
    time.sleep(0.5)
    before = max((int(graph.diag_value(s, 'solve_count') or 0) for s in client.statuses),
                 default=0)
    first = len(client.statuses)
    stop = threading.Event()
    calls = {'sent': 0, 'answered': 0}
    lock = threading.Lock()

    def caller(k):
        period, next_at, i = 0.01, time.perf_counter(), k
        while not stop.is_set():
            T = targets[i % len(targets)]
            i += 4
            with lock:
                calls['sent'] += 1
            try:
                client.call(ik, graph.plugin_request('', chain.joint_names, seed,
                                                     chain.base_link, chain.tip_link, T),
                            timeout=10.0)
            except RuntimeError:  # not answered within 10 s: counted as unanswered
                continue
            with lock:
                calls['answered'] += 1
            next_at += period
            time.sleep(max(0.0, next_at - time.perf_counter()))
    threads = [threading.Thread(target=caller, args=(k,)) for k in range(callers)]
    for t in threads:
        t.start()
    ticks = graph.cpu_ticks()
    sent, start = 0, time.perf_counter()
    msg = PoseStamped()
    msg.header.frame_id = chain.base_link
    while time.perf_counter() - start < args.stream_s:
        T = targets[sent % len(targets)]
        graph.set_pose(msg.pose, T)
        msg.header.stamp.sec, msg.header.stamp.nanosec = 1, sent + 1
        client.targets.publish(msg)
        sent += 1
        time.sleep(max(0.0, start + sent * 0.001 - time.perf_counter()))
    elapsed = time.perf_counter() - start
    steal, busy = graph.cpu_shares(ticks, graph.cpu_ticks())
    stop.set()
    for t in threads:
        t.join(60)
    time.sleep(1.5)
    statuses = [s for s in client.statuses]
    solved = max((int(graph.diag_value(s, 'solve_count') or 0) for s in statuses), default=0)
    skipped = max((int(graph.diag_value(s, 'skipped_targets') or 0) for s in statuses),
                  default=0) - max((int(graph.diag_value(s, 'skipped_targets') or 0)
                                    for s in statuses[:first]), default=0)
    return {'targets_sent': sent, 'targets_solved': solved - before, 'skipped': skipped,
            'stream_hz': sent / elapsed, 'calls_sent': calls['sent'],
            'calls_answered': calls['answered'], 'call_hz': calls['sent'] / elapsed,
            'steal': steal, 'busy': busy}


def report(results, args) -> str:
    commit = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=graph.REPO,
                            capture_output=True, text=True).stdout.strip()
    lines = ['# MoveIt services: `~/compute_ik` called as srv_kinematics_plugin calls it', '',
             f'`python -m benchmarks.services.moveit_client --robots {" ".join(args.robots)} '
             f'--n {args.n} --seed {args.seed} --stream-s {args.stream_s} --lines {args.lines}`'
             f' at {commit}; {platform.python_version()}, {platform.machine()}.', '',
             '| robot | free reachable | SUCCESS | SUCCESS missing / out of limits / colliding '
             '| out of reach: codes | rt median node / echo / solve here / handler here [ms] '
             '| rt p99 node [ms] | steal / CPUs busy during the rt calls [%] '
             '| 20 ms timeout: rt - echo median, median / max [ms] |',
             '|---|---|---|---|---|---|---|---|---|']
    for robot, r in results.items():
        far = ', '.join(f'{code}: {count}' for code, count in sorted(r['far_codes'].items()))
        lines.append(
            f'| {robot} | {args.n} | {r["success"]} ({100 * r["success"] / args.n:.1f} %) | '
            f'{r["miss"]} / {r["limits"]} / {r["collide"]} | {far} | '
            f'{percentile(r["rt"], 50):.2f} / {percentile(r["echo"], 50):.2f} / '
            f'{percentile(r["solve"], 50):.2f} / {percentile(r["handler"], 50):.2f} | '
            f'{percentile(r["rt"], 99):.2f} | '
            f'{r["steal"]:.2f} / {r["busy"]:.0f} | '
            f'{percentile(r["timeout_rt"], 50):.2f} / {percentile(r["timeout_rt"], 100):.2f} |')
    for robot, r in results.items():
        other = {c: n for c, n in r['codes'].items() if c != 1}
        if other:
            lines.append(f'\n{robot}: codes of free reachable targets not answered SUCCESS: '
                         f'{other}.')
        lines.append(f'\n{robot}: 20 ms timeout on tips of colliding configurations, codes '
                     f'{dict(sorted(r["timeout_codes"].items()))}.')
        for key, what in (('stream_alone', 'alone'), ('stream', 'beside 4 clients')):
            if key not in r:
                continue
            s = r[key]
            lines += ['', f'Stream {what} ({robot}, {args.stream_s} s): '
                      f'{s["targets_sent"]} targets sent ({s["stream_hz"]:.0f} Hz), '
                      f'{s["targets_solved"]} solved, skipped_targets {s["skipped"]}; '
                      f'{s["calls_sent"]} calls sent ({s["call_hz"]:.0f} Hz in all), '
                      f'{s["calls_answered"]} answered; steal {s["steal"]:.2f} %, CPUs busy '
                      f'{s["busy"]:.0f} %.']
        if 'paths' in r:
            p = r['paths']
            lines += ['', f'Cartesian lines ({robot}, {len(p["diff"])} lines of 0.3 m, max_step '
                      f'0.01 m): |fraction - dense walk| median {np.median(p["diff"]):.4f}, max '
                      f'{max(p["diff"]):.4f} (one max_step is {0.01 / 0.3:.4f}); within one '
                      f'max_step: {sum(d <= 0.01 / 0.3 + 1e-9 for d in p["diff"])}/'
                      f'{len(p["diff"])}; largest joint step {p["max_step_rad"]:.3f} rad '
                      '(threshold 0.5).']
    return '\n'.join(lines) + '\n'


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--robots', nargs='+', default=list(ROBOTS), choices=list(ROBOTS))
    p.add_argument('--n', type=int, default=100)
    p.add_argument('--seed', type=int, default=47)
    p.add_argument('--stream-s', type=float, default=30.0)
    p.add_argument('--lines', type=int, default=20)
    p.add_argument('--table-samples', type=int, default=300)
    p.add_argument('--out', default='')
    args = p.parse_args()
    add_collision_prefix()  # the meshes, for this process's own independent check
    print(f'seed {args.seed}', flush=True)
    rng = np.random.default_rng(args.seed)
    results = {robot: measure_robot(robot, args, rng, args.lines) for robot in args.robots}
    text = report(results, args)
    print(text)
    if args.out:
        with open(args.out, 'w') as f:
            f.write(text)


if __name__ == '__main__':
    main()
