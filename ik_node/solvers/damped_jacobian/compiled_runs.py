"""The compiled descents of damped_jacobian as a solver drives them: bound to a chain and a
solver's parameters, one solve's run, a tree's stacked descents.

:class:`CompiledDescent` turns a serial chain (:class:`SerialJoints`) into the model array the
kernels of :mod:`.compiled` read, with the :class:`~.compiled.DescentSettings` of a pose and of a
position target; :meth:`CompiledDescent.start` gives the :class:`DescentRun` of one solve, which
calls the kernels chunk by chunk and asks the solve's budget in between (a
:class:`DescentStart` says how a descent begins, a :class:`RestartPlan` how the plain restarts
run). :class:`TreeKernel` and :class:`TreeRun` do the same for a tree whose tips share joints.
:func:`exercise` runs every kernel once when :func:`.compiled.compile` loads them.
"""

from __future__ import annotations

import math
import threading
from typing import Any, NamedTuple, Optional, Sequence, Tuple

import numpy as np

import ik_node.kernels as kernels
from ik_node.kernels import fk
from ik_node.solvers.damped_jacobian.compiled_layout import (
    _BEST_COST, _BOUNDED, _CENTRED, _DECIDE_AT, _DRAWS, _FLOOR, _FRESH, _GOOD, _HIGH,
    _IN_DESCENT, _INVERSE_HALF, _ITERATIONS, _KEEP_BEST, _KERNELS, _LAST_BLOCKED, _LOW,
    _MIDDLE, _MODEL_COLUMNS, _NEAR, _POSITION_ERROR, _ANGLE_ERROR, _PULL, _RESTARTS,
    _STATE, _TURNS, _WRAPS,
    CHUNK_DONE, NEED_DRAWS, NULL_SPACE_DAMPING, STREAM_STALL_FACTOR, STUCK, TIMEOUT, Descent,
    DescentSettings, Problem, Restarts, TreeProblem, scratch_size)
from ik_node.solvers.numerics import dls_settings as dls
from ik_node.solvers.numerics.codegen import MAX_STEP
from ik_node.solvers.numerics.null_space import FACTOR_MAX, STREAM_ERROR_M


class SerialJoints(NamedTuple):
    """A serial chain as :class:`CompiledDescent` reads it.

    Attributes:
        joint_transforms: per joint the constant 3 x 4 transform of
            :class:`~ik_node.model.fast_kinematics.SerialKinematics` (joint axis along z).
        tip_transform: the tip's constant 3 x 4 transform.
        prismatic, wraps: per joint (see ``DampedJacobianSolver``).
        bounded: the joints whose limits constrain a step.
        low, high: the joint limits [rad or m].
        centring: the null-space pull's ``(index, middle, 1 / half range)`` per joint
            (:func:`~ik_node.solvers.numerics.null_space.centring_terms`).
    """

    joint_transforms: Sequence[np.ndarray]
    tip_transform: np.ndarray
    prismatic: Sequence[bool]
    wraps: Sequence[bool]
    bounded: Sequence[int]
    low: Sequence[float]
    high: Sequence[float]
    centring: Sequence[Tuple[int, float, float]]


class DescentStart(NamedTuple):
    """How :meth:`DescentRun.descend` begins a descent (as
    :meth:`.descent.PythonDescent.descend`): from ``q``, the cost measured above ``floor`` (the
    squared proven residual [m^2]), ``good_enough`` the position error [m] that ends a position
    descent (-1: none), the solve's ``iterations`` and ``last_blocked`` so far; ``near``: near
    a stream's seed (None: decided by the cost of ``q``), ``pull``: its first step pulls away
    from the limits, ``keep_best``: a lower cost than the best replaces the best."""

    q: Sequence[float]
    floor: float
    good_enough: float
    iterations: int = 0
    last_blocked: int = -1
    near: Optional[bool] = False
    pull: bool = False
    keep_best: bool = True


