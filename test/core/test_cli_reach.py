"""``ik-solve reach-map``: writes the NPZ (read back with numpy alone), the PNG and the PLY,
prints a summary; errors are one line on stderr with exit status 2."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ik_node import Chain, cli
from ik_node.cli import reach_map as cli_reach
from ik_node.reachability import build_reachability_map, load_npz

REPO = Path(__file__).resolve().parents[2]
PNG_SIGNATURE = b'\x89PNG\r\n\x1a\n'
SMALL = ('--samples', '3000', '--voxel', '0.2')


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-m', 'ik_node.cli', 'reach-map', *args],
                          capture_output=True, text=True, timeout=120, cwd=REPO)


def assert_clean_error(proc: subprocess.CompletedProcess, *words: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert 'Traceback' not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('ik-solve: error: '), proc.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])


@pytest.mark.slow
def test_help_names_every_option():
    proc = run('--help')
    assert proc.returncode == 0
    for option in ('--urdf', '--base-link', '--tip-link', '--config', '--samples', '--voxel',
                   '--out', '--plane', '--ply', '--no-png', '--json'):
        assert option in proc.stdout
    main_help = subprocess.run([sys.executable, '-m', 'ik_node.cli', '--help'],
                               capture_output=True, text=True, timeout=60, cwd=REPO)
    assert 'reach-map' in main_help.stdout


@pytest.mark.slow
def test_urdf_flags_write_the_npz_png_and_ply_and_print_json(tmp_path):
    pytest.importorskip('matplotlib', reason='the PNG needs matplotlib (python3-matplotlib)')
    proc = run('--urdf', 'urdf/arm6.urdf', '--base-link', 'base_link', '--tip-link', 'tool0',
               *SMALL, '--out', str(tmp_path / 'maps'), '--ply', '--json')
    assert proc.returncode == 0, proc.stderr
    (item,) = json.loads(proc.stdout)['maps']
    assert item['tip_link'] == 'tool0' and item['samples'] == 3000
    assert not item['position_only'] and item['directions'] == 50
    with np.load(item['npz']) as data:  # numpy alone
        assert data['centres'].shape == (item['voxels'], 3)
        assert str(data['base_link']) == 'base_link'
    assert Path(item['png']).read_bytes()[:8] == PNG_SIGNATURE
    assert f'element vertex {item["voxels"]}' in Path(item['ply']).read_text()
    # the file holds the map the library builds with the same arguments
    arm6 = Chain.from_urdf_file(REPO / 'urdf' / 'arm6.urdf', 'base_link', 'tool0')
    expected = build_reachability_map(arm6, samples=3000, voxel_size=0.2)
    np.testing.assert_array_equal(load_npz(item['npz']).index, expected.index)


@pytest.mark.slow
def test_a_branched_config_writes_one_map_per_tip(tmp_path):
    proc = run('--config', 'twin_arm', *SMALL, '--out', str(tmp_path), '--no-png')
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ['reach_map_left_hand.npz',
                                                          'reach_map_right_hand.npz']
    assert 'left_hand' in proc.stdout and 'right_hand' in proc.stdout


def test_flags_override_the_config_in_process(tmp_path, capsys):
    status = cli.main(['reach-map', '--config', 'arm6', '--tip', 'wrist_3_link', *SMALL,
                       '--position-only', '--no-png', '--out', str(tmp_path), '--json'])
    assert status == 0
    (item,) = json.loads(capsys.readouterr().out)['maps']
    assert item['tip_link'] == 'wrist_3_link' and item['position_only']


@pytest.mark.slow
@pytest.mark.parametrize('args, words', [
    (('--urdf', 'urdf/arm6.urdf', '--tip-link', 'hand'), ('hand', 'Available links')),
    (('--config', 'arm6', '--samples', '0'), ('samples',)),
    (('--config', 'arm6', '--voxel', '-0.1'), ('voxel_size',)),
    (('--tip-link', 'tool0'), ('no robot',)),
    (('--config', 'arm6', '--plane', 'ab'), ('plane',)),
])
def test_bad_arguments_are_one_line_on_stderr_with_status_2(args, words, tmp_path):
    proc = run(*args, '--no-png', '--out', str(tmp_path))
    assert_clean_error(proc, *words)


def test_without_matplotlib_the_png_is_a_clear_error_and_no_png_still_works(
        tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, 'matplotlib', None)  # import matplotlib -> ImportError
    with pytest.raises(SystemExit) as exit_info:
        cli_reach.main(['--config', 'leg3', *SMALL, '--out', str(tmp_path)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert 'matplotlib' in err and '--no-png' in err
    assert list(tmp_path.iterdir()) == []  # failed before building
    assert cli_reach.main(['--config', 'leg3', *SMALL, '--out', str(tmp_path), '--no-png']) == 0
    assert [p.name for p in tmp_path.iterdir()] == ['reach_map_foot.npz']
