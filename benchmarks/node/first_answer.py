#!/usr/bin/env python3
"""The node's first answer: from ``python -m ik_node.node`` started to its first solve result.

The node (arm6, damped_jacobian) is started as its own process; a probe (the ROS tests'
harness) sends a target as soon as it sees the node's target subscription, and again every
10 ms until a diagnostics status answers one with a solve result. Reported per start: seconds
from the process start to the moment that status reached the probe (stamped in the probe's
subscription callback, not when a polling loop noticed it), and which path the node said
served. Three kinds of start, interleaved (``--rounds`` of each): a cold numba cache (an empty
``NUMBA_CACHE_DIR``: the kernels compile in the node's background thread), a warm one (numba's
cache as ``python -m ik_node.kernels warm`` leaves it) and the pure-Python path
(``IK_NODE_NO_NUMBA=1``).

What the probe adds, and how it is kept out: the probe's DDS participant runs before the node
starts (as a client that is already up), and a participant that starts later learns of one
already running when that one next announces itself: with Fast DDS's defaults every 3 s, so the
node's first target would arrive anywhere from 0 to 3 s after the node is ready, whatever the
node does. The probe therefore announces its participant every 0.1 s (a Fast DDS profile for
this process only, :data:`PROBE_PROFILE`; the node runs with the defaults): the node then finds
it within 0.1 s. ``--default-discovery`` keeps Fast DDS's defaults for the probe too (what a
client that was running before the node sees). A target sent before the node matched the
probe's publisher is lost, and the node answers only the newest of the targets waiting while it
is being constructed; the results say how many targets went out before the answered one.

``--fresh-clone``: every start from its own ``git clone`` of the tree's commit (no
``__pycache__``: Python compiles every module of ik_node as it imports it, and numba's cache is
empty, as on the first start after cloning without installing), cold and pure Python.

``--tree PATH`` (repeatable): start the node from these checkouts instead of this one, in turn
within each round (e.g. a branch and ``main`` in the same period); the probe stays this one.

``--breakdown``: start the node through ``benchmarks/node/start_trace.py`` (the same start-up, with
the end of each step written out: interpreter, imports, ``rclpy.init``, construction, first
target in, first answer out) and report the median moment of each.

Usage::

    python -m benchmarks.node.first_answer                  # writes results/first_answer.md
    python -m benchmarks.node.first_answer --rounds 1 --out /tmp/first.md
    python -m benchmarks.node.first_answer --fresh-clone --out results/first_answer_fresh_clone.md
    python -m benchmarks.node.first_answer --breakdown --tree . --tree /tmp/main --out /tmp/b.md
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np

from benchmarks.common.from_tests import load_test_helper
from ik_node import kernels

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / 'benchmarks' / 'results'
os.environ.setdefault('ROS_DOMAIN_ID', str(os.getpid() % 90 + 5))
os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
harness = load_test_helper('harness')  # the ROS tests' probe (imports rclpy: after the domain)

CONFIG = Path('config') / 'arm6.yaml'
#: The probe's Fast DDS profile: its participant announced every 0.1 s (default 3 s).
PROBE_PROFILE = """<?xml version="1.0" encoding="UTF-8" ?>
<profiles xmlns="http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles">
  <participant profile_name="first_answer_probe" is_default_profile="true">
    <rtps><builtin><discovery_config>
      <leaseAnnouncement><sec>0</sec><nanosec>100000000</nanosec></leaseAnnouncement>
    </discovery_config></builtin></rtps>
  </participant>
