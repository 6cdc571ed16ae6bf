"""FABRIK's tree run compiled: a whole run over a tree (tips sharing joints) in numba calls.

:class:`CompiledTree` runs what :meth:`FabrikTree.run <ik_node.solvers.fabrik.tree.FabrikTree.run>`
runs (the loop of :func:`~ik_node.solvers.fabrik.iteration.iterate` over
:class:`~ik_node.solvers.fabrik.tree_passes.TreePasses`) in machine code: the passes of
:mod:`.compiled_tree_passes` (forward, backward, stretch, rebuild, polish), the extrapolation,
the stall rule and the best configuration kept. The same operations in the same order as the
Python passes; numpy's small products (BLAS) and its linear solve may round the last bit
otherwise, so a run agrees with the Python run to round-off: the same iterations and joints
within 1e-9 rad (``test/core/test_compiled_fabrik_tree.py``).

The kernel is generic: the tree is arrays (:func:`geometry_of`: per joint its frame, axis and
limits, per node its parent), and so is the plan of a run (:func:`plan_of`, from the Python
passes' :class:`~ik_node.solvers.fabrik.tree_passes.TreePlan`: the forward pass's joints with
their children and weights, each joint's fit, the polish's columns and paths), built once per
set of targeted tips and weights.

The clock and the random restarts stay in Python: the kernel runs at most
:data:`~ik_node.solvers.fabrik.compiled.CHUNK` iterations per call (a polish started in a call
finishes in it), and returns when a stalled run restarts, so that the restart draws its
configuration from the Python run's generator (the same draws). A run that records its history,
or whose polish meets a singular system (where numpy's solve raises), is left to the Python
passes.

:mod:`ik_node.kernels` compiles the kernel (or loads it from numba's cache) in its
background thread, after the passes it calls; until then, and where numba cannot serve, the
Python passes run.
"""

from __future__ import annotations

import math
import threading
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

import ik_node.kernels as kernels
from ik_node.kernels import fk
from ik_node.solvers.fabrik import compiled as serial
from ik_node.solvers.fabrik import compiled_steps as steps
from ik_node.solvers.fabrik import compiled_tree_passes as passes
# The geometry's layout and the fits (compiled_tree_passes), written by geometry_of and plan_of.
from ik_node.solvers.fabrik.compiled_tree_passes import (_COLUMNS, _LOWER, _REVOLUTE, _UPPER,
                                                         BONES, POINTS)
from ik_node.solvers.fabrik.compiled_tree_passes import NO_FIT  # noqa: F401 - a kind of fit, too
from ik_node.solvers.fabrik.iteration import FabrikProblem, FabrikRun, FabrikSettings
from ik_node.solvers.fabrik.tree_passes import TreePlan

# What a call of the kernel returns (compiled_steps).
DONE, CHUNK_DONE, FAILED, RESTART = steps.DONE, steps.CHUNK_DONE, steps.FAILED, steps.RESTART

# Entries of the state array kept between calls: compiled_steps's, then the restarts left and
# whether Python drew a fresh start.
(_RESTARTS, _RESTARTED) = range(steps.LOOP_STATE, steps.LOOP_STATE + 2)
_STATE = steps.LOOP_STATE + 2


def available() -> bool:
    """Whether the compiled path may serve (:func:`ik_node.kernels.available`)."""
    return kernels.available()


