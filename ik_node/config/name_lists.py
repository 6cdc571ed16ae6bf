"""Lists of names in parameters: ``tip_links``, ``command_joints`` and ``hold_joint_names``.

One rule, in files, on the command line, through the API and in the node:

* each entry is stripped of surrounding whitespace and keeps its case (URDF names are case
  sensitive);
* a list of exactly one empty entry, ``['']``, is the empty list. ROS cannot give a string array
  no elements from a parameters file or ``ros2 param set`` (``[]`` carries no element type), so
  ``['']`` is how the node is told "none". ``None`` (never set) and ``[]`` are empty too;
* anywhere else an empty entry is refused, naming the parameter and the entry's index: it is a
  typo (``'j1,,j2'``) and dropping it silently would hide it;
* a name given twice is refused.

This module imports no ROS package and no other part of ik_node but its errors.
"""

from __future__ import annotations

from typing import Any, Tuple

from ik_node.errors import ConfigError

#: The parameters that are lists of names.
NAME_LIST_PARAMS = ('tip_links', 'command_joints', 'hold_joint_names')

#: How ROS spells an empty list of names.
EMPTY_NAME_LIST = ('',)


def stripped_names(value: Any) -> Any:
    """A list (or tuple) with each string entry stripped; any other value unchanged."""
    if not isinstance(value, (list, tuple)):
        return value
    return type(value)(v.strip() if isinstance(v, str) else v for v in value)


def names_from(key: str, value: Any, source: str = 'config',
               what: str = 'names') -> Tuple[str, ...]:
    """The names of list parameter ``key``, validated by the rule of this module.

    Args:
        key: parameter name, for messages.
        value: a list or tuple of strings; None (not set) is the empty list.
        source: where the value comes from, for messages (a file name, ``'parameters'``).
        what: what the entries are, for messages (``'link names'``, ``'joint names'``).

    Returns:
        The stripped names, () for None, [] and ``['']``.

    Raises:
        ConfigError: not a list of strings, an empty entry (with its index), a repeated name.
    """
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f'{source}: {key} must be a list of {what}, got {value!r}')
    names = tuple(v.strip() for v in value)
    if names == EMPTY_NAME_LIST:
        return ()
    for index, name in enumerate(names):
        if not name:
            raise ConfigError(f'{source}: {key} has an empty name at index {index} of '
                              f'{list(value)!r}: remove it (only [\'\'] by itself, how ROS '
                              'spells an empty list, may hold an empty name)')
    if len(set(names)) != len(names):
        raise ConfigError(f'{source}: {key} repeats a name: {list(names)}')
    return names
