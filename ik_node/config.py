"""The typed, validated configuration shared by the node and the command line.

A configuration file is YAML in the ROS 2 parameters-file shape, so one file serves both
``ros2 run ik_node ik_node --ros-args --params-file leg3.yaml`` and ``ik-solve --config
leg3.yaml``::

    ik_node:
      ros__parameters:
        urdf_file: leg3.urdf          # a path, or a bare name in the package's urdf/ folder
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

Precedence: ``robot_description`` (URDF XML), when not empty, is used instead of ``urdf_file``;
``tip_links``, when not empty, instead of ``tip_link``. A file must not give both of a pair.

String values follow one rule, in files, on the command line, through this API and in the node
(:func:`canonical_value`): surrounding whitespace is removed; names from a fixed set (``solver``,
``output``, and solver parameters with choices such as ``damped_jacobian.method``) are also
lower-cased; link and joint names, paths and topics keep their case (URDF names are case
sensitive); ``robot_description`` is kept as given. The canonical value is the one in force and
the one the node stores. Parameter *names* (keys) are exact.

This module imports no ROS package.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple, Union

import yaml

from ik_node.chain import Chain
from ik_node.errors import ChainError, ConfigError
from ik_node.graph import GRAPH_KEYS, GRAPH_LIST_PARAMS, GRAPH_STRING_PARAMS
from ik_node.resources import urdf_path
from ik_node.urdf_checks import (DEFAULT_MAX_DESCRIPTION_BYTES, check_description_size,
                                 read_description)
from ik_node.solvers import SOLVERS, ParamSpec, Solver, make_solver, solver_class

NODE_NAME = 'ik_node'
DEFAULT_SOLVER = 'damped_jacobian'

#: Node-level numeric parameters: (type, default, description, unit, range).
NODE_PARAMS: Dict[str, ParamSpec] = {
    'publish_rate': ParamSpec(float, 20.0, 'rate of the steady /joint_states re-publish of the '
                              'current solution (also before the first target)', 'Hz',
                              min=0.0, max=1000.0, min_inclusive=False),
    'diagnostics_rate': ParamSpec(float, 10.0, 'most /diagnostics and ~/markers updates per '
                                  'second while targets stream (errors and the first result '
                                  'after a change go out at once)', 'Hz',
                                  min=0.0, max=1000.0, min_inclusive=False),
    'max_description_bytes': ParamSpec(int, DEFAULT_MAX_DESCRIPTION_BYTES, 'largest robot '
                                       'description accepted (robot_description text or '
                                       'urdf_file), checked before parsing', 'bytes',
                                       min=1, max=1_000_000_000),
}

#: Node-level string parameters and their defaults.
STRING_PARAMS: Dict[str, Tuple[str, str]] = {
    'robot_description': ('', 'URDF XML text (as robot_state_publisher takes it); when not '
                              'empty it is used instead of urdf_file'),
    'urdf_file': ('', 'URDF file: a path, or a bare name in the package urdf/ folder'),
    'base_link': ('base_link', 'link the chain starts at; targets are solved in its frame'),
    'tip_link': ('', 'end-effector link of a serial chain'),
    'solver': (DEFAULT_SOLVER, 'IK solver'),
}
TIP_LINKS_DESCRIPTION = ('end-effector links of a branched chain (one target topic pair per '
                         'tip); when not empty it is used instead of tip_link')

#: Keys a ROS parameters file may carry that ik_node accepts and leaves to ROS.
IGNORED_KEYS = ('use_sim_time',)

#: A configuration holding more values than this (every list and mapping entry counted after
#: YAML aliases are expanded), or nested deeper, is refused: it cannot be a configuration, and
#: naming its values in an error message would take unbounded time.
MAX_CONFIG_VALUES = 10_000
MAX_CONFIG_DEPTH = 32

#: Keys whose change means a new kinematic chain.
CHAIN_KEYS = ('robot_description', 'urdf_file', 'base_link', 'tip_link', 'tip_links')


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

    @property
    def tip_link(self) -> str:
        """The first (for a serial chain: the only) tip link."""
        return self.tip_links[0]

    @property
    def branched(self) -> bool:
        """True when the chain has several tips."""
        return len(self.tip_links) > 1

    def chain_source(self) -> Tuple[str, str, str, Tuple[str, ...]]:
        """What the chain is built from: equal values mean an equal chain."""
        return (self.robot_description, self.urdf_file, self.base_link, self.tip_links)

    @property
    def has_model(self) -> bool:
        """True when the configuration names a robot model (URDF text or file)."""
        return bool(self.robot_description or self.urdf_file)

    def params_of(self, solver: Optional[str] = None) -> Dict[str, Any]:
        """The validated parameters of ``solver`` (default: the selected one)."""
        return dict(self.solver_params[solver or self.solver])

    def urdf_xml(self) -> str:
        """The URDF text: ``robot_description``, or the content of ``urdf_file``.

        Raises:
            ConfigError: the file is not found or cannot be read.
            ChainError: the file is larger than ``max_description_bytes`` or not UTF-8.
        """
        if self.robot_description:
            return self.robot_description
        path = urdf_path(self.urdf_file)
        try:
            return read_description(path, self.max_description_bytes)
        except OSError as exc:
            raise ConfigError(f'cannot read URDF file {str(path)!r}: {exc.strerror}') from exc


# ------------------------------------------------------------------------------------ YAML
class _Loader(yaml.SafeLoader):
    """SafeLoader that reads ``1e-4`` as a float, as ROS 2's parameter parser does."""


