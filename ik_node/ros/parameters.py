"""The node's ROS parameters: declared from the specs, integers taken as doubles, strings stored
in their canonical form, read back as one flat mapping.

Every parameter comes from a spec in :mod:`ik_node.config.node_config`,
:mod:`ik_node.config.ros_graph`, a solver's ``param_specs()`` or
:data:`ik_node.ros.rviz.interactive.INTERACTIVE_PARAMS` or
:data:`ik_node.ros.solving.planar_targets.PLANAR_PARAMS`, and a planning group's settings
given at start-up or first set at run time (``groups.<group>.<key>``,
:mod:`ik_node.config.group_overrides`); validation happens there, not here.
Changes at run time go through :class:`ik_node.ros.parameter_changes.ParameterChanges`.
"""

from __future__ import annotations

import sys
from typing import Any, Dict, List, Optional

from rcl_interfaces.msg import (FloatingPointRange, IntegerRange, ParameterDescriptor,
                                ParameterType)
from rclpy.node import Node
from rclpy.parameter import Parameter

from ik_node.config.group_overrides import (PREFIX, checked_key, key_spec, override_names,
                                            split_key)
from ik_node.config.node_config import (NODE_PARAMS, STRING_PARAMS, TIP_LINKS_DESCRIPTION,
                                        canonical_updates)
from ik_node.errors import IkError
from ik_node.config.ros_graph import GRAPH_LIST_PARAMS, GRAPH_NUMBER_PARAMS, GRAPH_STRING_PARAMS
from ik_node.ros.rviz.interactive import INTERACTIVE_PARAMS
from ik_node.ros.solving.planar_targets import PLANAR_PARAMS
from ik_node.solvers import SOLVERS, ParamSpec

_INT64_MAX = 2 ** 63 - 1
#: The parameter type of a spec's type (any other: a list of numbers).
_TYPES = {float: Parameter.Type.DOUBLE, int: Parameter.Type.INTEGER, bool: Parameter.Type.BOOL,
          str: Parameter.Type.STRING}


