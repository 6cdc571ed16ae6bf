"""The node's statuses on ``/diagnostics``: what each solve, error and wait reports, rate-gated.

:class:`StatusReports` builds the statuses (one per solve, refused target, missing model; a
solve of several tips adds one status per tip, named ``<node>: ik: <tip>``, in the same array) and
offers them to a :class:`~ik_node.ros.outputs.status_rate_gate.StatusRateGate`: a status goes out
at once when the gate lets it through, else the newest is held for the timer's
:meth:`~StatusReports.flush`. Statuses are built lazily: most solves of a fast stream are never
reported one by one, so their text and measures are never computed. :class:`DiagnosticsOutput`
owns the publisher and re-sends the last status every second while nothing else goes out
(diagnostic monitors).
"""

from __future__ import annotations

import math
import threading
import time
from functools import partial
from typing import Any, Callable, Dict, List, Optional, Protocol

from builtin_interfaces.msg import Time as TimeMsg
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node

from ik_node.config.node_config import IkConfig
from ik_node.config.ros_graph import GraphConfig
from ik_node.model.quality import fragility_report
from ik_node.ros.outputs.status_cdr import DiagnosticArrayCdr
from ik_node.ros.outputs.status_format import (ERROR, OK, WARN, Status, diagnostic_array,
                                               diagnostic_status, error_values, result_level,
                                               result_summary, result_values, tip_level,
                                               tip_summary, tip_values)
from ik_node.ros.inputs.latest_targets import LatestTargets
from ik_node.ros.outputs.jump_guard import guard_values
from ik_node.ros.outputs.solve_report import SolveReport
from ik_node.ros.outputs.solution_output import Send
from ik_node.ros.outputs.status_rate_gate import StatusRateGate

#: ``/diagnostics`` is global on purpose: aggregators listen there; status names carry the
#: node's fully qualified name so namespaced nodes are told apart.
DIAGNOSTICS_TOPIC = '/diagnostics'
HEARTBEAT_PERIOD_S = 1.0


class ReachDistances(Protocol):
    """What a status reads of the reachability map
    (:class:`~ik_node.ros.rviz.reach_map_output.ReachabilityMaps`): whether one is built, and a
    point's distance to the nearest sampled reachable tip position [m] (None: unknown)."""

    ready: bool

    def distance(self, tip: str, p) -> Optional[float]: ...


def model_name(config: IkConfig) -> str:
    """How statuses and logs name the robot model: its URDF file, else ``robot_description``."""
    return config.urdf_file or 'robot_description'


def node_values(report: SolveReport) -> Dict[str, str]:
    """The node's own key-values of a solve's status, beside the solver's: the seed, the output,
    the stamp of the message sent, the jump guard's verdict, the collision check's distances
    and a planar projection."""
    values = {'seed': report.seed_note, 'output': report.output,
              'joint_state_stamp': report.joint_state_stamp,
              'jump_guard': report.guard.action if report.guard is not None else 'pass',
              **(guard_values(report.guard) if report.guard is not None else {}),
              **report.collision}
    if report.projected_m is not None:
        values['planar_projection_m'] = f'{report.projected_m:.4g}'
    return values


#: at most one logged error per this many seconds (the statuses carry every refusal's reason).
ERROR_LOG_PERIOD_S = 1.0


class DiagnosticsOutput:
    """The ``/diagnostics`` publisher: sends statuses, re-sends the last one as a heartbeat.

    The arrays go out serialized by :class:`DiagnosticArrayCdr` where its probe passes, else as
    messages."""

    def __init__(self, node: Node, send: Send) -> None:
        self._node, self._send = node, send
        self._pub = node.create_publisher(DiagnosticArray, DIAGNOSTICS_TOPIC, 10)
        self._cdr = DiagnosticArrayCdr.probe()
        self._last: Optional[List[Status]] = None
        self._last_time = -math.inf

    def send(self, status) -> None:
        """Publish one status, or a list of them in one array (a solve of several tips)."""
        statuses = list(status) if isinstance(status, list) else [status]
        sec, nanosec = divmod(self._node.get_clock().now().nanoseconds, 1_000_000_000)
        self._last, self._last_time = statuses, time.monotonic()
        cdr = self._cdr
        self._send(self._pub, diagnostic_array(statuses, TimeMsg(sec=sec, nanosec=nanosec))
                   if cdr is None else cdr.data(statuses, sec, nanosec))

    def heartbeat(self) -> None:
        """Re-send the last status when nothing went out for a second (diagnostic monitors)."""
        if self._last is not None and time.monotonic() - self._last_time >= HEARTBEAT_PERIOD_S:
            self.send(self._last)


