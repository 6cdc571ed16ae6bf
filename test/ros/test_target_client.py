"""``ik-solve target`` against a real node process over real DDS: one target out, its answer
(the diagnostics status and the joint state matched by the target's stamp) printed; the exit
status says reached (0), not reached (1), refused or no node (2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from harness import chain_of, node_process

REPO = Path(__file__).resolve().parents[2]


def ik_solve_target(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
    """``ik-solve target ARGS`` as its own process (``python -m ik_node.cli``)."""
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join([str(REPO)] + [p for p in [env.get('PYTHONPATH', '')]
                                                       if p])
    return subprocess.run([sys.executable, '-m', 'ik_node.cli', 'target', *args], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope='module')
def leg3_node():
    with node_process('--params-file', str(REPO / 'config' / 'leg3.yaml')) as proc:
        yield proc


@pytest.mark.slow
def test_a_reachable_target_prints_the_answer_and_the_joints_that_reach_it(leg3_node):
    target = np.array([0.2, 0.1, -0.45])
    proc = ik_solve_target('--point', *map(str, target), '--json', '--timeout', '30')
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out['diagnostics']['reachable'] == 'true'
    assert out['diagnostics']['target_stamp'] == out['target_stamp']
    chain = chain_of('leg3')
    q = np.array([out['joints'][name] for name in chain.joint_names])
    assert np.linalg.norm(chain.fk(q)[:3, 3] - target) <= 1e-5


@pytest.mark.slow
def test_an_unreachable_target_exits_1_with_the_status_and_the_best_effort(leg3_node):
    proc = ik_solve_target('--point', '0.9', '0.1', '-0.45', '--timeout', '30')
    assert proc.returncode == 1, proc.stderr
    assert 'reachable              false' in proc.stdout
    assert 'status                 unreachable' in proc.stdout
    assert 'joints:' in proc.stdout and 'knee' in proc.stdout


@pytest.mark.slow
def test_a_refused_target_exits_2_with_the_nodes_reason(leg3_node):
    proc = ik_solve_target('--point', '0.2', '0.1', '-0.45', '--frame', 'nowhere',
                           '--timeout', '30')
    assert proc.returncode == 2
    assert 'status                 error' in proc.stdout
    # without tf2_ros: not a link of the URDF; with it: no TF transform from 'nowhere'
    assert "frame 'nowhere' is not a link of the URDF" in proc.stdout or \
        "no TF transform from 'nowhere'" in proc.stdout


@pytest.mark.slow
def test_without_a_node_it_says_so_in_one_line_and_exits_2():
    start = time.monotonic()
    proc = ik_solve_target('--point', '0', '0', '0', '--node', '/nobody_here', '--timeout', '1')
    assert proc.returncode == 2
    assert proc.stderr.count('\n') == 1 and 'no node subscribes to /nobody_here/target_point' \
        in proc.stderr
    assert 'Traceback' not in proc.stderr
    assert time.monotonic() - start < 60  # (a bound on a hang, not a speed claim)
