"""The ROS 2 node ``ik_node``: targets in, joint states or commands, diagnostics and markers out.

This file is the wiring. :meth:`IkNode.__init__` creates the node's parts, each an object from
its own module with what it needs passed in:

* :class:`~ik_node.ros.parameters.NodeParameters` declares and reads the parameters;
  :class:`~ik_node.ros.parameter_changes.ParameterChanges` applies changes at run time.
* :class:`~ik_node.ros.model_lifecycle.ModelLifecycle`: the robot model in force (chain,
  solver, output plan), built, replaced and dropped as the parameters or the description say.
* :class:`~ik_node.ros.solve_loop.SolveLoop`: when the node solves and what one solve does (a
  target from its message to the published answer; read it to follow a target).
* Inputs: :class:`~ik_node.ros.inputs.node_inputs.NodeInputs` (target topics, measured state,
  robot description, TF), :class:`~ik_node.ros.rviz.drag_targets.DragTargets` (the interactive
  markers) and :class:`~ik_node.ros.solving.obstacles.ObstacleInput` (``~/obstacles``).
* :mod:`ik_node.ros.services`: MoveIt's ``~/compute_ik``, ``~/compute_fk`` and
  ``~/compute_cartesian_path``, served by a process of their own that follows the model.
* :class:`~ik_node.ros.solving.target_pipeline.TargetPipeline`: a target's way from the queue
  to the solver (frames, TF's warm-up, planar projection, every tip's standing target, the
  seed).
* Outputs: :class:`~ik_node.ros.outputs.solution_output.SolutionOutput` (joint states or
  commands), :class:`~ik_node.ros.outputs.diagnostics.StatusReports` (``/diagnostics`` behind
  the status rate gate), :class:`~ik_node.ros.rviz.marker_output.MarkerOutput` (``~/markers``),
  :class:`~ik_node.ros.rviz.reach_map_output.ReachabilityMaps` (``~/reachability``),
  :class:`~ik_node.ros.rviz.base_placement.BasePlacement` (``~/base_placement``, from a
  capability map).

Two observation hooks, no-ops here, let a subclass watch the node without reaching into it
(the benchmarks' traced nodes do): :meth:`IkNode.on_target_kept` and
:meth:`IkNode.on_answered`.

Run as a program through ``python -m ik_node.node`` or the ``ik_node`` executable
(:mod:`ik_node.ros.app.entry`, :func:`ik_node.ros.app.run.main`): both hold SIGINT and SIGTERM
back (:mod:`ik_node.ros.app.held_signals`) ahead of this module's imports.
"""

from __future__ import annotations

import threading
from typing import Any, Optional

from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from ik_node.config.node_config import IkConfig, config_from_flat
from ik_node.config.ros_graph import graph_config_from_flat
from ik_node.ros.inputs.latest_targets import LatestTargets
from ik_node.ros.inputs.node_inputs import NodeInputs
from ik_node.ros.model_lifecycle import ModelLifecycle, NodeParts
from ik_node.ros.outputs.diagnostics import StatusReports
from ik_node.ros.outputs.solution_output import SolutionOutput, send_unless_shut_down
from ik_node.ros.parameter_changes import ParameterChanges
from ik_node.ros.parameters import NodeParameters
from ik_node.ros import services
from ik_node.ros.rviz.base_placement import BasePlacement
from ik_node.ros.rviz.drag_targets import DragTargets
from ik_node.ros.rviz.marker_output import MarkerOutput
from ik_node.ros.rviz.reach_map_output import ReachabilityMaps
from ik_node.ros.solve_loop import SolveLoop
from ik_node.ros.solving.obstacles import ObstacleInput
from ik_node.ros.solving.robot_model import RobotModel
from ik_node.ros.solving.target_pipeline import TargetPipeline
from ik_node import kernels

__all__ = ['IkNode']


