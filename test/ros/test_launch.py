"""launch/ik.launch.py, its argument logic (ik_node.config.launch_plan) and rviz/ik.rviz.

Four layers:
- without ROS launch: the launch file read with ``ast`` (its arguments, defaults and choices, and
  that every robot choice has its URDF and config), and the RViz config read as YAML;
- without ROS launch: :func:`ik_node.config.launch_plan.plan_from_arguments`, the plain function the
  launch file calls, for every argument (descriptions, xacro, params files, namespaces, errors);
- with launch_ros importable (skipped otherwise): the launch description built and evaluated in a
  LaunchContext, with ik_node installed into a throw-away ament prefix (a share/ik_node of
  symlinks to this tree), to check which nodes start with which parameters, namespaces and
  remappings. Nothing is executed; no process starts (test_launch_real.py starts them).
"""

import ast
import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from ik_node.config.files import flatten, load_yaml, parameters_of_file
from ik_node.config.launch_plan import (ARGUMENT_DEFAULTS, OUTPUTS, ROBOTS, link_list,
                                        plan_from_arguments)
from ik_node.errors import ConfigError
from ik_node.solvers import SOLVERS as REGISTERED_SOLVERS

REPO = Path(__file__).resolve().parents[2]
LAUNCH_FILE = REPO / 'launch' / 'ik.launch.py'
RVIZ_FILE = REPO / 'rviz' / 'ik.rviz'
SOLVERS = sorted(REGISTERED_SOLVERS)


def robot_parameters(robot):
    """The flat ik_node parameters of config/<robot>.yaml, read as ik_node reads them."""
    path = REPO / 'config' / f'{robot}.yaml'
    return flatten(parameters_of_file(load_yaml(path.read_text(), str(path)), str(path)))


# ------------------------------------------------------------------- the launch file, by ast
def declared_arguments():
    """{name: {'default': ..., 'choices': ...}} of every DeclareLaunchArgument in the file.

    Module-level constants (ROBOTS, SOLVERS) are resolved; a default that is not a literal
    (a substitution) is reported as the source text of the expression.
    """
    source = LAUNCH_FILE.read_text()
    tree = ast.parse(source)
    constants = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            try:
                constants[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass

    def value_of(expr):
        if isinstance(expr, ast.Name) and expr.id in constants:
            return constants[expr.id]
        try:
            return ast.literal_eval(expr)
        except ValueError:
            return ast.get_source_segment(source, expr)

    arguments = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, 'id', None) == 'DeclareLaunchArgument':
            keywords = {k.arg: k.value for k in node.keywords}
            name = value_of(node.args[0] if node.args else keywords['name'])
            arguments[name] = {key: value_of(keywords[key]) if key in keywords else None
                               for key in ('default_value', 'choices', 'description')}
    return arguments


def test_launch_file_declares_exactly_the_arguments_launch_params_reads():
    assert set(declared_arguments()) == set(ARGUMENT_DEFAULTS)


def test_launch_argument_defaults_are_launch_params_defaults():
    for name, argument in declared_arguments().items():
        assert argument['default_value'] == ARGUMENT_DEFAULTS[name], name


def test_every_launch_argument_has_a_description():
    for name, argument in declared_arguments().items():
        assert argument['description'], f'launch argument {name!r} has no description'


def test_launch_argument_choices():
    arguments = declared_arguments()
    assert arguments['robot']['choices'] == ['', *ROBOTS]
    assert arguments['solver']['choices'] == ['', *sorted(REGISTERED_SOLVERS)]
    assert arguments['output']['choices'] == ['', *OUTPUTS]
    for name in ('rviz', 'robot_state_publisher'):
        assert arguments[name]['choices'] == ['true', 'false']
    free = {'description_file', 'xacro_args', 'base_link', 'tip_link', 'tip_links',
            'params_file', 'namespace', 'state_topic'}
    assert {n for n, a in arguments.items() if a['choices'] is None} == free


def test_launch_file_exposes_generate_launch_description():
    tree = ast.parse(LAUNCH_FILE.read_text())
    functions = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert 'generate_launch_description' in functions


@pytest.mark.parametrize('robot', ROBOTS)
def test_every_robot_choice_has_its_urdf_and_config(robot):
    urdf, config = REPO / 'urdf' / f'{robot}.urdf', REPO / 'config' / f'{robot}.yaml'
    assert urdf.is_file(), f'robot choice {robot!r} has no {urdf}'
    assert config.is_file(), f'robot choice {robot!r} has no {config}'


# ----------------------------------------------------------------------------- the RViz config
def rviz_config():
    return yaml.safe_load(RVIZ_FILE.read_text())


