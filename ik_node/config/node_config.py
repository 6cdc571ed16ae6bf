"""The typed, validated configuration shared by the node and the command line.

A configuration file is YAML in the ROS 2 parameters-file shape, so one file serves both
``ros2 run ik_node ik_node --ros-args --params-file leg3.yaml`` and ``ik-solve --config
leg3.yaml``::

    ik_node:
      ros__parameters:
        urdf_file: leg3.urdf          # a path, or a bare name in the package's urdf/ folder
                                      # (a .xacro file is expanded with xacro_args)
        base_link: base_link
        tip_link: foot                # or tip_links: [left_hand, right_hand] (branched)
        solver: analytic_hip_knee
        publish_rate: 20.0            # [Hz]
        diagnostics_rate: 10.0        # [Hz]
        analytic_hip_knee: {branch: closest}
        fabrik: {position_tolerance: 1.0e-4}

A plain mapping without the ``ik_node: ros__parameters:`` wrapper, and the ``/**`` wildcard node
key, are accepted too. Solver parameters are ``<solver>.<param>`` (nested blocks in YAML, dotted
names as ROS parameters) and are validated with the solver's own :class:`ik_node.ParamSpec`.
A planning group's own solver and parameters in the MoveIt services are ``groups.<group>.solver``
and ``groups.<group>.<param>`` (:mod:`ik_node.config.group_overrides`).

Precedence: ``robot_description`` (URDF XML), when not empty, is used instead of ``urdf_file``
(and its ``xacro_args``);
``tip_links``, when not empty, instead of ``tip_link``. A file must not give both of a pair.
``tip_links: ['']`` is empty (how ROS spells an empty string array); an empty name anywhere else
in it is refused (:mod:`ik_node.config.name_lists`).

String values follow one rule, in files, on the command line, through this API and in the node
(:func:`canonical_value`, from :mod:`ik_node.config.strings`): surrounding whitespace is removed;
names from a fixed set (``solver``, and solver parameters with choices such as
``damped_jacobian.method``) are also lower-cased; link names and paths keep their case (URDF
names are case sensitive); ``robot_description`` is kept as given. The canonical value is the one
in force and the one the node stores. Parameter *names* (keys) are exact.

Where the parts live: the parameter table (names, defaults, descriptions) is
:mod:`ik_node.config.table`; reading YAML files into one flat mapping is
:mod:`ik_node.config.files`;
the string rule is :mod:`ik_node.config.strings`. Their public names are importable from here too.
This module imports no ROS package.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple, Union

from ik_node.model.chain import Chain
from ik_node.model.description import description_from_file, xacro_mappings_from
from ik_node.errors import ChainError, ConfigError
from ik_node.config.ros_graph import GRAPH_KEYS
from ik_node.config.name_lists import names_from
from ik_node.config.files import (MAX_CONFIG_DEPTH, MAX_CONFIG_VALUES, check_structure, flatten,
                                 load_yaml, parameters_of_file, parse_scalar)
from ik_node.config.strings import canonical_updates, canonical_value
from ik_node.config.group_overrides import (GroupSettings, check_group_names,
                                            overrides_from_flat)
from ik_node.config.table import (CHAIN_KEYS, DEFAULT_SOLVER, IGNORED_KEYS, NODE_NAME, NODE_PARAMS,
                                 STRING_PARAMS, TIP_LINKS_DESCRIPTION, valid_keys)
from ik_node.model.resources import urdf_path
from ik_node.model.urdf_checks import (DEFAULT_MAX_DESCRIPTION_BYTES, check_description_size,
                                 read_description)
from ik_node.solvers import SOLVERS, ParamSpec, Solver, make_solver, solver_class

__all__ = [
    # defined here
    'IkConfig', 'load_config', 'config_from_mapping', 'config_from_flat', 'build_chain',
    'build_solver',
    # re-exported: ik_node.config.table
    'NODE_NAME', 'DEFAULT_SOLVER', 'NODE_PARAMS', 'STRING_PARAMS', 'TIP_LINKS_DESCRIPTION',
    'IGNORED_KEYS', 'CHAIN_KEYS', 'valid_keys',
    # re-exported: ik_node.config.files
    'MAX_CONFIG_VALUES', 'MAX_CONFIG_DEPTH', 'parse_scalar', 'load_yaml', 'parameters_of_file',
    'flatten',
    # re-exported: ik_node.config.strings
    'canonical_value', 'canonical_updates',
]


@dataclass(frozen=True)
class IkConfig:
    """A complete, validated configuration. Build it with :func:`config_from_mapping`.

    Attributes:
        robot_description: URDF XML, or '' to read ``urdf_file``.
        urdf_file: URDF path or packaged name ('' when ``robot_description`` is given).
        base_link: base link of the chain.
        tip_links: tip links; one for a serial chain, several for a branched one.
        solver: registered solver name.
        publish_rate: steady JointState re-publish rate [Hz].
        diagnostics_rate: most diagnostics updates per second while targets stream [Hz].
        max_description_bytes: largest URDF accepted [bytes].
        solver_params: for every registered solver, its full validated parameter dict.
        xacro_args: arguments of a .xacro ``urdf_file`` ('' with ``robot_description``).
        collision: the collision check's SRDF, ground plane and obstacles
            (:func:`ik_node.config.collision_world.collision_world`; {}: the defaults).
        group_overrides: planning group -> its own solver and parameters in the MoveIt
            services (:mod:`ik_node.config.group_overrides`; {}: none).
    """

    robot_description: str
    urdf_file: str
    base_link: str
    tip_links: Tuple[str, ...]
    solver: str
    publish_rate: float
    diagnostics_rate: float
    max_description_bytes: int = DEFAULT_MAX_DESCRIPTION_BYTES
    solver_params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    xacro_args: str = ''
    collision: Mapping[str, Any] = field(default_factory=dict)
    group_overrides: Mapping[str, GroupSettings] = field(default_factory=dict)

    @property
    def tip_link(self) -> str:
        """The first (for a serial chain: the only) tip link."""
        return self.tip_links[0]

    @property
    def branched(self) -> bool:
        """True when the chain has several tips."""
        return len(self.tip_links) > 1

    def chain_source(self) -> Tuple[str, str, str, str, Tuple[str, ...]]:
        """What the chain is built from: equal values mean an equal chain."""
        return (self.robot_description, self.urdf_file, self.xacro_args, self.base_link,
                self.tip_links)

    @property
    def has_model(self) -> bool:
        """True when the configuration names a robot model (URDF text or file)."""
        return bool(self.robot_description or self.urdf_file)

    def params_of(self, solver: Optional[str] = None) -> Dict[str, Any]:
        """The validated parameters of ``solver`` (default: the selected one)."""
        return dict(self.solver_params[solver or self.solver])

    def urdf_xml(self) -> str:
        """The URDF text: ``robot_description``, or ``urdf_file`` (a .xacro one expanded).

        Raises:
            ConfigError: the file is not found or cannot be read; xacro is missing or fails.
            ChainError: the description is larger than ``max_description_bytes`` or not UTF-8.
        """
        if self.robot_description:
            return self.robot_description
        path = urdf_path(self.urdf_file)
        if path.name.endswith('.xacro') or self.xacro_args:
            xml = description_from_file(path, self.xacro_args)
            check_description_size(xml, self.max_description_bytes)
            return xml
        try:
            return read_description(path, self.max_description_bytes)
        except OSError as exc:
            raise ConfigError(f'cannot read URDF file {str(path)!r}: {exc.strerror}') from exc


def load_config(path: Union[str, Path], node_name: str = NODE_NAME) -> 'IkConfig':
    """Read and validate a configuration file (a path, or a bare name in the package config/).

    Raises:
        ConfigError: unreadable file, malformed YAML, unknown keys, bad values.
    """
    from ik_node.model.resources import config_path
    path = config_path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f'cannot read config file {str(path)!r}: {exc.strerror}') from exc
    return config_from_mapping(load_yaml(text, path.name), source=path.name, node_name=node_name)


# ----------------------------------------------------------------------------- validation
def config_from_mapping(data: Any, source: str = 'config',
                        node_name: str = NODE_NAME) -> IkConfig:
    """Validate a parsed configuration (wrapped or plain, nested solver blocks or dotted names).

    Raises:
        ConfigError: names the bad key or value and lists the valid ones.
    """
    check_structure(data, source)
    flat = {key: canonical_value(key, value) for key, value in
            flatten(parameters_of_file(data, source, node_name), source).items()}
    for a, b in (('robot_description', 'urdf_file'), ('tip_links', 'tip_link')):
        if _given(flat.get(a)) and _given(flat.get(b)):
            raise ConfigError(f'{source}: give {a} or {b}, not both')
    return config_from_flat(flat, source)


def config_from_flat(flat: Mapping[str, Any], source: str = 'config',
                     require_model: bool = True) -> IkConfig:
    """Validate a flat mapping of parameter names (dotted for solvers) to values.

    Missing keys take their defaults. This is the one validation path: the node calls it with
    its ROS parameters, the CLI with the file overlaid with its flags. With ``require_model``
    False a configuration without a robot model is valid (the node then waits for one on its
    description topic: :attr:`IkConfig.has_model` is False).

    Raises:
        ConfigError: names the bad key or value and lists the valid ones.
    """
    check_structure(dict(flat), source)
    strings = {k: default for k, (default, _) in STRING_PARAMS.items()}
    numbers = {k: spec.default for k, spec in NODE_PARAMS.items()}
    blocks: Dict[str, Dict[str, Any]] = {name: {} for name in SOLVERS}
    tip_links: Sequence[str] = ()
    group_flat: Dict[str, Any] = {}
    for key, value in flat.items():
        key = str(key)
        value = canonical_value(key, value)
        if key in STRING_PARAMS:
            if not isinstance(value, str):
                raise ConfigError(f'{source}: {key} must be a string, got {value!r}')
            strings[key] = value
        elif key == 'tip_links':
            tip_links = names_from(key, value, source, 'link names')
        elif key in NODE_PARAMS:
            numbers[key] = _validate(NODE_PARAMS[key], key, value, source)
        elif key in IGNORED_KEYS or key in GRAPH_KEYS:  # the node's (ik_node.config.ros_graph)
            continue
        elif key.startswith('groups.'):  # checked below, once the node's solver is known
            group_flat[key] = value
        elif '.' in key and key.split('.', 1)[0] in SOLVERS:
            solver, param = key.split('.', 1)
            specs = solver_class(solver).param_specs()
            if param not in specs:
                raise ConfigError(f'{source}: unknown parameter {param!r} for solver '
                                  f'{solver!r}. Valid parameters: {", ".join(sorted(specs))}')
            blocks[solver][param] = _validate(specs[param], key, value, source)
        else:
            raise ConfigError(f'{source}: unknown key {key!r}. Valid keys: '
                              f'{", ".join(valid_keys())}')

    if strings['solver'] not in SOLVERS:
        raise ConfigError(f'{source}: unknown solver {strings["solver"]!r}. Available '
                          f'solvers: {", ".join(sorted(SOLVERS))}')
    solver_params = {}
    for name, block in blocks.items():
        try:
            solver_params[name] = solver_class(name).validate_params(block)
        except ConfigError as exc:
            raise ConfigError(f'{source}: solver {name!r}: {exc}') from None
    overrides = overrides_from_flat(group_flat, strings['solver'], solver_params, source)
    tips = tuple(tip_links) if tip_links else ((strings['tip_link'],) if strings['tip_link']
                                                else ())
    if not tips:
        raise ConfigError(f'{source}: no tip link: set tip_link (or tip_links for a branched '
                          'chain)')
    if not strings['base_link']:
        raise ConfigError(f'{source}: base_link is empty')
    if not strings['robot_description'] and not strings['urdf_file'] and require_model:
        raise ConfigError(f'{source}: no robot model: set urdf_file (a path or a packaged name) '
                          'or robot_description (URDF XML)')
    try:
        check_description_size(strings['robot_description'], numbers['max_description_bytes'])
    except ChainError as exc:
        raise ConfigError(f'{source}: {exc}') from None
    try:
        xacro_mappings_from(strings['xacro_args'])
    except ConfigError as exc:
        raise ConfigError(f'{source}: xacro_args: {exc}') from None
    collision = _collision_world({**strings, **numbers}, source)
    group_name = flat.get('group_name') or ''
    check_group_names(overrides, collision.get('srdf'),
                      group_name.strip() if isinstance(group_name, str) else '',
                      (strings['base_link'], tips), source)
    return IkConfig(robot_description=strings['robot_description'],
                    urdf_file='' if strings['robot_description'] else strings['urdf_file'],
                    base_link=strings['base_link'], tip_links=tips, solver=strings['solver'],
                    publish_rate=numbers['publish_rate'],
                    diagnostics_rate=numbers['diagnostics_rate'],
                    max_description_bytes=numbers['max_description_bytes'],
                    solver_params=solver_params,
                    xacro_args='' if strings['robot_description'] else strings['xacro_args'],
                    collision=collision, group_overrides=overrides)


def _collision_world(values: Mapping[str, Any], source: str) -> Dict[str, Any]:
    from ik_node.config.collision_world import collision_world
    try:
        return collision_world(dict(values))
    except ConfigError as exc:
        raise ConfigError(f'{source}: {exc}') from None


def _given(value: Any) -> bool:
    """A value that is set: not empty (tip_links [''] is how ROS spells an empty list)."""
    return any(value) if isinstance(value, (list, tuple)) else bool(value)


def _validate(spec: ParamSpec, key: str, value: Any, source: str) -> Any:
    try:
        return spec.validate(key, value)
    except ConfigError as exc:
        raise ConfigError(f'{source}: {exc}') from None


# -------------------------------------------------------------------------------- building
def build_chain(config: IkConfig) -> Chain:
    """The kinematic chain of a configuration.

    Raises:
        ConfigError: the URDF file is not found.
        ChainError: bad URDF, unknown links, no path from base to tip.
    """
    tips: Union[str, Sequence[str]] = config.tip_link if len(config.tip_links) == 1 \
        else list(config.tip_links)
    chain = Chain.from_urdf_string(config.urdf_xml(), config.base_link, tips,
                                   config.max_description_bytes)
    if chain.n == 0:  # e.g. base_link == tip_link: nothing to solve, every target is refused
        raise ConfigError(f'no moving joint between base link {config.base_link!r} and '
                          f'{", ".join(config.tip_links)}: choose links with joints between them')
    return chain


def build_solver(config: IkConfig, chain: Chain) -> Solver:
    """The configured solver on ``chain``.

    Raises:
        ConfigError: bad solver parameters. ChainError: the solver does not fit the chain.
    """
    solver = make_solver(config.solver, chain, config.params_of())
    if config.collision:
        solver.configure_collision(**config.collision)
    return solver