class RestartPlan(NamedTuple):
    """The plain restarts of :meth:`DescentRun.descend_restarts`: ``restarts`` counted so far,
    stuck at ``decide_at`` restarts the solver's loop decides; candidates ``low + span * u``
    from ``draws`` (a :class:`.starts.RestartDraws`), its batches from ``used`` on."""

    restarts: int
    decide_at: int
    draws: Any
    low: np.ndarray
    span: np.ndarray
    used: int = 0




def exercise(kernels_) -> None:
    """Run every kernel once, in each of its kinds (6D, position in both systems), so that
    numba compiles (or loads) every specialisation now, not in a solve."""
    for n, orientation in ((6, True), (6, False), (3, False)):
        transforms = [np.eye(4)[:3] for _ in range(n)]
        descent = CompiledDescent(
            SerialJoints(transforms, np.eye(4)[:3], [False] * n, [False] * n, list(range(n)),
                         [-1.0] * n, [1.0] * n, [(k, 0.0, 1.0) for k in range(n)]),
            _default_params(), compiled_kernels=kernels_)
        run = descent.start([0.1, 0.0, 0.0], np.eye(3) if orientation else None, [0.0] * n)
        run.descend(DescentStart([0.0] * n, 0.0, -1.0, near=True, pull=True), None)
        run.lowest_cost(np.zeros((2, n)))
        run.cost([0.0] * n)
        if orientation:
            run.first_pose(np.array([0.1, 0.0, 0.0]), np.array([0.0, 0.0, 0.0, 1.0]),
                           np.zeros(n), 0.0)
            run.first_pose(np.array([0.1, 0.0, 0.0]), np.empty(0), np.zeros(n), 0.0)
            run.descend_restarts(DescentStart([0.0] * n, 0.0, -1.0), None,
                                 RestartPlan(0, 1, _ExerciseDraws(n), np.full(n, -1.0),
                                             np.full(n, 2.0)))
    # A tree of two tips on three joints (one shared), a pose and a position target.
    tree_model = np.zeros((6, _MODEL_COLUMNS))
    tree_model[:, :12] = np.eye(4)[:3].ravel()
    tips = np.array([[0, 2, 1, 1.0, 0], [3, 2, 0, 1.0, 2]], dtype=float)
    columns = np.array([0, 1, 0, 2], dtype=float)
    targets = np.zeros((2, 12))
    targets[:, 0] = 0.1
    targets[0, 3:] = np.eye(3).ravel()
    active_model = np.zeros((3, _MODEL_COLUMNS))
    active_model[:, _LOW], active_model[:, _HIGH], active_model[:, _BOUNDED] = -1.0, 1.0, 1.0
    settings = DescentSettings(
        lambda_min=1e-9, lambda_max=1e9, lambda_up=10.0, lambda_down=0.1, max_step=1.0,
        max_iterations=20, stall_iterations=2, stall_iterations_blocked=2, damping=0.1,
        stall_factor=0.25).as_floats()
    state = np.zeros(_STATE)
    state[_BEST_COST], state[_FRESH] = math.inf, 1.0
    tree = TreeProblem(tree_model, tips, columns, targets)
    kernels_['tree_descend'](tree, active_model, settings, np.zeros(3), np.zeros(3),
                             np.full(2, -1.0), state, 16)
    kernels_['tree_cost'](tree, settings, np.zeros(3))


class _ExerciseDraws:
    """Restart numbers for :func:`exercise` (:class:`.starts.RestartDraws`' interface)."""

    def __init__(self, n: int):
        self._batches = np.full((4, 4, n), 0.5)

    def upto(self, k: int) -> np.ndarray:
        return self._batches


def _default_params() -> dict:
    """The solver parameters the kernels read, at typical values (for :func:`exercise`)."""
    return {'orientation_weight': 0.5, 'position_tolerance': 1e-5,
            'orientation_tolerance': 1e-4, 'damping': 0.1, 'max_iterations': 20,
            'null_space_gain': 0.5}


