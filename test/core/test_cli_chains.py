"""``ik-solve chains``: a robot's root, end links, chains, joints and fitting solvers, on the
packaged robots, the reference robots in ../shared/robots (read in place) and a xacro file; and
``ik-solve --urdf`` solving on a xacro file."""

import json
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ik_node import Chain
from ik_node.cli import main as ik_solve
from ik_node.cli.chains import robot_chains_from_urdf
from ik_node.errors import ChainError
from ik_node.solvers import SOLVERS, make_solver

REPO = Path(__file__).resolve().parents[2]
URDF = REPO / 'urdf'

# A planar 2-link arm made by a macro; the argument `upper` is the first link's length [m].
def chains_of(path):
    return robot_chains_from_urdf(Path(path).read_text())


def chain_to(result, tip):
    return next(c for c in result.chains if c.tips == (tip,))


def run_chains(capsys, *args):
    """``ik-solve chains ARGS`` in this process: (exit status, stdout, stderr)."""
    try:
        status = ik_solve(['chains', *map(str, args)])
    except SystemExit as exc:
        status = exc.code
    out = capsys.readouterr()
    return status, out.out, out.err


def assert_one_line_error(status, out, err, *words):
    assert status == 2, (status, out, err)
    assert out == ''
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('ik-solve: error: '), err
    for word in words:
        assert word in lines[0], (word, lines[0])


# -------------------------------------------------------------------------- packaged robots
def test_leg3_has_one_chain_that_every_solver_fits():
    result = chains_of(URDF / 'leg3.urdf')
    assert (result.root, result.leaves, dict(result.branching)) == ('base_link', ('foot',), {})
    (chain,) = result.chains
    assert [j.name for j in chain.joints] == ['hip_yaw', 'hip_pitch', 'knee']
    assert all(j.type == 'revolute' and j.lower < j.upper for j in chain.joints)
    assert chain.solvers == ('analytic_hip_knee', 'damped_jacobian', 'fabrik')
    assert chain.unfit == {} and result.tree is None


def test_planar4_is_not_for_the_analytic_solver_and_says_why():
    (chain,) = chains_of(URDF / 'planar4.urdf').chains
    assert chain.solvers == ('damped_jacobian', 'fabrik')
    assert 'analytic_hip_knee' in chain.unfit
    assert '4 moving joints' in chain.unfit['analytic_hip_knee']


@pytest.mark.slow
@pytest.mark.parametrize('robot', sorted(p.stem for p in URDF.glob('*.urdf')))
def test_fit_is_the_solvers_own_check(robot):
    # Every listed solver builds on the chain; every other one refuses it with the same reason.
    xml = (URDF / f'{robot}.urdf').read_text()
    result = robot_chains_from_urdf(xml)
    for info in result.chains:
        chain = Chain.from_urdf_string(xml, info.base, info.tips[0])
        assert set(info.solvers) | set(info.unfit) == set(SOLVERS)
        for name in info.solvers:
            make_solver(name, chain)
        for name, reason in info.unfit.items():
            with pytest.raises(ChainError) as refused:
                make_solver(name, chain)
            assert str(refused.value) == reason


def test_twin_arm_branches_at_the_torso_and_the_hand_and_its_tree_is_for_the_tree_solvers():
    result = chains_of(URDF / 'twin_arm.urdf')
    assert result.leaves == ('left_hand', 'right_finger_a', 'right_finger_b')
    assert set(result.branching) == {'torso', 'right_hand'}
    assert set(result.branching['torso']) == {'left_shoulder', 'right_shoulder'}
    assert result.tree.tips == ('left_hand', 'right_hand')  # the hands, not the fingers
    assert result.tree.solvers == ('damped_jacobian', 'fabrik')
    assert 'independent legs' in result.tree.unfit['analytic_hip_knee']
    assert 'share waist' in result.tree.unfit['analytic_hip_knee']


# -------------------------------------------------------------- reference robots, in place
def test_ur5_chain_from_world_to_tool0_and_the_fixed_side_link(shared_robot):
    result = chains_of(shared_robot('ur5.urdf'))
    assert result.root == 'world'
    assert {'tool0', 'ee_link', 'base'} == set(result.leaves)
    assert set(result.branching) == {'base_link', 'wrist_3_link'}
    tool0 = chain_to(result, 'tool0')
    assert [j.name for j in tool0.joints] == ['shoulder_pan_joint', 'shoulder_lift_joint',
                                               'elbow_joint', 'wrist_1_joint', 'wrist_2_joint',
                                               'wrist_3_joint']
    assert tool0.joints[2].lower == pytest.approx(-np.pi)
    assert tool0.solvers == ('damped_jacobian', 'fabrik')
    side = chain_to(result, 'base')
    assert side.joints == () and side.solvers == () and not side.error
    assert result.tree is None  # tool0 and ee_link move together: no tree to offer