# ------------------------------------------------------------------------ the kernel (numba)
def _run_tree(tree, settings, targets, run, work, chunk):
    """FABRIK over the tree toward ``targets`` (one row per targeted tip) from ``q``:
    :func:`~.iteration.iterate` over the tree passes, at most ``chunk`` iterations more in this
    call. A first call (state ``BEGUN`` 0) starts from ``q``; a later one goes on from the
    state it left (after RESTART, with ``_RESTARTED`` set: from the new ``q``). ``best_q`` and
    ``best_err`` are the best configuration and its tip errors (the run's answer, once DONE).
    Returns DONE, CHUNK_DONE, RESTART or FAILED. ``tree`` as :func:`_backward`'s;
    ``settings`` a :class:`~.compiled.PassSettings`; ``run``: ``(q, best_q, best_err,
    state)``."""
    geometry, parent, t_tip, plan_ints, plan_floats = tree
    q, best_q, best_err, state = run
    x, R, P, x_try, R_try = work[0], work[1], work[2], work[3], work[4]
    L, err, err_try, q_before, q_try = work[5], work[6], work[7], work[8], work[9]
    tip_nodes, w_norm = plan_ints[0], plan_floats[4]
    tolerance, min_improvement = settings.tolerance, settings.min_improvement
    max_iterations = int(settings.max_iterations)
    stall_iterations, polish = int(settings.stall_iterations), int(settings.polish)
    extrapolate, stretching = settings.extrapolate != 0.0, settings.stretch != 0.0
    stop_when_stuck = settings.stuck_ends != 0.0
    if state[steps.BEGUN] == 0.0:
        passes.rebuild(geometry, parent, t_tip, q, x, R)
        for v in range(x.shape[0]):
            p = parent[v]
            L[v] = 0.0
            if p >= 0:
                dx, dy, dz = x[v, 0] - x[p, 0], x[v, 1] - x[p, 1], x[v, 2] - x[p, 2]
                L[v] = math.sqrt(dx * dx + dy * dy + dz * dz)
        P[:] = 0.0
        obj = passes.measure(x, tip_nodes, targets, w_norm, err)
        best_q[:] = q
        best_err[:] = err
        steps.begin(state, obj, passes.reached(err, tolerance))
        state[_RESTARTED] = 0.0
    elif state[_RESTARTED] != 0.0:  # a fresh start drawn in Python (TreePasses.restart)
        passes.rebuild(geometry, parent, t_tip, q, x, R)
        obj = passes.measure(x, tip_nodes, targets, w_norm, err)
        state[steps.OBJ] = state[steps.START_BEST] = state[steps.LAST_PROGRESS] = obj
        state[steps.SINCE_PROGRESS] = 0.0
        state[_RESTARTS] -= 1.0
        state[_RESTARTED] = 0.0
    obj, best_obj, start_best, last_progress, since_progress, iterations, polish_after, \
        converged, stalled = steps.resume(state)
    restarts = int(state[_RESTARTS])
    stop_at = iterations + chunk
    code = DONE
    while not converged and iterations < max_iterations:
        if iterations >= stop_at:
            code = CHUNK_DONE
            break
        iterations += 1
        q_before[:] = q
        obj_before = obj
        if stretching and iterations == 1:
            passes.stretch(tree, q, x, R, L, targets[0], P)
        else:
            passes.forward(plan_ints, plan_floats, x, L, targets, P)
            passes.backward(tree, q, x, R, P)
        obj = passes.measure(x, tip_nodes, targets, w_norm, err)
        factor = steps.extrapolation(obj, obj_before, iterations) if extrapolate else 0.0
        if factor > 0.0:
            steps.extrapolate(geometry, q, q_before, factor, q_try)
            passes.rebuild(geometry, parent, t_tip, q_try, x_try, R_try)
            obj_try = passes.measure(x_try, tip_nodes, targets, w_norm, err_try)
            if obj_try < obj:
                q[:] = q_try
                x[:] = x_try
                R[:] = R_try
                err[:] = err_try
                obj = obj_try
        if steps.polish_due(polish, iterations, polish_after, obj, obj_before, max_iterations):
            taken = passes.polish(tree, (q, x, R), targets,
                                  (min(polish, max_iterations - iterations), tolerance),
                                  (x_try, R_try, q_try, err_try))
            if taken < 0:
                return FAILED
            iterations += taken
            obj_polished = passes.measure(x, tip_nodes, targets, w_norm, err)
            stuck, polish_after = steps.polished(obj_polished, obj, iterations, polish_after,
                                                 stall_iterations)
            obj = obj_polished
            if stuck and min_improvement > 0.0 and (restarts > 0 or stop_when_stuck) and \
                    not stretching:
                if obj < best_obj:
                    best_q[:] = q
                    best_err[:] = err
                    best_obj = obj
                start_best = min(start_best, obj)
                last_progress = start_best + min_improvement
                since_progress = stall_iterations - 1
        if obj < best_obj:
            best_q[:] = q
            best_err[:] = err
            best_obj = obj
        converged = passes.reached(err, tolerance)
        start_best, last_progress, since_progress, stall = steps.progress(
            obj, converged, (start_best, last_progress, since_progress),
            (min_improvement, stall_iterations))
        if stall:
            stalled = True
            if restarts > 0 and not stretching:
                code = RESTART  # a local minimum (joint limits): Python draws a fresh start
            break
    if converged:
        best_q[:] = q
        best_err[:] = err
        best_obj = obj
    steps.keep(state, (obj, best_obj, start_best, last_progress, since_progress, iterations,
                       polish_after, converged, stalled))
    return code


