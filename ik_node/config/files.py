"""Parameter files: YAML text -> one flat mapping of parameter names to values.

A file is YAML in the ROS 2 parameters-file shape (``<node>: ros__parameters: {...}``), or a plain
mapping; nested solver blocks (``fabrik: {position_tolerance: 1e-4}``) become dotted names
(``fabrik.position_tolerance``), as ROS reads them. Numbers are read as ROS 2's parameter parser
reads them (``1e-4`` is a float). Values are not validated here: :mod:`ik_node.config.node_config`
does that.
This module imports no ROS package.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Mapping

import yaml

from ik_node.errors import ConfigError
from ik_node.config.table import NODE_NAME, valid_keys
from ik_node.solvers import SOLVERS

#: A configuration holding more values than this (every list and mapping entry counted after
#: YAML aliases are expanded), or nested deeper, is refused: it cannot be a configuration, and
#: naming its values in an error message would take unbounded time.
MAX_CONFIG_VALUES = 10_000
MAX_CONFIG_DEPTH = 32


class _Loader(yaml.SafeLoader):
    """SafeLoader that reads ``1e-4`` as a float, as ROS 2's parameter parser does."""


_Loader.add_implicit_resolver(
    'tag:yaml.org,2002:float',
    re.compile(r'^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$'),
    list('-+0123456789'))


def _sequence(loader: yaml.SafeLoader, node: yaml.Node) -> list:
    return loader.construct_sequence(node, deep=True)


# launch_ros writes list parameters (``tip_links``) as ``!!python/tuple`` sequences into the
# parameters file it hands the node; rcl's parser reads them as plain sequences, and so do we.
_Loader.add_constructor('tag:yaml.org,2002:python/tuple', _sequence)


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
    """Nested solver blocks to dotted names: ``{'fabrik': {'a': 1}}`` -> ``{'fabrik.a': 1}``;
    the ``groups`` block two levels deep: ``{'groups': {'arm': {'timeout': 0.02}}}`` ->
    ``{'groups.arm.timeout': 0.02}``."""
    flat: Dict[str, Any] = {}
    for key, value in params.items():
        key = str(key)
        if isinstance(value, dict) and key == 'groups':  # groups: {<group>: {<key>: value}}
            flat.update(_group_blocks(value, source))
        elif isinstance(value, dict):
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


def _group_blocks(groups: Mapping[str, Any], source: str) -> Dict[str, Any]:
    """The ``groups`` block of a file as dotted names (``groups.<group>.<key>``)."""
    flat: Dict[str, Any] = {}
    for group, block in groups.items():
        if not isinstance(block, dict):  # a dotted key: groups: {arm.timeout: 0.02}
            flat[f'groups.{group}'] = block
            continue
        for key, value in block.items():
            if isinstance(value, dict):
                raise ConfigError(f'{source}: groups.{group}.{key} must be a value, not a '
                                  'mapping')
            flat[f'groups.{group}.{key}'] = value
    return flat


def check_structure(data: Any, source: str) -> None:
    """Refuse more than MAX_CONFIG_VALUES values or nesting deeper than MAX_CONFIG_DEPTH.

    Raises:
        ConfigError: too many values or too deep, naming ``source``.
    """
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
