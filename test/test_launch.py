"""launch/ik.launch.py and rviz/ik.rviz.

Three layers:
- without ROS launch: the launch file read with ``ast`` (its arguments, defaults and choices, and
  that every robot choice has its URDF and config), and the RViz config read as YAML;
- with launch_ros importable: the launch description built and evaluated in a LaunchContext, with
  ik_node installed into a throw-away ament prefix (a share/ik_node of symlinks to this tree), to
  check which nodes start with which parameters. Nothing is executed; no process starts.
"""

import ast
import importlib.util
import os
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
LAUNCH_FILE = REPO / 'launch' / 'ik.launch.py'
RVIZ_FILE = REPO / 'rviz' / 'ik.rviz'

ROBOTS = ['leg3', 'planar4', 'arm6', 'twin_arm']
SOLVERS = ['', 'analytic_hip_knee', 'fabrik', 'damped_jacobian']
NOT_YET = {'twin_arm': 'twin_arm comes from another developer'}


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


def test_launch_file_declares_robot_solver_rviz_and_params_file():
    assert set(declared_arguments()) == {'robot', 'solver', 'rviz', 'params_file'}


def test_every_launch_argument_has_a_description():
    for name, argument in declared_arguments().items():
        assert argument['description'], f'launch argument {name!r} has no description'


def test_launch_argument_defaults_and_choices():
    arguments = declared_arguments()
    assert arguments['robot']['choices'] == ROBOTS
    assert arguments['robot']['default_value'] == 'leg3'
    assert arguments['solver']['choices'] == SOLVERS
    assert arguments['solver']['default_value'] == ''
    assert arguments['rviz']['choices'] == ['true', 'false']
    assert arguments['rviz']['default_value'] == 'true'
    params_default = arguments['params_file']['default_value']
    assert arguments['params_file']['choices'] is None
    for part in ("FindPackageShare('ik_node')", "'config'", "LaunchConfiguration('robot')",
                 "'.yaml'"):
        assert part in params_default, f'params_file default {params_default} lacks {part}'


def test_launch_file_exposes_generate_launch_description():
    tree = ast.parse(LAUNCH_FILE.read_text())
    functions = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert 'generate_launch_description' in functions


@pytest.mark.parametrize('robot', ROBOTS)
def test_every_robot_choice_has_its_urdf_and_config(robot):
    urdf, config = REPO / 'urdf' / f'{robot}.urdf', REPO / 'config' / f'{robot}.yaml'
    if robot in NOT_YET and not (urdf.is_file() and config.is_file()):
        pytest.skip(f'{NOT_YET[robot]}; not here yet: '
                    f'{", ".join(p.name for p in (urdf, config) if not p.is_file())}')
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


def test_rviz_config_shows_grid_robot_model_tf_and_ik_markers():
    displays = displays_by_class(rviz_config())
    assert {'Grid', 'RobotModel', 'TF', 'MarkerArray'} <= set(displays)
    assert all(d.get('Enabled', True) and d.get('Value', True) for d in displays.values())
    robot_model = displays['RobotModel']
    assert robot_model['Description Source'] == 'Topic'
    assert robot_model['Description Topic']['Value'] == '/robot_description'
    # robot_state_publisher latches the description: the subscription must be transient local.
    assert robot_model['Description Topic']['Durability Policy'] == 'Transient Local'
    assert displays['MarkerArray']['Topic']['Value'] == '/ik_node/markers'


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


# ------------------------------------------------------------ the launch description, evaluated
@pytest.fixture
def ik_node_prefix(tmp_path, monkeypatch):
    """An ament prefix in which FindPackageShare('ik_node') is this source tree."""
    pytest.importorskip('launch_ros')
    share = tmp_path / 'share'
    index = share / 'ament_index' / 'resource_index' / 'packages'
    index.mkdir(parents=True)
    (index / 'ik_node').touch()
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
        else:  # DeclareLaunchArgument, OpaqueFunction
            pending[0:0] = entity.visit(context) or []
    return started, context


def command_line(node, context):
    """The node's argv after the executable, less the ROS-private placeholders."""
    from launch.substitutions import LocalSubstitution
    from launch.utilities import perform_substitutions

    return [perform_substitutions(context, part) for part in node.cmd[1:]
            if not any(isinstance(s, LocalSubstitution) for s in part)]


def parameters_of(node, context):
    """Parameters the node gets, merged in command-line order, and the params files' paths."""
    argv = command_line(node, context)
    files = [argv[i + 1] for i, arg in enumerate(argv) if arg == '--params-file']
    merged = {}
    for path in files:
        for section in (yaml.safe_load(Path(path).read_text()) or {}).values():
            merged.update(section.get('ros__parameters', {}))
    return merged, files


