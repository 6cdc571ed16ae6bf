#!/usr/bin/env python3
"""The node's first answer: from ``python -m ik_node.node`` started to its first solve result.

The node (arm6, damped_jacobian) is started as its own process; a probe (the ROS tests'
harness) sends a target as soon as the node subscribes, and again every 20 ms, until a
diagnostics status answers one with a solve result. Reported per start: seconds from the process
start to that answer, and which path the node said served. Three kinds of start, interleaved
(``--rounds`` of each): a cold numba cache (an empty ``NUMBA_CACHE_DIR``: the kernels compile in
the node's background thread), a warm one (numba's cache as ``python -m ik_node.solvers.kernels
warm`` leaves it) and the pure-Python path (``IK_NODE_NO_NUMBA=1``).

``--fresh-clone``: every start from its own ``git clone`` of this checkout's commit (no
``__pycache__``: Python compiles every module of ik_node as it imports it, and numba's cache is
empty, as on the first start after cloning and installing), cold and pure Python.

Usage::

    python benchmarks/first_answer.py                  # writes results/first_answer.md
    python benchmarks/first_answer.py --rounds 1 --out /tmp/first.md
    python benchmarks/first_answer.py --fresh-clone --out results/first_answer_fresh_clone.md
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / 'test' / 'ros'))
sys.path.insert(0, str(REPO / 'test'))
os.environ.setdefault('ROS_DOMAIN_ID', str(os.getpid() % 90 + 5))
os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')

import numpy as np  # noqa: E402

import harness  # noqa: E402
from ik_node.solvers import kernels  # noqa: E402

CONFIG = REPO / 'config' / 'arm6.yaml'


def start_node(env_extra: dict, clone: Optional[Path]) -> subprocess.Popen:
    """``python -m ik_node.node`` on arm6: from this checkout, or with ``clone`` first on the
    path (its own config file) and as the working directory."""
    if clone is None:
        return harness.start_process('--params-file', str(CONFIG), env_extra=env_extra)
    env = dict(os.environ, **env_extra, PYTHONUNBUFFERED='1')
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(clone), os.environ.get('PYTHONPATH')]))
    return subprocess.Popen([sys.executable, '-m', 'ik_node.node', '--ros-args', '--params-file',
                             str(clone / 'config' / CONFIG.name)], cwd=clone, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def first_answer(ros, env_extra: dict, clone: Optional[Path] = None) -> tuple:
    """Seconds from the node's process start to its first solve result, and its log's path
    lines."""
    chain = harness.chain_of('arm6')
    target = chain.fk(np.array([0.3, -0.8, 1.1, 0.2, 0.4, -0.3]))[:3, 3]
    start = time.perf_counter()
    proc = start_node(env_extra, clone)
    probe = harness.Probe(ros, 'ik_node', process=proc)
    probe.timeout = 120.0
    try:
        pub = probe.point_pubs[None]
        probe.wait_for('the target subscription', lambda: pub.get_subscription_count() > 0)
        mark = probe.mark()

        def answered():
            probe.send_point(target)
            time.sleep(0.02)
            sent = probe.sent[mark[-1]:]
            return any(harness.answers(s, sent) and int(harness.values(s).get('solve_count')
                                                         or 0) > 0
                       for s in probe.diagnostics[mark[1]:])
        harness.wait_for('the first answer', answered, timeout=120.0, procs=(proc,))
        seconds = time.perf_counter() - start
    finally:
        code, out, err = harness.stop_process(proc)
    said = [line.split('solver path: ', 1)[1] for line in (out + err).splitlines()
            if 'solver path: ' in line]
    return seconds, said


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--out', type=Path, default=HERE / 'results' / 'first_answer.md')
    ap.add_argument('--fresh-clone', action='store_true',
                    help="every start from a new git clone of this checkout's commit (no "
                         "__pycache__, numba's cache empty): cold and pure Python")
    args = ap.parse_args(argv)
    if args.fresh_clone:
        kinds = {'fresh clone, cold numba cache': {},
                 'fresh clone, pure Python (IK_NODE_NO_NUMBA=1)': {'IK_NODE_NO_NUMBA': '1'}}
    else:
        subprocess.run([sys.executable, '-m', 'ik_node.solvers.kernels', 'warm'], cwd=REPO,
                       check=True, env=harness.process_env())
        kinds = {'cold numba cache': None, 'warm numba cache': {},
                 'pure Python (IK_NODE_NO_NUMBA=1)': {'IK_NODE_NO_NUMBA': '1'}}
    rows = {kind: [] for kind in kinds}
    load0 = os.getloadavg()
    ros = harness.Ros()
    try:
        for _ in range(args.rounds):
            for kind, env in kinds.items():
                with tempfile.TemporaryDirectory() as cache:
                    extra = {'NUMBA_CACHE_DIR': cache} if env is None or args.fresh_clone \
                        else env
                    if args.fresh_clone:
                        extra.update(env)
                        clone = Path(cache) / 'ik_node'
                        subprocess.run(['git', 'clone', '--quiet', str(REPO), str(clone)],
                                       check=True)
                        seconds, said = first_answer(ros, extra, clone)
                    else:
                        seconds, said = first_answer(ros, extra)
                rows[kind].append((seconds, said))
                print(f'{kind}: {seconds:.2f} s; {" / ".join(said)}', flush=True)
    finally:
        ros.close()
    load1 = os.getloadavg()
    commit = subprocess.run(['git', '-C', str(REPO), 'rev-parse', '--short', 'HEAD'],
                            capture_output=True, text=True).stdout.strip()
    lines = ['# The node\'s first answer', '',
             f'Command: `python benchmarks/first_answer.py {" ".join(sys.argv[1:])}`  ',
             f'Commit: {commit}; {kernels.serving()}  ',
             f'Conditions: {os.cpu_count()} CPUs, load average {load0[0]:.1f} at the start, '
             f'{load1[0]:.1f} at the end; {time.strftime("%Y-%m-%dT%H:%M")}', '',
             'Seconds from `python -m ik_node.node --ros-args --params-file config/arm6.yaml` '
             'started to the diagnostics status answering its first target (sent as soon as '
             'the node subscribes, again every 20 ms), and what the node logged about its '
             'solver path by the time it was stopped.' + (
                 ' Every start from its own `git clone` of the commit: no `__pycache__` (Python '
                 'compiles each module of ik_node as it imports it), numba\'s cache empty.'
                 if args.fresh_clone else ''), '',
             '| start | first answer [s] per round | the node\'s log |', '|---|---|---|']
    for kind, results in rows.items():
        times = ', '.join(f'{s:.2f}' for s, _ in results)
        said = ' / '.join(dict.fromkeys(line for _, lines in results for line in lines))
        lines.append(f'| {kind} | {times} | {said} |')
    text = '\n'.join(lines) + '\n'
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == '__main__':
    sys.exit(main())