def displays_by_class(config):
    displays = config['Visualization Manager']['Displays']
    return {d['Class'].split('/')[-1]: d for d in displays}


def test_rviz_config_fixed_frame_is_base_link():
    assert rviz_config()['Visualization Manager']['Global Options']['Fixed Frame'] == 'base_link'


def test_rviz_config_shows_grid_robot_model_tf_and_ik_markers_and_the_map_one_click_away():
    displays = displays_by_class(rviz_config())
    assert {'Grid', 'RobotModel', 'TF', 'MarkerArray'} <= set(displays)
    by_name = {d['Name']: d for d in rviz_config()['Visualization Manager']['Displays']}
    # The map is there, unticked: it covers the robot and the target's handles when shown. TF
    # too: the joint rings mark the joints, and a quadruped's axes cost software RViz ~3 fps.
    shown = {name: d.get('Enabled', True) and d.get('Value', True) for name, d in
             by_name.items()}
    assert shown.pop('Reachability map') is False
    assert shown.pop('TF') is False
    assert all(shown.values()), shown
    # The interactive target's descriptions are off: the node's labels stand over the tips.
    assert by_name['IK target (drag)']['Show Descriptions'] is False
    robot_model = displays['RobotModel']
    assert robot_model['Description Source'] == 'Topic'
    assert robot_model['Description Topic']['Value'] == '/robot_description'
    # robot_state_publisher latches the description: the subscription must be transient local.
    assert robot_model['Description Topic']['Durability Policy'] == 'Transient Local'
    markers = {d['Topic']['Value']: d for d in rviz_config()['Visualization Manager']['Displays']
               if d['Class'].endswith('/MarkerArray')}
    assert set(markers) == {'/ik_node/markers', '/ik_node/reachability',
                            '/ik_node/collision_world', '/ik_node/base_placement/heat_map'}
    # the base placement's answer: its heat map on the floor and the best base poses
    assert by_name['Base poses']['Class'] == 'rviz_default_plugins/PoseArray'
    assert by_name['Base poses']['Topic']['Value'] == '/ik_node/base_placement/result'


def test_every_latched_topic_has_a_transient_local_subscription_in_rviz():
    """The node publishes ~/markers, ~/reachability and ~/collision_world transient local
    (latched), as robot_state_publisher does robot_description: a volatile subscription in an
    RViz started after the node would miss the envelope, the map and the obstacles until the
    next update."""
    latched = {'/ik_node/markers', '/ik_node/reachability', '/ik_node/collision_world',
               '/ik_node/base_placement/heat_map', '/ik_node/base_placement/result',
               '/robot_description'}
    seen = set()
    for display in rviz_config()['Visualization Manager']['Displays']:
        topic = display.get('Topic') or display.get('Description Topic')
        if isinstance(topic, dict) and topic.get('Value') in latched:
            assert topic['Durability Policy'] == 'Transient Local', display['Name']
            seen.add(topic['Value'])
    assert seen == latched


def test_rviz_config_has_publish_point_on_clicked_point_and_the_usual_tools():
    tools = {t['Class']: t for t in rviz_config()['Visualization Manager']['Tools']}
    for name in ('Interact', 'MoveCamera', 'Select', 'FocusCamera', 'Measure', 'PublishPoint'):
        assert f'rviz_default_plugins/{name}' in tools
    topic = tools['rviz_default_plugins/PublishPoint']['Topic']
    assert topic['Value'] == '/clicked_point'


def test_rviz_camera_frames_a_one_metre_robot():
    view = rviz_config()['Visualization Manager']['Views']['Current']
    assert view['Class'] == 'rviz_default_plugins/Orbit'
    assert 1.5 <= view['Distance'] <= 4.0
    assert view['Target Frame'] == '<Fixed Frame>'


# ------------------------------------------------- the argument logic, without ROS launch
def plan(**arguments):
    return plan_from_arguments(arguments, REPO)


def test_no_argument_runs_leg3_with_its_config_both_helpers_and_no_namespace():
    p = plan()
    params = p.ik_node_parameters
    assert p.robot_description == (REPO / 'urdf' / 'leg3.urdf').read_text()
    assert params['robot_description'] == p.robot_description
    assert 'urdf_file' not in params and 'xacro_args' not in params
    assert params['solver'] == robot_parameters('leg3')['solver']
    assert (p.robot_state_publisher, p.rviz, p.namespace) == (True, True, '')
    assert p.fixed_frame == 'base_link'
    assert p.state_publisher_remappings == ()
    assert p.rviz_remappings == (('/clicked_point', 'ik_node/target_point'),)


