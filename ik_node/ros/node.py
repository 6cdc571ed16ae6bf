"""The ROS 2 node ``ik_node``: targets in, joint states or commands, diagnostics and markers out.

This file is the wiring. :meth:`IkNode.__init__` creates the node's parts, each an object from
its own module with what it needs passed in:

* :class:`~ik_node.ros.parameters.NodeParameters` declares and reads the parameters;
  :class:`~ik_node.ros.parameter_changes.ParameterChanges` applies changes at run time.
* :class:`~ik_node.ros.robot_model.RobotModel`: the chain, solver and output plan in force.
* Inputs: :class:`~ik_node.ros.inputs.NodeInputs` (target topics, measured state, robot
  description, TF) and :class:`~ik_node.ros.rviz.drag_targets.DragTargets` (the interactive
  markers).
* :class:`~ik_node.ros.target_pipeline.TargetPipeline`: a target's way from the queue to the
  solver (frames, TF's warm-up, planar projection, every tip's standing target, the seed).
* Outputs: :class:`~ik_node.ros.outputs.solution_output.SolutionOutput` (joint states or
  commands), :class:`~ik_node.ros.outputs.diagnostics.StatusReports` (``/diagnostics`` behind
  the status rate gate), :class:`~ik_node.ros.rviz.marker_output.MarkerOutput` (``~/markers``),
  :class:`~ik_node.ros.rviz.reach_map_output.ReachabilityMaps` (``~/reachability``).

The path of a target, in the order of this file: a subscription keeps the message (a queue per
topic, :class:`~ik_node.ros.inputs.TargetSubscriptions`) and wakes the node, which solves right
there when idle, else queues one solve task in the node's executor, behind the callbacks already
waiting there (no other thread). A solve hands on the oldest kept message of each topic (the
newest where the node is behind: see the inputs) to :meth:`IkNode._on_targets`, which
stores its targets in a :class:`~ik_node.ros.latest_targets.LatestTargets` (keep-last per tip,
as a drag does), solves them, and queues the next task while messages are kept: every message of
a stream the node keeps up with is answered, no backlog builds up however fast targets stream,
and a parameter request waits for one solve at most.
:meth:`IkNode._solve_pending` has the pipeline place and solve the targets
(:mod:`ik_node.ros.target_pipeline` tells that part), checks the solution, passes it through
the model's :class:`~ik_node.ros.outputs.jump_guard.JumpGuard` (which holds or limits an answer
that would move a joint too far), publishes what the guard lets through, and hands one frozen
:class:`~ik_node.ros.solve_report.SolveReport` to the markers and the status. A lock keeps a
solve, the timer and a parameter or description change from overlapping, so no output ever
mixes two chains.

Run as a program through ``python -m ik_node.node`` or the ``ik_node`` executable
(:mod:`ik_node.ros.entry`): both hold SIGINT and SIGTERM back (:mod:`ik_node.ros.held_signals`)
ahead of this module's imports.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from functools import partial
from typing import Any, Dict, List, Optional

import numpy as np
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from ik_node.config.node_config import IkConfig, config_from_flat
from ik_node.config.ros_graph import GraphConfig, graph_config_from_flat
from ik_node.errors import IkError
from ik_node.model.urdf_checks import check_description_size
from ik_node.solvers.collision_guard import collision_outputs, has_collision_check
from ik_node.ros import run, services
from ik_node.ros.inputs import NodeInputs
from ik_node.ros.latest_targets import LatestTargets
from ik_node.ros.obstacles import ObstacleInput
from ik_node.ros.outputs.diagnostics import StatusReports, model_name
from ik_node.ros.outputs.solution_output import (SolutionOutput, check_publishable,
                                                 send_unless_shut_down)
from ik_node.ros.parameter_changes import ParameterChanges
from ik_node.ros.parameters import NodeParameters
from ik_node.ros.robot_model import RobotModel, build_robot_model, rest_pose
from ik_node.ros.rviz.drag_targets import DragTargets
from ik_node.ros.rviz.marker_output import MarkerOutput
from ik_node.ros.rviz.reach_map_output import ReachabilityMaps
from ik_node.ros.solve_report import SolveReport
from ik_node.ros.target_pipeline import TargetPipeline
from ik_node.ros.targets import Target, stamps_of
from ik_node.solvers import kernels

__all__ = ['IkNode', 'main']

#: How long after its last solve ended the node counts as idle [s]: a target message kept
#: later than that is solved in its own callback (:meth:`IkNode._schedule_solve`).
IDLE_GAP_S = 0.0001
#: Seconds after the node's construction at which the work its first answer does not need (the
#: reachability map, the RViz view) starts when no target has come by then.
STARTUP_GRACE_S = 2.0


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
        self._lock = threading.RLock()  # one solve, timer tick or model change at a time
        # The configuration in force, from the parameters.
        self._params = NodeParameters(self)
        self._config: IkConfig = config_from_flat(self._params.flat, source='parameters',
                                                  require_model=False)
        self._graph: GraphConfig = graph_config_from_flat(self._params.flat,
                                                          source='parameters')
        self._topic_xml = ''  # the description that came by topic
        self._model: Optional[RobotModel] = None
        self._q = np.zeros(0)  # the joint positions published last (chain order)
        self._said_orientation_ignored = False
        # The queue between the target inputs and the solve: the newest target of each tip.
        self._targets = LatestTargets()
        self._solving = threading.Lock()  # held by the callback that drains the queue
        self._schedule_lock = threading.Lock()
        self._solve_queued = False  # a solve task waits in the executor
        self._draining = False  # the inputs' kept messages are being handed on
        self._idle_since = -math.inf  # when the last drain and solve ended (monotonic [s])
        # Outputs.
        send = send_unless_shut_down(self.context)
        self._solution = SolutionOutput(self, send)
        self._markers = MarkerOutput(self, send)
        # A solve's markers go out with its status only while someone subscribes (RViz);
        # without, they stay held and are owed to the first subscriber (_publish_held_markers).
        # (None: an rclpy without resolve_topic_name, which cannot follow a remapping; then
        # they always go out.)
        resolve = getattr(self, 'resolve_topic_name', None)
        self._markers_topic = None if resolve is None else resolve('~/markers')
        self._markers_owed = False
        self._reach = ReachabilityMaps(self, send)
        self._status = StatusReports(self, send, self._targets, self._reach, self._config,
                                     self._graph)
        # Work no answer needs (the reachability map, the RViz view) waits for the first answer
        # or for STARTUP_GRACE_S without a target: its threads would compete with the first
        # solve (and the construction) for the interpreter.
        self._started = False
        self._deferred: Optional[tuple] = None  # (chain, graph) whose map and view wait
        self._grace_timer = self.create_timer(STARTUP_GRACE_S, self._start_deferred)
        # Inputs: target topics, measured state, description, TF; drags of the markers.
        self._inputs = NodeInputs(
            self, self._on_targets, self._on_description, ReentrantCallbackGroup(),
            on_error=lambda message, frame, stamp: self._status.error(message, frame, stamp),
            wake=partial(self._schedule_solve, inline=True), on_skipped=self._targets.count_skipped)
        self._messages = self._inputs.target_messages  # the target messages kept to be solved
        self._drag = DragTargets(self, self._on_targets,
                                 on_error=lambda message: self._status.error(message, ''),
                                 send=send, callback_group=ReentrantCallbackGroup())
        # A target's way from the queue to the solver (frames, TF, planes, every tip's target).
        self._pipeline = TargetPipeline(
            self, self._inputs, self._targets,
            report_error=lambda message, frame, stamp: self._status.error(message, frame, stamp),
            resume=self._solve_all_pending)
        self._moveit = None  # MoveIt's services, attached once the first model is in force
        self._obstacles = ObstacleInput(
            self, lambda: self._config.base_link, self._on_obstacles,
            on_error=lambda message: self._status.error(message, ''), send=send)
        self._inputs.follow(self._graph, self._config.has_model)
        # Targets are answered (refused) while waiting for a model too.
        self._inputs.subscribe_targets(self._config.tip_links, self._config.branched)
        if self._config.has_model:
            self._install(build_robot_model(self._config, self._graph, '', None))
        else:
            self._status.waiting(force=True)
        # MoveIt's services (~/compute_ik...) on their own thread and solvers (None without
        # moveit_msgs), offered with the model in force.
        self._moveit = services.attach(self, self._graph.tf_timeout)
        self._serve(self._model)
        self._timer = self.create_timer(1.0 / self._config.publish_rate, self._on_timer)
        self._changes = ParameterChanges(self, self._params, self._apply_configuration)
        kernels.report(self.get_logger().info)  # which solver path serves: compiled or Python

    # ---------------------------------------------------------------------------- targets
    def _on_targets(self, *targets: Target) -> None:
        """Store the newest target(s); solve pending targets unless another callback already
        is (several targets of one message are stored before any is solved)."""
        if len(targets) == 1:
            self._targets.put(targets[0].tip, targets[0])
        else:  # every tip's target of one message: taken together
            self._targets.put_all({target.tip: target for target in targets})
        if not self._draining:  # a drain is followed by the solve
            self._schedule_solve()

    def _schedule_solve(self, inline: bool = False) -> None:
        """Solve the pending targets in a task queued behind the callbacks already waiting in
        the executor, once for all targets stored until it runs; with ``inline`` (a target
        message was just kept) right here when the node has been idle since its last solve.

        An events executor queues one callback per message that arrives: a target stream
        faster than the solves would, if each callback solved, grow that queue without bound
        (memory) and keep a parameter request waiting behind every message queued before it.
        Storing is cheap, so the queue stays short and a request waits one solve at most.

        A message kept more than :data:`IDLE_GAP_S` after the last solve ended, with no solve
        task queued, is solved in its own callback, which spares the task: it came while
        nothing of the node's waited (a message that came during a solve is taken right after
        it, within that gap, and goes through the task), so that callback holds back only what
        came after it, by one solve.
        """
        executor = self.executor
        if executor is None:  # not spun by an executor (yet): solve right here
            self._solve_all_pending()
            while self._messages.waiting:
                self._solve_all_pending()
            return
        with self._schedule_lock:
            if self._solve_queued:
                return
            inline = inline and time.monotonic() - self._idle_since > IDLE_GAP_S
            if not inline:
                self._solve_queued = True
        if inline:
            self._solve_all_pending()
        else:
            executor.create_task(self._queued_solve)

    def _queued_solve(self) -> None:
        with self._schedule_lock:
            self._solve_queued = False  # a target stored from here on queues the next solve
        self._solve_all_pending()

    def _solve_all_pending(self) -> None:
        """Solve pending targets unless another callback already is (the oldest target message
        kept by each input is handed on first; a task queued behind the executor's waiting
        callbacks takes the next)."""
        self._draining = True
        try:
            self._messages.drain()
        except Exception as exc:  # a bug must not stop the node
            if self.context.ok():
                self._status.error(f'internal error: {type(exc).__name__}: {exc}', '')
        finally:
            self._draining = False
        while self._targets.pending and self._solving.acquire(blocking=False):
            try:
                while self._targets.pending:
                    targets, arrivals = self._targets.take_counted()
                    if not targets:  # taken meanwhile (a new model drops what was pending)
                        break
                    try:
                        self._solve_pending(targets, arrivals)
                    except Exception as exc:  # a bug must not stop the node
                        if self.context.ok():
                            self._status.error(f'internal error: {type(exc).__name__}: {exc}',
                                               '')
            finally:
                self._solving.release()
        if not self._started:  # the first target is answered: what waited for it starts
            self._start_deferred()
        self._idle_since = time.monotonic()
        if self._messages.waiting and self.executor is not None:
            self._schedule_solve()  # the next kept message, behind what waits in the executor

    def _solve_pending(self, targets: Dict[Optional[str], Target],
                       arrivals: Dict[Optional[str], int]) -> None:
        """Solve ``targets`` (by slot: a tip, or None for a serial chain) and publish the
        solution, then its status. The pipeline places them in the base frame and seeds the
        solve (:meth:`TargetPipeline.prepare <ik_node.ros.target_pipeline.TargetPipeline.
        prepare>`; it keeps a target whose TF transform has not arrived yet and tries it again),
        then solves them with every tip's standing target."""
        with self._lock:
            model = self._model
            if model is None:
                self._status.waiting(stamps_of(targets.values()))
                return
            config, chain = model.config, model.chain
            job = self._pipeline.prepare(targets, arrivals, model, self._q)
            if job is None:
                return
            try:
                result = self._pipeline.solve(model, job)
                q = check_publishable(chain, result.joint_positions)
            except IkError as exc:
                self._status.error(f'target refused: {exc}', job.frame, job.stamps)
                return
            except Exception as exc:
                self._status.error(f'solver {config.solver} failed: {type(exc).__name__}: '
                                   f'{exc}', job.frame, job.stamps)
                return
            if result.orientation_ignored and not self._said_orientation_ignored:
                self._said_orientation_ignored = True
                self.get_logger().info(
                    f'solver {config.solver} solves positions only: the orientations of the '
                    'targets are ignored (said once; the diagnostics say so for every solve)')
            verdict = model.guard.check(q, time.monotonic(), job.measured)
            count = self._status.count_solve()
            out_stamp = ''
            if verdict.q is not None:  # held: nothing goes out, the last command stays
                self._q = np.array(verdict.q)
                out_stamp = self._solution.publish(verdict.q, job.seed)  # floats: cheaper
            report = SolveReport(chain, config.solver, result, job.targets,
                                 self._pipeline.standing, q, job.frame, job.stamps, count,
                                 job.seed_note, self._solution.kind, out_stamp, verdict,
                                 partial(collision_outputs, model.solver, q, result)
                                 if has_collision_check(model.solver) else None)
            self._markers.hold(report)
            self._answered(job.stamps, out_stamp, result)
            self._drag.show(config, report)
        if self._status.solve(report):
            self._publish_held_markers()  # markers go out with a status that does

    def long_lived_mark(self) -> tuple:
        """A value that changes when the node has made what it keeps for a long time: a new
        robot model (first in the tuple), the compiled kernels loaded, a reachability map built.
        The executable (:mod:`ik_node.ros.run`) keeps the garbage collector off those."""
        return self._model, kernels.ready(), self._reach.count

    def _answered(self, target_stamps: str, joint_state_stamp: str, result) -> None:
        """Called (lock held) right after every solve's answer is published, with the pair of
        stamps its status carries (``target_stamp``, ``joint_state_stamp``), also when the rate
        gate holds that status back. A no-op: benchmarks/traced_node.py records here."""

    # ---------------------------------------------------------------------------- the timer
    def _on_timer(self) -> None:
        """Re-publish the joint states; send a held status (with its markers) or a heartbeat;
        send the markers owed to a subscriber that came since they were held; move the
        interactive markers to the newest answer held back."""
        with self._lock:
            if self._solution.steady and self._model is not None:
                self._solution.publish(self._q)
        self._drag.flush()
        if self._status.flush() or self._markers_owed:
            self._publish_held_markers()  # those of the result whose status was held

    def _publish_held_markers(self) -> None:
        """Markers of the newest solve not shown yet: envelope, target spheres, miss lines.

        Built and sent only while ``~/markers`` has a subscriber (RViz): a marker array costs
        milliseconds, nobody reads one without. Otherwise they stay held and owed: the timer
        sends the newest to the first subscriber (``~/markers`` is transient local, so RViz
        opened later still gets the markers of the last answer).
        """
        if self._markers_topic is not None:
            try:
                listened = self.count_subscribers(self._markers_topic) > 0
            except Exception:  # the node torn down by a shutdown: nobody to show them to
                if self.context.ok():
                    raise
                return
            if not listened:
                self._markers_owed = True
                return
        self._markers_owed = False
        with self._lock:
            model = self._model
            if model is not None:
                self._markers.publish_held(model.chain, model.config.base_link,
                                           model.config.branched)

    # ----------------------------------------------------------------- the model in force
    def _install(self, model: RobotModel) -> None:
        """Put a model in force (caller holds the lock or is the constructor)."""
        old = self._model
        new_chain = old is None or old.chain is not model.chain
        # First, as it can fail (a topic rclpy refuses): then nothing else has changed.
        self._solution.use(model.plan)
        if self._obstacles.obstacles:  # the topic's obstacles hold for every model
            model.solver.configure_collision(**self._obstacles.world(model.config.collision))
        self._obstacles.show(model.config.base_link,
                             self._obstacles.world(model.config.collision))
        self._model = model
        self._serve(model)
        config, chain = model.config, model.chain
        if new_chain:
            measured, _ = self._inputs.measured(chain)
            self._q = rest_pose(chain) if measured is None else measured
            self._pipeline.use_chain(chain)  # targets meant for the old chain are dropped
            self._said_orientation_ignored = False
            self._inputs.subscribe_targets(config.tip_links, config.branched)
        if self._solution.steady:
            self._solution.publish(self._q)
        graph = model.plan.graph
        self._markers.set_thresholds(graph.singular_threshold, graph.limit_margin_threshold)
        self._markers.envelope(chain, model.solver, config.base_link, reset=new_chain)
        self._in_background(chain, graph)
        self._drag.set_robot(config, chain, self._q,
                             six_dof=not config.branched and model.solver.supports_orientation)
        self._status.set_robot(config)
        self._status.force_next()
        if new_chain:
            self._status.idle(config.solver)
        self.get_logger().info(
            f'{model_name(self._config)}: {config.base_link} -> '
            f'{", ".join(config.tip_links)} ({chain.n} joints), solver '
            f'{config.solver}, output {self._solution.kind} on {self._solution.topic}; '
            f'targets on {", ".join(self._inputs.target_topics)}')

    def _in_background(self, chain, graph: GraphConfig) -> None:
        """Compute the reachability map and the RViz view of ``chain`` in the background: now,
        or once the node has started (:meth:`_start_deferred`)."""
        if self._started:
            self._markers.prepare_view(chain)
            self._reach.follow(chain, graph.reachability_samples, graph.reachability_voxel_size)
        else:
            self._deferred = (chain, graph)

    def _start_deferred(self) -> None:
        """The first answer is out (or STARTUP_GRACE_S passed without a target): start the work
        that waited for it."""
        self._grace_timer.cancel()
        with self._lock:
            if self._started:
                return
            self._started = True
            job, self._deferred = self._deferred, None
            if job is not None:
                self._in_background(*job)

    def _on_obstacles(self, obstacles) -> None:
        """New obstacles on ~/obstacles: the solver in force checks against them from now."""
        with self._lock:
            model = self._model
            if model is None:
                return
            world = self._obstacles.world(model.config.collision)
            try:
                model.solver.configure_collision(**world)
            except IkError as exc:
                self._status.error(f'obstacles refused: {exc}', '')
                return
            self._obstacles.show(model.config.base_link, world)
            self._serve(model)

    def _serve(self, model: Optional[RobotModel]) -> None:
        """The services answer from ``model`` (None: no model) with the obstacles in force."""
        if self._moveit is not None:
            graph = self._graph
            self._moveit.use_model(
                None if model is None else model.config,
                {} if model is None else self._obstacles.world(model.config.collision),
                graph.group_name,
                self.resolve_topic_name(graph.state_topic) if graph.state_topic else '',
                graph.state_timeout)

    def _uninstall(self) -> None:
        """No robot model (parameters cleared): wait for one on the description topic."""
        if self._model is not None:
            self._markers.clear(self._model.config.base_link)
            self._reach.clear(self._model.chain)
        self._model = None
        self._serve(None)
        self._deferred = None
        self._drag.clear()
        self._status.set_robot(None)
        self._status.waiting(force=True)

    def _apply_configuration(self, config: IkConfig, graph: GraphConfig) -> None:
        """Put new parameters in force (called by :class:`ParameterChanges`); raises, changing
        nothing, when their model cannot be built."""
        with self._lock:
            source_xml = config.urdf_xml() if config.has_model else self._topic_xml
            model = build_robot_model(config, graph, self._topic_xml, self._model) \
                if source_xml else None
            old_config = self._config
            self._config, self._graph = config, graph
            self._status.configure(config, graph)
            self._inputs.follow(graph, config.has_model)
            self._inputs.subscribe_targets(config.tip_links, config.branched)
            if model is not None:
                self._install(model)
            else:
                self._uninstall()
        if config.publish_rate != old_config.publish_rate:
            self.destroy_timer(self._timer)
            self._timer = self.create_timer(1.0 / config.publish_rate, self._on_timer)

    def _on_description(self, xml: str) -> None:
        """A URDF arrived on the description topic: rebuild, or refuse it and keep the old one."""
        with self._lock:
            if self._config.has_model or xml == self._topic_xml:
                return
            try:
                check_description_size(xml, self._config.max_description_bytes)
                model = build_robot_model(self._config, self._graph, xml, self._model)
            except Exception as exc:
                kept = 'the previous one stays in force' if self._model else \
                    'still waiting for a valid one'
                self._status.error(f'robot_description on {self._inputs.description_topic} '
                                   f'refused ({kept}): {exc}', '', force=True)
                return
            self._topic_xml = xml
            self._install(model)

    def destroy_node(self) -> None:
        self._reach.stop()
        if self._moveit is not None:
            self._moveit.close()
        self._inputs.close()  # the TF listener's thread, before the context goes
        super().destroy_node()


def main(args: Optional[List[str]] = None) -> int:
    """Entry point of the ``ik_node`` executable (:func:`ik_node.ros.run.main` with
    :class:`IkNode`). Returns the exit status."""
    return run.main(args, IkNode)


if __name__ == '__main__':
    sys.exit(main())
