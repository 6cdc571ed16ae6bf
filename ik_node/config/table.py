"""The top-level parameters of ik_node: names, defaults, descriptions, units, valid ranges.

One table serves every reader: :mod:`ik_node.config.node_config` validates against it, the node
declares its
ROS parameters from it, and ``scripts/param_tables.py`` renders it into docs/parameters.md.
Solver parameters (``<solver>.<param>``) are each solver's own ``param_specs()``; the node's
graph parameters are in :mod:`ik_node.config.ros_graph`. This module imports no ROS package.
"""

from __future__ import annotations

from typing import Dict, Tuple

from ik_node.config.ros_graph import GRAPH_KEYS
from ik_node.solvers import SOLVERS, ParamSpec
from ik_node.model.urdf_checks import DEFAULT_MAX_DESCRIPTION_BYTES

NODE_NAME = 'ik_node'
DEFAULT_SOLVER = 'damped_jacobian'

#: Node-level numeric parameters: (type, default, description, unit, range).
NODE_PARAMS: Dict[str, ParamSpec] = {
    'publish_rate': ParamSpec(float, 20.0, 'rate of the steady /joint_states re-publish of the '
                              'current solution (also before the first target)', 'Hz',
                              min=0.0, max=1000.0, min_inclusive=False),
    'diagnostics_rate': ParamSpec(float, 10.0, 'most /diagnostics and ~/markers updates per '
                                  'second while targets stream (the first result after a change '
                                  'goes out at once; errors and changes of level too, at most '
                                  'ten times the rate)', 'Hz',
                                  min=0.0, max=1000.0, min_inclusive=False),
    'max_description_bytes': ParamSpec(int, DEFAULT_MAX_DESCRIPTION_BYTES, 'largest robot '
                                       'description accepted (robot_description text or '
                                       'urdf_file), checked before parsing', 'bytes',
                                       min=1, max=1_000_000_000),
    'collision.ground': ParamSpec(bool, False, 'a ground plane at collision.ground_z that no '
                                  'moving link may reach (false: none)'),
    'collision.ground_z': ParamSpec(float, 0.0, 'height of the ground plane in the base frame '
                                    '(used when collision.ground is true)', 'm',
                                    min=-1000.0, max=1000.0),
}

#: Node-level string parameters and their defaults.
STRING_PARAMS: Dict[str, Tuple[str, str]] = {
    'robot_description': ('', 'URDF XML text (as robot_state_publisher takes it); when not '
                              'empty it is used instead of urdf_file'),
    'urdf_file': ('', 'URDF file: a path, or a bare name in the package urdf/ folder; a .xacro '
                      'file is expanded with xacro_args'),
    'xacro_args': ('', 'arguments of a .xacro urdf_file, "key:=value key2:=value2"; unused with '
                       'robot_description'),
    'base_link': ('base_link', 'link the chain starts at; targets are solved in its frame'),
    'tip_link': ('', 'end-effector link of a serial chain'),
    'solver': (DEFAULT_SOLVER, 'IK solver'),
    'srdf_file': ('', 'SRDF whose <disable_collisions> pick the link pairs the collision check '
                      'skips (empty: computed as MoveIt Setup Assistant does)'),
    'robot_description_semantic': ('', 'SRDF XML text (MoveIt\'s parameter); when not empty it '
                                       'is used instead of srdf_file'),
    'collision.obstacles': ('', 'obstacles in the base frame [m], ";"-separated: "NAME box X Y Z '
                                'SX SY SZ", "NAME sphere X Y Z R", "NAME cylinder X Y Z R L"'),
}
TIP_LINKS_DESCRIPTION = ('end-effector links of a branched chain (one target topic pair per '
                         'tip); when not empty it is used instead of tip_link')

#: Keys a ROS parameters file may carry that ik_node accepts and leaves to ROS.
IGNORED_KEYS = ('use_sim_time',)

#: Keys whose change means a new kinematic chain.
CHAIN_KEYS = ('robot_description', 'urdf_file', 'xacro_args', 'base_link', 'tip_link',
              'tip_links')


def valid_keys() -> Tuple[str, ...]:
    """Top-level keys of a configuration, sorted (solver names stand for their blocks,
    ``groups`` for the per-group settings of :mod:`ik_node.config.group_overrides`)."""
    return tuple(sorted({*STRING_PARAMS, 'tip_links', *NODE_PARAMS, *IGNORED_KEYS, *SOLVERS,
                         *GRAPH_KEYS, 'groups'}))
