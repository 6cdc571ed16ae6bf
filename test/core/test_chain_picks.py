"""``ik-solve chains`` suggests what a user would pick: the robot's base link (not a world stub)
to a flange or tool frame; for a tree, the feet or hands; never a wheel, caster or rotor."""

import pytest

from ik_node.cli import main as cli_main
from ik_node.cli.chain_picks import end_effector_leaves, is_accessory, name_tokens
from ik_node.cli.chains import human_lines, robot_chains_from_urdf


def chains_of(path):
    return robot_chains_from_urdf(path.read_text())


@pytest.mark.parametrize('robot', ['ur5', 'ur10'])
def test_a_ur_is_suggested_from_base_link_to_tool0_not_from_world(shared_robot, robot):
    result = chains_of(shared_robot(f'{robot}.urdf'))
    assert result.root == 'world' and result.base_link == 'base_link'
    assert (result.suggested.base, result.suggested.tips) == ('base_link', ('tool0',))
    assert result.tree is None
    text = '\n'.join(human_lines(result, f'{robot}.urdf'))
    assert '--base base_link --tip tool0' in text and 'base_link:=base_link tip_link:=tool0' in text


def test_the_panda_is_suggested_to_its_tcp_with_no_tree_of_fingers(shared_robot):
    result = chains_of(shared_robot('panda.urdf'))
    assert (result.suggested.base, result.suggested.tips) == ('panda_link0', ('panda_hand_tcp',))
    assert result.tree is None


@pytest.mark.parametrize('robot, base, feet', [
    ('go1', 'base', ('FR_foot', 'FL_foot', 'RR_foot', 'RL_foot')),
    ('anymal_c', 'base', ('LF_FOOT', 'RF_FOOT', 'LH_FOOT', 'RH_FOOT')),
    ('solo12', 'base_link', ('FL_FOOT', 'FR_FOOT', 'HL_FOOT', 'HR_FOOT'))])
def test_a_legged_robots_tree_is_its_four_feet(shared_robot, robot, base, feet):
    result = chains_of(shared_robot(f'{robot}.urdf'))
    assert (result.tree.base, result.tree.tips) == (base, feet)
    assert 'fabrik' in result.tree.solvers and 'damped_jacobian' in result.tree.solvers
    assert result.suggested.tips[0] in feet
    text = '\n'.join(human_lines(result, f'{robot}.urdf'))
    assert 'tree of the feet or hands' in text and 'rotor' not in text.split('tree of')[1]


def test_baxters_tree_is_its_two_grippers(shared_robot):
    result = chains_of(shared_robot('baxter.urdf'))
    assert result.tree.tips == ('right_gripper', 'left_gripper')
    assert result.suggested.tips == ('right_gripper',)


def _continuous(name, parent, child, xyz, axis='0 1 0'):
    return (f'<joint name="{name}" type="continuous"><parent link="{parent}"/>'
            f'<child link="{child}"/><origin xyz="{xyz}"/><axis xyz="{axis}"/></joint>')


def _revolute(name, parent, child, xyz, axis='0 0 1'):
    return (f'<joint name="{name}" type="revolute"><parent link="{parent}"/>'
            f'<child link="{child}"/><origin xyz="{xyz}"/><axis xyz="{axis}"/>'
            '<limit lower="-2" upper="2" effort="1" velocity="1"/></joint>')


def _fixed(name, parent, child, xyz='0 0 0'):
    return (f'<joint name="{name}" type="fixed"><parent link="{parent}"/>'
            f'<child link="{child}"/><origin xyz="{xyz}"/></joint>')


#: A TIAGo-like mobile manipulator under a world stub: drive wheels, two casters (each a swivel
#: and a wheel), a torso lift, a 4-joint arm with a gripper and two fingers, a head, a laser.
MOBILE_LINKS = ['world', 'base_footprint', 'base_link', 'wheel_left_link', 'wheel_right_link',
                'caster_front_left_1_link', 'caster_front_left_2_link',
                'caster_front_right_1_link', 'caster_front_right_2_link', 'torso_lift_link',
                'arm_1_link', 'arm_2_link', 'arm_3_link', 'arm_4_link', 'arm_tool_link',
                'gripper_link', 'gripper_left_finger_link', 'gripper_right_finger_link',
                'head_1_link', 'head_2_link', 'base_laser_link']