@pytest.mark.parametrize('robot', ROBOTS)
def test_a_robot_brings_its_urdf_and_every_value_of_its_config(robot):
    params = plan(robot=robot).ik_node_parameters
    assert params['robot_description'] == (REPO / 'urdf' / f'{robot}.urdf').read_text()
    expected = {k: v for k, v in robot_parameters(robot).items() if k != 'urdf_file'}
    assert {k: params[k] for k in expected} == expected


@pytest.mark.parametrize('solver', SOLVERS)
def test_solver_argument_overrides_the_robots_config(solver):
    if solver == 'analytic_hip_knee':  # the only robot it fits is the leg
        assert plan(robot='leg3', solver=solver).ik_node_parameters['solver'] == solver
    else:
        assert plan(robot='arm6', solver=solver).ik_node_parameters['solver'] == solver


def write_params(tmp_path, params, key='ik_node', name='mine.yaml'):
    path = tmp_path / name
    path.write_text(yaml.safe_dump({key: {'ros__parameters': params}}))
    return str(path)


def test_params_file_is_applied_over_the_robots_config_and_keeps_what_it_does_not_set(
        tmp_path):
    mine = write_params(tmp_path, {'publish_rate': 7.0, 'fabrik': {'max_iterations': 40}})
    params = plan(robot='leg3', params_file=mine).ik_node_parameters
    assert params['publish_rate'] == 7.0 and params['fabrik.max_iterations'] == 40
    leg3 = robot_parameters('leg3')
    assert params['diagnostics_rate'] == leg3['diagnostics_rate']
    assert params['fabrik.position_tolerance'] == leg3['fabrik.position_tolerance']
    assert params['solver'] == leg3['solver']


def test_arguments_override_the_params_file(tmp_path):
    mine = write_params(tmp_path, {'solver': 'fabrik', 'base_link': 'base_link'})
    assert plan(robot='leg3', params_file=mine, solver='damped_jacobian') \
        .ik_node_parameters['solver'] == 'damped_jacobian'


@pytest.mark.parametrize('key', ['ik_node', '/ik_node', '/**', '/r1/ik_node'])
def test_params_file_blocks_for_ik_node_apply_in_a_namespace_too(tmp_path, key):
    mine = write_params(tmp_path, {'publish_rate': 3.0}, key=key)
    assert plan(params_file=mine, namespace='r1').ik_node_parameters['publish_rate'] == 3.0


def test_params_file_without_an_ik_node_block_is_refused_naming_its_nodes(tmp_path):
    mine = write_params(tmp_path, {'publish_rate': 3.0}, key='other_node')
    with pytest.raises(ConfigError, match='other_node'):
        plan(params_file=mine)


def test_a_missing_params_file_is_refused_with_its_path(tmp_path):
    with pytest.raises(ConfigError, match='nowhere.yaml'):
        plan(params_file=str(tmp_path / 'nowhere.yaml'))


def test_tip_link_in_the_params_file_replaces_the_robots_tip_links(tmp_path):
    mine = write_params(tmp_path, {'tip_link': 'left_hand'})
    params = plan(robot='twin_arm', params_file=mine, solver='fabrik').ik_node_parameters
    assert params['tip_link'] == 'left_hand' and 'tip_links' not in params


def test_params_file_naming_a_xacro_urdf_file_is_expanded_for_both_nodes(tmp_path, planar_xacro):
    mine = write_params(tmp_path, {'urdf_file': str(planar_xacro), 'xacro_args': 'upper:=0.6',
                                   'base_link': 'base', 'tip_link': 'hand'})
    p = plan(params_file=mine)
    assert '<robot name="xacro_planar">' in p.robot_description
    assert 'xyz="0.6 0 0"' in p.robot_description
    assert 'urdf_file' not in p.ik_node_parameters and 'xacro_args' not in p.ik_node_parameters
    assert 'leg3' not in p.description_source and str(planar_xacro) in p.description_source


def test_xacro_args_argument_overrides_the_params_files(tmp_path, planar_xacro):
    mine = write_params(tmp_path, {'urdf_file': str(planar_xacro), 'xacro_args': 'upper:=0.6',
                                   'base_link': 'base', 'tip_link': 'hand'})
    assert 'xyz="0.9 0 0"' in plan(params_file=mine, xacro_args='upper:=0.9').robot_description


