"""The robot model in force: configuration, chain, solver, output plan and jump guard, swapped
as a whole.

The node holds one :class:`RobotModel` (or none while it waits for a description) and replaces
it whole on a parameter or description change, so no solve ever mixes two chains.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Optional

import numpy as np

from ik_node.config.node_config import IkConfig, build_chain, build_solver
from ik_node.config.ros_graph import GraphConfig
from ik_node.model.urdf_joints import moving_joints
from ik_node.ros.outputs.jump_guard import JumpGuard
from ik_node.ros.outputs.solution_output import OutputPlan


@dataclasses.dataclass(frozen=True)
class RobotModel:
    """What one robot description gives the node.

    Attributes:
        config: the configuration, with the description that came by topic filled in.
        chain: the kinematic chain (:class:`ik_node.model.chain.Chain`).
        solver: the solver built for it.
        plan: how a solution becomes the output message.
        guard: the jump guard between solve and publish (its last command carries over to the
            next model of the same chain).
    """

    config: IkConfig
    chain: Any
    solver: Any
    plan: OutputPlan
    guard: JumpGuard


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
    joints = moving_joints(chain.robot) if chain.robot else []
    plan = OutputPlan(graph, chain, joints)
    velocity = {j.name: j.velocity for j in joints}
    guard = JumpGuard(chain.joint_names, chain.lower.tolist(), chain.upper.tolist(),
                      [velocity.get(name, math.inf) for name in chain.joint_names],
                      graph.guard, graph.jump_max_step, graph.jump_velocity_scaling)
    if current is not None and current.chain is chain:
        guard.carry_over(current.guard)
    return RobotModel(effective, chain, solver, plan, guard)


def rest_pose(chain) -> np.ndarray:
    """The joint positions the node starts from without a measured state: 0 where that is
    within a joint's limits, else the middle of its range (a knee whose range excludes 0 rests
    bent, inside its limits, not pressed against one)."""
    q = np.zeros(chain.n)
    outside = (q < chain.lower) | (q > chain.upper)
    middle = 0.5 * (chain.lower + chain.upper)
    return np.where(outside & np.isfinite(middle), middle, chain.clip(q))