_KERNELS: Dict[str, Any] = {}


def compile() -> None:  # noqa: A001 - the kernel modules' entry point is named so
    """Compile the kernel (or load it from numba's cache on disk) and run it once, after the
    passes it calls; :mod:`ik_node.kernels` calls it in its loading thread."""
    if not _KERNELS:
        passes.compile()  # and the serial passes, the kernel library
        steps.compile()
        kernel = kernels.jitted(globals(), (), ('_run_tree',))['_run_tree']
        _exercise(kernel)
        _KERNELS['run'] = kernel


# ---------------------------------------------------------------------------- the arrays
def geometry_of(tree) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A :class:`~ik_node.solvers.fabrik.tree.FabrikTree`'s geometry as arrays: per joint its
    frame, Rodrigues' terms, limits and kind (the columns above); each node's parent; each
    tip's offset."""
    n = tree.n
    geometry = np.zeros((n, _COLUMNS))
    for i in range(n):
        row = geometry[i]
        row[:fk.COLUMNS] = tree.rows[i]
        row[_LOWER], row[_UPPER] = tree.lower[i], tree.upper[i]
        row[_REVOLUTE] = float(tree.revolute[i])
    parent = np.array(tree.node_parent, dtype=np.int64)
    t_tip = np.ascontiguousarray(tree.t_tip, dtype=float).reshape(tree.n_tips, 3)
    return geometry, parent, t_tip


def _lists(lists: Sequence[Sequence[int]]) -> Tuple[np.ndarray, np.ndarray]:
    """Lists of ints as (starts, flat): list k is ``flat[starts[k]:starts[k + 1]]``."""
    starts = np.zeros(len(lists) + 1, dtype=np.int64)
    starts[1:] = np.cumsum([len(items) for items in lists])
    flat = np.array([int(v) for items in lists for v in items], dtype=np.int64)
    return starts, flat


def plan_of(tree, tip_indices: Sequence[int], weights: np.ndarray) -> Tuple[tuple, tuple]:
    """The plan of a run (:class:`TreePlan` of ``tip_indices`` and ``weights``) as arrays:
    ``(ints, floats)``, the tuples :func:`_run_tree` reads."""
    plan = TreePlan(tree, tip_indices, weights)
    n = tree.n
    fwd_u = np.array([u for u, _, _ in plan.forward], dtype=np.int64)
    fwd_start, fwd_ch = _lists([ch for _, ch, _ in plan.forward])
    fwd_w = np.array([float(v) for _, _, w in plan.forward for v in w])
    kind = np.zeros(n, dtype=np.int64)
    nodes, perp, cross = [], [], []
    for i, align in enumerate(plan.align):
        if align is None:
            nodes.append([])
            continue
        kind[i] = BONES if align[0] == 'bones' else POINTS
        nodes.append(list(align[1]))
        count = len(align[1])
        perp.extend(np.asarray(align[2]).reshape(count, 3) if align[0] == 'bones'
                    else np.zeros((count, 3)))
        cross.extend(np.asarray(align[3]).reshape(count, 3) if align[0] == 'bones'
                     else np.zeros((count, 3)))
    a_start, a_nodes = _lists(nodes)
    fb_start, fb_nodes = _lists(plan.fallback)
    path_start, path_joints = _lists([joints for joints, _ in plan.polish_paths])
    _, path_cols = _lists([c for _, c in plan.polish_paths])
    stretch_path = np.array(tree.path_to_tip(int(plan.tip_nodes[0]) - n), dtype=np.int64)
    w_norm = np.asarray(weights, dtype=float) / float(np.sum(weights))
    ints = (plan.tip_nodes.astype(np.int64), fwd_u, fwd_start, fwd_ch, kind, a_start, a_nodes,
            fb_start, fb_nodes, plan.polish_joints.astype(np.int64), path_start, path_joints,
            path_cols, stretch_path)
    floats = (np.asarray(plan.fit_weight, dtype=float), fwd_w,
              np.array(perp, dtype=float).reshape(-1, 3),
              np.array(cross, dtype=float).reshape(-1, 3), w_norm)
    return ints, floats


