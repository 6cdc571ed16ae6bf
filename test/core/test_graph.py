"""Graph parameters (ik_node.config.ros_graph): output kinds, command order, held joints,
trajectory time.

Plain Python, no ROS: the node's refusals of bad graph parameters come from here.
"""

import math

import pytest

from ik_node.model.chain import Chain
from ik_node.errors import ConfigError
from ik_node.config.ros_graph import (DEFAULT_OUTPUT_TOPICS, command_order,
                                      graph_config_from_flat, held_positions)
from ik_node.model.urdf_joints import UrdfJoint, moving_joints, trajectory_duration
from ik_node.model.resources import urdf_path


def test_defaults_publish_joint_states_on_a_relative_topic():
    graph = graph_config_from_flat({})
    assert graph.output == 'joint_states' and graph.topic == 'joint_states'
    assert not graph.topic.startswith('/')  # namespaced with the node


@pytest.mark.parametrize('output', ['position_command', 'joint_trajectory'])
def test_each_output_has_its_controller_topic_unless_one_is_given(output):
    assert graph_config_from_flat({'output': output}).topic == DEFAULT_OUTPUT_TOPICS[output]
    assert graph_config_from_flat({'output': output, 'output_topic': '/x/cmd'}).topic == '/x/cmd'


def test_output_names_are_normalised_and_unknown_ones_refused_with_the_choices():
    assert graph_config_from_flat({'output': ' Position_Command '}).output == 'position_command'
    with pytest.raises(ConfigError, match='joint_states, position_command, joint_trajectory'):
        graph_config_from_flat({'output': 'torque'})


def test_listening_to_its_own_joint_states_is_refused_with_the_reason():
    with pytest.raises(ConfigError, match='its own output'):
        graph_config_from_flat({'state_topic': '/joint_states'})
    # Driving a controller while listening to the robot's joint_states is the normal case.
    graph = graph_config_from_flat({'state_topic': '/joint_states', 'output': 'position_command'})
    assert graph.state_topic == '/joint_states'


@pytest.mark.parametrize('flat, words', [
    ({'state_timeout': 0}, 'state_timeout'),
    ({'state_timeout': math.nan}, 'finite'),
    ({'hold_joint_names': ['a'], 'hold_joint_positions': []}, '1 names but'),
    ({'command_joints': ['a', 'a']}, 'repeats'),
    ({'hold_joint_positions': [math.inf], 'hold_joint_names': ['a']}, 'finite numbers'),
    ({'output': 3}, 'must be a string'),
])
def test_bad_graph_values_are_refused_naming_the_parameter(flat, words):
    with pytest.raises(ConfigError, match=words):
        graph_config_from_flat(flat)


@pytest.mark.parametrize('key', ['command_joints', 'hold_joint_names'])
@pytest.mark.parametrize('names, index', [(['j1', '', 'j2'], 1), (['j1', '  '], 1), (['', ''], 0),
                                          (['', 'j1'], 0)])
def test_an_empty_joint_name_is_refused_naming_the_parameter_and_its_index(key, names, index):
    positions = {'hold_joint_positions': [0.0] * len(names)} if key == 'hold_joint_names' else {}
    with pytest.raises(ConfigError) as info:
        graph_config_from_flat({key: names, **positions}, source='parameters')
    message = str(info.value)
    assert message.startswith(f'parameters: {key} has an empty name at index {index} of '), \
        message
    assert repr(names) in message


@pytest.mark.parametrize('empty', [None, [], [''], ['  '], ('',)])
def test_one_empty_name_alone_is_how_ros_spells_an_empty_joint_list(empty):
    graph = graph_config_from_flat({'command_joints': empty, 'hold_joint_names': empty})
    assert graph.command_joints == () and graph.hold == ()


def test_joint_names_are_stripped_and_keep_their_case():
    graph = graph_config_from_flat({'command_joints': [' J1', 'j2 '],
                                    'hold_joint_names': [' Finger '],
                                    'hold_joint_positions': [0.01]})
    assert graph.command_joints == ('J1', 'j2') and graph.hold == (('Finger', 0.01),)


def test_integers_are_accepted_for_seconds():
    assert graph_config_from_flat({'state_timeout': 2}).state_timeout == 2.0


@pytest.fixture(scope='module')
def planar_short():
    return Chain.from_urdf_file(urdf_path('planar4'), 'base_link', 'link2')


def test_command_order_follows_command_joints_and_refuses_strangers_and_gaps(planar_short):
    names = planar_short.joint_names
    assert command_order(graph_config_from_flat({}), names) == [0, 1]
    flipped = graph_config_from_flat({'command_joints': ['joint2', 'joint1']})
    assert command_order(flipped, names) == [1, 0]
    with pytest.raises(ConfigError, match='joint3 not a moving joint of the chain'):
        command_order(graph_config_from_flat({'command_joints': ['joint1', 'joint3']}), names)
    with pytest.raises(ConfigError, match='leaves out chain joints joint2'):
        command_order(graph_config_from_flat({'command_joints': ['joint1']}), names)


def test_joints_outside_the_chain_are_held_at_zero_clipped_or_as_configured(planar_short):
    joints = moving_joints(planar_short.robot)
    assert [j.name for j in joints] == ['joint1', 'joint2', 'joint3', 'joint4']
    held = held_positions(joints, planar_short.joint_names, [])
    assert held == {'joint3': 0.0, 'joint4': 0.0}
    held = held_positions(joints, planar_short.joint_names, [('joint4', 0.5)])
    assert held['joint4'] == 0.5
    big = held_positions(joints, planar_short.joint_names, [('joint4', 100.0)])
    assert big['joint4'] == joints[3].upper  # clipped into the limits
    with pytest.raises(ConfigError, match='joint1'):
        held_positions(joints, planar_short.joint_names, [('joint1', 0.1)])  # in the chain


def test_mimic_joints_are_left_to_robot_state_publisher_and_zero_is_clipped_into_limits():
    joints = [UrdfJoint('a', 'revolute', 0.2, 1.0, 1.0),
              UrdfJoint('b', 'prismatic', 0.0, 0.04, 0.1),
              UrdfJoint('c', 'prismatic', 0.0, 0.04, 0.1, mimic='b')]
    assert held_positions(joints, [], []) == {'a': 0.2, 'b': 0.0}


def test_panda_fingers_are_held_and_their_mimic_left_out(shared_robot):
    chain = Chain.from_urdf_file(shared_robot('panda.urdf'), 'panda_link0', 'panda_hand_tcp')
    joints = moving_joints(chain.robot)
    held = held_positions(joints, chain.joint_names, [])
    mimics = {j.name for j in joints if j.mimic}
    assert held and not (set(held) & mimics)
    assert set(held) | mimics | set(chain.joint_names) == {j.name for j in joints}


def test_trajectory_time_is_set_by_the_slowest_joint_at_its_velocity_limit():
    assert trajectory_duration([0, 0], [1.0, 0.2], [2.0, 0.1], 1.0, 0.0) == pytest.approx(2.0)
    assert trajectory_duration([0, 0], [1.0, 0.2], [2.0, 0.1], 0.5, 0.0) == pytest.approx(4.0)
    assert trajectory_duration([0], [0], [1.0], 1.0, 0.02) == 0.02
    assert trajectory_duration([0], [5], [math.inf], 1.0, 0.02) == 0.02  # no limit known