def test_description_file_urdf_with_base_and_tip(shared_robot):
    ur5 = shared_robot('ur5.urdf')
    p = plan(description_file=str(ur5), base_link='base_link', tip_link='tool0', rviz='false')
    assert p.robot_description == ur5.read_text()
    assert p.ik_node_parameters == {'robot_description': ur5.read_text(),
                                    'base_link': 'base_link', 'tip_link': 'tool0'}
    assert p.fixed_frame == 'base_link' and not p.rviz


def test_description_file_xacro_is_expanded_with_xacro_args(planar_xacro):
    p = plan(description_file=str(planar_xacro), xacro_args='upper:=0.7', base_link='base',
             tip_link='hand', solver='analytic_hip_knee')
    assert 'xyz="0.7 0 0"' in p.robot_description and 'xacro:' not in p.robot_description
    assert p.ik_node_parameters['robot_description'] == p.robot_description


def test_description_file_may_be_a_packaged_name():
    p = plan(description_file='planar4.urdf', tip_link='tip')
    assert p.robot_description == (REPO / 'urdf' / 'planar4.urdf').read_text()
    assert 'solver' not in p.ik_node_parameters  # no robot config: the node's default


@pytest.mark.parametrize('arguments, words', [
    ({'robot': 'arm6', 'description_file': 'leg3.urdf'}, ['robot:=arm6', 'give one']),
    ({'robot': 'leg3', 'xacro_args': 'a:=1'}, ['not a xacro file']),
    ({'robot_state_publisher': 'false', 'xacro_args': 'a:=1', 'tip_link': 't'},
     ['description_file']),
    ({'description_file': 'gone.urdf.xacro', 'tip_link': 't'}, ['gone.urdf.xacro']),
    ({'tip_link': 'foot', 'tip_links': 'a,b'}, ['tip_link', 'tip_links', 'not both']),
    ({'robot': 'r2d2'}, ['robot', 'r2d2', 'leg3']),
    ({'solver': 'magic'}, ['magic', 'fabrik']),
    ({'output': 'screen'}, ['screen', 'joint_trajectory']),
    ({'rviz': 'maybe'}, ['rviz', 'true or false']),
    ({'namespace': '1robot'}, ['namespace', '1robot']),
    ({'namespace': 'r-1'}, ['namespace']),
    ({'flavour': 'x'}, ['flavour', 'description_file']),
])
def test_bad_arguments_are_refused_naming_them(arguments, words):
    with pytest.raises(ConfigError) as info:
        plan(**arguments)
    for word in words:
        assert word in str(info.value), (word, str(info.value))


@pytest.mark.parametrize('arguments, words', [
    ({'robot': 'leg3', 'tip_link': 'hand'}, ['hand', 'foot', 'ik-solve chains --urdf']),
    ({'robot': 'arm6', 'solver': 'analytic_hip_knee'}, ['analytic_hip_knee', 'arm6.urdf']),
    ({'description_file': 'planar4.urdf'}, ['tip_link', 'ik-solve chains']),
    ({'robot': 'leg3', 'base_link': 'foot', 'tip_link': 'base_link'}, ['no path']),
    ({'robot': 'leg3', 'state_topic': 'joint_states'},
     ['state_topic', 'its own output', 'output: position_command']),
])
def test_what_ik_node_would_refuse_is_refused_before_any_node_starts(arguments, words):
    with pytest.raises(ConfigError) as info:
        plan(**arguments)
    for word in words:
        assert word in str(info.value), (word, str(info.value))


def test_a_failing_xacro_is_refused_with_its_reason(tmp_path):
    bad = tmp_path / 'bad.urdf.xacro'
    bad.write_text('<robot xmlns:xacro="http://www.ros.org/wiki/xacro" name="r"><xacro:nope/>'
                   '</robot>')
    with pytest.raises(ConfigError, match='nope'):
        plan(description_file=str(bad), tip_link='x')


@pytest.mark.parametrize('text, tips', [('left_hand,right_hand', ['left_hand', 'right_hand']),
                                        ('left_hand right_hand', ['left_hand', 'right_hand']),
                                        ('[left_hand, right_hand]', ['left_hand', 'right_hand']),
                                        (' left_hand ,  ', ['left_hand'])])
def test_link_lists_take_commas_or_spaces(text, tips):
    assert link_list(text) == tips


def test_tip_links_argument_makes_a_tree_and_replaces_the_robots_tip(tmp_path):
    params = plan(robot='twin_arm', tip_links='left_hand right_finger_a').ik_node_parameters
    assert params['tip_links'] == ['left_hand', 'right_finger_a'] and 'tip_link' not in params
    params = plan(robot='leg3', tip_links='foot').ik_node_parameters  # one tip: serial
    assert params['tip_link'] == 'foot' and 'tip_links' not in params


