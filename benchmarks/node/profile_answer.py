#!/usr/bin/env python3
"""Where the node's CPU per answer goes: its target callback called in-process, no DDS in.

Builds ``IkNode`` with ``config/<config>.yaml`` (rclpy initialised, a private domain) and calls
its own subscription callback (``~/target_point``, ``~/target_pose`` on 6-joint chains, or
``~/target_poses`` for several tips) with the messages of ``benchmarks.common.paths``' smooth
path (serialized beforehand where the node takes them serialized), at ``--rate`` (1 kHz: the
statuses and marker arrays, which go out at their own rates, then weigh on each answer as in a
stream), the node's timer run every 100 answers; the reachability map is not built
(``reachability_samples:=0``) and the compiled kernels are loaded before the timing. Reports
the CPU per answer
(``time.process_time``), the solver's own time, and the CPU of each part of the path
(pipeline, solution publish, status, markers, interactive markers) counted by wrappers; with
``--profile``, cProfile's table of the same loop instead (the profiler slows it: use the
table's shares, not its times). Publishing goes to DDS as in the node (nobody subscribes).

Usage::

    python -m benchmarks.node.profile_answer --configs leg3 arm6 quad12 --n 3000
    python -m benchmarks.node.profile_answer --configs quad12 --profile --sort tottime
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.common.paths import read_config, tip_positions, trajectory

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / 'benchmarks' / 'results'

#: The node's parts timed by wrappers: attribute of IkNode, method. A profiler times the
#: node's inner parts, so it reaches into them (the benchmarks time the node through topics).
PARTS = (('_inputs.target_messages', 'drain'), ('_pipeline', 'prepare'), ('_pipeline', 'solve'),
         ('_solution', 'publish'), ('_status', 'solve'), ('_markers', 'publish_held'),
         ('_drag', 'show'))


class GcTime:
    """CPU time [s] of Python's garbage collections while entered, and how many of each
    generation ran (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.seconds, self.counts, self._start = 0.0, [0, 0, 0], None

    def _track(self, phase: str, info: dict) -> None:
        if phase == 'start':
            self._start = time.process_time()
        elif self._start is not None:
            self.seconds += time.process_time() - self._start
            self.counts[info['generation']] += 1
            self._start = None

    def __enter__(self) -> 'GcTime':
        gc.callbacks.append(self._track)
        return self

    def __exit__(self, *exc) -> None:
        gc.callbacks.remove(self._track)


def messages(chain, params, n: int):
    """``(topic, messages)``: ``n`` targets of the smooth path at 1 kHz, as the benchmark
    sends them."""
    import transforms3d
    from geometry_msgs.msg import PointStamped, Pose, PoseArray, PoseStamped
    q = trajectory(chain, n, 1000.0, 1.0)
    out = []
    if len(chain.tip_links) > 1:
        for feet in tip_positions(chain, q):
            msg = PoseArray()
            for p in feet:
                pose = Pose()
                pose.position.x, pose.position.y, pose.position.z = (float(v) for v in p)
                pose.orientation.w = 0.0
                msg.poses.append(pose)
            out.append(msg)
        topic = 'target_poses'
    elif params['solver'] != 'analytic_hip_knee' and chain.n >= 6:
        for T in chain.fk(q):
            msg = PoseStamped()
            msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = \
                (float(v) for v in T[:3, 3])
            o = msg.pose.orientation
            o.x, o.y, o.z, o.w = (float(v) for v in np.roll(
                transforms3d.quaternions.mat2quat(T[:3, :3]), -1))
            out.append(msg)
        topic = 'target_pose'
    else:
        for T in chain.fk(q):
            msg = PointStamped()
            msg.point.x, msg.point.y, msg.point.z = (float(v) for v in T[:3, 3])
            out.append(msg)
        topic = 'target_point'
    for msg in out:
        msg.header.frame_id = params['base_link']
    return topic, out


def run(name: str, n: int, profile: bool, sort: str, node_params=(), callers=(),
        rate: float = 1000.0) -> None:
    from ik_node.ros.node import IkNode
    from ik_node import kernels
    config_file = REPO / 'config' / f'{name}.yaml'
    params = read_config(config_file)
    extra = [a for p in node_params for a in ('-p', p)]
    node = IkNode(cli_args=['--ros-args', '--params-file', str(config_file), *extra])
    try:
        kernels.wait(300.0)  # the compiled path serves, and its loading is not timed
        chain = node.model.chain
        topic, msgs = messages(chain, params, n + 200)
        subscription = next(s for s in node.subscriptions
                            if s.topic_name == f'/{node.get_name()}/{topic}')
        callback = subscription.callback
        if getattr(subscription, 'raw', False):  # the node takes the serialized message
            from rclpy.serialization import serialize_message
            stamp_ns = time.time_ns()
            for k, msg in enumerate(msgs):  # stamped apart, serialized before the timing
                msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns + k * 1000,
                                                                        1_000_000_000)
            msgs = [serialize_message(msg) for msg in msgs]
        spent = {}

        def timed(owner, method, key):
            inner = getattr(owner, method)

            def wrapper(*args, **kwargs):
                t = time.process_time()
                try:
                    return inner(*args, **kwargs)
                finally:
                    spent[key] = spent.get(key, 0.0) + time.process_time() - t
            setattr(owner, method, wrapper)
        solve_s = []
        solve = node._pipeline.solve

        def solve_timed(model, job):
            result = solve(model, job)
            solve_s.append(result.solve_time)
            return result
        node._pipeline.solve = solve_timed
        if not profile:
            for attr, method in PARTS:
                owner = node
                for part in attr.split('.'):
                    owner = getattr(owner, part, None)
                if owner is not None and hasattr(owner, method):  # (another checkout's node
                    timed(owner, method, f'{attr[1:]}.{method}')   # may lack a part)
        sent = {'statuses': 0, 'marker arrays': 0}

        def counted(owner, key):
            inner = owner._send

            def send(publisher, msg):
                sent[key] += 1
                return inner(publisher, msg)
            owner._send = send
        counted(node._status._out, 'statuses')
        counted(node._markers, 'marker arrays')

        def feed(batch):
            start = time.perf_counter()
            for k, msg in enumerate(batch):
                if rate:  # paced: the statuses and markers come as often as in a stream
                    ahead = start + k / rate - time.perf_counter()
                    if ahead > 0.0:
                        time.sleep(ahead)
                if not isinstance(msg, bytes):
                    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(time.time_ns(),
                                                                            1_000_000_000)
                callback(msg)
                if k % 100 == 99:
                    node._loop.tick()
        feed(msgs[:200])  # warm-up
        collector = GcTime()
        spent.clear()
        solve_s.clear()
        sent.update({key: 0 for key in sent})
        profiler = None
        if profile:
            import cProfile
            profiler = cProfile.Profile()
            profiler.enable()
        cpu0, wall0 = time.process_time(), time.perf_counter()
        with collector:
            feed(msgs[200:])
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        if profiler is not None:
            import pstats
            profiler.disable()
            stats = pstats.Stats(profiler).sort_stats(sort)
            stats.print_stats(40)
            if callers:
                stats.print_callers(*callers)
        # the solve's CPU where the parts are timed, else the solver's own (wall) time
        mean_solve = spent['pipeline.solve'] / n if 'pipeline.solve' in spent else \
            float(np.mean(solve_s)) if solve_s else float('nan')
        import ik_node
        checkout = Path(ik_node.__file__).parents[1].name
        print(f'{name} ({checkout}): {n} answers in {wall:.2f} s: CPU {cpu / n * 1e3:.4f} ms '
              'per answer, '
              f'solve {mean_solve * 1e3:.4f} ms mean ({len(solve_s)} solves); CPU less solve '
              f'{(cpu / n - mean_solve) * 1e3:.4f} ms; {sent["statuses"]} statuses, '
              f'{sent["marker arrays"]} marker arrays; load {os.getloadavg()[0]:.1f}')
        for key, seconds in sorted(spent.items(), key=lambda kv: -kv[1]):
            print(f'  {key:<24} {seconds / n * 1e3:.4f} ms per answer')
        print(f'  {"garbage collector":<24} {collector.seconds / n * 1e3:.4f} ms per answer '
              f'(collections by generation: {collector.counts}; counted inside the parts too)')
    finally:
        node.destroy_node()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--configs', nargs='+', default=['leg3', 'arm6', 'quad12'])
    ap.add_argument('--n', type=int, default=3000, help='answers timed per config')
    ap.add_argument('--rate', type=float, default=1000.0,
                    help='targets per second fed (0: as fast as the node takes them); the '
                         'statuses and marker arrays go out at their rates in wall time, so '
                         'their share per answer depends on it')
    ap.add_argument('--profile', action='store_true', help='cProfile table instead of parts')
    ap.add_argument('--sort', default='cumulative', help='cProfile sort key')
    ap.add_argument('--callers', nargs='+', default=[], metavar='NAME',
                    help='with --profile: also who calls the functions matching NAME')
    ap.add_argument('--node-param', action='append', default=None, metavar='NAME:=VALUE',
                    help='node parameter (repeatable); default reachability_samples:=0, so '
                         "the map's background build is not counted in the node's CPU")
    args = ap.parse_args(argv)
    os.environ['ROS_DOMAIN_ID'] = str(random.Random(os.getpid()).randint(201, 230))
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    import rclpy
    rclpy.init()
    try:
        for name in args.configs:
            run(name, args.n, args.profile, args.sort,
                ['reachability_samples:=0'] if args.node_param is None else args.node_param,
                args.callers, args.rate)
    finally:
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