def test_panda_mimic_finger_is_reported_not_usable_and_the_other_finger_is_prismatic(
        shared_robot):
    result = chains_of(shared_robot('panda.urdf'))
    assert result.branching['panda_hand'] == ('panda_hand_tcp', 'panda_leftfinger',
                                              'panda_rightfinger')
    assert 'mimic' in chain_to(result, 'panda_rightfinger').error
    finger = chain_to(result, 'panda_leftfinger').joints[-1]
    assert (finger.type, finger.lower, finger.upper) == ('prismatic', 0.0, 0.04)
    assert len(chain_to(result, 'panda_hand_tcp').joints) == 7
    assert result.tree is None  # one hand: no tree of hands or feet (test_chain_picks.py)


def test_kinova_continuous_joints_are_unbounded_in_json_and_text(shared_robot, capsys):
    status, out, _ = run_chains(capsys, '--urdf', shared_robot('kinova_j2s6s200.urdf'),
                                '--json')
    assert status == 0
    data = json.loads(out)
    ee = next(c for c in data['chains'] if c['tip'] == 'j2s6s200_end_effector')
    continuous = [j for j in ee['joints'] if j['type'] == 'continuous']
    assert len(continuous) == 3
    assert all(j['lower'] is None and j['upper'] is None for j in continuous)
    status, out, _ = run_chains(capsys, '--urdf', shared_robot('kinova_j2s6s200.urdf'))
    assert 'continuous  unbounded' in out


@pytest.mark.slow
def test_baxter_right_arm_chain_has_its_seven_joints(shared_robot):
    result = chains_of(shared_robot('baxter.urdf'))
    assert result.root == 'base'
    arm = chain_to(result, 'right_gripper')
    assert [j.name for j in arm.joints] == ['right_s0', 'right_s1', 'right_e0', 'right_e1',
                                            'right_w0', 'right_w1', 'right_w2']
    assert result.tree.tips == ('right_gripper', 'left_gripper')


def test_iiwa_with_drake_extensions_lists_both_flange_frames(shared_robot):
    result = chains_of(shared_robot('iiwa14.urdf'))
    assert set(result.leaves) == {'iiwa_link_ee', 'iiwa_link_ee_kuka'}
    assert len(chain_to(result, 'iiwa_link_ee').joints) == 7


# ------------------------------------------------------------------------- the command line
def test_text_output_names_root_end_links_joints_solvers_and_a_usable_command(capsys):
    status, out, err = run_chains(capsys, '--urdf', 'leg3.urdf')
    assert status == 0 and err == ''
    for words in ('root link: base_link', 'end links: foot', 'base_link -> foot: 3 moving',
                  'knee', '[-2.6, 2.6] rad', 'solvers: analytic_hip_knee (position)',
                  'damped_jacobian (position + orientation)'):
        assert words in out, (words, out)
    # The suggested ik-solve line runs as printed (with a target filled in).
    line = next(s.strip() for s in out.splitlines() if s.strip().startswith('ik-solve '))
    argv = shlex.split(line.replace('X Y Z', '0.1 0.05 -0.45'))[1:]
    assert ik_solve(argv) == 0


def test_twin_arm_text_shows_branching_links_and_the_tree(capsys):
    status, out, _ = run_chains(capsys, '--urdf', URDF / 'twin_arm.urdf')
    assert status == 0
    assert 'links with several children: torso (left_shoulder, right_shoulder)' in out
    assert 'tree of the feet or hands (tip_links):' in out
    assert 'fabrik (all tips at once, position)' in out


def test_end_links_moved_by_the_same_joints_share_one_text_entry(shared_robot, capsys):
    status, out, _ = run_chains(capsys, '--urdf', shared_robot('ur5.urdf'))
    assert status == 0
    assert 'world -> ee_link, tool0: 6 moving joints' in out
    assert 'world -> base: no moving joint' in out


def test_json_output_is_one_object_with_every_chain(capsys):
    status, out, _ = run_chains(capsys, '--urdf', 'twin_arm.urdf', '--json')
    assert status == 0
    data = json.loads(out)
    assert data['root'] == 'base_link' and data['urdf'].endswith('twin_arm.urdf')
    assert [c['tip'] for c in data['chains']] == data['leaves']
    assert data['tree']['tips'] == ['left_hand', 'right_hand']
    assert data['tree']['solvers'] == ['damped_jacobian', 'fabrik']
    assert data['branching_links']['right_hand'] == ['right_finger_a_link', 'right_finger_b_link']


def test_help_of_ik_solve_mentions_chains_and_chains_help_names_its_options(capsys):
    with pytest.raises(SystemExit) as done:
        ik_solve(['--help'])
    assert done.value.code == 0 and 'chains' in capsys.readouterr().out
    with pytest.raises(SystemExit) as done:
        ik_solve(['chains', '--help'])
    out = capsys.readouterr().out
    assert done.value.code == 0
    for option in ('--urdf', '--xacro-args', '--json'):
        assert option in out