</profiles>
"""
PROFILE_VARS = ('FASTRTPS_DEFAULT_PROFILES_FILE', 'FASTDDS_DEFAULT_PROFILES_FILE')
RESEND_S = 0.01
#: The moments of a traced start (benchmarks/node/start_trace.py), in order, with what ends there.
TRACE_STEPS = {'interpreter': 'Python and site up',
               'imports': 'the node\'s imports done (rclpy, numpy, ik_node)',
               'construct': 'rclpy.init and the executor done',
               'constructed': 'the node constructed (parameters, topics, model, solver)',
               'subscribed': 'the probe sees the target subscription',
               'first_target': 'the first target in the node\'s callback',
               'first_answer': 'the first JointState published',
               'answer_seen': 'its diagnostics status at the probe'}
#: The DDS profile variables as this process was started with them (the node gets these).
NODE_ENV = {name: os.environ[name] for name in PROFILE_VARS if name in os.environ}
KINDS = {'cold': ('cold numba cache', None),
         'warm': ('warm numba cache', {}),
         'python': ('pure Python (IK_NODE_NO_NUMBA=1)', {'IK_NODE_NO_NUMBA': '1'})}


class TimedProbe(harness.Probe):
    """The harness's probe, stamping each diagnostics status and each target sent with
    ``time.time()`` where it happens."""

    def __init__(self, *args, **kwargs) -> None:
        self.arrivals: List[float] = []
        self.sent_at: Dict[str, float] = {}
        super().__init__(*args, **kwargs)

    def _on_diag(self, msg) -> None:
        now = time.time()
        with self.lock:
            for s in msg.status:
                if s.name == f'{self.ik_name}: ik':
                    self.diagnostics.append(s)
                    self.arrivals.append(now)

    def send_point(self, xyz, frame_id: Optional[str] = None, tip=None) -> None:
        super().send_point(xyz, frame_id, tip)
        with self.lock:
            self.sent_at[self.sent[-1]] = time.time()


def start_node(tree: Path, env_extra: dict, traced: bool) -> subprocess.Popen:
    """The node on arm6 from checkout ``tree`` (first on the path, the working directory):
    ``python -m ik_node.node``, or ``benchmarks/node/start_trace.py`` of this checkout."""
    env = dict(os.environ, **env_extra, PYTHONUNBUFFERED='1')
    for name in PROFILE_VARS:  # the node runs with the DDS settings it would have anyway
        if name in NODE_ENV:
            env[name] = NODE_ENV[name]
        else:
            env.pop(name, None)
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(tree), str(REPO),
                                                       os.environ.get('PYTHONPATH')]))
    program = ['-m', 'benchmarks.node.start_trace'] if traced else ['-m', 'ik_node.node']
    return subprocess.Popen([sys.executable, *program, '--ros-args', '--params-file',
                             str(tree / CONFIG)], cwd=tree, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def fresh_probe_answer(tree: Path, env_extra: dict, traced: bool) -> dict:
    """:func:`first_answer` with a probe of its own, in a DDS participant created right after
    the node's process starts."""
    ros = harness.Ros()
    probe = TimedProbe(ros, 'ik_node')
    probe.timeout = 120.0
    try:
        return first_answer(probe, tree, env_extra, traced, probe_first=False)
    finally:
        ros.close()


def first_answer(probe: TimedProbe, tree: Path, env_extra: dict, traced: bool,
                 probe_first: bool = True) -> dict:
    """One start: seconds from the process start to each moment (``answer_seen``: the first
    answer at the probe), the targets sent before the answered one, and the path lines of the
    node's log. One probe serves every start (a new one per start would leave the old ones
    receiving every message in this process)."""
    chain = harness.chain_of('arm6')
    target = chain.fk(np.array([0.3, -0.8, 1.1, 0.2, 0.4, -0.3]))[:3, 3]
    pub = probe.point_pubs[None]
    if probe_first:
        harness.wait_for('the previous node gone', lambda: pub.get_subscription_count() == 0,
                         timeout=30.0)
    start = time.time()
    proc = probe.process = start_node(tree, env_extra, traced)
    moments: Dict[str, float] = {}
    try:
        probe.wait_for('the target subscription', lambda: pub.get_subscription_count() > 0)
        moments['subscribed'] = time.time()
        mark = probe.mark()

        def answer():
            with probe.lock:
                sent = probe.sent[mark[-1]:]
                return next((i for i, s in enumerate(probe.diagnostics[mark[1]:], mark[1])
                             if harness.answers(s, sent) and
                             int(harness.values(s).get('solve_count') or 0) > 0), None)

        def answered():
            probe.send_point(target)
            time.sleep(RESEND_S)
            return answer() is not None
        harness.wait_for('the first answer', answered, timeout=120.0, procs=(proc,))
        index = answer()
        with probe.lock:
            moments['answer_seen'] = probe.arrivals[index]
            stamps = set(harness.values(probe.diagnostics[index])['target_stamp'].split(','))
            sent = probe.sent[mark[-1]:]
            sent_before = min(i for i, stamp in enumerate(sent) if stamp in stamps)
    finally:
        code, out, err = harness.stop_process(proc)
        probe.process = None
    for line in err.splitlines():
        if line.startswith('start_trace '):
            _, name, at = line.split()
            moments[name] = float(at)
    said = [line.split('solver path: ', 1)[1] for line in (out + err).splitlines()
            if 'solver path: ' in line]
    return {'seconds': {k: v - start for k, v in moments.items()}, 'sent_before': sent_before,
            'said': said}