def test_tip_link_argument_replaces_a_robots_tip_links():
    params = plan(robot='twin_arm', tip_link='right_hand').ik_node_parameters
    assert params['tip_link'] == 'right_hand' and 'tip_links' not in params


def test_without_robot_state_publisher_nor_description_the_node_reads_the_topic():
    p = plan(robot_state_publisher='false', base_link='base_link', tip_link='tool0')
    assert not p.robot_state_publisher
    assert p.robot_description == '' and 'robot_description' not in p.ik_node_parameters
    assert 'topic' in p.description_source and 'topic' in p.summary()
    assert p.ik_node_parameters == {'base_link': 'base_link', 'tip_link': 'tool0'}


def test_without_robot_state_publisher_a_given_description_still_goes_to_the_node(
        shared_robot):
    ur5 = shared_robot('ur5.urdf')
    p = plan(robot_state_publisher='false', description_file=str(ur5), tip_link='tool0')
    assert not p.robot_state_publisher
    assert p.ik_node_parameters['robot_description'] == ur5.read_text()


@pytest.mark.parametrize('arguments', [{}, {'base_link': 'base_link'}, {'rviz': 'false'}])
def test_without_robot_state_publisher_nor_a_robot_the_launch_says_what_to_add(arguments):
    with pytest.raises(ConfigError) as info:
        plan(robot_state_publisher='false', **arguments)
    message = str(info.value)
    for words in ('robot_state_publisher:=false', 'robot:=<leg3|', 'description_file:=',
                  'tip_link:='):
        assert words in message, (words, message)
    assert 'no tip link' not in message


def test_helpers_not_installed_are_left_out_with_a_note_and_the_rest_is_unchanged():
    def installed(package):
        return package == 'ik_node'
    everything = plan(robot='arm6')
    p = plan_from_arguments({'robot': 'arm6'}, REPO, installed=installed)
    assert (p.robot_state_publisher, p.rviz) == (False, False)
    assert p.ik_node_parameters == everything.ik_node_parameters
    assert len(p.notes) == 2 and everything.notes == ()
    assert 'robot_state_publisher is not installed' in p.notes[0]
    assert 'robot-state-publisher' in p.notes[0] and 'robot_state_publisher:=false' in p.notes[0]
    assert 'rviz2 is not installed' in p.notes[1] and 'rviz:=false' in p.notes[1]


def test_helpers_turned_off_or_installed_give_no_note():
    p = plan_from_arguments({'robot': 'arm6', 'rviz': 'false', 'robot_state_publisher': 'false'},
                            REPO, installed=lambda package: False)
    assert p.notes == ()
    p = plan_from_arguments({'robot': 'arm6'}, REPO, installed=lambda package: True)
    assert (p.robot_state_publisher, p.rviz, p.notes) == (True, True, ())


@pytest.mark.parametrize('namespace', ['r1', '/r1', '/r1/', ' r1 '])
def test_namespace_moves_tf_and_rvizs_absolute_topics_into_it(namespace):
    p = plan(namespace=namespace)
    assert p.namespace == 'r1'
    tf = (('/tf', 'tf'), ('/tf_static', 'tf_static'))
    assert p.state_publisher_remappings == tf
    remapped = dict(p.rviz_remappings)
    assert remapped['/clicked_point'] == 'ik_node/target_point'  # relative: /r1/ik_node/...
    assert remapped['/robot_description'] == 'robot_description'
    assert remapped['/ik_node/markers'] == 'ik_node/markers'
    # every absolute topic of ik.rviz moves into the namespace
    topics = {d['Topic']['Value'] for d in rviz_config()['Visualization Manager']['Displays']
              if isinstance(d.get('Topic'), dict)} | {'/robot_description'}
    assert topics <= set(remapped), topics - set(remapped)
    assert remapped['/tf'] == 'tf' and remapped['/tf_static'] == 'tf_static'
    assert 'namespace /r1' in p.summary()


def test_nested_namespaces_are_accepted():
    assert plan(namespace='arms/left').namespace == 'arms/left'


def test_a_state_topic_that_is_not_the_nodes_output_is_accepted():
    assert plan(robot='leg3', state_topic='/robot/joint_states') \
        .ik_node_parameters['state_topic'] == '/robot/joint_states'
    assert plan(robot='leg3', state_topic='joint_states', output='position_command') \
        .ik_node_parameters['state_topic'] == 'joint_states'


