"""When the node solves, and what one solve does: the scheduler, solve-guard-publish, and the
markers held for RViz.

The path of a target: a subscription keeps the message (a queue per topic,
:class:`~ik_node.ros.inputs.target_subscriptions.TargetSubscriptions`) and wakes the loop
(:meth:`SolveLoop.wake`), which solves right there when the node is idle, else queues one solve
task in the node's executor, behind the callbacks already waiting there (no other thread). A
solve hands on the oldest kept message of each topic (the newest where the node is behind: see
the inputs) to :meth:`SolveLoop.on_targets`, which stores its targets in a
:class:`~ik_node.ros.inputs.latest_targets.LatestTargets` (keep-last per tip, as a drag does),
solves them, and queues the next task while messages are kept: every message of a stream the
node keeps up with is answered, no backlog builds up however fast targets stream, and a
parameter request waits for one solve at most.

One solve (:meth:`SolveLoop._solve_pending`) has the pipeline place and solve the targets
(:mod:`ik_node.ros.solving.target_pipeline`), checks the solution, passes it through the model's
:class:`~ik_node.ros.outputs.jump_guard.JumpGuard` (which holds or limits an answer that would
move a joint too far), publishes what the guard lets through, and hands one immutable
:class:`~ik_node.ros.outputs.solve_report.SolveReport` to the markers and the status. The
node's lock keeps a solve, the timer and a model change from overlapping.
"""

from __future__ import annotations

import math
import threading
import time
from functools import partial
from typing import Callable, Dict, Optional

import numpy as np
from rclpy.node import Node

from ik_node.errors import IkError
from ik_node.ros.inputs.latest_targets import LatestTargets
from ik_node.ros.inputs.targets import Target, stamps_of
from ik_node.ros.model_lifecycle import ModelLifecycle, NodeParts
from ik_node.ros.outputs.collision_hold import collision_hold
from ik_node.ros.outputs.solution_output import check_publishable
from ik_node.ros.outputs.solve_report import Once, SolveReport
from ik_node.solvers.collision_guard import collision_outputs, has_collision_check

#: How long after its last solve ended the node counts as idle [s]: a target message kept
#: later than that is solved in its own callback (:meth:`SolveLoop.wake`).
IDLE_GAP_S = 0.0001


