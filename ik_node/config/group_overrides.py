"""Per-group solver settings of the MoveIt services: ``groups.<group>.solver`` and
``groups.<group>.<param>``.

The MoveIt services (docs/services.md) solve every planning group with the node's ``solver``
and its parameters. A group may take its own, the way MoveIt's ``kinematics.yaml`` gives each
group its solver and timeout::

    ik_node:
      ros__parameters:
        solver: damped_jacobian
        groups:
          both_arms: {solver: fabrik, timeout: 0.05, max_iterations: 300}
          left_arm: {timeout: 0.02}     # damped_jacobian, its timeout 20 ms

The nested ``groups:`` block is read as the dotted parameters ``groups.both_arms.solver``,
``groups.both_arms.timeout``..., as ROS reads a parameters file. A group's keys are ``solver``
('' or absent: the node's ``solver``) and any parameter of the group's solver; the parameters
it does not give are the node's ``<solver>.<param>``. The target stream is not affected.

Unknown keys, unknown solvers, a parameter the group's solver does not have, bad values and a
group the SRDF does not declare (:func:`check_group_names`) are refused with
:class:`~ik_node.errors.ConfigError`. This module imports no ROS package.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any, Dict, Iterable, Mapping, NamedTuple, Optional, Tuple

from ik_node.errors import ConfigError
from ik_node.solvers import SOLVERS, ParamSpec, solver_class

#: The prefix of every per-group parameter.
PREFIX = 'groups.'
#: The group name of the configured chain when neither ``group_name`` nor an SRDF group with
#: its base and tips names it.
DEFAULT_GROUP = 'manipulator'
#: The spec of ``groups.<group>.solver`` ('' : the node's solver).
SOLVER_SPEC = ParamSpec(str, '', 'IK solver of this planning group in the MoveIt services '
                        '(empty: the node\'s solver)')


class GroupSettings(NamedTuple):
    """What a group overrides: its solver ('' : the node's) and parameters (validated values)."""

    solver: str
    params: Mapping[str, Any]


def split_key(name: str) -> Optional[Tuple[str, str]]:
    """``'groups.left_arm.timeout'`` -> ``('left_arm', 'timeout')``; None for other names.

    The key is the last dotted part, so a group name may hold dots.
    """
    if not name.startswith(PREFIX):
        return None
    group, dot, key = name[len(PREFIX):].rpartition('.')
    return (group, key) if dot and group and key else None


def key_spec(key: str) -> Optional[ParamSpec]:
    """The spec of a group's ``key`` (``solver``, or the first solver's parameter of that name;
    every solver gives a shared name the same type), None when no solver has it."""
    if key == 'solver':
        return SOLVER_SPEC
    for name in sorted(SOLVERS):
        spec = SOLVERS[name].param_specs().get(key)
        if spec is not None:
            return spec
    return None


def checked_key(name: str, source: str = 'config') -> Tuple[str, str, ParamSpec]:
    """``(group, key, spec)`` of a per-group parameter name.

    Raises:
        ConfigError: not ``groups.<group>.<key>``, or a key no solver has (the message lists
            the keys a group takes).
    """
    parts = split_key(name)
    if parts is None:
        raise ConfigError(f'{source}: {name!r}: a group\'s setting is '
                          'groups.<group>.<solver or parameter>')
    spec = key_spec(parts[1])
    if spec is None:
        raise ConfigError(f'{source}: {name}: unknown setting {parts[1]!r}. A group takes: '
                          f'{", ".join(valid_keys())}')
    return parts[0], parts[1], spec


def valid_keys() -> Tuple[str, ...]:
    """Every key a group may give: ``solver`` and the parameters of any solver."""
    params = {p for cls in SOLVERS.values() for p in cls.param_specs()}
    return ('solver', *sorted(params))


def overrides_from_flat(flat: Mapping[str, Any], node_solver: str,
                        solver_params: Mapping[str, Mapping[str, Any]],
                        source: str = 'config') -> Dict[str, GroupSettings]:
    """The per-group settings in ``flat`` (its ``groups.*`` entries; others are ignored).

    Args:
        flat: parameter name -> value (strings already in canonical form).
        node_solver: the node's ``solver`` (a group without ``solver`` takes it).
        solver_params: every solver's validated parameters of the node (what a group does not
            override).
        source: names the configuration in error messages.

    Raises:
        ConfigError: a key that is neither ``solver`` nor a solver's parameter, an unknown
            solver, a parameter the group's solver does not have, a bad value or combination.
    """
    given: Dict[str, Dict[str, Any]] = {}
    for name in override_names(flat):
        group, key, _ = checked_key(str(name), source)
        given.setdefault(group, {})[key] = flat[name]
    out: Dict[str, GroupSettings] = {}
    for group, values in sorted(given.items()):
        solver = values.pop('solver', '') or ''
        if not isinstance(solver, str):
            raise ConfigError(f'{source}: groups.{group}.solver must be a string, got '
                              f'{solver!r}')
        if solver and solver not in SOLVERS:
            raise ConfigError(f'{source}: groups.{group}.solver: unknown solver {solver!r}. '
                              f'Available solvers: {", ".join(sorted(SOLVERS))}')
        name = solver or node_solver
        specs = solver_class(name).param_specs()
        for key in values:
            if key not in specs:
                raise ConfigError(f'{source}: groups.{group}.{key}: the group\'s solver {name!r} '
                                  f'has no parameter {key!r}. Its parameters: '
                                  f'{", ".join(sorted(specs))}')
        params = {key: _validated(specs[key], f'groups.{group}.{key}', value, source)
                  for key, value in values.items()}
        out[group] = settings = GroupSettings(solver, params)
        try:
            group_params(settings, name, solver_params[name])
        except ConfigError as exc:
            raise ConfigError(f'{source}: groups.{group} ({name}): {exc}') from None
    return out


def group_params(settings: Optional[GroupSettings], solver: str,
                 node_params: Mapping[str, Any]) -> Dict[str, Any]:
    """The parameters of ``solver`` for a group: the node's (``node_params``, the solver's full
    validated block) overlaid with the group's overrides that ``solver`` has.

    Raises:
        ConfigError: a combination of values the solver refuses.
    """
    params = dict(node_params)
    if settings is not None:
        specs = solver_class(solver).param_specs()
        params.update({k: v for k, v in settings.params.items() if k in specs})
    return solver_class(solver).validate_params(params)


def check_group_names(overrides: Mapping[str, GroupSettings], srdf: Optional[str],
                      group_name: str, chain: Tuple[str, Tuple[str, ...]],
                      source: str = 'config') -> None:
    """Refuse overrides of groups the services do not have.

    The groups are the SRDF's ``<group>`` elements that hold a chain, joints or groups, and the
    node's chain ``(base_link, tip_links)``: named ``group_name``, else by the SRDF's
    ``<chain>`` group with its base and tip, else :data:`DEFAULT_GROUP`.

    Raises:
        ConfigError: an override names another group (the message lists the groups), a group
            of links only (an end effector), or the SRDF is malformed.
    """
    if not overrides:
        return
    declared, links_only = srdf_group_names(srdf, source)
    known = set(declared)
    if group_name or not _chain_group(srdf, *chain):
        known.add(group_name or DEFAULT_GROUP)
    for group in sorted(overrides):
        if group in links_only:
            raise ConfigError(f'{source}: groups.{group}: group {group!r} of the SRDF holds '
                              'links only (an end effector): no chain to solve')
        if group not in known:
            raise ConfigError(f'{source}: groups.{group}: no planning group {group!r}. Groups: '
                              f'{", ".join(sorted(known))}')


def srdf_group_names(srdf: Optional[str], source: str = 'config'
                     ) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """The names of an SRDF's groups: ``(with a chain, joints or groups, links only)``.

    Raises:
        ConfigError: malformed XML.
    """
    if not srdf:
        return (), ()
    try:
        root = ET.fromstring(srdf)
    except ET.ParseError as exc:
        raise ConfigError(f'{source}: malformed SRDF XML: {exc}') from None
    spans, links = [], []
    for element in root.findall('group'):
        name = element.get('name', '')
        if not name:
            continue
        kinds = {child.tag for child in element}
        (spans if kinds & {'chain', 'joint', 'group'} else links).append(name)
    return tuple(spans), tuple(links)


def _chain_group(srdf: Optional[str], base_link: str, tip_links: Tuple[str, ...]) -> bool:
    """True when the SRDF has a ``<chain>`` group from ``base_link`` to the one tip."""
    if not srdf or len(tip_links) != 1:
        return False
    for element in ET.fromstring(srdf).findall('group'):
        chains = element.findall('chain')
        if len(chains) == 1 and len(element) == 1 and \
                chains[0].get('base_link') == base_link and \
                chains[0].get('tip_link') == tip_links[0]:
            return True
    return False


def override_names(names: Iterable[str]) -> Tuple[str, ...]:
    """The per-group parameter names among ``names`` (e.g. a node's parameter overrides)."""
    return tuple(n for n in names if str(n).startswith(PREFIX))


def _validated(spec: ParamSpec, name: str, value: Any, source: str) -> Any:
    try:
        return spec.validate(name, value)
    except ConfigError as exc:
        raise ConfigError(f'{source}: {exc}') from None