_Loader.add_implicit_resolver(
    'tag:yaml.org,2002:float',
    re.compile(r'^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$'),
    list('-+0123456789'))


def parse_scalar(text: str) -> Any:
    """A command-line value as YAML: ``'1e-4'`` -> 1e-4, ``'true'`` -> True, ``'dls'`` -> 'dls'."""
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError:
        return text


def load_yaml(text: str, source: str = 'config') -> Any:
    """Parse YAML text; :class:`ConfigError` naming ``source`` and the line on error."""
    try:
        return yaml.load(text, Loader=_Loader)
    except RecursionError:
        raise ConfigError(f'{source}: malformed YAML: nested too deeply') from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, 'problem_mark', None)
        where = f' line {mark.line + 1}' if mark is not None else ''
        problem = getattr(exc, 'problem', None) or str(exc).splitlines()[0]
        raise ConfigError(f'{source}{where}: malformed YAML: {problem}') from None


def load_config(path: Union[str, Path], node_name: str = NODE_NAME) -> 'IkConfig':
    """Read and validate a configuration file (a path, or a bare name in the package config/).

    Raises:
        ConfigError: unreadable file, malformed YAML, unknown keys, bad values.
    """
    from ik_node.resources import config_path
    path = config_path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f'cannot read config file {str(path)!r}: {exc.strerror}') from exc
    return config_from_mapping(load_yaml(text, path.name), source=path.name, node_name=node_name)


# ----------------------------------------------------------------------------- validation
def valid_keys() -> Tuple[str, ...]:
    """Top-level keys of a configuration, sorted (solver names stand for their blocks)."""
    return tuple(sorted({*STRING_PARAMS, 'tip_links', *NODE_PARAMS, *IGNORED_KEYS, *SOLVERS,
                         *GRAPH_KEYS}))


def parameters_of_file(data: Any, source: str = 'config',
                       node_name: str = NODE_NAME) -> Dict[str, Any]:
    """The parameter mapping of a parsed file: unwraps ``<node>: ros__parameters:`` if present.

    Entries for ``/**`` come first, then the entry named ``node_name`` (``ik_node``, ``/ik_node``
    or ``/<namespace>/ik_node``); entries of other nodes are ignored.
    """
    if data is None:
        raise ConfigError(f'{source}: the file is empty')
    if not isinstance(data, dict):
        raise ConfigError(f'{source}: expected a mapping of parameters, got {type(data).__name__}')
    wrapped = {k: v for k, v in data.items()
               if isinstance(v, dict) and 'ros__parameters' in v}
    if not wrapped:
        return dict(data)
    if len(wrapped) != len(data):
        stray = sorted(str(k) for k in data if k not in wrapped)
        raise ConfigError(f'{source}: keys {", ".join(stray)} are outside any '
                          '"<node>: ros__parameters:" block')
    out: Dict[str, Any] = {}
    matched = False
    for key in sorted(wrapped, key=lambda k: 0 if str(k).lstrip('/') == '**' else 1):
        name = str(key)
        if name.lstrip('/') == '**' or name.lstrip('/') == node_name \
                or name.endswith('/' + node_name):
            params = wrapped[key]['ros__parameters']
            if not isinstance(params, dict):
                raise ConfigError(f'{source}: {name}.ros__parameters must be a mapping')
            out.update(params)
            matched = True
    if not matched:
        raise ConfigError(f'{source}: no parameters for node {node_name!r}. Nodes in the file: '
                          f'{", ".join(sorted(str(k) for k in wrapped))}')
    return out


def flatten(params: Mapping[str, Any], source: str = 'config') -> Dict[str, Any]:
    """Nested solver blocks to dotted names: ``{'fabrik': {'a': 1}}`` -> ``{'fabrik.a': 1}``."""
    flat: Dict[str, Any] = {}
    for key, value in params.items():
        key = str(key)
        if isinstance(value, dict):
            if key not in SOLVERS:
                raise ConfigError(f'{source}: unknown key {key!r}. Valid keys: '
                                  f'{", ".join(valid_keys())}')
            for sub, sub_value in value.items():
                if isinstance(sub_value, dict):
                    raise ConfigError(f'{source}: {key}.{sub} must be a value, not a mapping')
                flat[f'{key}.{sub}'] = sub_value
        else:
            flat[key] = value
    return flat


