"""The ROS 2 node ``ik_node``: targets in, joint states or commands, diagnostics and markers out.

Wiring only: parameters are declared from the specs in :mod:`ik_node.config` and
:mod:`ik_node.graph` and validated there; inputs (targets, measured state, robot description,
TF) live in :mod:`ik_node.ros.inputs`, outputs (solution, diagnostics) in
:mod:`ik_node.ros.outputs`, markers in :mod:`ik_node.ros.visuals`.

Targets: a subscription callback (keep-last depth 1) stores its target as the newest pending
one; if no solve is running it solves right there (no hand-over to another thread), then keeps
solving the newest pending target until none is left, so no backlog builds up however fast
targets stream. A lock keeps a solve, the timer and a parameter or description change from
overlapping, so no output ever mixes two chains.
"""

from __future__ import annotations

import signal

if __name__ == '__main__':  # run as a program: hold Ctrl-C back until the node can end cleanly
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})

import dataclasses  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
from typing import Any, Callable, Dict, List, Optional  # noqa: E402

import numpy as np  # noqa: E402
import rclpy  # noqa: E402
from rcl_interfaces.msg import (FloatingPointRange, IntegerRange, ParameterDescriptor,
                                ParameterType, SetParametersResult)
from rclpy.callback_groups import ReentrantCallbackGroup  # noqa: E402
from rclpy.exceptions import ParameterException  # noqa: E402
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.signals import SignalHandlerOptions  # noqa: E402

from ik_node import conversions as conv  # noqa: E402
from ik_node.config import (NODE_PARAMS, STRING_PARAMS, TIP_LINKS_DESCRIPTION,
                            IkConfig, build_chain, build_solver, canonical_updates,
                            config_from_flat)
from ik_node.errors import IkError, TargetError  # noqa: E402
from ik_node.graph import (GRAPH_LIST_PARAMS, GRAPH_NUMBER_PARAMS, GRAPH_STRING_PARAMS,
                           GraphConfig, graph_config_from_flat, moving_joints)
from ik_node.ros.inputs import (DescriptionListener, MeasuredState, TargetSubscriptions,
                                TfFrames)
from ik_node.quality import solution_quality, task_rank  # noqa: E402
from ik_node.ros.interactive import INTERACTIVE_PARAMS, InteractiveTargets  # noqa: E402
from ik_node.ros.outputs import DiagnosticsOutput, OutputPlan, ResultOutput  # noqa: E402
from ik_node.ros.reachmap import ReachabilityMaps  # noqa: E402
from ik_node.ros.visuals import MarkerOutput  # noqa: E402
from ik_node.solvers import SOLVERS, ParamSpec  # noqa: E402

_INT64_MAX = 2 ** 63 - 1