@pytest.fixture
def temporary_params_files():
    """launch_ros writes dict parameters to /tmp/launch_params_*; remove the ones we made."""
    import tempfile
    before = set(Path(tempfile.gettempdir()).glob('launch_params_*'))
    yield
    for path in set(Path(tempfile.gettempdir()).glob('launch_params_*')) - before:
        path.unlink(missing_ok=True)


def require_robot_files(robot):
    for path in (REPO / 'urdf' / f'{robot}.urdf', REPO / 'config' / f'{robot}.yaml'):
        if not path.is_file():
            pytest.skip(f'{path.relative_to(REPO)} is not here yet')


@pytest.mark.parametrize('robot', ROBOTS)
def test_launch_starts_ik_node_with_params_file_and_urdf(robot, ik_node_prefix,
                                                         temporary_params_files):
    require_robot_files(robot)
    started, context = evaluate_launch(robot=robot, rviz='false')
    ik = started['ik_node']
    assert ik.node_package == 'ik_node'
    assert ik.node_name.rsplit('/', 1)[-1] == 'ik_node'
    parameters, files = parameters_of(ik, context)
    config = ik_node_prefix / 'share' / 'ik_node' / 'config' / f'{robot}.yaml'
    assert files[0] == str(config)
    assert parameters['robot_description'] == (REPO / 'urdf' / f'{robot}.urdf').read_text()
    expected_solver = yaml.safe_load(config.read_text())['ik_node']['ros__parameters'].get('solver')
    assert parameters.get('solver') == expected_solver  # '' keeps the config's solver


@pytest.mark.parametrize('robot', ROBOTS)
def test_launch_starts_robot_state_publisher_with_the_urdf(robot, ik_node_prefix,
                                                           temporary_params_files):
    require_robot_files(robot)
    started, context = evaluate_launch(robot=robot, rviz='false')
    rsp = started['robot_state_publisher']
    assert rsp.node_package == 'robot_state_publisher'
    parameters, _ = parameters_of(rsp, context)
    assert parameters['robot_description'] == (REPO / 'urdf' / f'{robot}.urdf').read_text()


@pytest.mark.parametrize('solver', SOLVERS[1:])
def test_solver_argument_overrides_the_params_file(solver, ik_node_prefix,
                                                   temporary_params_files):
    require_robot_files('arm6')
    started, context = evaluate_launch(robot='arm6', solver=solver, rviz='false')
    parameters, files = parameters_of(started['ik_node'], context)
    assert parameters['solver'] == solver
    assert len(files) == 2  # the params file first, then the launch's overrides


def test_params_file_argument_replaces_the_default(ik_node_prefix, temporary_params_files,
                                                   tmp_path):
    custom = tmp_path / 'mine.yaml'
    custom.write_text(yaml.safe_dump({'ik_node': {'ros__parameters': {'publish_rate': 7.0}}}))
    started, context = evaluate_launch(robot='leg3', params_file=str(custom), rviz='false')
    parameters, files = parameters_of(started['ik_node'], context)
    assert files[0] == str(custom)
    assert parameters['publish_rate'] == 7.0


@pytest.mark.parametrize('rviz', ['true', 'false'])
def test_rviz_starts_only_when_asked(rviz, ik_node_prefix, temporary_params_files):
    started, context = evaluate_launch(robot='leg3', rviz=rviz)
    assert ('rviz2' in started) == (rviz == 'true')
    assert {'ik_node', 'robot_state_publisher'} <= set(started)


def test_rviz_loads_ik_rviz_and_sends_clicked_points_to_the_node(ik_node_prefix,
                                                                 temporary_params_files):
    started, context = evaluate_launch(robot='leg3')  # rviz defaults to true
    rviz = started['rviz2']
    argv = command_line(rviz, context)
    config = Path(argv[argv.index('-d') + 1])
    assert config.name == 'ik.rviz' and config.is_file()
    assert ('/clicked_point', '/ik_node/target_point') in rviz.expanded_remapping_rules


def test_unknown_robot_is_refused(ik_node_prefix):
    with pytest.raises(Exception, match='robot'):
        evaluate_launch(robot='r2d2')


def test_launch_evaluation_started_no_process(ik_node_prefix, temporary_params_files):
    # Guards the helper: visiting must not have spawned anything.
    started, context = evaluate_launch(robot='leg3', rviz='false')
    assert all(node.process_details is None for node in started.values())
    assert os.environ['AMENT_PREFIX_PATH'] == str(ik_node_prefix)