class StatusReports:
    """What the node reports on ``/diagnostics``, through the status rate gate.

    Args:
        node: names the statuses (its fully qualified name) and logs errors and waits.
        send: how to publish.
        targets: the target queue, whose ``skipped`` count every status carries.
        reach: the reachability maps, for the distance of a missed target to the sampled
            workspace.
        config: the configuration in force (solver name, model name, status rate).
        graph: the graph configuration in force (description topic, fragility thresholds).

    Thread-safe: the gate has its own lock, so reports may come from any callback.
    """

    def __init__(self, node: Node, send: Send, targets: LatestTargets, reach: ReachDistances,
                 config: IkConfig, graph: GraphConfig) -> None:
        self._node, self._targets, self._reach = node, targets, reach
        self._out = DiagnosticsOutput(node, send)
        self._lock = threading.Lock()
        self._name = f'{node.get_fully_qualified_name().lstrip("/")}: ik'
        self._robot_config: Optional[IkConfig] = None
        self._hardware_id = ''
        self.solve_count = 0
        self._next_error_log = -math.inf
        self.configure(config, graph)

    # ------------------------------------------------------------------------- what is in force
    def configure(self, config: IkConfig, graph: GraphConfig) -> None:
        """Report for a new configuration: a new gate, and the next status goes out at once."""
        self._config, self._graph = config, graph
        with self._lock:
            self._gate = StatusRateGate(config.diagnostics_rate)
            self._force = True
        self._hardware_id = self._describe()

    def set_robot(self, config: Optional[IkConfig]) -> None:
        """The robot model in force (its configuration; None: waiting for one), which the
        statuses' hardware id names."""
        self._robot_config = config
        self._hardware_id = self._describe()

    def _describe(self) -> str:
        name, robot = model_name(self._config), self._robot_config
        return f'{name}: waiting' if robot is None else \
            f'{name}: {robot.base_link} -> {", ".join(robot.tip_links)}'

    def force_next(self) -> None:
        """Let the next status through whatever the rate (the first after a change)."""
        with self._lock:
            self._force = True

    def count_solve(self) -> int:
        """Count a published solve; returns the count (``solve_count``)."""
        self.solve_count += 1
        return self.solve_count

    # ------------------------------------------------------------------------------- reports
    def offer(self, level: bytes, message: Callable[[], str],
              values: Callable[[], Dict[str, str]], force: bool = False,
              tips: Optional[Callable[[str, str], List]] = None,
              final_level: Optional[Callable[[], bytes]] = None) -> bool:
        """Publish a status now if the rate gate lets it through, else hold it for
        :meth:`flush`. Returns True if it went out.

        ``message`` and ``values`` are built only when needed (most solves of a fast stream
        are not reported individually); so are ``tips(name, hardware_id)``, the statuses of
        each tip of a solve of several tips, sent in the same array after the solve's own, and
        ``final_level()``, the status's level when a measure made at build time may raise
        ``level`` (a reached solve that turns out fragile); the gate decides on ``level``.
        """
        name, hardware_id = self._name, self._hardware_id

        def build():
            status = diagnostic_status(name, hardware_id,
                                       level if final_level is None else final_level(),
                                       message(), values())
            return status if tips is None else [status] + tips(name, hardware_id)
        return self._offer_built(level, build, force)

    def _offer_built(self, level: bytes, build: Callable[[], Any], force: bool = False) -> bool:
        """:meth:`offer` of the status (or statuses) ``build()`` returns, built only when it
        goes out."""
        with self._lock:
            send = self._gate.offer(time.monotonic(), level, build, force or self._force)
            if send:
                self._force = False
        if send:
            self._out.send(build())
        return send

    def error(self, message: str, frame: str, target_stamp: str = '',
              force: bool = False) -> None:
        """ERROR (logged, throttled): a refused target (``target_stamp``) or a refused input."""
        now = time.monotonic()
        if now >= self._next_error_log:  # one line a second: a flood of bad targets costs little
            self._next_error_log = now + ERROR_LOG_PERIOD_S
            self._node.get_logger().error(message)
        solver, skipped, count = self._config.solver, self._targets.skipped, self.solve_count
        self.offer(ERROR, lambda: message,
                   lambda: error_values(solver, frame, skipped, count, message, target_stamp),
                   force)

    def waiting(self, target_stamp: str = '', force: bool = False) -> None:
        """WARN: no robot model yet (a target, if any, is refused)."""
        topic = self._graph.description_topic
        message = f'waiting for robot_description on {topic}' + \
            (': target refused' if target_stamp else '')
        if target_stamp:
            self._node.get_logger().warning(message, throttle_duration_sec=2.0)
        values = {**error_values(self._config.solver, '', self._targets.skipped,
                                 self.solve_count, message, target_stamp),
                  'status': 'waiting'}
        self.offer(WARN, lambda: message, lambda: values, force)

    def idle(self, solver: str) -> None:
        """OK, sent at once: a new robot model waits for its first target."""
        values = {**error_values(solver, '', self._targets.skipped, self.solve_count,
                                 'waiting for a target'),
                  'status': 'idle'}
        self.offer(OK, lambda: 'waiting for a target', lambda: values, force=True)

    def solve(self, report: SolveReport) -> bool:
        """Offer a solve's status to the rate gate; returns True if it went out.

        The jump guard's verdict (``report.guard``): a held answer is an ERROR, a limited one at
        least a WARN; the message leads with the guard's line (which joint, how far, the bound).

        A solve of several tips also reports one status per targeted tip, naming the target each
        tip answers (``report.tip_stamps``).

        The gate decides on the level of what a solve says for certain (reached or not, the
        guard's verdict): an ERROR goes out at once, so does a change of that level. The
        fragility measures (a Jacobian and its SVD) and the reachability map distance are
        computed only when the status is built, at most ``diagnostics_rate`` times a second
        while targets stream: a reached solution that is fragile is WARN in the status that
        reports it, not a reason to send one sooner.
        """
        result, guard = report.result, report.guard
        level = result_level(result)
        guarded = guard is not None and guard.action != 'pass'
        if guarded:
            level = ERROR if guard.action == 'hold' else max(level, WARN)
        return self._offer_built(level, partial(self._solve_status, report, level, guarded,
                                                self._targets.skipped))

    def _solve_status(self, report: SolveReport, level: bytes, guarded: bool,
                      skipped: int) -> List:
        """The statuses of a solve (:meth:`solve`), built when they go out: the solve's own,
        then one per targeted tip of a solve of several tips."""
        chain, result, guard = report.chain, report.result, report.guard
        placed = report.placed
        tips = [tip or chain.tip_link for tip in placed]
        position_only = result.orientation_ignored or \
            all(quat is None for _, quat in placed.values())
        values = node_values(report)
        try:
            quality, fragile = fragility_report(
                chain, report.q, tips, position_only, self._graph.singular_threshold,
                self._graph.limit_margin_threshold, reached=result.reachable)
            values.update(quality)
        except Exception as exc:  # a measure for the user never fails a solve
            values['quality'] = f'not measured: {type(exc).__name__}: {exc}'
            fragile = ''
        reach = self._reach
        if not result.reachable and reach.ready:
            distances = [d for tip, (p, _) in placed.items()
                         if (d := reach.distance(tip or chain.tip_link, p)) is not None]
            if distances:
                values['map_distance_m'] = f'{max(distances):.4g}'
        # a reached solution near a singularity or a limit: WARN
        final_level = WARN if level == OK and fragile else level
        text = result_summary(result, report.solver)
        if report.projected_m is not None:
            text += (f"; point target projected onto the chain's plane (moved "
                     f"{float(f'{report.projected_m:.4g}'):.3g} m)")
        text = f'{text}; fragile: {fragile}' if fragile else text
        message = f'{guard.message}; {text}' if guarded else text
        name, hardware_id = self._name, self._hardware_id
        statuses = [diagnostic_status(
            name, hardware_id, final_level, message,
            result_values(result, report.solver, report.frame, skipped, report.count,
                          report.stamps, values))]
        if result.tips and len(chain.tip_links) > 1:
            tip_stamps = report.tip_stamps
            statuses += [diagnostic_status(f'{name}: {tip}', hardware_id, tip_level(tip_result),
                                           tip_summary(tip, tip_result),
                                           tip_values(tip, tip_result, report.frame,
                                                      tip_stamps.get(tip, '')))
                         for tip, tip_result in result.tips.items()]
        return statuses

    # ------------------------------------------------------------------------------ the timer
    def flush(self) -> bool:
        """Send the held status if its time has come, else the heartbeat. True if one was
        held and sent."""
        with self._lock:
            held: List = self._gate.flush(time.monotonic())
        for build in held:
            self._out.send(build())
        if not held:
            self._out.heartbeat()
        return bool(held)

