"""The robot model in force: configuration, chain, solver and output plan, swapped as a whole.

The node holds one :class:`RobotModel` (or none while it waits for a description) and replaces
it whole on a parameter or description change, so no solve ever mixes two chains.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

from ik_node.config.node_config import IkConfig, build_chain, build_solver
from ik_node.config.ros_graph import GraphConfig, moving_joints
from ik_node.ros.solution_output import OutputPlan


@dataclasses.dataclass(frozen=True)
class RobotModel:
    """What one robot description gives the node.

    Attributes:
        config: the configuration, with the description that came by topic filled in.
        chain: the kinematic chain (:class:`ik_node.model.chain.Chain`).
        solver: the solver built for it.
        plan: how a solution becomes the output message.
    """

    config: IkConfig
    chain: Any
    solver: Any
    plan: OutputPlan


def build_robot_model(config: IkConfig, graph: GraphConfig, topic_xml: str,
                      current: Optional[RobotModel]) -> RobotModel:
    """The model of a configuration; ``topic_xml`` is the URDF that came by topic, used when the
    parameters give none. The chain of ``current`` is reused when its source did not change.

    Raises:
        IkError: the URDF, the chain, the solver or the output plan is refused (the reason).
    """
    effective = config if config.has_model else \
        dataclasses.replace(config, robot_description=topic_xml)
    if current is not None and current.config.chain_source() == effective.chain_source():
        chain = current.chain
    else:
        chain = build_chain(effective)
    solver = build_solver(effective, chain)
    plan = OutputPlan(graph, chain, moving_joints(chain.robot) if chain.robot else [])
    return RobotModel(effective, chain, solver, plan)