def _exercise(kernel) -> None:
    """Run the kernel once on a made-up tree (a trunk joint and two 2-joint arms; 'bones' and
    'points' fits, a stretch, the polish and a restart), so that numba compiles (or loads) it
    now, not in a solve."""
    from ik_node.model.chain import Chain
    from ik_node.solvers.fabrik.tree import FabrikTree

    def joint(name, parent, child, axis, xyz):
        return (f'<joint name="{name}" type="revolute"><parent link="{parent}"/>'
                f'<child link="{child}"/><origin xyz="{xyz}"/><axis xyz="{axis}"/>'
                '<limit lower="-2" upper="2" effort="1" velocity="1"/></joint>')

    urdf = ('<robot name="exercise">' + ''.join(f'<link name="{v}"/>' for v in
                                                ('b', 't', 'l1', 'l2', 'r1', 'r2')) +
            joint('j0', 'b', 't', '0 0 1', '0 0 0.1') + joint('l1', 't', 'l1', '0 1 0', '0 0.1 0.2')
            + joint('l2', 'l1', 'l2', '0 1 0', '0 0 0.2') +
            joint('r1', 't', 'r1', '1 0 0', '0 -0.1 0.2') + joint('r2', 'r1', 'r2', '0 0 1',
                                                                  '0.05 0 0.2') + '</robot>')
    tree = FabrikTree(Chain.from_urdf_string(urdf, 'b', ['l2', 'r2']))
    runner = CompiledTree(tree, {'run': kernel})
    settings = FabrikSettings(1e-5, 30, 1e-9, 3, polish=5)
    for tips, targets, stretch, restarts in (((0, 1), ((0.1, 0.2, 0.4), (0.0, -0.3, 0.3)), None, 2),
                                             ((1,), ((2.0, 0.0, 0.0),), 1, 0)):
        runner.run(FabrikProblem(np.full(tree.n, 0.1), tips, np.array(targets),
                                 np.ones(len(tips)), stretch, restarts), settings)