@dataclasses.dataclass(frozen=True)
class _Model:
    """What one robot description gives: swapped as a whole, never piecemeal."""

    config: IkConfig
    chain: Any
    solver: Any
    plan: OutputPlan


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
        self._lock = threading.RLock()
        self._names = self._declare_parameters()
        for name, spec in INTERACTIVE_PARAMS.items():  # read where used, not in the config
            self._declare_spec(name, spec)
        self._check_overrides()
        fixes = canonical_updates({name: self._param_value(name) for name in self._names})
        if fixes:  # store what is in force: solver ' FABRIK ' in a file is kept as 'fabrik'
            self.set_parameters([_parameter(k, v) for k, v in fixes.items()])
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
    def _declare_parameters(self) -> List[str]:
        names = []
        strings = {**STRING_PARAMS, **GRAPH_STRING_PARAMS}
        for name, (default, description) in strings.items():
            extra = f' One of: {", ".join(sorted(SOLVERS))}' if name == 'solver' else ''
            self.declare_parameter(name, default, ParameterDescriptor(
                type=ParameterType.PARAMETER_STRING, description=description + extra))
            names.append(name)
        lists = {'tip_links': (str, TIP_LINKS_DESCRIPTION), **GRAPH_LIST_PARAMS}
        for name, (kind, description) in lists.items():
            ptype = Parameter.Type.STRING_ARRAY if kind is str else Parameter.Type.DOUBLE_ARRAY
            self._convert_override(name)
            # Declared by type: no value until set (an empty list cannot carry its type).
            self.declare_parameter(name, ptype, ParameterDescriptor(
                type=ptype.value, description=description))
            names.append(name)
        for name, spec in {**NODE_PARAMS, **GRAPH_NUMBER_PARAMS}.items():
            self._declare_spec(name, spec)
            names.append(name)
        for solver_name in sorted(SOLVERS):
            for param, spec in SOLVERS[solver_name].param_specs().items():
                self._declare_spec(f'{solver_name}.{param}', spec)
                names.append(f'{solver_name}.{param}')
        return names

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
            self.declare_parameter(name, default, d)
            return
        else:
            d.type = ParameterType.PARAMETER_STRING
        self.declare_parameter(name, spec.default, d)

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
        return out

    def _as_float(self, param: Parameter) -> Parameter:
        """``param`` with an integer value turned into the double its declaration expects."""
        want = self._float_names().get(param.name)
        if want == Parameter.Type.DOUBLE and param.type_ == Parameter.Type.INTEGER:
            return Parameter(param.name, want, float(param.value))
        if want == Parameter.Type.DOUBLE_ARRAY and param.type_ == Parameter.Type.INTEGER_ARRAY:
            return Parameter(param.name, want, [float(v) for v in param.value])
        return param

    def _convert_override(self, name: str) -> None:
        """A YAML file or ``-p`` saying ``rate: 20`` gives an integer; take it as the number."""
        override = self._parameter_overrides.get(name)
        if override is not None:
            self._parameter_overrides[name] = self._as_float(override)

    def _before_set_parameters(self, params: List[Parameter]) -> List[Parameter]:
        """``ros2 param set /ik_node fabrik.timeout 1``: the integer becomes 1.0 before rclpy's
        type check, then the range check runs as for any double. String values are set in their
        canonical form (config.canonical_value), so the value stored is the value in force."""
        params = [self._as_float(p) for p in params]
        fixes = canonical_updates({p.name: _plain(p.value) for p in params
                                   if p.name in self._names})
        return [_parameter(p.name, fixes[p.name]) if p.name in fixes else p for p in params]

    def _check_overrides(self) -> None:
        """Refuse parameters given for this node that it does not have (typos)."""
        unknown = sorted(n for n in self._parameter_overrides
                         if not self.has_parameter(n) and not n.startswith('qos_overrides.'))
        if unknown:
            raise IkError(f'unknown parameters {", ".join(unknown)}. Valid parameters: '
                          f'{", ".join(self._names)}')

    def _param_value(self, name: str) -> Any:
        try:
            value = self.get_parameter(name).value
        except Exception:  # an uninitialized parameter (a list never set) raises
            return None
        return _plain(value)

    def _on_set_parameters(self, params: List[Parameter]) -> SetParametersResult:
        updates = {p.name: _plain(p.value) for p in params if p.name in self._names}
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
        self._markers.envelope(model.chain, model.solver, model.config.base_link)
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
            graph = self._graph
            self._show_on_interactive(model, batch, goals, result, q)
        skipped = self._targets.skipped
        extra = {'seed': seed_note, 'output': self._output.kind, 'joint_state_stamp': out_stamp}
        level, summary = conv.result_level(result), conv.result_summary(result, config.solver)
        position_only = result.orientation_ignored or \
            all(quat is None for _, quat in goals.values())
        try:
            fragile = self._quality(chain, q, goals, position_only, graph, extra)
        except Exception as exc:  # a measure for the user never fails a solve
            extra['quality'] = f'not measured: {type(exc).__name__}: {exc}'
            fragile = ''
        if fragile and level == conv.OK:
            level = conv.WARN
        if fragile:
            summary += f'; fragile: {fragile}'
        if not result.reachable and self._reach.ready:
            distances = [d for tip, (p, _) in goals.items()
                         if (d := self._reach.distance(tip or chain.tip_link, p)) is not None]
            if distances:
                extra['map_distance_m'] = f'{max(distances):.4g}'
        published = self._offer(
            level, lambda: summary,
            lambda: conv.result_values(result, config.solver, frame, skipped, count, stamps,
                                       extra))
        if published:
            self._publish_target_markers()

    @staticmethod
    def _quality(chain, q, goals, position_only: bool, graph: GraphConfig,
                 extra: Dict[str, str]) -> str:
        """Manipulability, smallest singular value and limit margin of the targeted tips into
        ``extra``; returns what makes the solution fragile ('' when nothing does)."""
        tips = [tip or chain.tip_link for tip in goals]
        qualities = [solution_quality(chain, q, tip, position_only=position_only or None,
                                      singular_threshold=graph.singular_threshold,
                                      limit_threshold=graph.limit_margin_threshold,
                                      rank=_rank(chain, tip, position_only))
                     for tip in tips]
        worst_sigma = min(qualities, key=lambda x: x.min_singular_value)
        nearest = min(qualities, key=lambda x: x.limit_distance)
        extra['manipulability'] = f'{min(x.manipulability for x in qualities):.4g}'
        extra['min_singular_value'] = f'{worst_sigma.min_singular_value:.4g}'
        extra['limit_margin'] = f'{nearest.limit_distance:.4g}'
        extra['limit_joint'] = nearest.limit_joint or ''
        why = []
        if worst_sigma.near_singular:
            why.append(f'near a singularity (smallest singular value '
                       f'{worst_sigma.min_singular_value:.3g})')
        if nearest.near_limit:
            why.append(f'{nearest.limit_joint} {nearest.limit_distance:.3g} from its '
                       f'{nearest.limit_side} limit')
        return ', '.join(why)

    def _on_marker_target(self, tip: str, position, quat_xyzw, frame_id: str, stamp,
                          released: bool) -> None:
        """A drag of a tip's interactive marker: solved as a topic target (newest wins)."""
        model = self._model
        if model is None:
            return
        slot = tip if model.config.branched else None
        target = conv.Target(np.asarray(position, dtype=float),
                             None if quat_xyzw is None else np.asarray(quat_xyzw, dtype=float),
                             frame_id, slot, stamp)
        if released:
            self._released[slot] = target
        self._on_target(target)

    def _show_on_interactive(self, model: _Model, batch, goals, result, q) -> None:
        """Interactive markers after a solve: follow the targets, colour by reached, and snap
        a released marker to the pose reached (``target_marker.snap_on_release``)."""
        config = model.config
        for tip, (p, quat) in goals.items():
            self._interactive.follow(tip or config.tip_link, p, quat)
        tips = result.tips or {}
        for tip in goals if not config.branched else self._known:
            name = tip or config.tip_link
            self._interactive.set_reached(
                name, tips[name].reachable if name in tips else result.reachable)
        snap = self.get_parameter('target_marker.snap_on_release').value
        for tip in goals:
            if self._released.get(tip) is batch[tip]:
                del self._released[tip]
                if snap:
                    T = model.chain.fk(q, tip or config.tip_link)
                    self._interactive.snap(tip or config.tip_link, T[:3, 3],
                                           conv.quat_xyzw_from_rotation(T[:3, :3]))

    def _lookup(self, frame: str, stamp) -> np.ndarray:
        return self._tf.lookup(self._model.config.base_link, frame, stamp, self._graph.tf_timeout)

    # ---------------------------------------------------------------------------- outputs
    def _send(self, publisher, msg) -> None:
        """Publish; a publish racing with shutdown (SIGINT/SIGTERM mid-callback) is dropped."""
        try:
            publisher.publish(msg)
        except Exception:
            if self.context.ok():
                raise

    def _status(self, level: bytes, message: str, values: Dict[str, str]):
        return conv.diagnostic_status(f'{self.get_fully_qualified_name().lstrip("/")}: ik',
                                      self._hardware_id(), level, message, values)

    def _offer(self, level: bytes, message: Callable[[], str],
               values: Callable[[], Dict[str, str]], force: bool = False) -> bool:
        """Publish a status now if the rate gate lets it through, else hold it for the timer.

        ``message`` and ``values`` are built only when needed (most solves of a fast stream
        are not reported individually).
        """
        def build():
            return self._status(level, message(), values())
        with self._lock:
            send = self._diag.offer(level, build, force)
        if send:
            self._diag.send(build())
        return send

    def _report_error(self, message: str, frame: str, target_stamp: str = '',
                      force: bool = False) -> None:
        self.get_logger().error(message, throttle_duration_sec=1.0)
        solver, skipped, count = self._config.solver, self._targets.skipped, self._solve_count
        self._offer(conv.ERROR, lambda: message,
                    lambda: conv.error_values(solver, frame, skipped, count, message,
                                              target_stamp), force)

    def _report_waiting(self, target_stamp: str = '', force: bool = False) -> None:
        """WARN: no robot model yet (a target, if any, is refused)."""
        topic = self._graph.description_topic
        message = f'waiting for robot_description on {topic}' + \
            (': target refused' if target_stamp else '')
        if target_stamp:
            self.get_logger().warning(message, throttle_duration_sec=2.0)
        values = {**conv.error_values(self._config.solver, '', self._targets.skipped,
                                      self._solve_count, message, target_stamp),
                  'status': 'waiting'}
        self._offer(conv.WARN, lambda: message, lambda: values, force)

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

    def _hardware_id(self) -> str:
        if self._model is None:
            return f'{self._model_name()}: waiting'
        config = self._model.config
        return f'{self._model_name()}: {config.base_link} -> {", ".join(config.tip_links)}'

    def _model_name(self) -> str:
        return self._config.urdf_file or 'robot_description'