def descent_settings(params: dict) -> 'DescentSettings':
    """The settings of a descent with the solver's parameters (``orientation_weight``, the
    tolerances with their margin, ``damping``) and damped_jacobian's shared constants; the
    others 0.0."""
    return DescentSettings(
        w2=params['orientation_weight'] ** 2,
        tol_p=dls.TOLERANCE_MARGIN * params['position_tolerance'],
        tol_r=dls.TOLERANCE_MARGIN * params['orientation_tolerance'],
        lambda_min=dls.LAMBDA_MIN, lambda_max=dls.LAMBDA_MAX, lambda_down=dls.LAMBDA_DOWN,
        lambda_up=dls.LAMBDA_UP, stall_iterations=dls.STALL_ITERATIONS,
        stall_iterations_blocked=dls.STALL_ITERATIONS_BLOCKED, stall_factor=dls.STALL_FACTOR,
        stall_factor_blocked=dls.STALL_FACTOR, max_step=MAX_STEP,
        damping=params['damping']).as_floats()


class CompiledDescent:
    """The compiled descents bound to one serial chain and one solver's parameters.

    A solve calls :meth:`start` with its target and runs its descents on the
    :class:`DescentRun` it returns. :meth:`serves` tells whether the kernels are loaded (a
    solver asks before each solve and takes the Python descent until then).

    Args:
        joints: the chain (:class:`SerialJoints`).
        params: the solver's parameters (``orientation_weight``, the tolerances, ``damping``,
            ``max_iterations``, ``null_space_gain``).
        compiled_kernels: the kernels to use (by default those :func:`.compiled.compile` loaded).
    """

    #: Iterations per kernel call between two checks of the budget.
    CHUNK = 16

    def __init__(self, joints: SerialJoints, params: dict,
                 compiled_kernels: Optional[dict] = None):
        joint_transforms, tip_transform, prismatic, wraps, bounded, low, high, centring = joints
        n = len(joint_transforms)
        model = fk.model_rows(list(joint_transforms) + [tip_transform], prismatic,
                              _MODEL_COLUMNS)
        for i in range(n):
            model[i, _LOW], model[i, _HIGH] = low[i], high[i]
            model[i, _WRAPS] = float(wraps[i])
            model[i, _BOUNDED] = float(i in bounded)
        for k, middle, inverse_half in centring:
            model[k, _CENTRED], model[k, _MIDDLE], model[k, _INVERSE_HALF] = \
                1.0, middle, inverse_half
        self.model = model
        self.n = n
        gain = params['null_space_gain']
        #: Per with_orientation: the DescentSettings (the 6D one None where the Python descent
        #: serves: the dual system for 12 joints or more).
        self.settings = {}
        for orientation in (False, True):
            rows = 6 if orientation else 3
            dual = 2 * rows <= n
            if orientation and dual:
                self.settings[True] = None
                continue
            settings = descent_settings(params)._replace(
                max_iterations=params['max_iterations'], orientation=orientation, dual=dual,
                null_space=gain > 0.0 and bool(centring) and n > rows, null_gain=gain,
                stream_cost=STREAM_ERROR_M * STREAM_ERROR_M, stream_stall=STREAM_STALL_FACTOR,
                null_damping=NULL_SPACE_DAMPING, factor_max=FACTOR_MAX)
            if orientation:
                settings = settings._replace(stall_factor=dls.POSE_STALL_FACTOR)
            self.settings[orientation] = settings.as_floats()
        self._kernels = _KERNELS if compiled_kernels is None else compiled_kernels
        self._runs = threading.local()  # per thread: its DescentRun, reused by every solve

    def ready(self) -> bool:
        """Whether the compiled kernels are loaded (never blocks)."""
        return bool(self._kernels) and (self._kernels is not _KERNELS or kernels.ready())

    def serves(self, with_orientation: bool) -> bool:
        """Whether a target of this kind runs here now (the kernels loaded, the kind
        compiled); never blocks."""
        return self.settings[with_orientation] is not None and self.ready()

    def start_loading(self) -> None:
        """Start loading the kernels in the background unless they are (a solve calls it
        before its budget starts: starting a thread can take milliseconds on a loaded
        machine). Not at construction: importing numba would slow down a node's start-up."""
        if not self.ready():
            kernels.start()

    def start(self, p_target: Sequence[float], R_target: Optional[np.ndarray],
              q: Sequence[float]) -> 'DescentRun':
        """The descents of one solve toward a target (position [m], rotation matrix or None
        for a position target), with no best configuration yet (``q``, cost infinite). The
        run's arrays are this thread's, reused by its next solve: a solve copies what it
        returns."""
        run = self.run()
        run.aim(p_target, R_target, q)
        return run

    def run(self) -> 'DescentRun':
        """This thread's :class:`DescentRun` (its arrays reused by each of its solves)."""
        run = getattr(self._runs, 'run', None)
        if run is None:
            run = self._runs.run = DescentRun(self)
        return run