def test_output_and_state_topic_are_passed_only_when_set():
    params = plan().ik_node_parameters
    assert 'output' not in params and 'state_topic' not in params
    params = plan(output='joint_trajectory', state_topic='arm/joint_commands').ik_node_parameters
    assert params['output'] == 'joint_trajectory'
    assert params['state_topic'] == 'arm/joint_commands'


def test_a_packaged_robot_gets_its_own_view_and_any_other_robot_ik_rviz():
    assert plan(robot='twin_arm').rviz_config == 'twin_arm.rviz'
    assert plan().rviz_config == 'leg3.rviz'
    assert plan(description_file=str(REPO / 'urdf' / 'arm6.urdf'), base_link='base_link',
                tip_link='tool0').rviz_config == 'ik.rviz'
    assert plan(robot='arm6', base_link='shoulder_link').rviz_config == 'ik.rviz'


def test_base_link_sets_rvizs_fixed_frame(shared_robot):
    p = plan(description_file=str(shared_robot('panda.urdf')), base_link='panda_link0',
             tip_link='panda_hand_tcp')
    assert p.fixed_frame == 'panda_link0'


def test_launch_params_imports_neither_launch_nor_ros():
    script = textwrap.dedent('''
        import sys
        import ik_node.config.launch_plan as lp
        lp.plan_from_arguments({}, '.')
        loaded = sorted(m for m in sys.modules if m.split('.')[0] in
                        ('launch', 'launch_ros', 'rclpy', 'ament_index_python'))
        print('loaded:', loaded)
    ''')
    proc = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True,
                          timeout=60, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert 'loaded: []' in proc.stdout


# ------------------------------------------------------------ the launch description, evaluated
@pytest.fixture
def ik_node_prefix(tmp_path, monkeypatch):
    """An ament prefix in which FindPackageShare('ik_node') is this source tree, and which
    registers robot_state_publisher and rviz2 (the launch starts only installed helpers; nothing
    is executed here)."""
    pytest.importorskip('launch_ros')
    share = tmp_path / 'share'
    index = share / 'ament_index' / 'resource_index' / 'packages'
    index.mkdir(parents=True)
    for package in ('ik_node', 'robot_state_publisher', 'rviz2'):
        (index / package).touch()
    (share / 'ik_node').mkdir()
    for folder in ('launch', 'config', 'urdf', 'rviz'):
        (share / 'ik_node' / folder).symlink_to(REPO / folder)
    monkeypatch.setenv('AMENT_PREFIX_PATH', str(tmp_path))
    return tmp_path


