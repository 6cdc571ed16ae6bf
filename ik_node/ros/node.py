"""The ROS 2 node ``ik_node``: targets in, joint states or commands, diagnostics and markers out.

Wiring only: parameters are declared from the specs in :mod:`ik_node.config.node_config` and
:mod:`ik_node.config.ros_graph` and validated there; inputs (targets, measured state, robot
description,
TF) live in :mod:`ik_node.ros.inputs`, outputs (solution, diagnostics) in
:mod:`ik_node.ros.outputs`, markers in :mod:`ik_node.ros.marker_output`.

Targets: a subscription callback (keep-last depth 1) stores its target as the newest pending
one; if no solve is running it solves right there (no hand-over to another thread), then keeps
solving the newest pending target until none is left, so no backlog builds up however fast
targets stream. A lock keeps a solve, the timer and a parameter or description change from
overlapping, so no output ever mixes two chains.
"""

from __future__ import annotations

if __name__ == '__main__':  # run as a program: hold Ctrl-C back until the node can end cleanly
    import _signal  # the builtin C module: no import time (the `signal` module takes ~ms)
    _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGINT, _signal.SIGTERM})

import dataclasses  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
from typing import Any, Dict, List, Optional  # noqa: E402

import numpy as np  # noqa: E402
from rcl_interfaces.msg import SetParametersResult  # noqa: E402
from rclpy.callback_groups import ReentrantCallbackGroup  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from ik_node.ros import messages as conv  # noqa: E402
from ik_node.config.node_config import (IkConfig, build_chain, build_solver,  # noqa: E402
                            canonical_updates, config_from_flat)
from ik_node.errors import IkError, TargetError  # noqa: E402
from ik_node.config.ros_graph import GraphConfig, graph_config_from_flat, moving_joints  # noqa: E402
from ik_node.model.quality import fragility_report  # noqa: E402
from ik_node.ros.inputs import (DescriptionListener, MeasuredState,  # noqa: E402
                                TargetSubscriptions, TfFrames)
from ik_node.ros.interactive_hooks import InteractiveHooks  # noqa: E402
from ik_node.ros.interactive import INTERACTIVE_PARAMS, InteractiveTargets  # noqa: E402
from ik_node.ros.outputs import (DiagnosticsOutput, OutputPlan, ResultOutput,  # noqa: E402
                                 StatusReports)
from ik_node.ros.parameters import ParameterDeclarations, plain, string_parameter  # noqa: E402
from ik_node.ros.reach_map_output import ReachabilityMaps  # noqa: E402
from ik_node.ros import run  # noqa: E402
from ik_node.ros.marker_output import MarkerOutput  # noqa: E402
from ik_node.model.urdf_checks import check_description_size  # noqa: E402

__all__ = ['IkNode', 'main']



@dataclasses.dataclass(frozen=True)
class _Model:
    """What one robot description gives: swapped as a whole, never piecemeal."""

    config: IkConfig
    chain: Any
    solver: Any
    plan: OutputPlan