def config_from_mapping(data: Any, source: str = 'config',
                        node_name: str = NODE_NAME) -> IkConfig:
    """Validate a parsed configuration (wrapped or plain, nested solver blocks or dotted names).

    Raises:
        ConfigError: names the bad key or value and lists the valid ones.
    """
    _check_structure(data, source)
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
    _check_structure(dict(flat), source)
    strings = {k: default for k, (default, _) in STRING_PARAMS.items()}
    numbers = {k: spec.default for k, spec in NODE_PARAMS.items()}
    blocks: Dict[str, Dict[str, Any]] = {name: {} for name in SOLVERS}
    tip_links: Sequence[str] = ()
    for key, value in flat.items():
        key = str(key)
        value = canonical_value(key, value)
        if key in STRING_PARAMS:
            if not isinstance(value, str):
                raise ConfigError(f'{source}: {key} must be a string, got {value!r}')
            strings[key] = value
        elif key == 'tip_links':
            tip_links = _string_list(key, value, source)
        elif key in NODE_PARAMS:
            numbers[key] = _validate(NODE_PARAMS[key], key, value, source)
        elif key in IGNORED_KEYS or key in GRAPH_KEYS:  # the node's (ik_node.graph)
            continue
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
    return IkConfig(robot_description=strings['robot_description'],
                    urdf_file='' if strings['robot_description'] else strings['urdf_file'],
                    base_link=strings['base_link'], tip_links=tips, solver=strings['solver'],
                    publish_rate=numbers['publish_rate'],
                    diagnostics_rate=numbers['diagnostics_rate'],
                    max_description_bytes=numbers['max_description_bytes'],
                    solver_params=solver_params)


def canonical_value(key: str, value: Any) -> Any:
    """The form of a parameter value that is in force and stored: the one rule for strings.

    ``robot_description`` is kept as given. Enum-like values (``solver``, ``output``; solver
    parameters with choices, e.g. ``damped_jacobian.method``) are stripped of surrounding
    whitespace and lower-cased: ``' FABRIK '`` -> ``'fabrik'``. Every other string (link names,
    ``urdf_file``, topics) and every name in ``tip_links``, ``command_joints`` and
    ``hold_joint_names`` is stripped and keeps its case, as URDF names are case sensitive.
    Other values, and strings of unknown keys, are returned unchanged (validation refuses them).
    """
    name_lists = ('tip_links', *(k for k, (kind, _) in GRAPH_LIST_PARAMS.items() if kind is str))
    if key in name_lists and isinstance(value, (list, tuple)):
        return type(value)(v.strip() if isinstance(v, str) else v for v in value)
    if not isinstance(value, str) or key == 'robot_description':
        return value
    if key in ('solver', 'output'):
        return value.strip().lower()
    if key in STRING_PARAMS or key in GRAPH_STRING_PARAMS:
        return value.strip()
    solver, _, param = key.partition('.')
    spec = solver_class(solver).param_specs().get(param) if solver in SOLVERS else None
    if spec is None or spec.type is not str:
        return value
    return value.strip().lower() if spec.choices else value.strip()


def canonical_updates(values: Mapping[str, Any]) -> Dict[str, Any]:
    """The entries of ``values`` whose canonical form (:func:`canonical_value`) differs, in it."""
    out = {}
    for key, value in values.items():
        if isinstance(value, (str, list, tuple)):
            canonical = canonical_value(key, value)
            if canonical != value:
                out[key] = canonical
    return out


def _given(value: Any) -> bool:
    """A value that is set: not empty (tip_links [''] is how older rclpy spells none)."""
    return any(value) if isinstance(value, (list, tuple)) else bool(value)


def _check_structure(data: Any, source: str) -> None:
    """Refuse more than MAX_CONFIG_VALUES values or nesting deeper than MAX_CONFIG_DEPTH."""
    count, stack = 0, [(data, 0)]
    while stack:
        value, depth = stack.pop()
        count += 1
        if count > MAX_CONFIG_VALUES or depth > MAX_CONFIG_DEPTH:
            what = (f'more than {MAX_CONFIG_VALUES} values' if count > MAX_CONFIG_VALUES
                    else f'nesting deeper than {MAX_CONFIG_DEPTH} levels')
            raise ConfigError(f'{source}: the configuration has {what} (YAML aliases counted '
                              'as often as they are used): not a parameter file')
        if isinstance(value, Mapping):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, (list, tuple)):
            stack.extend((v, depth + 1) for v in value)


def _validate(spec: ParamSpec, key: str, value: Any, source: str) -> Any:
    try:
        return spec.validate(key, value)
    except ConfigError as exc:
        raise ConfigError(f'{source}: {exc}') from None


def _string_list(key: str, value: Any, source: str) -> Tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f'{source}: {key} must be a list of link names, got {value!r}')
    if not any(value):  # [] or [''] (how rclpy without typed declarations spells none)
        return ()
    if not all(value):
        raise ConfigError(f'{source}: {key} has an empty name: {list(value)}')
    names = tuple(value)
    if len(set(names)) != len(names):
        raise ConfigError(f'{source}: {key} repeats a name: {list(names)}')
    return names


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
    return make_solver(config.solver, chain, config.params_of())