# ---------------------------------------------------------------------------- the wrap
class CompiledTree:
    """The compiled tree passes bound to one :class:`~ik_node.solvers.fabrik.tree.FabrikTree`.

    :meth:`run` answers what ``FabrikTree.run`` answers, or None where the Python passes run
    (the kernel not loaded yet, a history to record, a polish the kernel leaves to Python).
    Built only where numba may serve (:func:`of`); the kernel loads in the background from
    the first solve on (:meth:`start_loading`).
    """

    def __init__(self, tree, compiled_kernels: Optional[Dict[str, Any]] = None):
        self.tree = tree
        self.geometry = geometry_of(tree)
        self._lower = np.where(np.isfinite(tree.lower), tree.lower, -math.pi)
        self._upper = np.where(np.isfinite(tree.upper), tree.upper, math.pi)
        self._kernels = _KERNELS if compiled_kernels is None else compiled_kernels
        self._plans: Dict[Any, tuple] = {}
        self._runs = threading.local()  # per thread and plan: its arrays, reused by every run

    @classmethod
    def of(cls, tree) -> Optional['CompiledTree']:
        """The compiled passes of ``tree`` where numba may serve; else None."""
        if tree is None or not available() or tree.n == 0:
            return None
        return cls(tree)

    def ready(self) -> bool:
        """Whether the kernel is loaded (never blocks)."""
        return bool(self._kernels) and (self._kernels is not _KERNELS or kernels.ready())

    def start_loading(self) -> None:
        """Start loading the kernels in the background unless they are (not at construction:
        importing numba would slow down a node's start-up)."""
        if not self.ready():
            kernels.start()

    def _plan(self, tip_indices: Tuple[int, ...], weights: np.ndarray) -> tuple:
        """The plan arrays and moving joints of these tips and weights (built once)."""
        key = (tuple(int(k) for k in tip_indices), np.asarray(weights, dtype=float).tobytes())
        plan = self._plans.get(key)
        if plan is None:
            ints, floats = plan_of(self.tree, key[0], np.asarray(weights, dtype=float))
            tree, W = self.tree, floats[0]  # (fit_weight > 0 exactly where W > 0)
            moving = np.array([tree.revolute[i] and W[i] > 0 for i in range(tree.n)], dtype=bool)
            plan = self._plans[key] = (ints, floats, moving)
        return plan

    def _arrays(self, key: int, n_tips: int) -> tuple:
        arrays = getattr(self._runs, 'arrays', None)
        if arrays is None:
            arrays = self._runs.arrays = {}
        if key not in arrays:
            tree = self.tree
            n, N = tree.n, tree.n + tree.n_tips
            work = (np.zeros((N, 3)), np.zeros((n, 9)), np.zeros((N, 3)), np.zeros((N, 3)),
                    np.zeros((n, 9)), np.zeros(N), np.zeros(n_tips), np.zeros(n_tips),
                    np.zeros(n), np.zeros(n))
            arrays[key] = (np.zeros(n), np.zeros(n), np.zeros(n_tips), np.zeros(_STATE), work)
        return arrays[key]

    def run(self, problem: FabrikProblem, settings: FabrikSettings) -> Optional[FabrikRun]:
        """The :class:`FabrikRun` of ``FabrikTree.run(problem, settings)``, or None where the
        Python passes run instead."""
        if settings.record_history or not self.ready():
            return None
        ints, floats, moving = self._plan(problem.tip_indices, problem.weights)
        q, best_q, best_err, state, work = self._arrays(id(ints), len(ints[0]))
        values = serial.PassSettings(
            tolerance=float(settings.tolerance),
            max_iterations=float(settings.max_iterations if moving.any() else 0),
            min_improvement=float(settings.min_improvement),
            stall_iterations=float(settings.stall_iterations),
            extrapolate=float(settings.extrapolate), polish=float(settings.polish),
            stretch=float(problem.stretch_tip is not None),
            stuck_ends=float(problem.stop_when_stuck))
        targets = np.ascontiguousarray(problem.targets, dtype=float).reshape(-1, 3)
        q[:] = problem.q_seed
        state[steps.BEGUN] = state[steps.ITERATIONS] = 0.0
        state[_RESTARTS] = problem.restarts
        kernel, lower, upper = self._kernels['run'], self._lower, self._upper
        geometry, parent, t_tip = self.geometry
        tree, run = (geometry, parent, t_tip, ints, floats), (q, best_q, best_err, state)
        draws = []

        def restart() -> None:  # TreePasses.restart: the same generator, the same draws
            if not draws:
                draws.append(np.random.default_rng(0))
            q[moving] = draws[0].uniform(lower, upper)[moving]
            state[_RESTARTED] = 1.0

        code, timed_out = steps.run_chunks(kernel, (tree, values, targets, run, work), state,
                                           problem.deadline, restart)
        if code == FAILED:
            return None
        converged, stalled = bool(state[steps.CONVERGED]), bool(state[steps.STALLED])
        return FabrikRun(best_q.copy(), best_err.copy(), int(state[steps.ITERATIONS]), converged,
                         stalled and not converged, None, timed_out and not converged)