class NodeParameters:
    """Declares the node's parameters on ``node`` and reads them back.

    The constructor declares every parameter (overrides given as integers for a double are
    converted first), refuses overrides the node does not have, and stores strings given in a
    non-canonical form (solver ``' FABRIK '``) as the value in force (``'fabrik'``).

    Attributes:
        names: the configuration's parameters, in declaration order (the interactive marker's
            are declared too but read where used, not part of :attr:`flat`).
        flat: ``{name: value}`` of every configuration parameter that has a value.

    Raises (constructor):
        IkError: an override names a parameter the node does not have (a typo).
    """

    def __init__(self, node: Node) -> None:
        self._node = node
        self._group_specs: Dict[str, ParamSpec] = {}  # groups.<group>.<key> declared
        # groups.<group>.<key> declared by the set in progress -> the type its key takes
        self._fresh: Dict[str, Optional[Parameter.Type]] = {}
        self.names = self._declare_parameters()
        for name, spec in {**INTERACTIVE_PARAMS, **PLANAR_PARAMS}.items():
            self._declare_spec(name, spec)
        self._check_overrides()
        fixes = canonical_updates({name: self.value(name) for name in self.names})
        if fixes:
            node.set_parameters([string_parameter(k, v) for k, v in fixes.items()])
        self.flat: Dict[str, Any] = {name: value for name in self.names
                                     if (value := self.value(name)) is not None}

    def value(self, name: str) -> Any:
        """The value of parameter ``name`` as plain Python, None when it has none."""
        try:
            value = self._node.get_parameter(name).value
        except Exception:  # an uninitialized parameter (a list never set) raises
            return None
        return plain(value)

    def before_set(self, params: List[Parameter]) -> List[Parameter]:
        """Pre-set callback (Iron and later): ``ros2 param set /ik_node fabrik.timeout 1``
        becomes 1.0 before rclpy's type check (then the range check runs as for any double),
        and strings are set in their canonical form
        (:func:`ik_node.config.node_config.canonical_value`), so the value stored is the value
        in force.

        A planning group's setting not declared yet (``groups.<group>.<key>``) is declared
        first (:meth:`declare_group_settings`)."""
        self.declare_group_settings(params)
        params = [self._as_float(p) for p in params]
        fixes = canonical_updates({p.name: plain(p.value) for p in params
                                   if p.name in self.names})
        return [string_parameter(p.name, fixes[p.name]) if p.name in fixes else p for p in params]

    # ----------------------------------------------------- group settings first set at run time
    def declare_group_settings(self, params: List[Parameter]) -> None:
        """Declare the ``groups.<group>.<key>`` names among ``params`` that are not declared,
        typed as the value given, so that rclpy passes the set to the on-set callback, which
        checks it with the whole configuration (:meth:`group_type_errors` first) and keeps the
        new names (:meth:`settle` True) or undeclares them (False). Any other undeclared name
        is left to rclpy, which refuses it."""
        self.settle(False)  # left by a set that rclpy refused before the on-set callback
        if any(not p.name.startswith(PREFIX) and not self._node.has_parameter(p.name)
               for p in params):
            return  # rclpy refuses the whole set
        for param in params:
            name = param.name
            if not name.startswith(PREFIX) or self._node.has_parameter(name) or \
                    param.type_ == Parameter.Type.NOT_SET:
                continue
            parts = split_key(name)
            spec = key_spec(parts[1]) if parts else None
            if spec is not None:
                self._group_specs[name] = spec  # an integer for a double is taken as one
            given = self._as_float(param).type_
            try:
                self._node.declare_parameter(name, given, self._group_descriptor(name, spec))
            except Exception:  # not a valid parameter name: rclpy refuses it as undeclared
                self._group_specs.pop(name, None)
                continue
            self._fresh[name] = None if spec is None else \
                _TYPES.get(spec.type, Parameter.Type.DOUBLE_ARRAY)
            self.names.append(name)

    def group_type_errors(self, params: List[Parameter]) -> List[str]:
        """The group settings declared by this set whose value is not of the type their key
        takes (what rclpy's type check says of a setting declared at start-up)."""
        return [f'{p.name}: wrong parameter type, expected {want.name} got {p.type_.name}'
                for p in params if (want := self._fresh.get(p.name)) is not None
                and p.type_ != want]

    def settle(self, accepted: bool) -> None:
        """End the set in progress: keep the group settings it declared, or undeclare them."""
        fresh, self._fresh = self._fresh, {}
        if accepted:
            return
        for name in fresh:
            if self._node.has_parameter(name):
                self._node.undeclare_parameter(name)
            self._group_specs.pop(name, None)
            if name in self.names:
                self.names.remove(name)

    # --------------------------------------------------------------------------- declaring
    def _declare_parameters(self) -> List[str]:
        declare = self._node.declare_parameter
        names = []
        strings = {**STRING_PARAMS, **GRAPH_STRING_PARAMS}
        for name, (default, description) in strings.items():
            extra = f' One of: {", ".join(sorted(SOLVERS))}' if name == 'solver' else ''
            declare(name, default, ParameterDescriptor(
                type=ParameterType.PARAMETER_STRING, description=description + extra))
            names.append(name)
        lists = {'tip_links': (str, TIP_LINKS_DESCRIPTION), **GRAPH_LIST_PARAMS}
        for name, (kind, description) in lists.items():
            ptype = Parameter.Type.STRING_ARRAY if kind is str else Parameter.Type.DOUBLE_ARRAY
            self._convert_override(name)
            # Declared by type: no value until set (an empty list cannot carry its type).
            declare(name, ptype, ParameterDescriptor(
                type=ptype.value, description=description))
            names.append(name)
        for name, spec in {**NODE_PARAMS, **GRAPH_NUMBER_PARAMS}.items():
            self._declare_spec(name, spec)
            names.append(name)
        for solver_name in sorted(SOLVERS):
            for param, spec in SOLVERS[solver_name].param_specs().items():
                self._declare_spec(f'{solver_name}.{param}', spec)
                names.append(f'{solver_name}.{param}')
        for name in sorted(override_names(self._node._parameter_overrides)):
            self._declare_group_setting(name)
            names.append(name)
        return names

    def _declare_group_setting(self, name: str) -> None:
        """Declare a planning group's setting given at start-up (``groups.<group>.<key>``,
        :mod:`ik_node.config.group_overrides`), typed as the key; its values are checked with
        the whole configuration (the group's solver decides what is valid)."""
        _, _, spec = checked_key(name, 'parameters')
        self._group_specs[name] = spec
        d = self._group_descriptor(name, spec)
        d.type = _TYPES.get(spec.type, Parameter.Type.DOUBLE_ARRAY).value
        self._convert_override(name)
        default = Parameter.Type.DOUBLE_ARRAY if spec.type in (list, tuple) else spec.default
        self._node.declare_parameter(name, default, d)

    @staticmethod
    def _group_descriptor(name: str, spec: Optional[ParamSpec]) -> ParameterDescriptor:
        """The descriptor of a group's setting, its type not set."""
        parts = split_key(name)
        if spec is None or parts is None:
            return ParameterDescriptor(description="not a planning group's setting")
        unit = f' [{spec.unit}]' if spec.unit else ''
        extra = f' One of: {", ".join(sorted(SOLVERS))}' if parts[1] == 'solver' else ''
        return ParameterDescriptor(description=f'planning group {parts[0]!r} in the MoveIt '
                                   f'services: {spec.description}{unit}{extra}')

    def _declare_spec(self, name: str, spec: ParamSpec) -> None:
        """Declare a parameter from a :class:`ParamSpec`: type, range, unit in the description."""
        unit = f' [{spec.unit}]' if spec.unit else ''
        d = ParameterDescriptor(description=f'{spec.description}{unit}',
                                additional_constraints=f'valid: {spec.range_text()}')
        self._convert_override(name)
        if spec.type is float:
            d.type = ParameterType.PARAMETER_DOUBLE
            d.floating_point_range = [FloatingPointRange(
                from_value=float(spec.min if spec.min is not None else -sys.float_info.max),
                to_value=float(spec.max if spec.max is not None else sys.float_info.max),
                step=0.0)]
        elif spec.type is int:
            d.type = ParameterType.PARAMETER_INTEGER
            d.integer_range = [IntegerRange(
                from_value=int(spec.min if spec.min is not None else -_INT64_MAX),
                to_value=int(spec.max if spec.max is not None else _INT64_MAX), step=0)]
        elif spec.type is bool:
            d.type = ParameterType.PARAMETER_BOOL
        elif spec.type in (list, tuple):  # a list of numbers, e.g. fabrik.weights
            d.type = ParameterType.PARAMETER_DOUBLE_ARRAY
            default = list(spec.default) if spec.default else Parameter.Type.DOUBLE_ARRAY
            self._node.declare_parameter(name, default, d)
            return
        else:
            d.type = ParameterType.PARAMETER_STRING
        self._node.declare_parameter(name, spec.default, d)

    def _float_names(self) -> Dict[str, Parameter.Type]:
        """Parameters declared as double (array): an integer (array) given for one is converted."""
        out = {}
        for name, spec in {**NODE_PARAMS, **GRAPH_NUMBER_PARAMS}.items():
            if spec.type is float:
                out[name] = Parameter.Type.DOUBLE
        for solver_name, cls in SOLVERS.items():
            for param, spec in cls.param_specs().items():
                if spec.type is float:
                    out[f'{solver_name}.{param}'] = Parameter.Type.DOUBLE
                elif spec.type in (list, tuple):
                    out[f'{solver_name}.{param}'] = Parameter.Type.DOUBLE_ARRAY
        for name, (kind, _) in GRAPH_LIST_PARAMS.items():
            if kind is float:
                out[name] = Parameter.Type.DOUBLE_ARRAY
        for name, spec in self._group_specs.items():
            if spec.type is float:
                out[name] = Parameter.Type.DOUBLE
            elif spec.type in (list, tuple):
                out[name] = Parameter.Type.DOUBLE_ARRAY
        return out

    def _as_float(self, param: Parameter) -> Parameter:
        """``param`` with an integer value turned into the double its declaration expects, and
        so a number written as text: ``ros2 param set`` reads its value as YAML, where ``1e-05``
        (no dot) is a string."""
        want = self._float_names().get(param.name)
        if want == Parameter.Type.DOUBLE and param.type_ == Parameter.Type.INTEGER:
            return Parameter(param.name, want, float(param.value))
        if want == Parameter.Type.DOUBLE and param.type_ == Parameter.Type.STRING:
            try:
                return Parameter(param.name, want, float(param.value))
            except ValueError:  # not a number: rclpy's type check refuses it
                return param
        if want == Parameter.Type.DOUBLE_ARRAY and param.type_ == Parameter.Type.INTEGER_ARRAY:
            return Parameter(param.name, want, [float(v) for v in param.value])
        return param

    def _convert_override(self, name: str) -> None:
        """A YAML file or ``-p`` saying ``rate: 20`` gives an integer; take it as the number."""
        overrides = self._node._parameter_overrides  # rclpy keeps the overrides there
        override = overrides.get(name)
        if override is not None:
            overrides[name] = self._as_float(override)

    def _check_overrides(self) -> None:
        """Refuse parameters given for this node that it does not have (typos)."""
        unknown = sorted(n for n in self._node._parameter_overrides
                         if not self._node.has_parameter(n) and not n.startswith('qos_overrides.'))
        if unknown:
            raise IkError(f'unknown parameters {", ".join(unknown)}. Valid parameters: '
                          f'{", ".join(self.names)}')


def string_parameter(name: str, value: Any) -> Parameter:
    """A string or string-list parameter (typed: an empty list stays a string array)."""
    if isinstance(value, (list, tuple)):
        return Parameter(name, Parameter.Type.STRING_ARRAY, list(value))
    return Parameter(name, Parameter.Type.STRING, value)


def plain(value: Any) -> Any:
    """A parameter value as plain Python: arrays (array.array, tuples) become lists."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    return list(value)