def evaluate_launch(**launch_arguments):
    """Visit the description as `ros2 launch` would, short of starting processes.

    Returns ``{executable: node}`` for the nodes whose condition holds, each node with its
    substitutions performed, and the context.
    """
    from launch import LaunchContext
    from launch_ros.actions import Node

    spec = importlib.util.spec_from_file_location('ik_launch', LAUNCH_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    description = module.generate_launch_description()

    context = LaunchContext()
    context.launch_configurations.update(launch_arguments)
    started = {}
    pending = list(description.entities)
    while pending:
        entity = pending.pop(0)
        if entity.condition is not None and not entity.condition.evaluate(context):
            continue
        if isinstance(entity, Node):
            entity._perform_substitutions(context)  # what Node.execute does before spawning
            started[entity.node_executable] = entity
        else:  # DeclareLaunchArgument, OpaqueFunction, LogInfo
            pending[0:0] = entity.visit(context) or []
    return started, context


def command_line(node, context):
    """The node's argv after the executable, less the ROS-private placeholders."""
    from launch.substitutions import LocalSubstitution
    from launch.utilities import perform_substitutions

    return [perform_substitutions(context, part) for part in node.cmd[1:]
            if not any(isinstance(s, LocalSubstitution) for s in part)]


def parameters_of(node, context):
    """Parameters the node gets, merged in command-line order, and the params files' paths.

    The files are the ones launch_ros wrote, read with the loader ik_node reads parameter files
    with (``ik_node.config.files``), so a file the node would refuse fails here too.
    """
    argv = command_line(node, context)
    files = [argv[i + 1] for i, arg in enumerate(argv) if arg == '--params-file']
    merged = {}
    for path in files:
        data = load_yaml(Path(path).read_text(), path)
        merged.update(parameters_of_file(data, path, node.node_name.rsplit('/', 1)[-1]))
    return merged, files


@pytest.fixture
def temporary_params_files(tmp_path, monkeypatch):
    """launch_ros writes dict parameters to launch_params_* files in the temporary directory:
    give it one of this test's own."""
    import tempfile
    folder = tmp_path / 'launch_params'
    folder.mkdir()
    monkeypatch.setattr(tempfile, 'tempdir', str(folder))
    yield folder


@pytest.mark.parametrize('robot', ROBOTS)
def test_launch_starts_ik_node_with_the_urdf_and_the_robots_config(robot, ik_node_prefix,
                                                                  temporary_params_files):
    started, context = evaluate_launch(robot=robot, rviz='false')
    ik = started['ik_node']
    assert ik.node_package == 'ik_node'
    assert ik.node_name.rsplit('/', 1)[-1] == 'ik_node'
    parameters, files = parameters_of(ik, context)
    assert len(files) == 1  # one merged set: robot config < params_file < arguments
    assert parameters['robot_description'] == (REPO / 'urdf' / f'{robot}.urdf').read_text()
    assert parameters['solver'] == robot_parameters(robot)['solver']
    assert 'urdf_file' not in parameters


@pytest.mark.parametrize('robot', ROBOTS)
def test_launch_starts_robot_state_publisher_with_the_urdf(robot, ik_node_prefix,
                                                           temporary_params_files):
    started, context = evaluate_launch(robot=robot, rviz='false')
    rsp = started['robot_state_publisher']
    assert rsp.node_package == 'robot_state_publisher'
    parameters, _ = parameters_of(rsp, context)
    assert parameters['robot_description'] == (REPO / 'urdf' / f'{robot}.urdf').read_text()


def test_solver_argument_reaches_the_node(ik_node_prefix, temporary_params_files):
    started, context = evaluate_launch(robot='arm6', solver='fabrik', rviz='false')
    assert parameters_of(started['ik_node'], context)[0]['solver'] == 'fabrik'


def test_params_file_argument_is_applied_over_the_robots_config(ik_node_prefix,
                                                                temporary_params_files,
                                                                tmp_path):
    custom = write_params(tmp_path, {'publish_rate': 7.0})
    started, context = evaluate_launch(robot='leg3', params_file=custom, rviz='false')
    parameters, _ = parameters_of(started['ik_node'], context)
    assert parameters['publish_rate'] == 7.0
    assert parameters['solver'] == robot_parameters('leg3')['solver']


def test_a_xacro_description_file_reaches_both_nodes_expanded(ik_node_prefix,
                                                              temporary_params_files, planar_xacro):
    started, context = evaluate_launch(description_file=str(planar_xacro), xacro_args='upper:=0.8',
                                       base_link='base', tip_link='hand', rviz='false')
    ik, _ = parameters_of(started['ik_node'], context)
    rsp, _ = parameters_of(started['robot_state_publisher'], context)
    assert ik['robot_description'] == rsp['robot_description']
    assert 'xyz="0.8 0 0"' in ik['robot_description']
    assert (ik['base_link'], ik['tip_link']) == ('base', 'hand')


def test_without_robot_state_publisher_only_ik_node_starts_and_gets_no_description(
        ik_node_prefix, temporary_params_files):
    started, context = evaluate_launch(robot_state_publisher='false', rviz='false',
                                       base_link='base_link', tip_link='tool0')
    assert set(started) == {'ik_node'}
    parameters, _ = parameters_of(started['ik_node'], context)
    assert 'robot_description' not in parameters
    assert parameters['tip_link'] == 'tool0'


@pytest.mark.parametrize('rviz', ['true', 'false'])
def test_rviz_starts_only_when_asked(rviz, ik_node_prefix, temporary_params_files):
    started, context = evaluate_launch(robot='leg3', rviz=rviz)
    assert ('rviz2' in started) == (rviz == 'true')
    assert {'ik_node', 'robot_state_publisher'} <= set(started)


def test_rviz_opens_on_the_view_of_a_robot_that_is_not_packaged(ik_node_prefix,
                                                                temporary_params_files,
                                                                tmp_path, monkeypatch):
    """Your own URDF: RViz gets ik.rviz with the view of its chain, the view the node keeps
    its far targets and labels in (ik_node.ros.rviz.views.chain_view)."""
    import tempfile

    from ik_node import Chain
    from ik_node.ros.rviz import views
    monkeypatch.setattr(tempfile, 'tempdir', str(tmp_path))  # the config is written there
    urdf = REPO / 'urdf' / 'twin_arm.urdf'
    started, context = evaluate_launch(description_file=str(urdf), tip_link='left_hand')
    argv = command_line(started['rviz2'], context)
    config = Path(argv[argv.index('-d') + 1])
    assert config.parent == tmp_path / 'ik_node_rviz'
    text = config.read_text()
    current = yaml.safe_load(text)['Visualization Manager']['Views']['Current']
    view = views.chain_view(Chain.from_urdf_file(urdf, 'base_link', ['left_hand']))
    focal = current['Focal Point']
    assert (focal['X'], focal['Y'], focal['Z'], current['Distance'], current['Pitch']) == \
        (*view.focal, view.distance, view.pitch)
    assert view != views.robot_view(REPO, 'twin_arm')  # one hand's, not the packaged robot's
    assert text == views.with_view(RVIZ_FILE.read_text(), view)  # else ik.rviz as shipped


@pytest.mark.parametrize('robot', ['leg3', 'quad12'])
def test_rviz_loads_the_robots_view_on_the_base_link_and_sends_clicked_points_to_the_node(
        robot, ik_node_prefix, temporary_params_files):
    started, context = evaluate_launch(robot=robot)  # rviz defaults to true
    rviz = started['rviz2']
    argv = command_line(rviz, context)
    config = Path(argv[argv.index('-d') + 1])
    assert config.name == f'{robot}.rviz' and config.is_file()
    assert argv[argv.index('-f') + 1] == 'base_link'
    # Relative: ROS resolves it in RViz's namespace, /ik_node/target_point without one.
    assert ('/clicked_point', 'ik_node/target_point') in rviz.expanded_remapping_rules


def test_namespace_pushes_every_node_and_tf_into_it(ik_node_prefix, temporary_params_files):
    started, context = evaluate_launch(robot='leg3', namespace='r1')
    assert {name: node.expanded_node_namespace for name, node in started.items()} == \
        {'ik_node': '/r1', 'robot_state_publisher': '/r1', 'rviz2': '/r1'}
    # Relative targets: ROS resolves them in the node's namespace (/r1/tf, ...).
    assert ('/tf', 'tf') in started['robot_state_publisher'].expanded_remapping_rules
    rviz_rules = started['rviz2'].expanded_remapping_rules
    for rule in (('/clicked_point', 'ik_node/target_point'),
                 ('/robot_description', 'robot_description'),
                 ('/ik_node/markers', 'ik_node/markers'),
                 ('/ik_node/reachability', 'ik_node/reachability'), ('/tf_static', 'tf_static')):
        assert rule in rviz_rules
    # The robot's config (an `ik_node:` block) still applies inside the namespace.
    parameters, _ = parameters_of(started['ik_node'], context)
    assert parameters['tip_link'] == 'foot'


def test_output_and_state_topic_reach_the_node_only_when_set(ik_node_prefix,
                                                             temporary_params_files):
    started, context = evaluate_launch(robot='leg3', rviz='false')
    parameters, _ = parameters_of(started['ik_node'], context)
    assert 'output' not in parameters and 'state_topic' not in parameters
    started, context = evaluate_launch(robot='leg3', rviz='false', output='position_command',
                                       state_topic='leg/command')
    parameters, _ = parameters_of(started['ik_node'], context)
    assert (parameters['output'], parameters['state_topic']) == ('position_command',
                                                                   'leg/command')


def test_helpers_that_are_not_installed_are_left_out_with_a_note_naming_the_package(
        ik_node_prefix, temporary_params_files):
    import logging

    from launch.logging import get_logger

    index = ik_node_prefix / 'share' / 'ament_index' / 'resource_index' / 'packages'
    (index / 'robot_state_publisher').unlink()
    (index / 'rviz2').unlink()
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = get_logger('ik.launch.py')
    logger.addHandler(handler)
    try:
        started, _ = evaluate_launch(robot='leg3')
    finally:
        logger.removeHandler(handler)
    assert set(started) == {'ik_node'}
    log = '\n'.join(r.getMessage() for r in records)
    assert all(r.levelno == logging.WARNING for r in records)
    for words in ('robot_state_publisher is not installed', 'robot_state_publisher:=false',
                  'rviz2 is not installed', 'rviz:=false'):
        assert words in log, (words, log)


def test_unknown_robot_is_refused(ik_node_prefix):
    with pytest.raises(Exception, match='robot'):
        evaluate_launch(robot='r2d2')


def test_a_bad_tip_is_refused_before_any_node_is_made(ik_node_prefix):
    with pytest.raises(ConfigError, match='hand'):
        evaluate_launch(robot='leg3', tip_link='hand')


def test_launch_evaluation_started_no_process(ik_node_prefix, temporary_params_files):
    # Guards the helper: visiting must not have spawned anything.
    started, context = evaluate_launch(robot='leg3', rviz='false')
    assert all(node.process_details is None for node in started.values())
    assert os.environ['AMENT_PREFIX_PATH'] == str(ik_node_prefix)
