"""``ik-solve`` run as a program (``python -m ik_node.cli``): results checked by FK, errors are
one line on stderr with exit status 2 and no traceback."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ik_node import Chain

REPO = Path(__file__).resolve().parents[2]


def run(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-m', 'ik_node.cli', *args], capture_output=True,
                          text=True, timeout=60, cwd=cwd or REPO)


def assert_clean_error(proc: subprocess.CompletedProcess, *words: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert 'Traceback' not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith('ik-solve: error: ')
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert proc.stdout == ''


def test_help_exits_zero_and_names_every_option():
    proc = run('--help')
    assert proc.returncode == 0
    for option in ('--urdf', '--base', '--tip', '--solver', '--param', '--config', '--target',
                   '--orientation', '--seed', '--json'):
        assert option in proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize('solver', ['analytic_hip_knee', 'fabrik', 'damped_jacobian'])
def test_json_solution_puts_the_foot_on_the_target(solver):
    chain = Chain.from_urdf_file(REPO / 'urdf' / 'leg3.urdf', 'base_link', 'foot')
    target = chain.fk(np.array([0.4, 0.5, -1.1]))[:3, 3]
    proc = run('--urdf', 'urdf/leg3.urdf', '--base', 'base_link', '--tip', 'foot',
               '--solver', solver, '--param', 'position_tolerance=1e-6',
               *(() if solver == 'analytic_hip_knee' else ('--param', 'timeout=10')),
               '--target', *map(str, target), '--json')
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out['joint_names'] == ['hip_yaw', 'hip_pitch', 'knee']
    assert out['reachable'] is True
    q = np.array(out['joint_positions'])
    assert np.linalg.norm(chain.fk(q)[:3, 3] - target) < 1e-6
    assert chain.within_limits(q)


def test_config_gives_defaults_and_flags_override_them():
    chain = Chain.from_urdf_file(REPO / 'urdf' / 'arm6.urdf', 'base_link', 'tool0')
    T = chain.fk(np.array([0.3, -1.2, 1.4, -0.9, -1.3, 0.4]))
    # arm6.yaml names damped_jacobian; the flag switches to fabrik (position only). A generous
    # timeout: the answer, not the speed, is tested (a loaded machine can exceed the 5 ms default).
    proc = run('--config', 'config/arm6.yaml', '--solver', 'fabrik', '--param', 'timeout=10',
               '--target', *map(str, T[:3, 3]), '--orientation', '0', '0', '0', '1', '--json')
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out['orientation_ignored'] is True
    assert len(out['joint_positions']) == 6
    assert np.linalg.norm(chain.fk(np.array(out['joint_positions']))[:3, 3] - T[:3, 3]) < 1e-3


def test_pose_target_reaches_position_and_orientation():
    import transforms3d
    chain = Chain.from_urdf_file(REPO / 'urdf' / 'arm6.urdf', 'base_link', 'tool0')
    T = chain.fk(np.array([-0.5, -1.0, 1.2, -1.5, -1.6, 0.2]))
    w, x, y, z = transforms3d.quaternions.mat2quat(T[:3, :3])
    proc = run('--config', 'arm6', '--param', 'timeout=0.5', '--target', *map(str, T[:3, 3]),
               '--orientation', *map(str, (x, y, z, w)), '--json')
    assert proc.returncode == 0, proc.stderr
    q = np.array(json.loads(proc.stdout)['joint_positions'])
    T_got = chain.fk(q)
    assert np.linalg.norm(T_got[:3, 3] - T[:3, 3]) < 1e-4
    assert np.allclose(T_got[:3, :3], T[:3, :3], atol=1e-3)


def test_human_output_names_the_joints_and_status():
    proc = run('--config', 'leg3', '--target', '0.1', '0.05', '-0.45')
    assert proc.returncode == 0, proc.stderr
    assert 'hip_yaw=' in proc.stdout and 'knee=' in proc.stdout
    assert 'reachable' in proc.stdout and 'yes' in proc.stdout


@pytest.mark.slow
def test_unreachable_target_exits_one_with_the_best_effort():
    proc = run('--config', 'leg3', '--target', '0', '0', '-2', '--json')
    assert proc.returncode == 1, proc.stderr
    out = json.loads(proc.stdout)
    assert out['reachable'] is False
    # Hip pitch joint 0.05 m below the base, thigh + shin 0.58 m: 1.37 m short at best.
    assert out['position_error'] == pytest.approx(1.37, abs=1e-3)


@pytest.mark.slow
@pytest.mark.parametrize('args,words', [
    (['--urdf', 'leg3.urdf', '--tip', 'foot'], ['--target']),
    (['--urdf', 'leg3.urdf', '--tip', 'foot', '--target', '1', 'x', '2'], ['--target']),
    (['--tip', 'foot', '--target', '0', '0', '-0.4'], ['--urdf']),
    (['--urdf', 'leg3.urdf', '--target', '0', '0', '-0.4'], ['--tip']),
    (['--urdf', 'nope.urdf', '--tip', 'foot', '--target', '0', '0', '-0.4'],
     ['nope.urdf', 'leg3.urdf']),
    (['--urdf', 'leg3.urdf', '--tip', 'toe', '--target', '0', '0', '-0.4'], ['toe', 'foot']),
    (['--urdf', 'leg3.urdf', '--tip', 'foot', '--solver', 'magic', '--target', '0', '0', '0'],
     ['magic', 'fabrik']),
    (['--urdf', 'leg3.urdf', '--tip', 'foot', '--param', 'damping=-1', '--target', '0', '0',
      '0'], ['damping', '-1']),
    (['--urdf', 'leg3.urdf', '--tip', 'foot', '--param', 'dampnig=1', '--target', '0', '0',
      '0'], ['dampnig', 'damping']),
    (['--urdf', 'leg3.urdf', '--tip', 'foot', '--param', 'damping', '--target', '0', '0', '0'],
     ['KEY=VALUE']),
    (['--urdf', 'leg3.urdf', '--tip', 'foot', '--target', 'nan', '0', '0'], ['NaN']),
    (['--urdf', 'leg3.urdf', '--tip', 'foot', '--target', '0', '0', '-0.4', '--seed', '0'],
     ['seed', '3']),
    (['--urdf', 'leg3.urdf', '--tip', 'foot', '--target', '0', '0', '-0.4', '--orientation',
      '0', '0', '0', '0'], ['zero']),
    (['--config', 'no_such_config', '--target', '0', '0', '-0.4'], ['no_such_config']),
])
def test_bad_arguments_exit_two_with_one_line(args, words):
    assert_clean_error(run(*args), *words)


def test_malformed_urdf_exits_two(tmp_path):
    bad = tmp_path / 'bad.urdf'
    bad.write_text('<robot name="x"><link name="a"></robot>')
    assert_clean_error(run('--urdf', str(bad), '--tip', 'a', '--target', '0', '0', '0'),
                       'malformed URDF')


def test_bad_config_file_exits_two(tmp_path):
    bad = tmp_path / 'bad.yaml'
    bad.write_text('ik_node:\n  ros__parameters:\n    urdf_file: leg3.urdf\n    tip_link: foot\n'
                   '    solver: fabrik\n    fabrik: {max_iterations: -5}\n')
    assert_clean_error(run('--config', str(bad), '--target', '0', '0', '-0.4'),
                       'bad.yaml', 'fabrik.max_iterations', '-5')


def test_a_reader_that_leaves_early_gets_no_traceback():
    """``ik-solve ... | head -c 0``: the reader closes the pipe before the answer is written."""
    proc = subprocess.Popen([sys.executable, '-m', 'ik_node.cli', '--config', 'leg3', '--target',
                             '0.1', '0.05', '-0.45'], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=REPO, text=True)
    proc.stdout.close()  # long before the solve's output (the import alone takes ~0.3 s)
    err = proc.stderr.read()
    proc.wait(timeout=60)
    assert 'Traceback' not in err and 'BrokenPipeError' not in err, err
