"""``ik-solve capability-map``, ``reachable`` and ``base-placement``: a small map built through the
command line, read back, queried and placed; bad inputs end with one line on stderr, exit 2."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ik_node.capability import load_map, reachable
from ik_node.reachability import load_npz

from reference_robots import SHARED_ROBOTS, skip_reason

#: Ray installed (``ik_node[scale]``): a bad cluster address is refused by Ray, else the option
#: is refused saying how to get Ray.
HAVE_RAY = importlib.util.find_spec('ray') is not None

REPO = Path(__file__).resolve().parents[2]
UR5E = SHARED_ROBOTS / 'ur5e.urdf'
SMALL = ('--urdf', str(UR5E), '--base', 'base_link', '--tip', 'tool0', '--voxel', '0.25',
         '--orientations', '4', '--workers', '1', '--no-progress')


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-m', 'ik_node.cli', *args], capture_output=True,
                          text=True, timeout=300, cwd=REPO)


def assert_clean_error(proc: subprocess.CompletedProcess, *words: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('ik-solve: error: '), proc.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])


@pytest.fixture(scope='module')
def built(tmp_path_factory):
    if not UR5E.is_file():
        pytest.skip(skip_reason(UR5E))
    out = tmp_path_factory.mktemp('capability')
    proc = run('capability-map', *SMALL, '--out', str(out), '--json')
    assert proc.returncode == 0, proc.stderr
    return out, json.loads(proc.stdout)


@pytest.fixture(scope='module')
def poses_file(built, tmp_path_factory):
    """Poses at reached and unreached cell centres of the map."""
    out, _ = built
    capability = load_map(out)
    orientations = capability.orientations
    rows, bins = np.nonzero(capability.reached)
    poses = np.hstack([capability.cells[rows[:10]] * capability.voxel_m,
                       orientations.quats_xyzw[bins[:10]]])
    unreached = np.argwhere(~capability.reached)[:5]
    poses = np.vstack([poses, np.hstack([capability.cells[unreached[:, 0]] * capability.voxel_m,
                                         orientations.quats_xyzw[unreached[:, 1]]])])
    path = tmp_path_factory.mktemp('poses') / 'poses.csv'
    path.write_text('x,y,z,qx,qy,qz,qw\n' + '\n'.join(','.join(repr(v) for v in row)
                                                       for row in poses.tolist()) + '\n')
    from ik_node.capability.decide import map_solver
    solver, why = map_solver(capability.meta)
    assert solver is not None, why
    return path, reachable(capability, poses, solver=solver), reachable(capability, poses)


@pytest.mark.slow
def test_capability_map_writes_a_map_and_a_reach_map_for_the_display(built):
    out, summary = built
    capability = load_map(out)
    assert summary['cells'] == len(capability.cells) and summary['orientations'] == 4
    assert summary['targets'] == capability.reached.size
    reach = load_npz(out / 'reach_map_tool0.npz')
    assert len(reach) == int(capability.reached.any(axis=1).sum())
    assert capability.meta['description_sha256'] and capability.meta['voxel_m'] == 0.25


@pytest.mark.slow
def test_reachable_gives_one_verdict_per_pose(built, poses_file):
    out, _ = built
    path, expected, alone = poses_file
    proc = run('reachable', '--map', str(out), '--poses', str(path), '--json')
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(proc.stdout)
    assert answer['reachable'] == expected.reachable.tolist()  # mixed cells decided by IK
    assert answer['decided_by_ik'] == int(alone.uncertain.sum()) > 0
    assert answer['uncertain_count'] == 0 and expected.reachable[:10].all()
    proc = run('reachable', '--map', str(out), '--poses', str(path), '--json', '--no-ik')
    answer = json.loads(proc.stdout)
    assert answer['reachable'] == [None if u else bool(r) for r, u in
                                   zip(alone.reachable, alone.uncertain, strict=True)]
    assert answer['uncertain_count'] == int(alone.uncertain.sum()) and answer['note']


@pytest.mark.slow
def test_base_placement_ranks_and_verifies(built, poses_file):
    out, _ = built
    path, _, _ = poses_file
    proc = run('base-placement', '--map', str(out), '--poses', str(path),
               '--grid=-0.2:0.2:0.1,-0.2:0.2:0.1,90', '--top', '3', '--json')
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(proc.stdout)
    first = answer['placements'][0]
    assert len(answer['placements']) == 3 and first['verified_share'] is not None
    assert first['map_share'] >= answer['placements'][1]['map_share']
    assert first['verified_share'] >= first['map_share']  # the claim: uniform cells only


@pytest.mark.slow
@pytest.mark.parametrize('args, words', [
    (('capability-map', *SMALL, '--voxel', '0', '--out', 'x'), ('voxel',)),
    (('capability-map', *SMALL, '--voxel', '0.001', '--out', 'x'), ('cells', 'larger voxel')),
    (('capability-map', *SMALL, '--ray-address', '127.0.0.1:1', '--out', 'x'),
     ('cannot reach the Ray cluster',) if HAVE_RAY else ('needs Ray', 'pip install')),
    (('reachable', '--map', 'no/such/map', '--poses', 'p.csv'), ('no capability map',)),
    (('capability-map', *SMALL, '--tool-offset', '0', '0.1', '--out', 'x'), ('tool offset',)),
    (('capability-map', *SMALL, '--tool-offset', '0', '0', 'nan', '--out', 'x'), ('finite',)),
])
def test_bad_arguments_are_one_line_errors(args, words, tmp_path):
    if not UR5E.is_file():
        pytest.skip(skip_reason(UR5E))
    fixed = [str(tmp_path / a) if a == 'x' else a for a in args]
    assert_clean_error(run(*fixed), *words)


@pytest.mark.slow
def test_a_nan_pose_is_a_one_line_error(built, tmp_path):
    out, _ = built
    bad = tmp_path / 'bad.csv'
    bad.write_text('0.3,0.1,nan,0,0,0,1\n')
    assert_clean_error(run('reachable', '--map', str(out), '--poses', str(bad)), 'pose 0')
    assert_clean_error(run('base-placement', '--map', str(out), '--poses', str(bad)), 'pose 0')


@pytest.mark.slow
def test_a_tool_offset_is_stored_and_used_by_the_queries(tmp_path):
    if not UR5E.is_file():
        pytest.skip(f'reference robot {UR5E} is not present')
    from ik_node import Chain
    from ik_node.capability.decide import map_solver
    from ik_node.capability.orientations import quats_from_rotations
    from ik_node.capability.tool import offset_matrix
    proc = run('capability-map', *SMALL, '--tool-offset', '0', '0', '0.1', '0', '0.5', '0',
               '--out', str(tmp_path / 'map'), '--json')
    assert proc.returncode == 0, proc.stderr
    capability = load_map(tmp_path / 'map')
    offset = capability.tool_offset
    assert len(offset) == 7 and json.loads(proc.stdout)['tool_offset'] == list(offset)
    np.testing.assert_allclose(offset_matrix(offset)[:3, 3], [0, 0, 0.1])
    # Tool poses of random configurations: the command's verdicts are the library's.
    chain = Chain.from_urdf_file(UR5E, 'base_link', 'tool0')
    Q = np.random.default_rng(8).uniform(chain.lower, chain.upper, size=(20, chain.n))
    T = np.array([chain.fk(q) @ offset_matrix(offset) for q in Q])
    poses = np.hstack([T[:, :3, 3], quats_from_rotations(T[:, :3, :3])])
    path = tmp_path / 'tool_poses.csv'
    path.write_text('\n'.join(','.join(repr(v) for v in row) for row in poses.tolist()) + '\n')
    proc = run('reachable', '--map', str(tmp_path / 'map'), '--poses', str(path), '--json')
    assert proc.returncode == 0, proc.stderr
    expected = reachable(capability, poses, solver=map_solver(capability.meta)[0])
    assert json.loads(proc.stdout)['reachable'] == expected.reachable.tolist()
    assert expected.by_ik.any()
