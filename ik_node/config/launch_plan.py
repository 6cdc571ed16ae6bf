"""What ``launch/ik.launch.py`` starts, worked out from its arguments by a plain function.

The launch file declares the arguments and, in an OpaqueFunction, calls
:func:`plan_from_arguments` with their values; the returned :class:`LaunchPlan` says which nodes
start, in which namespace, with which parameters and remappings. Keeping that logic here means it
is tested without ROS launch installed. This module imports no ROS package.

Where ik_node's parameters come from, later ones winning:

1. the packaged robot's ``config/<robot>.yaml`` (``robot:=leg3``; the default robot is used only
   when nothing else names a robot description);
2. the user's ``params_file:=`` (ROS params-file shape; its ``ik_node`` block, or ``/**``);
3. the launch arguments ``base_link``, ``tip_link``/``tip_links``, ``solver``, ``output``,
   ``state_topic``, each only when given.

The files are read here and merged into one mapping, so ``ik_node:`` blocks apply in a namespace
too (ROS itself matches a params file's ``ik_node:`` block only to the node ``/ik_node``).

The robot description (URDF XML, given to robot_state_publisher and to ik_node as
``robot_description``) comes from, in this order: ``description_file:=`` (a ``.xacro`` expanded
with ``xacro_args:=``); ``robot:=``; the params file's ``robot_description`` or ``urdf_file``
(+ ``xacro_args``); with ``robot_state_publisher:=false`` nothing (ik_node then reads the
``robot_description`` topic of the robot's own robot_state_publisher); else the default robot.

robot_state_publisher and RViz start when asked for and installed: one that is asked for (the
defaults ask for both) but not installed is left out with a note in the launch log saying what to
install, so ik_node still runs where only rclpy and launch_ros are (the node gets the URDF as a
parameter; only the robot's TF and the view are missing).
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Union

from ik_node.config.node_config import (DEFAULT_SOLVER, IGNORED_KEYS, NODE_NAME, NODE_PARAMS,
                                        STRING_PARAMS, build_chain, build_solver,
                                        config_from_flat, load_yaml, parameters_of_file)
from ik_node.config.ros_graph import graph_config_from_flat
from ik_node.model.description import description_from_file
from ik_node.errors import ConfigError, IkError
from ik_node.model.resources import urdf_path
from ik_node.solvers import SOLVERS

ROBOTS = ('leg3', 'planar4', 'arm6', 'twin_arm', 'quad12')
DEFAULT_ROBOT = 'leg3'
#: Values of the node's ``output`` parameter (what it publishes the solution as).
OUTPUTS = ('joint_states', 'position_command', 'joint_trajectory')
BOOLEANS = ('true', 'false')

#: Every launch argument and its default (launch gives strings).
ARGUMENT_DEFAULTS: Dict[str, str] = {
    'robot': '',
    'description_file': '',
    'xacro_args': '',
    'base_link': '',
    'tip_link': '',
    'tip_links': '',
    'solver': '',
    'params_file': '',
    'robot_state_publisher': 'true',
    'rviz': 'true',
    'namespace': '',
    'output': '',
    'state_topic': '',
}

#: The launch argument that asks for each optional helper node, and the helper's ROS package.
HELPER_PACKAGES: Dict[str, str] = {'robot_state_publisher': 'robot_state_publisher',
                                   'rviz': 'rviz2'}

#: Launch arguments passed to ik_node as parameters of the same name, only when not empty.
PASSED_THROUGH = ('base_link', 'solver', 'output', 'state_topic')

_DESCRIPTION_KEYS = ('robot_description', 'urdf_file', 'xacro_args')
_NAMESPACE = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*(/[A-Za-z_][A-Za-z0-9_]*)*$')
_PLACEHOLDER_URDF = '<robot name="from_the_robot_description_topic"/>'

Remapping = Tuple[str, str]


@dataclass(frozen=True)
class LaunchPlan:
    """The nodes the launch starts and how.

    Attributes:
        namespace: relative namespace of all nodes ('' for none), e.g. ``'r1'``.
        robot_description: URDF XML for robot_state_publisher and ik_node; '' when ik_node is to
            read the ``robot_description`` topic instead.
        description_source: where the description comes from, for the log.
        ik_node_parameters: every parameter ik_node gets (solver parameters as dotted names).
        robot_state_publisher: start robot_state_publisher.
        rviz: start RViz.
        fixed_frame: RViz's fixed frame (the chain's base link).
        rviz_config: RViz's config in the share's ``rviz/``: ``<robot>.rviz`` for a packaged
            robot on its own base link (a view framing its reach), else ``ik.rviz``.
        state_publisher_remappings: remappings of robot_state_publisher.
        rviz_remappings: remappings of RViz.
        notes: lines for the launch log about helpers left out (not installed), each naming
            what to install or which argument turns the helper off.
    """

    namespace: str
    robot_description: str
    description_source: str
    ik_node_parameters: Mapping[str, Any]
    robot_state_publisher: bool
    rviz: bool
    fixed_frame: str
    state_publisher_remappings: Tuple[Remapping, ...] = ()
    rviz_remappings: Tuple[Remapping, ...] = ()
    notes: Tuple[str, ...] = ()
    rviz_config: str = 'ik.rviz'

    def summary(self) -> str:
        """One line for the launch log."""
        tips = self.ik_node_parameters.get('tip_links') or \
            [self.ik_node_parameters.get('tip_link', '?')]
        started = ['ik_node'] + (['robot_state_publisher'] if self.robot_state_publisher else []) \
            + (['rviz2'] if self.rviz else [])
        where = f'namespace /{self.namespace}' if self.namespace else 'no namespace'
        return (f'ik.launch.py: {", ".join(started)} in {where}; robot description from '
                f'{self.description_source}; chain {self.fixed_frame} -> {", ".join(tips)}, '
                f'solver {self.ik_node_parameters.get("solver", DEFAULT_SOLVER)}')


# -------------------------------------------------------------------------------- helpers
def _flat(params: Mapping[str, Any], prefix: str = '') -> Dict[str, Any]:
    """Nested blocks to dotted names (``fabrik: {a: 1}`` -> ``fabrik.a``), as ROS reads them."""
    out: Dict[str, Any] = {}
    for key, value in params.items():
        name = f'{prefix}{key}'
        if isinstance(value, dict):
            out.update(_flat(value, name + '.'))
        else:
            out[name] = value
    return out


def _ik_node_parameters_in(path: Path, what: str) -> Dict[str, Any]:
    """The ik_node parameters of a params file (its ``ik_node`` and ``/**`` blocks), flat."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f'cannot read {what} {str(path)!r}: {exc.strerror}') from None
    params = _flat(parameters_of_file(load_yaml(text, str(path)), str(path), NODE_NAME))
    # YAML nulls and empty lists mean "not set" (ROS cannot type an empty list either).
    return {k: v for k, v in params.items() if v is not None and v != []}


def _boolean(name: str, value: str) -> bool:
    text = value.strip().lower()
    if text not in BOOLEANS:
        raise ConfigError(f'{name}:={value!r}: expected true or false')
    return text == 'true'


def _choice(name: str, value: str, choices) -> str:
    if value and value not in choices:
        raise ConfigError(f'{name}:={value!r} is not one of: {", ".join(choices)}')
    return value


def _namespace(value: str) -> str:
    namespace = value.strip().strip('/')
    if namespace and not _NAMESPACE.match(namespace):
        raise ConfigError(f'namespace:={value!r} is not a ROS namespace (letters, digits and _ '
                          'in /-separated tokens not starting with a digit), e.g. r1 or arms/left')
    return namespace


def _helpers_installed(asked: Mapping[str, bool],
                       installed: Optional[Callable[[str], bool]]) -> Tuple[Dict[str, bool],
                                                                            Tuple[str, ...]]:
    """The helpers that start (asked for and installed), and a note for each one left out."""
    start, notes = dict(asked), []
    distro = os.environ.get('ROS_DISTRO') or '<distro>'
    for argument, wanted in asked.items():
        package = HELPER_PACKAGES[argument]
        if wanted and installed is not None and not installed(package):
            start[argument] = False
            apt = f'ros-{distro}-{package.replace("_", "-")}'
            notes.append(f'{package} is not installed: starting without it (install {apt}, or '
                         f'pass {argument}:=false to leave it out without this note)')
    return start, tuple(notes)


def link_list(text: str) -> List[str]:
    """``'a, b'``, ``'a b'`` or ``'[a, b]'`` -> ``['a', 'b']``."""
    return [name for name in re.split(r'[\s,]+', text.strip().strip('[]')) if name]


def _validate(params: Mapping[str, Any], robot_description: str) -> None:
    """Check the parameters ik_node will get as ik_node does; the chain too when the URDF is known.

    The graph parameters (``output``, ``state_topic``, ...) are checked as the node checks them,
    a state topic that is the node's own output included. Names the configuration tables do not
    hold (the RViz target's, QoS overrides) are left to the node.
    """
    known = {k: v for k, v in params.items()
             if k in STRING_PARAMS or k in NODE_PARAMS or k in IGNORED_KEYS or k == 'tip_links'
             or k.split('.', 1)[0] in SOLVERS}
    known['robot_description'] = robot_description or _PLACEHOLDER_URDF
    config = config_from_flat(known, source='ik_node parameters')
    graph_config_from_flat(params, source='ik_node parameters')
    if robot_description:
        build_solver(config, build_chain(config))


# --------------------------------------------------------------------------------- the plan
def plan_from_arguments(arguments: Mapping[str, str], share_dir: Union[str, Path],
                        installed: Optional[Callable[[str], bool]] = None) -> LaunchPlan:
    """Work out the launch from its arguments.

    Args:
        arguments: launch argument values by name (missing ones take :data:`ARGUMENT_DEFAULTS`).
        share_dir: the ik_node share directory (holds ``urdf/`` and ``config/``).
        installed: tells whether a ROS package is installed (``robot_state_publisher``,
            ``rviz2``); a helper asked for but not installed is left out with a note. None
            takes every helper as installed.

    Raises:
        ConfigError: an unknown argument or value, an unreadable file, a xacro failure, or
            parameters ik_node would refuse (unknown link, a solver that does not fit...).
    """
    unknown = sorted(set(arguments) - set(ARGUMENT_DEFAULTS))
    if unknown:
        raise ConfigError(f'unknown launch arguments {", ".join(unknown)}. Valid: '
                          f'{", ".join(ARGUMENT_DEFAULTS)}')
    a = {k: str(arguments.get(k, default)).strip() for k, default in ARGUMENT_DEFAULTS.items()}
    share = Path(share_dir)
    robot = _choice('robot', a['robot'], ROBOTS)
    _choice('solver', a['solver'], sorted(SOLVERS))
    _choice('output', a['output'], OUTPUTS)
    with_rsp = _boolean('robot_state_publisher', a['robot_state_publisher'])
    with_rviz = _boolean('rviz', a['rviz'])
    namespace = _namespace(a['namespace'])
    if robot and a['description_file']:
        raise ConfigError(f'robot:={robot} and description_file:={a["description_file"]} both '
                          'name the robot: give one')
    if a['tip_link'] and a['tip_links']:
        raise ConfigError('give tip_link:= (a serial chain) or tip_links:= (a tree), not both')

    user = _ik_node_parameters_in(Path(a['params_file']).expanduser(), 'params file') \
        if a['params_file'] else {}
    if not robot and not a['description_file'] and with_rsp and \
            not any(user.get(k) for k in ('robot_description', 'urdf_file')):
        robot = DEFAULT_ROBOT  # nothing else names a robot: the launch's default one

    defaults: Dict[str, Any] = {}
    xacro_args = a['xacro_args']
    path = None  # the description file, when there is one
    if a['description_file']:
        path = urdf_path(a['description_file'])
        xml, source = description_from_file(path, xacro_args), str(path)
    elif robot:
        defaults = _ik_node_parameters_in(share / 'config' / f'{robot}.yaml',
                                          f'the config of robot {robot}')
        path = share / 'urdf' / f'{robot}.urdf'
        xml, source = description_from_file(path, xacro_args), f'robot {robot} ({path})'
    elif user.get('robot_description'):
        if xacro_args:
            raise ConfigError('xacro_args:= given, but the description is the params file\'s '
                              'robot_description (URDF XML): nothing to expand')
        xml, source = str(user['robot_description']), 'the params file (robot_description)'
    elif user.get('urdf_file'):
        path = urdf_path(str(user['urdf_file']))
        xml = description_from_file(path, xacro_args or str(user.get('xacro_args', '')))
        source = f'{path} (the params file\'s urdf_file)'
    else:  # robot_state_publisher:=false and no description: the robot publishes its own
        if xacro_args:
            raise ConfigError('xacro_args:= given without a xacro file: set description_file:=')
        xml, source = '', 'the robot_description topic'

    if 'tip_link' in user or 'tip_links' in user:  # the user's tips replace the robot's
        defaults = {k: v for k, v in defaults.items() if k not in ('tip_link', 'tip_links')}
    params = {**defaults, **user}
    for key in _DESCRIPTION_KEYS:
        params.pop(key, None)
    if xml:
        params['robot_description'] = xml
    for key in PASSED_THROUGH:
        if a[key]:
            params[key] = a[key]
    if a['tip_link']:
        params['tip_link'] = a['tip_link']
        params.pop('tip_links', None)
    elif a['tip_links']:
        tips = link_list(a['tip_links'])
        if len(tips) == 1:
            params['tip_link'] = tips[0]
            params.pop('tip_links', None)
        else:
            params['tip_links'] = tips
            params.pop('tip_link', None)
    if not xml and not params.get('tip_link') and not params.get('tip_links'):
        raise ConfigError(
            'robot_state_publisher:=false and no robot description (robot:=, description_file:= '
            'or the params file\'s robot_description/urdf_file): ik_node would read the '
            'robot_description topic of your robot\'s own robot_state_publisher, but no chain '
            f'names its end effector. Add robot:=<{"|".join(ROBOTS)}> or description_file:='
            '/path/robot.urdf for a description given here, or tip_link:=<end-effector link> '
            '(and base_link:= when not base_link) for the robot that publishes its own')
    try:
        _validate(params, xml)
    except IkError as exc:
        hint = ''
        if path is not None:
            xacro = f' --xacro-args {shlex.quote(xacro_args)}' if xacro_args else ''
            hint = (f' (`ik-solve chains --urdf {shlex.quote(str(path))}{xacro}` lists its chains '
                    'and the solvers that fit them)')
        raise ConfigError(f'{exc}{hint}') from None

    fixed_frame = str(params.get('base_link') or STRING_PARAMS['base_link'][0])
    tf = (('/tf', 'tf'), ('/tf_static', 'tf_static')) if namespace else ()
    rviz_remappings: Tuple[Remapping, ...] = (('/clicked_point', f'{NODE_NAME}/target_point'),)
    if namespace:  # ik.rviz names absolute topics: bring them into the namespace
        rviz_remappings += (('/robot_description', 'robot_description'),
                            (f'/{NODE_NAME}/markers', f'{NODE_NAME}/markers'),
                            (f'/{NODE_NAME}/reachability', f'{NODE_NAME}/reachability'),
                            (f'/{NODE_NAME}/collision_world', f'{NODE_NAME}/collision_world'),
                            (f'/{NODE_NAME}/base_placement/heat_map',
                             f'{NODE_NAME}/base_placement/heat_map'),
                            (f'/{NODE_NAME}/base_placement/result',
                             f'{NODE_NAME}/base_placement/result')) + tf
    start, notes = _helpers_installed({'robot_state_publisher': with_rsp, 'rviz': with_rviz},
                                      installed)
    rviz_config = f'{robot}.rviz' if robot and fixed_frame == defaults.get('base_link') and \
        (share / 'rviz' / f'{robot}.rviz').is_file() else 'ik.rviz'

    return LaunchPlan(namespace=namespace, robot_description=xml, description_source=source,
                      ik_node_parameters=params,
                      robot_state_publisher=start['robot_state_publisher'], rviz=start['rviz'],
                      fixed_frame=fixed_frame, state_publisher_remappings=tf,
                      rviz_remappings=rviz_remappings, notes=notes, rviz_config=rviz_config)