@pytest.mark.parametrize('args, words', [
    ((), ['--urdf']),
    (('--urdf', 'no_such_robot.urdf'), ['no_such_robot.urdf', 'leg3.urdf']),
    (('--urdf', 'leg3.urdf', '--xacro-args', 'a:=1'), ['not a xacro file']),
])
def test_bad_arguments_are_one_line_errors(capsys, args, words):
    assert_one_line_error(*run_chains(capsys, *args), *words)


def test_a_file_that_is_not_a_urdf_tree_is_a_one_line_error(tmp_path, capsys):
    path = tmp_path / 'two_roots.urdf'
    path.write_text('<robot name="r"><link name="a"/><link name="b"/></robot>')
    assert_one_line_error(*run_chains(capsys, '--urdf', path), 'root links', 'a, b')
    path.write_text('<robot name="r"><link name="a">')
    assert_one_line_error(*run_chains(capsys, '--urdf', path), 'malformed URDF')


@pytest.mark.slow
def test_as_a_program_a_failing_xacro_is_one_line_without_traceback(tmp_path):
    path = tmp_path / 'broken.urdf.xacro'
    path.write_text('<robot xmlns:xacro="http://www.ros.org/wiki/xacro" name="r">'
                    '<xacro:no_such_macro/></robot>')
    proc = subprocess.run([sys.executable, '-m', 'ik_node.cli', 'chains', '--urdf', str(path)],
                          capture_output=True, text=True, timeout=60, cwd=REPO)
    assert_one_line_error(proc.returncode, proc.stdout, proc.stderr, 'broken.urdf.xacro',
                          'no_such_macro')
    assert 'Traceback' not in proc.stderr


# ------------------------------------------------------------------------------- xacro files
def test_chains_of_a_xacro_file_expanded_with_its_argument(planar_xacro, capsys):
    status, out, _ = run_chains(capsys, '--urdf', planar_xacro, '--xacro-args', 'upper:=0.6',
                                '--json')
    assert status == 0
    data = json.loads(out)
    assert data['robot'] == 'xacro_planar' and data['xacro_args'] == 'upper:=0.6'
    (chain,) = data['chains']
    assert chain['tip'] == 'hand'
    assert [j['name'] for j in chain['joints']] == ['upper_arm_joint', 'forearm_joint']
    assert chain['solvers'] == ['analytic_hip_knee', 'damped_jacobian', 'fabrik']


@pytest.mark.parametrize('upper', [0.4, 0.7])
def test_ik_solve_solves_on_a_xacro_file_with_its_argument(planar_xacro, capsys, upper):
    # The hand of the bent arm, from the geometry the xacro describes (links upper and 0.3 m).
    q1, q2 = 0.3, 1.1
    target = [upper * np.cos(q1) + 0.3 * np.cos(q1 + q2),
              upper * np.sin(q1) + 0.3 * np.sin(q1 + q2), 0.0]
    status = ik_solve(['--urdf', str(planar_xacro), '--xacro-args', f'upper:={upper}',
                       '--base', 'base', '--tip', 'hand', '--solver', 'analytic_hip_knee',
                       '--target', *map(str, target), '--json'])
    result = json.loads(capsys.readouterr().out)
    assert status == 0 and result['reachable']
    a1, a2 = result['joint_positions']  # either elbow branch; the hand must be on the target
    hand = [upper * np.cos(a1) + 0.3 * np.cos(a1 + a2), upper * np.sin(a1) + 0.3 * np.sin(a1 + a2)]
    np.testing.assert_allclose(hand, target[:2], atol=1e-9)


def test_the_wrong_xacro_argument_makes_the_same_target_unreachable(planar_xacro, capsys):
    # 1.05 m away: reachable with upper = 0.8 (reach 1.1 m), not with the default 0.4 (0.7 m).
    args = ['--urdf', str(planar_xacro), '--base', 'base', '--tip', 'hand', '--solver',
            'analytic_hip_knee', '--target', '1.05', '0', '0', '--json']
    assert ik_solve(args + ['--xacro-args', 'upper:=0.8']) == 0
    assert ik_solve(args) == 1
    capsys.readouterr()


def test_solve_on_a_xacro_with_a_config_file_uses_the_flags_arguments(planar_xacro, tmp_path,
                                                                      capsys):
    config = tmp_path / 'planar.yaml'
    config.write_text(f'ik_node:\n  ros__parameters:\n    urdf_file: {planar_xacro}\n'
                      '    xacro_args: "upper:=0.8"\n    base_link: base\n    tip_link: hand\n'
                      '    solver: analytic_hip_knee\n')
    assert ik_solve(['--config', str(config), '--target', '1.05', '0', '0']) == 0
    assert ik_solve(['--config', str(config), '--xacro-args', 'upper:=0.4',
                     '--target', '1.05', '0', '0']) == 1
    capsys.readouterr()