MOBILE_URDF = (
    '<robot name="mobile">' + ''.join(f'<link name="{n}"/>' for n in MOBILE_LINKS) +
    _fixed('world_joint', 'world', 'base_footprint') +
    _fixed('base_footprint_joint', 'base_footprint', 'base_link', '0 0 0.1') +
    _continuous('wheel_left_joint', 'base_link', 'wheel_left_link', '0 0.2 0') +
    _continuous('wheel_right_joint', 'base_link', 'wheel_right_link', '0 -0.2 0') +
    _continuous('caster_front_left_1_joint', 'base_link', 'caster_front_left_1_link',
                '0.2 0.1 0', '0 0 1') +
    _continuous('caster_front_left_2_joint', 'caster_front_left_1_link',
                'caster_front_left_2_link', '-0.02 0 -0.05') +
    _continuous('caster_front_right_1_joint', 'base_link', 'caster_front_right_1_link',
                '0.2 -0.1 0', '0 0 1') +
    _continuous('caster_front_right_2_joint', 'caster_front_right_1_link',
                'caster_front_right_2_link', '-0.02 0 -0.05') +
    '<joint name="torso_lift_joint" type="prismatic"><parent link="base_link"/>'
    '<child link="torso_lift_link"/><origin xyz="0 0 0.6"/><axis xyz="0 0 1"/>'
    '<limit lower="0" upper="0.35" effort="1" velocity="1"/></joint>' +
    _revolute('arm_1_joint', 'torso_lift_link', 'arm_1_link', '0.15 0 0') +
    _revolute('arm_2_joint', 'arm_1_link', 'arm_2_link', '0.1 0 0', '0 1 0') +
    _revolute('arm_3_joint', 'arm_2_link', 'arm_3_link', '0.3 0 0', '1 0 0') +
    _revolute('arm_4_joint', 'arm_3_link', 'arm_4_link', '0.3 0 0', '0 1 0') +
    _fixed('arm_tool_joint', 'arm_4_link', 'arm_tool_link', '0.1 0 0') +
    _fixed('gripper_joint', 'arm_tool_link', 'gripper_link', '0.05 0 0') +
    '<joint name="gripper_left_finger_joint" type="prismatic"><parent link="gripper_link"/>'
    '<child link="gripper_left_finger_link"/><axis xyz="0 1 0"/>'
    '<limit lower="0" upper="0.04" effort="1" velocity="1"/></joint>'
    '<joint name="gripper_right_finger_joint" type="prismatic"><parent link="gripper_link"/>'
    '<child link="gripper_right_finger_link"/><axis xyz="0 -1 0"/>'
    '<limit lower="0" upper="0.04" effort="1" velocity="1"/></joint>' +
    _revolute('head_1_joint', 'torso_lift_link', 'head_1_link', '0 0 0.2') +
    _revolute('head_2_joint', 'head_1_link', 'head_2_link', '0.05 0 0', '0 1 0') +
    _fixed('base_laser_joint', 'base_link', 'base_laser_link', '0.2 0 0.05') +
    '</robot>')


def test_a_mobile_manipulator_is_suggested_from_its_base_to_the_gripper_never_a_wheel():
    result = robot_chains_from_urdf(MOBILE_URDF)
    assert result.root == 'world' and result.base_link == 'base_footprint'
    assert (result.suggested.base, result.suggested.tips) == ('base_footprint',
                                                              ('gripper_link',))
    assert result.suggested.solvers == ('damped_jacobian',)  # the lift: fabrik refuses it
    assert result.tree is None  # one arm and a head: no tree of hands or feet
    text = '\n'.join(human_lines(result, 'mobile.urdf'))
    suggestion = text.split('use one, e.g.:')[1]
    assert '--base base_footprint --tip gripper_link' in suggestion
    for word in ('wheel', 'caster', 'laser', 'finger'):
        assert word not in suggestion


def test_the_suggestion_is_in_the_json_too(tmp_path, capsys):
    path = tmp_path / 'mobile.urdf'
    path.write_text(MOBILE_URDF)
    assert cli_main(['chains', '--urdf', str(path), '--json']) == 0
    import json
    data = json.loads(capsys.readouterr().out)
    assert data['base_link'] == 'base_footprint'
    assert (data['suggested']['base'], data['suggested']['tip']) == ('base_footprint',
                                                                     'gripper_link')


def test_names_are_compared_by_tokens():
    assert name_tokens('FR_calf_rotor') == ['fr', 'calf', 'rotor']
    assert name_tokens('ultraSound_left') == ['ultra', 'sound', 'left']
    assert name_tokens('tool0') == ['tool']
    assert is_accessory('FR_calf_rotor') and is_accessory('caster_front_right_2_link')
    assert is_accessory('frontwheel') and not is_accessory('panda_hand_tcp')
    assert not is_accessory('orange_link')  # 'range' only as a token of its own


def test_a_side_link_that_a_longer_limb_continues_is_no_end_effector():
    leaves = [('thigh_cover', ('hip', 'thigh')), ('foot', ('hip', 'thigh', 'knee')),
              ('shin_camera', ('hip', 'thigh', 'knee'))]
    assert end_effector_leaves(leaves) == [('foot', ('hip', 'thigh', 'knee'))]