class IkNode(ParameterDeclarations, StatusReports, InteractiveHooks, Node):
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
        self._lock = threading.RLock()
        self._names = self._declare_parameters()
        for name, spec in INTERACTIVE_PARAMS.items():  # read where used, not in the config
            self._declare_spec(name, spec)
        self._check_overrides()
        fixes = canonical_updates({name: self._param_value(name) for name in self._names})
        if fixes:  # store what is in force: solver ' FABRIK ' in a file is kept as 'fabrik'
            self.set_parameters([string_parameter(k, v) for k, v in fixes.items()])
        self._flat = {name: value for name in self._names
                      if (value := self._param_value(name)) is not None}
        config = config_from_flat(self._flat, source='parameters', require_model=False)
        graph = graph_config_from_flat(self._flat, source='parameters')
        self._config, self._graph = config, graph
        self._topic_xml = ''  # the description that came by topic
        self._model: Optional[_Model] = None
        self._solve_count = 0
        self._diag = DiagnosticsOutput(self, self._send, config.diagnostics_rate)
        self._markers = MarkerOutput(self, self._send)
        self._reach = ReachabilityMaps(self, self._send)
        self._reach_key: Optional[tuple] = None
        self._output: Optional[ResultOutput] = None
        self._targets = conv.LatestTargets()
        self._solving = threading.Lock()
        self._target_inputs = TargetSubscriptions(self, self._on_target, ReentrantCallbackGroup())
        self._released: Dict[Optional[str], conv.Target] = {}  # dropped markers, to snap
        self._interactive = InteractiveTargets(
            self, on_target=self._on_marker_target, send=self._send,
            on_error=lambda message: self._report_error(message, ''),
            callback_group=ReentrantCallbackGroup())
        self._tf = TfFrames(self)
        self._state: Optional[MeasuredState] = None
        self._description: Optional[DescriptionListener] = None
        self._sub_tips: Optional[tuple] = None
        self._sync_inputs(None)
        self._subscribe_targets(config)  # targets are answered (refused) while waiting too
        if config.has_model:
            self._install(self._build(config, graph))
        else:
            self._report_waiting(force=True)
        self._timer = self.create_timer(1.0 / config.publish_rate, self._on_timer)
        if hasattr(self, 'add_pre_set_parameters_callback'):  # Iron and later (not Humble)
            self.add_pre_set_parameters_callback(self._before_set_parameters)
        self.add_on_set_parameters_callback(self._on_set_parameters)

    # ------------------------------------------------------------------------- parameters
    def _on_set_parameters(self, params: List[Parameter]) -> SetParametersResult:
        updates = {p.name: plain(p.value) for p in params if p.name in self._names}
        if not updates:
            return SetParametersResult(successful=True)
        fixes = canonical_updates(updates)  # only without a pre-set callback (Humble)
        if fixes:
            return SetParametersResult(successful=False, reason='refused: ' + '; '.join(
                f'{k} = {updates[k]!r} is not in canonical form: set {v!r}'
                for k, v in fixes.items()))
        flat = {k: v for k, v in {**self._flat, **updates}.items() if v is not None}
        with self._lock:
            try:
                config = config_from_flat(flat, source='refused', require_model=False)
                graph = graph_config_from_flat(flat, source='refused')
                model = self._build(config, graph) if self._source_xml(config) else None
            except IkError as exc:
                return SetParametersResult(successful=False, reason=str(exc))
            except Exception as exc:  # a bug in a solver's constructor must not kill the node
                return SetParametersResult(successful=False,
                                           reason=f'refused: {type(exc).__name__}: {exc}')
            old_config, old_graph = self._config, self._graph
            self._flat, self._config, self._graph = flat, config, graph
            self._diag.set_rate(config.diagnostics_rate)
            self._sync_inputs(old_graph)
            self._subscribe_targets(config)
            if model is not None:
                self._install(model)
            else:
                self._uninstall()
        if config.publish_rate != old_config.publish_rate:
            self.destroy_timer(self._timer)
            self._timer = self.create_timer(1.0 / config.publish_rate, self._on_timer)
        self.get_logger().info(f'parameters set: {", ".join(sorted(updates))}')
        return SetParametersResult(successful=True)

    # ----------------------------------------------------------------------- the model
    def _source_xml(self, config: IkConfig) -> str:
        """The URDF in force for ``config``: its own, else the one that came by topic ('')."""
        return config.urdf_xml() if config.has_model else self._topic_xml

    def _build(self, config: IkConfig, graph: GraphConfig) -> _Model:
        """Chain, solver and output plan of a configuration (the current chain is reused when
        its source did not change). Raises IkError with the reason."""
        effective = config if config.has_model else \
            dataclasses.replace(config, robot_description=self._topic_xml)
        current = self._model
        if current is not None and current.config.chain_source() == effective.chain_source():
            chain = current.chain
        else:
            chain = build_chain(effective)
        solver = build_solver(effective, chain)
        plan = OutputPlan(graph, chain, moving_joints(chain.robot) if chain.robot else [])
        return _Model(effective, chain, solver, plan)

    def _install(self, model: _Model) -> None:
        """Put a model in force (caller holds the lock or is the constructor)."""
        old = self._model
        new_chain = old is None or old.chain is not model.chain
        self._model = model
        if new_chain:
            self._q = model.chain.clip(np.zeros(model.chain.n))
            self._known: Dict[str, np.ndarray] = {}  # branched: last target of every tip
            self._markers_due = None
            measured, _ = self._measured(model.chain)
            if measured is not None:
                self._q = measured
            self._subscribe_targets(model.config)
        if self._output is None or self._output.kind != model.plan.graph.output or \
                self._output.topic != model.plan.graph.topic:
            if self._output is not None:
                self._output.destroy()
            self._output = ResultOutput(self, model.plan, self._send)
        else:
            self._output.plan = model.plan
        if self._output.steady:
            self._output.publish(self._q)
        self._markers.envelope(model.chain, model.solver, model.config.base_link, reset=new_chain)
        graph = model.plan.graph
        reach_key = (id(model.chain), graph.reachability_samples, graph.reachability_voxel_size)
        if reach_key != self._reach_key:
            self._reach_key = reach_key
            self._reach.start(model.chain, graph.reachability_samples,
                              graph.reachability_voxel_size)
        tips_T = model.chain.fk_tips(self._q)
        six_dof = not model.config.branched and model.solver.supports_orientation
        self._interactive.set_tips(model.config.base_link,
                                   [(tip, tips_T[tip], six_dof) for tip in model.config.tip_links])
        self._diag.force = True
        if new_chain:
            values = {**conv.error_values(model.config.solver, '', self._targets.skipped,
                                          self._solve_count, 'waiting for a target'),
                      'status': 'idle'}
            self._offer(conv.OK, lambda: 'waiting for a target', lambda: values, force=True)
        self.get_logger().info(
            f'{self._model_name()}: {model.config.base_link} -> '
            f'{", ".join(model.config.tip_links)} ({model.chain.n} joints), solver '
            f'{model.config.solver}, output {self._output.kind} on {self._output.topic}; '
            f'targets on {", ".join(self._target_inputs.topics)}')

    def _subscribe_targets(self, config: IkConfig) -> None:
        """Target subscriptions for the configured tips (kept when the tips do not change)."""
        tips = tuple(config.tip_links) if config.branched else (None,)
        if tips != self._sub_tips:
            self._target_inputs.make(tips)
            self._sub_tips = tips

    def _uninstall(self) -> None:
        """No robot model (parameters cleared): wait for one on the description topic."""
        if self._model is not None:
            self._markers.clear(self._model.config.base_link)
            self._reach.start(self._model.chain, 0, 0.1)  # cancels and clears the map
            self._reach_key = None
        self._model = None
        self._interactive.set_tips('', [])
        self._report_waiting(force=True)

    def _sync_inputs(self, old: Optional[GraphConfig]) -> None:
        """Create, replace or drop the measured-state and description subscriptions."""
        graph = self._graph
        if old is None or old.state_topic != graph.state_topic:
            if self._state is not None:
                self._state.destroy()
            self._state = MeasuredState(self, graph.state_topic) if graph.state_topic else None
        want_topic = '' if self._config.has_model else graph.description_topic
        have_topic = self._description.topic if self._description is not None else ''
        if want_topic != have_topic:
            if self._description is not None:
                self._description.destroy()
            self._description = DescriptionListener(self, want_topic, self._on_description) \
                if want_topic else None

    def _on_description(self, xml: str) -> None:
        """A URDF arrived on the description topic: rebuild, or refuse it and keep the old one."""
        with self._lock:
            if self._config.has_model or xml == self._topic_xml:
                return
            previous, self._topic_xml = self._topic_xml, xml
            try:
                check_description_size(xml, self._config.max_description_bytes)
                model = self._build(self._config, self._graph)
            except Exception as exc:
                self._topic_xml = previous
                kept = 'the previous one stays in force' if self._model else \
                    'still waiting for a valid one'
                self._report_error(f'robot_description on {self._description.topic} refused '
                                   f'({kept}): {exc}', '', force=True)
                return
            self._install(model)

    def _measured(self, chain) -> tuple:
        """(measured q clipped into the limits or None, note)."""
        if self._state is None:
            return None, 'last solution'
        q, note = self._state.seed(chain.joint_names, self._graph.state_timeout)
        return (None, f'last solution ({note})') if q is None else (chain.clip(q), note)

    # ---------------------------------------------------------------------------- targets
    def _on_target(self, target: conv.Target) -> None:
        """Store the newest target; solve pending targets unless another callback already is."""
        self._targets.put(target.tip, target)
        while self._targets.pending and self._solving.acquire(blocking=False):
            try:
                while True:
                    batch = self._targets.take()
                    if not batch:
                        break
                    try:
                        self._solve_pending(batch)
                    except Exception as exc:  # a bug must not stop the node
                        if self.context.ok():
                            self._report_error(f'internal error: {type(exc).__name__}: {exc}',
                                               '')
            finally:
                self._solving.release()

    def _solve_pending(self, batch: Dict[Optional[str], conv.Target]) -> None:
        stamps = ','.join(t.stamp_text for t in batch.values())
        with self._lock:
            model = self._model
            if model is None:
                self._report_waiting(stamps)
                return
            config, chain, solver = model.config, model.chain, model.solver
            measured, seed_note = self._measured(chain)
            seed = self._q if measured is None else measured
            goals = {}
            lookup = self._lookup if self._tf.available else None
            for tip, target in batch.items():
                try:
                    goals[tip] = conv.target_in_base(target, chain, seed, lookup)
                except TargetError as exc:
                    where = f' for tip {tip}' if tip else ''
                    self._report_error(f'bad target{where}: {exc}', target.frame_id,
                                       target.stamp_text)
            if not goals:
                return
            frame = ', '.join(sorted({batch[t].frame_id or config.base_link for t in goals}))
            stamps = ','.join(batch[t].stamp_text for t in goals)
            try:
                if config.branched:
                    self._known.update({tip: p for tip, (p, _) in goals.items()})
                    result = solver.solve(targets=dict(self._known), seed=seed)
                else:
                    p, quat = goals[None]
                    result = solver.solve(p, quat, seed=seed)
                q = conv.check_publishable(chain, result.joint_positions)
            except IkError as exc:
                self._report_error(f'target refused: {exc}', frame, stamps)
                return
            except Exception as exc:
                self._report_error(f'solver {config.solver} failed: {type(exc).__name__}: {exc}',
                                   frame, stamps)
                return
            self._q = q
            self._solve_count += 1
            count = self._solve_count
            self._markers_due = (result, goals, dict(self._known), q)
            out_stamp = self._output.publish(q, seed)
            self._answered(stamps, out_stamp, result)
            graph = self._graph
            self._show_on_interactive(model, batch, goals, result, q)
        self._report_solve(chain, graph, config.solver, result, goals, q, frame, stamps, count,
                           {'seed': seed_note, 'output': self._output.kind,
                            'joint_state_stamp': out_stamp})

    def _report_solve(self, chain, graph: GraphConfig, solver: str, result, goals: Dict, q,
                      frame: str, stamps: str, count: int, extra: Dict[str, str]) -> None:
        """Offer a solve's status to the rate gate (markers follow a published one).

        The fragility measures (a Jacobian and its SVD) and the reachability map distance are
        computed once, and only when needed: the measures at once for a reached target (they
        decide OK or WARN), otherwise when the status is built; most statuses of a fast stream
        never are.
        """
        skipped = self._targets.skipped
        reach = self._reach
        tips = [tip or chain.tip_link for tip in goals]
        position_only = result.orientation_ignored or \
            all(quat is None for _, quat in goals.values())
        measured: Dict[str, Any] = {}

        def measures() -> Dict[str, Any]:
            if not measured:
                values = dict(extra)
                try:
                    quality, fragile = fragility_report(
                        chain, q, tips, position_only, graph.singular_threshold,
                        graph.limit_margin_threshold)
                    values.update(quality)
                except Exception as exc:  # a measure for the user never fails a solve
                    values['quality'] = f'not measured: {type(exc).__name__}: {exc}'
                    fragile = ''
                if not result.reachable and reach.ready:
                    distances = [d for tip, (p, _) in goals.items()
                                 if (d := reach.distance(tip or chain.tip_link, p)) is not None]
                    if distances:
                        values['map_distance_m'] = f'{max(distances):.4g}'
                measured.update(values=values, fragile=fragile)
            return measured

        level = conv.result_level(result)
        if level == conv.OK and measures()['fragile']:
            level = conv.WARN

        def summary() -> str:
            text = conv.result_summary(result, solver)
            fragile = measures()['fragile']
            return f'{text}; fragile: {fragile}' if fragile else text

        published = self._offer(
            level, summary,
            lambda: conv.result_values(result, solver, frame, skipped, count, stamps,
                                       measures()['values']))
        if published:
            self._publish_target_markers()

    def _answered(self, target_stamps: str, joint_state_stamp: str, result) -> None:
        """Called (lock held) right after every solve's answer is published, with the pair of
        stamps its status carries (``target_stamp``, ``joint_state_stamp``), also when the rate
        gate holds that status back. A no-op: benchmarks/traced_node.py records here."""

    def _lookup(self, frame: str, stamp) -> np.ndarray:
        return self._tf.lookup(self._model.config.base_link, frame, stamp, self._graph.tf_timeout)

    # ---------------------------------------------------------------------------- outputs
    def _on_timer(self) -> None:
        with self._lock:
            if self._output is not None and self._output.steady and self._model is not None:
                self._output.publish(self._q)
            held = self._diag.flush()
        for build in held:
            self._diag.send(build())
        if held:
            self._publish_target_markers()  # those of the result whose status was held
        else:
            self._diag.heartbeat()

    def _publish_target_markers(self) -> None:
        """Markers of the newest solve not shown yet: envelope, target spheres, miss lines."""
        with self._lock:
            due, self._markers_due = getattr(self, '_markers_due', None), None
            model = self._model
            if due is None or model is None:
                return
            result, goals, known, q = due
            self._markers.result(model.chain, model.config.base_link, result, goals, known,
                                 model.config.branched, q)

    def destroy_node(self) -> None:
        self._reach.stop()
        super().destroy_node()


def main(args: Optional[List[str]] = None) -> int:
    """Entry point of the ``ik_node`` executable (:func:`ik_node.ros.run.main` with
    :class:`IkNode`). Returns the exit status."""
    return run.main(args, IkNode)


if __name__ == '__main__':
    sys.exit(main())
