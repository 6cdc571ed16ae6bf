"""How the node plugs into a robot's ROS graph: output kind, topics, measured state, held joints.

These parameters matter only to the node (the CLI ignores them), but their validation is plain
Python, so it lives here, tested without ROS (the URDF's joint table it checks against is
:mod:`ik_node.model.urdf_joints`):

* ``output`` — ``joint_states`` (``sensor_msgs/JointState`` of every moving joint of the URDF,
  for robot_state_publisher), ``position_command`` (``std_msgs/Float64MultiArray`` in the order
  of ``command_joints``, for ros2_control's forward_position_controller) or
  ``joint_trajectory`` (``trajectory_msgs/JointTrajectory`` with one point, for
  joint_trajectory_controller).
* ``state_topic`` — measured joint states that seed every solve.
* ``hold_joint_names`` / ``hold_joint_positions`` — where the URDF's moving joints that are not
  in the chain are held in ``joint_states`` output.

``command_joints`` and ``hold_joint_names`` follow the rule of :mod:`ik_node.config.name_lists`: an
empty name is refused with its index, ``['']`` alone is the empty list.

Topic names are relative by default, so a node pushed into a namespace (``/r1``) publishes
``/r1/joint_states``. This module imports no ROS package.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Sequence, Tuple

from ik_node.errors import ConfigError
from ik_node.config.name_lists import names_from
from ik_node.model.urdf_joints import UrdfJoint
from ik_node.solvers.base import ParamSpec

OUTPUTS = ('joint_states', 'position_command', 'joint_trajectory')

#: Default topic of each output (relative: namespaced with the node).
DEFAULT_OUTPUT_TOPICS = {
    'joint_states': 'joint_states',
    'position_command': 'forward_position_controller/commands',
    'joint_trajectory': 'joint_trajectory_controller/joint_trajectory',
}

#: String parameters: (default, description).
GRAPH_STRING_PARAMS: Dict[str, Tuple[str, str]] = {
    'output': ('joint_states', 'what the node publishes: joint_states (for '
               'robot_state_publisher), position_command (Float64MultiArray for ros2_control\'s '
               'forward_position_controller) or joint_trajectory (JointTrajectory for '
               'joint_trajectory_controller)'),
    'output_topic': ('', 'topic of the output; empty: joint_states, '
                     'forward_position_controller/commands or '
                     'joint_trajectory_controller/joint_trajectory (relative to the namespace)'),
    'state_topic': ('', 'measured joint states (sensor_msgs/JointState, e.g. /joint_states of '
                    'the robot\'s joint_state_broadcaster) that seed every solve; empty: seed '
                    'from the last solution'),
    'description_topic': ('robot_description', 'topic the URDF is taken from (std_msgs/String, '
                          'transient local, as robot_state_publisher publishes it) when neither '
                          'robot_description nor urdf_file is set'),
    'capability_map': ('', 'a capability map folder (ik-solve capability-map --out DIR) that '
                       'answers task poses on ~/base_placement/tasks with the best base poses '
                       '(docs/capability.md); empty: none'),
    'jump_guard': ('', 'what happens to an answer that moves a joint farther than '
                   'jump_max_step, or than jump_velocity_scaling x its URDF velocity limit x the '
                   'time since the last commanded answer: hold (not published, the last command '
                   'stays, diagnostics ERROR name the joint and the move), limit (a step toward '
                   'it within the bound is published, diagnostics WARN) or off; empty: hold for '
                   'position_command and joint_trajectory, off for joint_states (see '
                   'docs/continuity.md)'),
    'group_name': ('', 'planning group name of the configured chain in the MoveIt services '
                   '(~/compute_ik...); empty: the SRDF group with the same base and tips, else '
                   'manipulator (see docs/services.md)'),
}

#: Values of ``jump_guard`` ('' is the default of the output, see the description).
JUMP_GUARD_MODES = ('', 'hold', 'limit', 'off')

#: List parameters: (element type, description).
GRAPH_LIST_PARAMS: Dict[str, Tuple[type, str]] = {
    'command_joints': (str, 'joint order of position_command and joint_trajectory output; empty: '
                       'the chain\'s joints in chain order. Every name must be a moving joint of '
                       'the chain'),
    'hold_joint_names': (str, 'moving joints of the URDF outside the chain whose joint_states '
                         'position is given by hold_joint_positions (others: 0 clipped into '
                         'their limits)'),
    'hold_joint_positions': (float, 'positions of hold_joint_names, in the same order [rad or m]'),
}

#: Numeric parameters.
GRAPH_NUMBER_PARAMS: Dict[str, ParamSpec] = {
    'state_timeout': ParamSpec(float, 0.5, 'a measured state older than this is not used as the '
                               'seed (the last solution is, and diagnostics say so)', 's',
                               min=0.0, max=3600.0, min_inclusive=False),
    'tf_timeout': ParamSpec(float, 0.05, 'longest wait for the TF transform of a target in a '
                            'frame outside the URDF (for 5 s after the node starts listening to '
                            'TF, such a target is kept and tried again every 0.1 s instead)', 's',
                            min=0.0, max=10.0),
    'trajectory_velocity_scaling': ParamSpec(float, 1.0, 'joint_trajectory output: share of '
                                             'the URDF velocity limits the point is timed with',
                                             '', min=0.0, max=1.0, min_inclusive=False),
    'trajectory_min_duration': ParamSpec(float, 0.02, 'joint_trajectory output: shortest '
                                         'time_from_start of the point', 's', min=0.0, max=60.0),
    'reachability_samples': ParamSpec(int, 500_000, 'joint-space samples of the ~/reachability '
                                      'map, built in the background after start-up and after '
                                      'every chain change (0: no map)', '', min=0,
                                      max=50_000_000),
    'reachability_voxel_size': ParamSpec(float, 0.1, 'voxel edge of the ~/reachability map', 'm',
                                         min=0.01, max=1.0),
    'singular_threshold': ParamSpec(float, 0.01, 'a reached solution whose Jacobian\'s smallest '
                                    'singular value is below this is near a singularity (WARN)',
                                    '', min=0.0, max=10.0),
    'limit_margin_threshold': ParamSpec(float, 0.05, 'a reached solution this close to a joint '
                                        'limit is near a limit (WARN)', 'rad or m', min=0.0,
                                        max=10.0),
    'jump_max_step': ParamSpec(float, 0.5, 'jump guard: the largest move of any joint from the '
                               'last commanded answer to the next', 'rad or m', min=0.0,
                               max=100.0, min_inclusive=False),
    'jump_velocity_scaling': ParamSpec(float, 1.0, 'jump guard: share of the URDF velocity '
                                       'limits a joint may use between two commanded answers '
                                       '(bound: share x velocity x time since the last command)',
                                       '', min=0.0, max=1.0, min_inclusive=False),
}

GRAPH_KEYS = (*GRAPH_STRING_PARAMS, *GRAPH_LIST_PARAMS, *GRAPH_NUMBER_PARAMS)


@dataclass(frozen=True)
class GraphConfig:
    """Validated graph parameters (see the module docstring)."""

    output: str = 'joint_states'
    output_topic: str = ''
    state_topic: str = ''
    description_topic: str = 'robot_description'
    capability_map: str = ''
    command_joints: Tuple[str, ...] = ()
    hold: Tuple[Tuple[str, float], ...] = ()
    state_timeout: float = 0.5
    tf_timeout: float = 0.05
    trajectory_velocity_scaling: float = 1.0
    trajectory_min_duration: float = 0.02
    reachability_samples: int = 500_000
    reachability_voxel_size: float = 0.1
    singular_threshold: float = 0.01
    limit_margin_threshold: float = 0.05
    jump_guard: str = ''
    jump_max_step: float = 0.5
    jump_velocity_scaling: float = 1.0
    group_name: str = ''

    @property
    def topic(self) -> str:
        """The output topic in force."""
        return self.output_topic or DEFAULT_OUTPUT_TOPICS[self.output]

    @property
    def guard(self) -> str:
        """The jump guard in force: ``jump_guard``, or by default hold on the command outputs
        and off on joint_states."""
        if self.jump_guard:
            return self.jump_guard
        return 'off' if self.output == 'joint_states' else 'hold'


def graph_config_from_flat(flat: Mapping[str, Any], source: str = 'parameters') -> GraphConfig:
    """Validate the graph parameters in ``flat`` (other keys are ignored); defaults for the rest.

    Raises:
        ConfigError: a bad value, named, with the valid ones.
    """
    values: Dict[str, Any] = {}
    for key, (default, _) in GRAPH_STRING_PARAMS.items():
        value = flat.get(key, default)
        if value is None:
            value = default
        if not isinstance(value, str):
            raise ConfigError(f'{source}: {key} must be a string, got {value!r}')
        values[key] = value.strip()
    output = values['output'].lower()
    if output not in OUTPUTS:
        raise ConfigError(f'{source}: output {values["output"]!r} is not one of: '
                          f'{", ".join(OUTPUTS)}')
    values['output'] = output
    guard = values['jump_guard'].lower()
    if guard not in JUMP_GUARD_MODES:
        raise ConfigError(f'{source}: jump_guard {values["jump_guard"]!r} is not one of: hold, '
                          'limit, off (or empty: hold for commands, off for joint_states)')
    values['jump_guard'] = guard
    for key, spec in GRAPH_NUMBER_PARAMS.items():
        value = flat.get(key, spec.default)
        try:
            values[key] = spec.validate(key, spec.default if value is None else value)
        except ConfigError as exc:
            raise ConfigError(f'{source}: {exc}') from None
    lists = {key: _list(key, flat.get(key), kind, source)
             for key, (kind, _) in GRAPH_LIST_PARAMS.items()}
    names, positions = lists['hold_joint_names'], lists['hold_joint_positions']
    if len(names) != len(positions):
        raise ConfigError(f'{source}: hold_joint_names has {len(names)} names but '
                          f'hold_joint_positions has {len(positions)} values')
    graph = GraphConfig(command_joints=tuple(lists['command_joints']),
                        hold=tuple(zip(names, positions)), **values)
    if graph.state_topic and graph.output == 'joint_states' and \
            _topic_key(graph.state_topic) == _topic_key(graph.topic):
        raise ConfigError(f'{source}: state_topic {graph.state_topic!r} is the topic the node '
                          'publishes its own joint_states on: it would seed every solve from its '
                          'own output. Use output: position_command or joint_trajectory to drive '
                          'the robot, or publish joint_states on another output_topic')
    return graph


def _topic_key(topic: str) -> str:
    """Compare topic names as the node sees them (a leading '/' and a relative name differ only
    inside a namespace; the check errs on the side of refusing)."""
    return topic.strip().strip('/')


def _list(key: str, value: Any, kind: type, source: str) -> List[Any]:
    if kind is str:  # names: stripped, [''] alone is empty, no empty entry, no repeat
        return list(names_from(key, value, source, 'joint names'))
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f'{source}: {key} must be a list, got {value!r}')
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ConfigError(f'{source}: {key} must be a list of finite numbers, got '
                              f'{value!r}')
        out.append(float(v))
    return out


def held_positions(joints: Sequence[UrdfJoint], chain_joints: Sequence[str],
                   hold: Sequence[Tuple[str, float]]) -> Dict[str, float]:
    """Positions of the moving joints outside the chain, for ``joint_states`` output.

    Mimic joints are left out: robot_state_publisher computes them from the joint they mimic.
    A joint named in ``hold`` takes that value, every other one 0; each is clipped into its
    limits.

    Raises:
        ConfigError: ``hold`` names a joint that is not a moving joint of the URDF outside the
            chain (the message lists the ones that are).
    """
    in_chain = set(chain_joints)
    others = {j.name: j for j in joints if j.name not in in_chain and j.mimic is None}
    wanted = dict(hold)
    bad = sorted(set(wanted) - set(others))
    if bad:
        raise ConfigError(f'hold_joint_names: {", ".join(bad)} not a moving, non-mimic joint of '
                          f'the URDF outside the chain. Those joints are: '
                          f'{", ".join(others) or "(none)"}')
    return {name: min(max(wanted.get(name, 0.0), j.lower), j.upper)
            for name, j in others.items()}


def command_order(graph: GraphConfig, chain_joints: Sequence[str]) -> List[int]:
    """Indices into the chain's joint vector in the order commands are published.

    Raises:
        ConfigError: a ``command_joints`` name is not a moving joint of the chain, or a chain
            joint is missing from it (a controller would get a partial command).
    """
    if not graph.command_joints:
        return list(range(len(chain_joints)))
    index = {name: i for i, name in enumerate(chain_joints)}
    bad = [n for n in graph.command_joints if n not in index]
    if bad:
        raise ConfigError(f'command_joints: {", ".join(bad)} not a moving joint of the chain. '
                          f'The chain\'s joints: {", ".join(chain_joints)}')
    missing = [n for n in chain_joints if n not in graph.command_joints]
    if missing:
        raise ConfigError(f'command_joints leaves out chain joints {", ".join(missing)}: list '
                          'every joint of the chain, in the controller\'s order')
    return [index[n] for n in graph.command_joints]
