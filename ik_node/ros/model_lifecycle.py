"""The robot model in force and its life: built from the parameters or the description topic,
put in force, replaced, dropped; the start-up work that waits for the first answer.

:class:`ModelLifecycle` holds the model the solves use (:attr:`~ModelLifecycle.model`), the
joint positions published last (:attr:`~ModelLifecycle.q`) and the configuration in force, and
tells every part of the node when they change (:class:`NodeParts`). The node's lock is held
around every change, so no solve and no output ever mixes two chains.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable, List, Optional

import numpy as np
from rclpy.node import Node

from ik_node.config.node_config import IkConfig
from ik_node.config.ros_graph import GraphConfig
from ik_node.errors import IkError
from ik_node.model.urdf_checks import check_description_size
from ik_node.ros.inputs.node_inputs import NodeInputs
from ik_node.ros.outputs.diagnostics import StatusReports, model_name
from ik_node.ros.outputs.solution_output import SolutionOutput
from ik_node.ros.rviz.drag_targets import DragTargets
from ik_node.ros.rviz.marker_output import MarkerOutput
from ik_node.ros.rviz.reach_map_output import ReachabilityMaps
from ik_node.ros.solving.obstacles import ObstacleInput
from ik_node.ros.solving.robot_model import RobotModel, build_robot_model, rest_pose
from ik_node.ros.solving.target_pipeline import TargetPipeline

#: Seconds after the node's construction at which the work its first answer does not need (the
#: reachability map, the RViz view) starts when no target has come by then.
STARTUP_GRACE_S = 2.0
#: ``listener(model or None, world, graph)``: told of every change of the model in force.
Listener = Callable[[Optional[RobotModel], dict, GraphConfig], None]


@dataclass(frozen=True)
class NodeParts:
    """The node's parts a model change and a solve reach (each made by the node's wiring)."""

    inputs: NodeInputs
    pipeline: TargetPipeline
    solution: SolutionOutput
    status: StatusReports
    markers: MarkerOutput
    reach: ReachabilityMaps
    drag: DragTargets
    obstacles: ObstacleInput


class ModelLifecycle:
    """The model in force, the configuration it was built from, and the deferred start-up work.

    Args:
        node: the node (its logger and timers).
        lock: the node's lock: held around every change here and around every solve.
        parts: the parts told about a new model.
        config, graph: the configuration in force at the start.
        retime: ``retime(rate)``: the node's timer runs at ``rate`` [Hz] from now.
    """

    def __init__(self, node: Node, lock: threading.RLock, parts: NodeParts, config: IkConfig,
                 graph: GraphConfig, retime: Callable[[float], None]) -> None:
        self._node, self._lock, self._parts, self._retime = node, lock, parts, retime
        self.config, self.graph = config, graph
        self.model: Optional[RobotModel] = None
        self.q = np.zeros(0)  # the joint positions published last (chain order)
        self._topic_xml = ''  # the description that came by topic
        # Work no answer needs (the reachability map, the RViz view) waits for the first answer
        # or for STARTUP_GRACE_S without a target: its threads would compete with the first
        # solve (and the construction) for the interpreter.
        self.started = False
        self._deferred: Optional[tuple] = None  # (chain, graph) whose map and view wait
        self._grace_timer = node.create_timer(STARTUP_GRACE_S, self.start_deferred)
        self._listeners: List[Listener] = []

    def follow(self, listener: 'Listener') -> None:
        """Call ``listener(model, world, graph)`` (the lock held) each time the model in force
        or its obstacles change: the model (None: none), its collision world (``Solver.
        configure_collision`` arguments, the topic's obstacles included) and the graph
        configuration in force. The MoveIt services follow the model so."""
        self._listeners.append(listener)

    def _tell(self, model: Optional[RobotModel], world: dict) -> None:
        for listener in self._listeners:
            listener(model, world, self.graph)

    def begin(self) -> None:
        """Put the parameters' model in force, or wait for one on the description topic."""
        parts = self._parts
        parts.inputs.follow(self.graph, self.config.has_model)
        # Targets are answered (refused) while waiting for a model too.
        parts.inputs.subscribe_targets(self.config.tip_links, self.config.branched)
        if self.config.has_model:
            self._install(build_robot_model(self.config, self.graph, '', None))
        else:
            parts.status.waiting(force=True)

    def _install(self, model: RobotModel) -> None:
        """Put a model in force (caller holds the lock or is the constructor)."""
        parts = self._parts
        old = self.model
        new_chain = old is None or old.chain is not model.chain
        # First, as it can fail (a topic rclpy refuses): then nothing else has changed.
        parts.solution.use(model.plan)
        world = parts.obstacles.world(model.config.collision)
        if parts.obstacles.obstacles:  # the topic's obstacles hold for every model
            model.solver.configure_collision(**world)
        parts.obstacles.show(model.config.base_link, world)
        self.model = model
        self._tell(model, world)
        config, chain = model.config, model.chain
        if new_chain:
            measured, _ = parts.inputs.measured(chain)
            self.q = rest_pose(chain) if measured is None else measured
            parts.pipeline.use_chain(chain)  # targets meant for the old chain are dropped
            parts.inputs.subscribe_targets(config.tip_links, config.branched)
        if parts.solution.steady:
            parts.solution.publish(self.q)
        graph = model.plan.graph
        parts.markers.set_thresholds(graph.singular_threshold, graph.limit_margin_threshold)
        parts.markers.envelope(chain, model.solver, config.base_link, reset=new_chain)
        self._in_background(chain, graph)
        parts.drag.set_robot(config, chain, self.q,
                             six_dof=not config.branched and model.solver.supports_orientation)
        parts.status.set_robot(config)
        parts.status.force_next()
        if new_chain:
            parts.status.idle(config.solver)
        self._node.get_logger().info(
            f'{model_name(self.config)}: {config.base_link} -> '
            f'{", ".join(config.tip_links)} ({chain.n} joints), solver '
            f'{config.solver}, output {parts.solution.kind} on {parts.solution.topic}; '
            f'targets on {", ".join(parts.inputs.target_topics)}')

    def _in_background(self, chain, graph: GraphConfig) -> None:
        """Compute the reachability map and the RViz view of ``chain`` in the background: now,
        or once the node has started (:meth:`start_deferred`)."""
        if self.started:
            self._parts.markers.prepare_view(chain)
            self._parts.reach.follow(chain, graph.reachability_samples,
                                     graph.reachability_voxel_size, graph.capability_map)
        else:
            self._deferred = (chain, graph)

    def start_deferred(self) -> None:
        """The first answer is out (or STARTUP_GRACE_S passed without a target): start the work
        that waited for it."""
        self._grace_timer.cancel()
        with self._lock:
            if self.started:
                return
            self.started = True
            job, self._deferred = self._deferred, None
            if job is not None:
                self._in_background(*job)

    def on_obstacles(self, obstacles) -> None:
        """New obstacles on ~/obstacles: the solver in force checks against them from now."""
        with self._lock:
            model = self.model
            if model is None:
                return
            world = self._parts.obstacles.world(model.config.collision)
            try:
                model.solver.configure_collision(**world)
            except IkError as exc:
                self._parts.status.error(f'obstacles refused: {exc}', '')
                return
            self._parts.obstacles.show(model.config.base_link, world)
            self._tell(model, world)

    def _uninstall(self) -> None:
        """No robot model (parameters cleared): wait for one on the description topic."""
        parts = self._parts
        if self.model is not None:
            parts.markers.clear(self.model.config.base_link)
            parts.reach.clear(self.model.chain)
        self.model = None
        self._tell(None, {})
        self._deferred = None
        parts.drag.clear()
        parts.status.set_robot(None)
        parts.status.waiting(force=True)

    def apply_configuration(self, config: IkConfig, graph: GraphConfig) -> None:
        """Put new parameters in force (called by
        :class:`~ik_node.ros.parameter_changes.ParameterChanges`); raises, changing nothing,
        when their model cannot be built."""
        parts = self._parts
        with self._lock:
            source_xml = config.urdf_xml() if config.has_model else self._topic_xml
            model = build_robot_model(config, graph, self._topic_xml, self.model) \
                if source_xml else None
            old_config = self.config
            self.config, self.graph = config, graph
            parts.status.configure(config, graph)
            parts.inputs.follow(graph, config.has_model)
            parts.inputs.subscribe_targets(config.tip_links, config.branched)
            if model is not None:
                self._install(model)
            else:
                self._uninstall()
        if config.publish_rate != old_config.publish_rate:
            self._retime(config.publish_rate)

    def on_description(self, xml: str) -> None:
        """A URDF arrived on the description topic: rebuild, or refuse it and keep the old one."""
        with self._lock:
            if self.config.has_model or xml == self._topic_xml:
                return
            try:
                check_description_size(xml, self.config.max_description_bytes)
                model = build_robot_model(self.config, self.graph, xml, self.model)
            except Exception as exc:
                kept = 'the previous one stays in force' if self.model else \
                    'still waiting for a valid one'
                self._parts.status.error(
                    f'robot_description on {self._parts.inputs.description_topic} refused '
                    f'({kept}): {exc}', '', force=True)
                return
            self._topic_xml = xml
            self._install(model)