class IkNode(Node):
    """Live IK: subscribes to targets, publishes the solution, ``/diagnostics`` and markers.

    Args:
        node_name: ROS node name (default ``ik_node``).
        **kwargs: passed to :class:`rclpy.node.Node` (``context``, ``parameter_overrides``,
            ``cli_args``, ...).

    Raises:
        IkError: the configuration in the parameters is invalid (bad URDF, unknown solver...).
    """

    def __init__(self, node_name: str = 'ik_node', **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        lock = threading.RLock()  # one solve, timer tick or model change at a time
        # The configuration in force, from the parameters.
        self._params = NodeParameters(self)
        config = config_from_flat(self._params.flat, source='parameters', require_model=False)
        graph = graph_config_from_flat(self._params.flat, source='parameters')
        # The queue between the target inputs and the solve: the newest target of each tip.
        targets = LatestTargets()
        self._loop = loop = SolveLoop(self, lock, targets, answered=self.on_answered,
                                      kept=self.on_target_kept)
        # Outputs.
        send = send_unless_shut_down(self.context)
        self._solution = SolutionOutput(self, send)
        self._markers = MarkerOutput(self, send)
        self._reach = ReachabilityMaps(self, send)
        self._placement = BasePlacement(
            self, send, lambda: str(self.get_parameter('capability_map').value or ''))
        self._status = status = StatusReports(self, send, targets, self._reach, config, graph)
        # Inputs: target topics, measured state, description, TF; drags of the markers;
        # obstacles. (A description or obstacles message calls the model's life cycle, made
        # below with these parts.)
        self._inputs = NodeInputs(
            self, loop.on_targets, lambda xml: self._life.on_description(xml),
            ReentrantCallbackGroup(),
            on_error=lambda message, frame, stamp: status.error(message, frame, stamp),
            wake=loop.wake, on_skipped=targets.count_skipped)
        self._drag = DragTargets(self, loop.on_targets,
                                 on_error=lambda message: status.error(message, ''),
                                 send=send, callback_group=ReentrantCallbackGroup())
        # A target's way from the queue to the solver (frames, TF, planes, every tip's target).
        self._pipeline = TargetPipeline(
            self, self._inputs, targets,
            report_error=lambda message, frame, stamp: status.error(message, frame, stamp),
            resume=loop.solve_all_pending)
        self._obstacles = ObstacleInput(
            self, lambda: self._life.config.base_link,
            lambda obstacles: self._life.on_obstacles(obstacles),
            on_error=lambda message: status.error(message, ''), send=send)
        parts = NodeParts(self._inputs, self._pipeline, self._solution, status, self._markers,
                          self._reach, self._drag, self._obstacles)
        self._life = ModelLifecycle(self, lock, parts, config, graph, retime=self._retime)
        loop.connect(parts, self._life)
        self._life.follow(self._placement.on_model)  # the map's solver for this robot
        # MoveIt's services (~/compute_ik...) in a process of their own, following the model
        # (None without moveit_msgs: said once the node has started).
        self._moveit = services.attach(self, graph.tf_timeout)
        if self._moveit is not None:
            self._life.follow(self._moveit.on_model)
        self._life.begin()
        self._timer = self.create_timer(1.0 / config.publish_rate, loop.tick)
        self._changes = ParameterChanges(self, self._params, self._life.apply_configuration)
        kernels.report(self.get_logger().info)  # which solver path serves: compiled or Python
        services.report(self.get_logger().info)  # without moveit_msgs: how to get them

    # --------------------------------------------------------------------- what it shows
    @property
    def model(self) -> Optional[RobotModel]:
        """The robot model in force (chain, solver, output plan), None while waiting for one."""
        return self._life.model

    @property
    def config(self) -> IkConfig:
        """The configuration in force, from the parameters."""
        return self._life.config

    def long_lived_mark(self) -> tuple:
        """A value that changes when the node has made what it keeps for a long time: a new
        robot model (first in the tuple), the compiled kernels loaded, a reachability map built.
        The executable (:mod:`ik_node.ros.app.run`) keeps the garbage collector off those."""
        return self._life.model, kernels.ready(), self._reach.count

    # ------------------------------------------------------------- observation hooks
    def on_target_kept(self) -> None:
        """Observation hook: a target message was just kept (called in its subscription's
        callback, before the solve it wakes). A no-op; a subclass may record here
        (``benchmarks/start_trace.py`` notes the first target). Keep it to microseconds."""

    def on_answered(self, target_stamps: str, joint_state_stamp: str, result) -> None:
        """Observation hook: called (the node's lock held) right after every solve's answer is
        published, with the pair of stamps its status carries (``target_stamp``,
        ``joint_state_stamp``; the latter '' when the jump guard held the answer) and the
        solver's :class:`~ik_node.solvers.base.IkResult`, also when the rate gate holds that
        status back. A no-op; a subclass may record here (``benchmarks/node/traced.py``).
        Keep it to microseconds: it runs inside every solve."""

    # ----------------------------------------------------------------------------- wiring
    def _retime(self, rate: float) -> None:
        """The timer (joint states re-published, held statuses and markers) at ``rate`` [Hz]."""
        self.destroy_timer(self._timer)
        self._timer = self.create_timer(1.0 / rate, self._loop.tick)

    def destroy_node(self) -> None:
        self._reach.stop()
        if self._moveit is not None:
            self._moveit.close()
        self._inputs.close()  # the TF listener's thread, before the context goes
        super().destroy_node()
