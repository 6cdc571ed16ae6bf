"""The one rule for string parameter values, in files, on the command line, through the API
and in the node.

Surrounding whitespace is removed; names from a fixed set (``solver``, ``output``,
``jump_guard``, solver parameters with choices such as ``damped_jacobian.method``, and the same
keys of a planning group such as ``groups.<group>.solver``) are also lower-cased; link names,
joint names, topics and paths keep their case (URDF names are case sensitive);
``robot_description`` is kept as given; lists of names (``tip_links``, ``command_joints``,
``hold_joint_names``) follow :mod:`ik_node.config.name_lists`. The canonical value is the one in
force and the one the node stores. Parameter *names* (keys) are exact.

This module imports no ROS package.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping

from ik_node.config.ros_graph import GRAPH_STRING_PARAMS
from ik_node.config.name_lists import NAME_LIST_PARAMS, stripped_names
from ik_node.config.group_overrides import SOLVER_SPEC, key_spec, split_key
from ik_node.config.table import STRING_PARAMS
from ik_node.solvers import SOLVERS, solver_class


def canonical_value(key: str, value: Any) -> Any:
    """The form of a parameter value that is in force and stored: the one rule for strings.

    ``robot_description`` is kept as given. Enum-like values (``solver``; solver parameters with
    choices, e.g. ``damped_jacobian.method``) are stripped of surrounding whitespace and
    lower-cased: ``' FABRIK '`` -> ``'fabrik'``. Every other string (link names, ``urdf_file``)
    and every name in a list of names (``tip_links``, ``command_joints``, ``hold_joint_names``)
    is stripped and keeps its case, as URDF names are case sensitive. Other values, and strings
    of unknown keys, are returned unchanged (validation refuses them, and empty names in lists).
    """
    if key in NAME_LIST_PARAMS:
        return stripped_names(value)
    if not isinstance(value, str) or key == 'robot_description':
        return value
    if key in ('solver', 'output', 'jump_guard'):
        return value.strip().lower()
    if key in GRAPH_STRING_PARAMS:
        return value.strip()
    if key in STRING_PARAMS:
        return value.strip()
    parts = split_key(key)
    if parts is not None:  # groups.<group>.<key>: as the node's <key> or <solver>.<key>
        spec = key_spec(parts[1])
    else:
        solver, _, param = key.partition('.')
        spec = solver_class(solver).param_specs().get(param) if solver in SOLVERS else None
    if spec is None or spec.type is not str:
        return value
    return value.strip().lower() if spec.choices or spec is SOLVER_SPEC else value.strip()


def canonical_updates(values: Mapping[str, Any]) -> Dict[str, Any]:
    """The entries of ``values`` whose canonical form (:func:`canonical_value`) differs, in it."""
    out = {}
    for key, value in values.items():
        if isinstance(value, (str, list, tuple)):
            canonical = canonical_value(key, value)
            if canonical != value:
                out[key] = canonical
    return out