def _rank(chain, tip: str, position_only: bool) -> int:
    """The generic task rank of a tip, cached on the chain object."""
    cache = chain.__dict__.setdefault('_ik_node_task_rank', {})
    key = (tip, bool(position_only) or len(chain.joints_of_tip(tip)) < 6)
    if key not in cache:
        cache[key] = task_rank(chain, tip, key[1])
    return cache[key]


def _plain(value: Any) -> Any:
    """A parameter value as plain Python: arrays (array.array, tuples) become lists."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    return list(value)


def _parameter(name: str, value: Any) -> Parameter:
    """A string or string-list parameter (typed: an empty list stays a string array)."""
    if isinstance(value, (list, tuple)):
        return Parameter(name, Parameter.Type.STRING_ARRAY, list(value))
    return Parameter(name, Parameter.Type.STRING, value)


_SIGNALS = {signal.SIGINT, signal.SIGTERM}
_SPIN_PERIOD_S = 0.1


def main(args: Optional[List[str]] = None) -> int:
    """Entry point of the ``ik_node`` executable. Returns the exit status.

    SIGINT and SIGTERM end the node cleanly at any moment: they are held back while rclpy, the
    executor and the node are built and torn down, and handled by a flag the spin loop checks
    (rclpy's own signal handler is off: it shuts the context down from another thread, which
    raced with the node's teardown and crashed it).
    """
    signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    stop = threading.Event()
    for sig in _SIGNALS:
        signal.signal(sig, lambda *_: stop.set())
    try:
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    except Exception as exc:  # rcl refuses the arguments, e.g. a malformed --params-file
        print(f'ik_node: cannot start: {_one_line(exc)}', file=sys.stderr)
        return 2
    node = executor = None
    status = 0
    try:
        executor = SingleThreadedExecutor()
        node = IkNode()
        executor.add_node(node)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)
        while not stop.is_set() and rclpy.ok():
            executor.spin_once(timeout_sec=_SPIN_PERIOD_S)
    except ExternalShutdownException:
        pass
    except IkError as exc:
        print(f'ik_node: {exc}', file=sys.stderr)
        status = 2
    except ParameterException as exc:
        print(f'ik_node: bad parameter: {exc}', file=sys.stderr)
        status = 2
    finally:
        signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
        if executor is not None:
            executor.shutdown(timeout_sec=1.0)
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return status


def _one_line(exc: BaseException) -> str:
    """rcl's messages carry C source locations on later lines; keep the reason."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    keep = [ln for ln in lines if not ln.startswith(('at ', '/')) and '.c:' not in ln
            and '.cpp:' not in ln]
    text = ' '.join(keep or lines[:1])
    return text.split(', at ')[0]


if __name__ == '__main__':
    sys.exit(main())