def describe(tree: Path) -> str:
    """A checkout's short commit, ``+changes`` when its work tree differs from it."""
    def git(*args):
        return subprocess.run(['git', '-C', str(tree), *args], capture_output=True,
                              text=True).stdout.strip()
    dirty = git('status', '--porcelain', '--untracked-files=no')
    return git('rev-parse', '--short', 'HEAD') + (' +changes' if dirty else '')


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--out', type=Path, default=RESULTS / 'first_answer.md')
    ap.add_argument('--fresh-clone', action='store_true',
                    help="every start from a new git clone of the tree's commit (no "
                         "__pycache__, numba's cache empty): cold and pure Python")
    ap.add_argument('--tree', type=Path, action='append',
                    help='a checkout to start the node from (repeatable; default: this one)')
    ap.add_argument('--kinds', nargs='+', choices=sorted(KINDS),
                    help='which starts (default: cold warm python; --fresh-clone: cold python)')
    ap.add_argument('--breakdown', action='store_true',
                    help='start through benchmarks/node/start_trace.py: the moment of each step')
    ap.add_argument('--fresh-probe', action='store_true',
                    help='a new probe (its own DDS participant) per start')
    ap.add_argument('--default-discovery', action='store_true',
                    help="the probe with Fast DDS's default announcement period (3 s) instead "
                         "of 0.1 s: what a client running before the node sees")
    args = ap.parse_args(argv)
    if not args.default_discovery:  # before rclpy.init in this process (harness.Ros)
        profile = Path(tempfile.mkdtemp(prefix='first_answer_')) / 'probe_fastdds.xml'
        profile.write_text(PROBE_PROFILE)
        for name in PROFILE_VARS:
            os.environ[name] = str(profile)
    trees = [t.resolve() for t in (args.tree or [REPO])]
    kinds = args.kinds or (['cold', 'python'] if args.fresh_clone else ['cold', 'warm', 'python'])
    if not args.fresh_clone:  # every tree with its modules byte-compiled, as an install is
        for tree in trees:
            subprocess.run([sys.executable, '-m', 'compileall', '-q', 'ik_node'], cwd=tree,
                           check=True)
            if 'warm' in kinds:
                subprocess.run([sys.executable, '-m', 'ik_node.kernels', 'warm'],
                               cwd=tree, check=True, env=dict(os.environ, PYTHONPATH=str(tree)))
    labels = {tree: describe(tree) for tree in trees}
    rows: Dict[tuple, list] = {(tree, kind): [] for kind in kinds for tree in trees}
    load0 = os.getloadavg()
    ros = harness.Ros()
    probe = TimedProbe(ros, 'ik_node')
    probe.timeout = 120.0
    try:
        for _ in range(args.rounds):
            for kind in kinds:
                for tree in trees:
                    env = KINDS[kind][1]
                    with tempfile.TemporaryDirectory() as cache:
                        extra = dict(env or {})
                        if env is None or args.fresh_clone:
                            extra['NUMBA_CACHE_DIR'] = cache
                        node_tree = tree
                        if args.fresh_clone:
                            node_tree = Path(cache) / 'ik_node'
                            subprocess.run(['git', 'clone', '--quiet', str(tree),
                                            str(node_tree)], check=True)
                        if args.fresh_probe:
                            run = fresh_probe_answer(node_tree, extra, args.breakdown)
                        else:
                            run = first_answer(probe, node_tree, extra, args.breakdown)
                    rows[tree, kind].append(run)
                    print(f'{labels[tree]} {KINDS[kind][0]}: '
                          f'{run["seconds"]["answer_seen"]:.2f} s, '
                          f'{run["sent_before"]} sent before; '
                          f'{" / ".join(run["said"])}', flush=True)
    finally:
        ros.close()
    load1 = os.getloadavg()
    out = report(args, trees, labels, kinds, rows, load0, load1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(out)
    print(out)
    return 0


def report(args, trees, labels, kinds, rows, load0, load1) -> str:
    """The results as markdown."""
    where = ', '.join(f'`{labels[t]}`' for t in trees)
    lines = ['# The node\'s first answer', '',
             f'Command: `python -m benchmarks.node.first_answer {" ".join(sys.argv[1:])}`  ',
             f'Commit: {where}; {kernels.serving()}  ',
             f'Conditions: {os.cpu_count()} CPUs, load average {load0[0]:.1f} at the start, '
             f'{load1[0]:.1f} at the end; {time.strftime("%Y-%m-%dT%H:%M")}', '',
             'Seconds from `python -m ik_node.node --ros-args --params-file config/arm6.yaml` '
             'started to the diagnostics status answering its first target reaching the probe '
             '(the target sent as soon as the probe sees the node\'s subscription, again every '
             f'{RESEND_S * 1000:.0f} ms), the targets sent before the answered one (lost '
             'before the node matched the probe\'s publisher, or waiting while the node was '
             'constructed, where only the newest is answered), and what the node logged about '
             'its solver path by the time it was stopped. The probe\'s DDS participant ' + (
                 'announces itself with Fast DDS\'s default period (3 s): the node, started '
                 'after it, finds it at its next announcement.' if args.default_discovery else
                 'announces itself every 0.1 s (Fast DDS\'s default: 3 s; the node keeps the '
                 'defaults), so the node finds it within 0.1 s of its own start.') + (
                 ' Every start from its own `git clone` of the commit: no `__pycache__` (Python '
                 'compiles each module of ik_node as it imports it), numba\'s cache empty.'
                 if args.fresh_clone else ''), '',
             '| commit | start | first answer [s] per round | median [s] | sent before | '
             'the node\'s log |', '|---|---|---|---|---|---|']
    for kind in kinds:
        for tree in trees:
            runs = rows[tree, kind]
            times = [r['seconds']['answer_seen'] for r in runs]
            said = ' / '.join(dict.fromkeys(line for r in runs for line in r['said']))
            lines.append(f'| `{labels[tree]}` | {KINDS[kind][0]} | '
                         f'{", ".join(f"{s:.2f}" for s in times)} | '
                         f'{statistics.median(times):.2f} | '
                         f'{", ".join(str(r["sent_before"]) for r in runs)} | {said} |')
    if args.breakdown:
        lines += ['', 'Median seconds from the process start to the end of each step '
                  '(`benchmarks/node/start_trace.py`), all kinds of start together:', '',
                  '| step ends | ' + ' | '.join(f'`{labels[t]}`' for t in trees) + ' |',
                  '|---|' + '---|' * len(trees)]
        for step, what in TRACE_STEPS.items():
            cells = []
            for tree in trees:
                values = [r['seconds'][step] for kind in kinds for r in rows[tree, kind]
                          if step in r['seconds']]
                cells.append(f'{statistics.median(values):.3f}' if values else '–')
            lines.append(f'| {step}: {what} | ' + ' | '.join(cells) + ' |')
    return '\n'.join(lines) + '\n'


if __name__ == '__main__':
    sys.exit(main())