class SolveLoop:
    """Schedules the solves of the targets kept, runs each, and sends its answer out.

    Args:
        node: the node (its executor, context and logger).
        lock: the node's lock, held around each solve and the timer's outputs.
        targets: the newest pending target of each tip (what a solve takes).
        answered: ``answered(target_stamps, joint_state_stamp, result)``, called (lock held)
            right after every solve's answer is published (the node's observation hook).
        kept: called when a target message was just kept, before the loop is woken (the
            node's observation hook).

    :meth:`connect` gives it the node's parts and model, once they are made (they take the
    loop's callbacks).
    """

    def __init__(self, node: Node, lock: threading.RLock, targets: LatestTargets,
                 answered: Callable[..., None], kept: Callable[[], None]) -> None:
        self._node, self._lock, self._targets = node, lock, targets
        self._answered, self._kept = answered, kept
        self._parts: Optional[NodeParts] = None
        self._life: Optional[ModelLifecycle] = None
        self._messages = None  # the target messages kept to be solved
        self._solving = threading.Lock()  # held by the callback that drains the queue
        self._schedule_lock = threading.Lock()
        self._solve_queued = False  # a solve task waits in the executor
        self._draining = False  # the inputs' kept messages are being handed on
        self._idle_since = -math.inf  # when the last drain and solve ended (monotonic [s])
        self._said_orientation_ignored = None  # the chain it was said for
        # A solve's markers go out with its status only while someone subscribes (RViz);
        # without, they stay held and are owed to the first subscriber (publish_held_markers).
        # (None: an rclpy without resolve_topic_name, which cannot follow a remapping; then
        # they always go out.)
        resolve = getattr(node, 'resolve_topic_name', None)
        self._markers_topic = None if resolve is None else resolve('~/markers')
        self.markers_owed = False

    def connect(self, parts: NodeParts, life: ModelLifecycle) -> None:
        """The parts a solve uses and the model in force (before the first target)."""
        self._parts, self._life = parts, life
        self._messages = parts.inputs.target_messages

    # ------------------------------------------------------------------------- scheduling
    def on_targets(self, *targets: Target) -> None:
        """Store the newest target(s); solve pending targets unless another callback already
        is (several targets of one message are stored before any is solved)."""
        if len(targets) == 1:
            self._targets.put(targets[0].tip, targets[0])
        else:  # every tip's target of one message: taken together
            self._targets.put_all({target.tip: target for target in targets})
        if not self._draining:  # a drain is followed by the solve
            self.schedule()

    def wake(self) -> None:
        """A target message was just kept: solve (see :meth:`schedule`, ``inline``)."""
        self._kept()
        self.schedule(inline=True)

    def schedule(self, inline: bool = False) -> None:
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
        executor = self._node.executor
        if executor is None:  # not spun by an executor (yet): solve right here
            self.solve_all_pending()
            while self._messages.waiting:
                self.solve_all_pending()
            return
        with self._schedule_lock:
            if self._solve_queued:
                return
            inline = inline and time.monotonic() - self._idle_since > IDLE_GAP_S
            if not inline:
                self._solve_queued = True
        if inline:
            self.solve_all_pending()
        else:
            executor.create_task(self._queued_solve)

    def _queued_solve(self) -> None:
        with self._schedule_lock:
            self._solve_queued = False  # a target stored from here on queues the next solve
        self.solve_all_pending()

    def solve_all_pending(self) -> None:
        """Solve pending targets unless another callback already is (the oldest target message
        kept by each input is handed on first; a task queued behind the executor's waiting
        callbacks takes the next)."""
        self._draining = True
        try:
            self._messages.drain()
        except Exception as exc:  # a bug must not stop the node
            self._internal_error(exc)
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
                        self._internal_error(exc)
            finally:
                self._solving.release()
        if not self._life.started:  # the first target is answered: what waited for it starts
            self._life.start_deferred()
        self._idle_since = time.monotonic()
        if self._messages.waiting and self._node.executor is not None:
            self.schedule()  # the next kept message, behind what waits in the executor

    def _internal_error(self, exc: Exception) -> None:
        if self._node.context.ok():
            self._parts.status.error(f'internal error: {type(exc).__name__}: {exc}', '')

    # ------------------------------------------------------------------------- one solve
    def _solve_pending(self, targets: Dict[Optional[str], Target],
                       arrivals: Dict[Optional[str], int]) -> None:
        """Solve ``targets`` (by slot: a tip, or None for a serial chain) and publish the
        solution, then its status. The pipeline places them in the base frame and seeds the
        solve (:meth:`TargetPipeline.prepare <ik_node.ros.solving.target_pipeline.
        TargetPipeline.prepare>`; it keeps a target whose TF transform has not arrived yet and
        tries it again), then solves them with every tip's standing target."""
        parts, life = self._parts, self._life
        with self._lock:
            model = life.model
            if model is None:
                parts.status.waiting(stamps_of(targets.values()))
                return
            config, chain = model.config, model.chain
            job = parts.pipeline.prepare(targets, arrivals, model, life.q)
            if job is None:
                return
            try:
                result = parts.pipeline.solve(model, job)
                q = check_publishable(chain, result.joint_positions)
            except IkError as exc:
                parts.status.error(f'target refused: {exc}', job.frame, job.stamps)
                return
            except Exception as exc:
                parts.status.error(f'solver {config.solver} failed: {type(exc).__name__}: '
                                   f'{exc}', job.frame, job.stamps)
                return
            if result.orientation_ignored and self._said_orientation_ignored is not chain:
                self._said_orientation_ignored = chain
                self._node.get_logger().info(
                    f'solver {config.solver} solves positions only: the orientations of the '
                    'targets are ignored (said once; the diagnostics say so for every solve)')
            verdict = collision_hold(model.solver, result, q) or \
                model.guard.check(q, time.monotonic(), job.measured)
            count = parts.status.count_solve()
            out_stamp = ''
            if verdict.q is not None:  # held: nothing goes out, the last command stays
                life.q = np.array(verdict.q)
                out_stamp = parts.solution.publish(verdict.q, job.seed)  # floats: cheaper
            report = SolveReport(
                chain=chain, solver=config.solver, result=result, targets=job.targets,
                standing=parts.pipeline.standing, q=q, frame=job.frame, stamps=job.stamps,
                count=count, seed_note=job.seed_note, output=parts.solution.kind,
                joint_state_stamp=out_stamp, guard=verdict,
                collision_check=Once(partial(collision_outputs, model.solver, q, result))
                if has_collision_check(model.solver) else None)
            parts.markers.hold(report)
            self._answered(job.stamps, out_stamp, result)
            parts.drag.show(config, report)
        if parts.status.solve(report):
            self.publish_held_markers()  # markers go out with a status that does

    # ------------------------------------------------------------------------- the timer
    def tick(self) -> None:
        """Re-publish the joint states; send a held status (with its markers) or a heartbeat;
        send the markers owed to a subscriber that came since they were held; move the
        interactive markers to the newest answer held back."""
        parts = self._parts
        with self._lock:
            if parts.solution.steady and self._life.model is not None:
                parts.solution.publish(self._life.q)
        parts.drag.flush()
        if parts.status.flush() or self.markers_owed:
            self.publish_held_markers()  # those of the result whose status was held

    def publish_held_markers(self) -> None:
        """Markers of the newest solve not shown yet: envelope, target spheres, miss lines.

        Built and sent only while ``~/markers`` has a subscriber (RViz): a marker array costs
        milliseconds, nobody reads one without. Otherwise they stay held and owed: the timer
        sends the newest to the first subscriber (``~/markers`` is transient local, so RViz
        opened later still gets the markers of the last answer).
        """
        if self._markers_topic is not None:
            try:
                listened = self._node.count_subscribers(self._markers_topic) > 0
            except Exception:  # the node torn down by a shutdown: nobody to show them to
                if self._node.context.ok():
                    raise
                return
            if not listened:
                self.markers_owed = True
                return
        self.markers_owed = False
        with self._lock:
            model = self._life.model
            if model is not None:
                self._parts.markers.publish_held(model.chain, model.config.base_link,
                                                 model.config.branched)
