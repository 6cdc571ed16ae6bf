"""Parameter changes at run time: validated as a whole configuration, then applied or refused.

``ros2 param set`` (or ``set_parameters`` from code) reaches :meth:`ParameterChanges.on_set`:
the new values are merged into the parameters in force, parsed into an
:class:`~ik_node.config.node_config.IkConfig` and a
:class:`~ik_node.config.ros_graph.GraphConfig`, and handed to the node's ``apply``; whatever
refuses them (a parse error, a URDF that does not load, a solver that cannot be built) becomes
``SetParametersResult(successful=False, reason=...)`` and nothing changes.

A planning group's setting not declared yet (``groups.<group>.<key>``) is declared by the
pre-set callback (:meth:`~ik_node.ros.parameters.NodeParameters.declare_group_settings`), checked
here as any other, and undeclared again when the change is refused.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List

from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node
from rclpy.parameter import Parameter

from ik_node.config.node_config import IkConfig, canonical_updates, config_from_flat
from ik_node.config.ros_graph import GraphConfig, graph_config_from_flat
from ik_node.errors import IkError
from ik_node.ros.parameters import NodeParameters, plain

#: ``apply(config, graph)``: put a configuration in force; raises (IkError or any exception,
#: e.g. a bug in a solver's constructor) to refuse it, changing nothing.
ApplyConfiguration = Callable[[IkConfig, GraphConfig], None]


class ParameterChanges:
    """Registers the node's set-parameters callbacks and applies each accepted change.

    Args:
        node: the node whose parameters change.
        parameters: the node's declared parameters (their flat values are updated on success).
        apply: puts a new configuration in force, or raises to refuse it.
    """

    def __init__(self, node: Node, parameters: NodeParameters,
                 apply: ApplyConfiguration) -> None:
        self._node, self._parameters, self._apply = node, parameters, apply
        if hasattr(node, 'add_pre_set_parameters_callback'):  # Iron and later (not Humble)
            node.add_pre_set_parameters_callback(parameters.before_set)
        node.add_on_set_parameters_callback(self.on_set)

    def on_set(self, params: List[Parameter]) -> SetParametersResult:
        """Accept and apply the change of the configuration's parameters, or refuse it."""
        names = self._parameters.names
        updates = {p.name: plain(p.value) for p in params if p.name in names}
        if not updates:
            return SetParametersResult(successful=True)
        result = self._check_and_apply(params, updates)
        self._parameters.settle(result.successful)
        return result

    def _check_and_apply(self, params: List[Parameter], updates: Dict[str, Any]
                         ) -> SetParametersResult:
        wrong = self._parameters.group_type_errors(params)
        if wrong:
            return SetParametersResult(successful=False, reason='refused: ' + '; '.join(wrong))
        fixes = canonical_updates(updates)  # only without a pre-set callback (Humble)
        if fixes:
            return SetParametersResult(successful=False, reason='refused: ' + '; '.join(
                f'{k} = {updates[k]!r} is not in canonical form: set {v!r}'
                for k, v in fixes.items()))
        flat = {k: v for k, v in {**self._parameters.flat, **updates}.items() if v is not None}
        try:
            config = config_from_flat(flat, source='refused', require_model=False)
            graph = graph_config_from_flat(flat, source='refused')
            self._apply(config, graph)
        except IkError as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        except Exception as exc:  # a bug in a solver's constructor must not kill the node
            return SetParametersResult(successful=False,
                                       reason=f'refused: {type(exc).__name__}: {exc}')
        self._parameters.flat = flat
        self._node.get_logger().info(f'parameters set: {", ".join(sorted(updates))}')
        return SetParametersResult(successful=True)