class DescentRun:
    """The compiled descents of one solve: its target, the last iterate :attr:`q` and the best
    configuration of all its descents :attr:`best_q` (arrays) with its cost :attr:`best_cost`.
    Its own arrays: solves on one solver from several threads do not share them."""

    __slots__ = ('descend_kernel', 'cost_kernel', 'lowest_cost_kernel', 'first_pose_kernel',
                 'restarts_kernel', 'model', 'settings', 'with_orientation', 'target', 'q',
                 'best_q', 'state', 'scratch', 'descent')

    def __init__(self, kernel: CompiledDescent):
        kernels_ = kernel._kernels
        self.descend_kernel = kernels_['descend']
        self.cost_kernel = kernels_['cost']
        self.lowest_cost_kernel = kernels_['lowest_cost']
        self.first_pose_kernel = kernels_['first_pose']
        self.restarts_kernel = kernels_['descend_restarts']
        self.model = kernel.model
        self.settings = kernel.settings
        self.with_orientation = False
        self.target = np.zeros(12)
        self.q = np.empty(kernel.n)
        self.best_q = np.empty(kernel.n)
        self.state = np.zeros(_STATE)
        self.scratch = np.empty(scratch_size(kernel.n))
        self.descent = Descent(self.target, self.q, self.best_q, self.state, self.scratch)

    def aim(self, p_target: Sequence[float], R_target: Optional[np.ndarray],
            q: Sequence[float]) -> None:
        """Start a solve toward a target, :attr:`best_q` ``q`` at infinite cost."""
        self.with_orientation = R_target is not None
        target = self.target
        target[:3] = p_target
        if R_target is not None:
            target[3:] = R_target.ravel()
        self.best_q[:] = q
        self.state[_BEST_COST] = math.inf

    @property
    def best_cost(self) -> float:
        """The cost of :attr:`best_q` (infinite before any descent kept one)."""
        return float(self.state[_BEST_COST])

    def iterations(self) -> int:
        """The iterations of the solve so far."""
        return int(self.state[_ITERATIONS])

    def turns(self) -> bool:
        """Whether :meth:`first_pose`'s answer has a full-turn joint more than half a turn from
        its seed (turned nearest the seed, it is measured again)."""
        return self.state[_TURNS] != 0.0

    def errors(self) -> Tuple[float, Optional[float]]:
        """The errors of the last iterate :attr:`q` as the kernel's FK measured them:
        ``(position [m], angle [rad] or None for a position target)``."""
        state = self.state
        return (float(state[_POSITION_ERROR]),
                float(state[_ANGLE_ERROR]) if self.with_orientation else None)

    def descend(self, start: DescentStart, budget) -> Tuple[int, np.ndarray, int, int, bool]:
        """One descent begun as ``start`` says, as :meth:`.descent.PythonDescent.descend`;
        ``budget`` (or None) is asked before each chunk of iterations. Returns ``(code, last
        iterate, iterations, last_blocked, near)``: code CONVERGED, GOOD_ENOUGH, STUCK,
        ITERATION_CAP or TIMEOUT (the budget spent; STUCK for a position target when enough is
        left to hand it to the closest-pose search); the last iterate is :attr:`q` (reused by
        the next descent)."""
        self.q[:] = start.q
        state = self.state
        state[_ITERATIONS], state[_LAST_BLOCKED] = start.iterations, start.last_blocked
        state[_NEAR] = -1.0 if start.near is None else float(start.near)
        state[_FLOOR], state[_GOOD] = start.floor, start.good_enough
        state[_KEEP_BEST], state[_PULL] = float(start.keep_best), float(start.pull)
        state[_FRESH] = 1.0
        return self.go_on(CHUNK_DONE, budget)

    def descend_restarts(self, start: DescentStart, budget, plan: RestartPlan
                         ) -> Tuple[int, np.ndarray, int, int, bool, int, int]:
        """A descent begun as :meth:`descend` begins ``start`` (``near`` and ``pull`` read as
        False: not the first of its solve), then the solver's plain restarts in the kernel
        (:func:`_descend_restarts`, as ``plan`` says) until a descent ends otherwise than
        stuck, or stuck at ``plan.decide_at`` restarts; ``budget`` is asked before each chunk
        of iterations. Returns :meth:`descend`'s tuple and the restarts and batches counted."""
        q_array = self.q
        q_array[:] = start.q
        state = self.state
        state[_ITERATIONS], state[_LAST_BLOCKED] = start.iterations, start.last_blocked
        state[_NEAR] = 0.0
        state[_FLOOR], state[_GOOD] = start.floor, start.good_enough
        state[_KEEP_BEST], state[_PULL], state[_FRESH] = float(start.keep_best), 0.0, 1.0
        state[_RESTARTS], state[_DRAWS], state[_DECIDE_AT] = plan.restarts, plan.used, \
            plan.decide_at
        state[_IN_DESCENT] = 1.0
        settings = self.settings[self.with_orientation]
        draws, low, span = plan.draws, plan.low, plan.span
        restart = Restarts(draws.upto(plan.used + 8), low, span)
        while True:
            if budget is not None and not budget.allows():
                code = STUCK if not self.with_orientation and budget.can_hand_over() \
                    else TIMEOUT
                break
            code = self.restarts_kernel(self.model, settings, restart, self.descent,
                                        CompiledDescent.CHUNK)
            while code == NEED_DRAWS:
                restart = Restarts(draws.upto(int(state[_DRAWS]) + 8), low, span)
                code = self.restarts_kernel(self.model, settings, restart, self.descent,
                                            CompiledDescent.CHUNK)
            if code != CHUNK_DONE:
                break
        return (code, q_array, int(state[_ITERATIONS]), int(state[_LAST_BLOCKED]), False,
                int(state[_RESTARTS]), int(state[_DRAWS]))

    def first_pose(self, position: np.ndarray, quat: np.ndarray, seed: np.ndarray,
                   floor: float) -> int:
        """A solve's checks and the first chunk of its seed's descent in one call
        (:func:`_first_pose`; float64 vectors, ``quat`` empty for a position target):
        BAD_INPUT, or the descent's code (CHUNK_DONE: :meth:`go_on` finishes it)."""
        orientation = self.with_orientation = quat.shape[0] != 0
        return self.first_pose_kernel(Problem(self.model, position, quat, floor),
                                      self.settings[orientation], seed, self.descent,
                                      CompiledDescent.CHUNK)

    def go_on(self, code: int, budget) -> Tuple[int, np.ndarray, int, int, bool]:
        """The descent under way (its last chunk's ``code``) to its end, ``budget`` (or None)
        asked before each chunk; returns what :meth:`descend` does."""
        state = self.state
        settings = self.settings[self.with_orientation]
        while code == CHUNK_DONE:
            if budget is not None and not budget.allows():
                code = STUCK if not self.with_orientation and budget.can_hand_over() \
                    else TIMEOUT
                break
            code = self.descend_kernel(self.model, settings, self.descent, CompiledDescent.CHUNK)
        return (code, self.q, int(state[_ITERATIONS]), int(state[_LAST_BLOCKED]),
                state[_NEAR] > 0.0)

    def cost(self, q: Sequence[float]) -> float:
        """The cost of ``q`` to the target [m^2] (weighted, for a pose)."""
        return float(self.cost_kernel(self.model, self.settings[self.with_orientation],
                                      self.target,
                                      np.asarray(q, dtype=float)))

    def lowest_cost(self, candidates: np.ndarray) -> np.ndarray:
        """The candidate configuration (a row of ``candidates``, floats) of lowest cost to the
        target (the first of equals)."""
        return candidates[self.lowest_cost_kernel(
            self.model, self.settings[self.with_orientation], self.target, candidates)]
