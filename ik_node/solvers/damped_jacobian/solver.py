"""Damped least squares (Levenberg-Marquardt) IK: the solver, its restart loop and its
hand-over to the closest-pose search.

The solver's parts: one descent (:mod:`.descent`, or the compiled kernel of :mod:`.compiled` for
a pose target where numba is installed: the same iterations either way), where restarts begin
(:mod:`.starts`), the shared settings (:mod:`.settings`), the error functions
(:mod:`.residuals`), trees with a shared trunk (:mod:`.tree`), the ``method: transpose``
baseline (:mod:`.transpose`) and the collision term that goes on from an answer in collision
(:mod:`.collision_term`, run by the collision guard). Here: the parameters, construction, and
the restart loop that runs the descents within one wall-time budget (``timeout``) and
``restarts``; the best configuration of all descents is returned.

Position targets: a descent stuck above tolerance, or a target out of reach from the start
(provably, or beyond the chain's measured reach), goes to the closest-pose search
(:mod:`ik_node.solvers.out_of_reach.closest_pose`): Newton descents with the exact Hessian to
stationary points of the error within the limits, restarted only until two descents from
different starts agree on the best one (one of them from a random start), or it reaches the
proven bound or the measured reach. The answer is then the closest pose, status ``unreachable``.

Pose (6D) targets: the first descent begins at the seed; with ``first_start: lower_cost``, at the
seed or the mid configuration, whichever has the lower weighted error (faster on 7-joint arms,
but the answer may leave the seed's branch). For the first restart after a descent in which
joints at a limit sat out a step, the descent begins at the mid configuration (far from every
limit); the others begin at the lowest-error of 4 random configurations. When the position is
provably out of reach, no restart can reach the pose and the descents crawl (Gauss-Newton misses
the curvature of a large residual): the best of 2 descents is returned, status ``unreachable``.
Otherwise, once two descents are stuck (eight when the position lies within the measured reach:
there the search is costly and usually wasted), the closest-pose search on the position alone
runs once: when it confirms the position out of reach, no restart can reach the pose either,
and the best pose found so far is returned, status ``unreachable`` (the rule of the position
search, not a proof: the message says so); when it reaches the position, the restarts go on.

Where the compiled descents serve, a solve starts in one step (:meth:`DampedJacobianSolver.
_solve_values`): the reach checks, then the seed's descent; an answer that descent reaches is
returned with the errors the kernel measured by FK at exactly those joints, and anything else
goes on from that descent as above.

Streams (docs/continuity.md): when the descent from a stream's seed (within ``STREAM_ERROR_M``,
weighted, of its target) is stuck, the next starts are near the seed (:mod:`.starts`) before the
mid or a random configuration, and an unconverged answer is the best one near the seed.
"""

from __future__ import annotations

import functools
import math
import time
from typing import Any, Callable, List, Mapping, Optional, Sequence

import numpy as np

from ik_node.errors import ChainError
from ik_node.model.chain import Chain, chain_lengths
from ik_node.solvers.base import (FLOAT64, IkResult, IkStatus, ParamSpec, RawSolution, Solver,
                                  SolverParts, new_result)
from ik_node.solvers.collision_guard import timed
from ik_node.solvers.numerics.budget import Budget
from ik_node.solvers.damped_jacobian import compiled
from ik_node.solvers.damped_jacobian.collision_term import CollisionTerm
from ik_node.solvers.damped_jacobian.compiled_runs import (CompiledDescent, DescentStart,
                                                           SerialJoints)
from ik_node.solvers.out_of_reach.compiled_reach import CompiledReach
from ik_node.solvers.damped_jacobian.descent import PythonDescent
from ik_node.solvers.geometry.residuals import ChainKinematics, cost_function, error_function
from ik_node.solvers.numerics.dls_settings import TOLERANCE_MARGIN as _TOLERANCE_MARGIN
from ik_node.solvers.damped_jacobian.starts import RestartDraws
from ik_node.solvers.damped_jacobian.restart_loop import RestartLoop
from ik_node.solvers.damped_jacobian.transpose import solve_transpose
from ik_node.solvers.damped_jacobian.tree import TreeDampedLeastSquares
from ik_node.solvers.numerics.null_space import centring_terms
from ik_node.solvers.out_of_reach.closest_pose import ClosestPose
from ik_node.solvers.out_of_reach.measured_reach import measure_reach
from ik_node.solvers.hip_knee.exact_leg import ExactLeg
from ik_node.solvers.out_of_reach.tip_sample import tip_sample
from ik_node.solvers.geometry.reach_bound import reach_bound
from ik_node.solvers.params import FloatListSpec
from ik_node.solvers.trees.several_tips import TipTarget

_TWO_PI = 2.0 * math.pi


class DampedJacobianSolver(RestartLoop, Solver):
    """Damped least squares with adaptive damping and random restarts; or Jacobian transpose.

    ``max_iterations`` caps the iterations of the whole solve (all restarts together); with
    ``method: dls`` the ``timeout`` usually ends a solve that does not converge first.
    """

    name = 'damped_jacobian'
    supports_orientation = True
    solves_trees = True  # ik_node.solvers.damped_jacobian.tree
    PER_TIP_PARAMS = ('weights',)
    PARAMS = {
        'method': ParamSpec(str, 'dls', 'dls: damped least squares with adaptive damping and '
                            'restarts; transpose: plain gradient descent (teaching baseline)',
                            choices=('dls', 'transpose')),
        'damping': ParamSpec(float, 0.1, 'initial damping lambda added to the diagonal of the '
                             'normal equations (dls); adapted every iteration', 'm^2',
                             min=0.0, max=1e6, min_inclusive=False),
        'step_size': ParamSpec(float, 0.5, 'gradient step eta of method transpose: '
                               'q <- q + eta * J^T e', '1/m^2', min=0.0, max=1e6,
                               min_inclusive=False),
        'timeout': ParamSpec(float, 0.005, 'wall-time budget of one dls solve, restarts '
                             'included (transpose stops only at tolerance or max_iterations)',
                             's', min=0.0, max=3600.0, min_inclusive=False),
        # The common cap (100) would cut off the slow tail of 7-DOF arms: for dls the
        # timeout is the real limit, the cap counts iterations over all restarts together.
        'max_iterations': ParamSpec(int, 2000, 'iteration cap of one solve, restarts included',
                                    '', min=1, max=1_000_000),
        'restarts': ParamSpec(int, 1000, 'most random restarts of one dls solve when a descent '
                              'is stuck', '', min=0, max=1_000_000),
        'restart_seed': ParamSpec(int, 0, 'seed of the random restart configurations: the same '
                                  'seed gives the same sequence of restarts', '',
                                  min=0, max=2**32 - 1),
        'first_start': ParamSpec(str, 'seed', 'where the first descent of a 6D dls solve '
                                 'begins: seed (stays on the seed branch when a descent from it '
                                 'converges), or lower_cost (the seed or the mid configuration, '
                                 'whichever has the lower weighted error; fewer restarts on '
                                 '7-joint arms from unrelated seeds, but the answer may leave '
                                 "the seed's branch)", choices=('seed', 'lower_cost')),
        'orientation_weight': ParamSpec(float, 0.5, 'weight of the orientation error against '
                                        'the position error in the dls cost', 'm/rad',
                                        min=0.0, max=1e3, min_inclusive=False),
        'weights': FloatListSpec(
            list, (), 'a tree with a shared trunk: the weight of each tip\'s error in the '
            'stacked cost, in the order of the chain\'s tip_links (one number > 0 per tip); '
            'empty = all 1', 'unitless', min=0.0, min_inclusive=False),
        'null_space_gain': ParamSpec(float, 0.5, 'on chains with more joints than the target '
                                     'has dimensions, when the seed is within 5 cm (weighted) '
                                     'of the target (a stream): the first step also moves '
                                     'along the self-motion (the null space of the Jacobian) '
                                     'away from the joint limits, by this gain times the '
                                     "seed's error, more near a limit, so a stream does not "
                                     'drift into one; 0: off', 'rad/m', min=0.0, max=100.0),
        'collision_repair_steps': ParamSpec(
            int, 8, 'with self_collision: the most steps of the collision term, which goes '
            'on from an answer in collision with the colliding pairs pushed apart first and '
            'the target kept in their null space (chains with more joints than the target has '
            'dimensions), before new seeds are tried; 0: off (restarts only)', '', min=0,
            max=10_000),
    }

    def __init__(self, chain: Chain, params: Optional[Mapping[str, Any]] = None,
                 parts: Optional[SolverParts] = None):
        super().__init__(chain, params, parts)
        self._reach = reach_bound(chain)
        self._low: List[float] = chain.lower.tolist()
        self._high: List[float] = chain.upper.tolist()
        # Revolute joints with a range of a full turn or more: out-of-range angles wrap.
        self._wraps = [not j.is_prismatic and hi - lo >= _TWO_PI
                       for j, lo, hi in zip(chain.joints, self._low, self._high, strict=True)]
        # Joints that can neither wrap nor turn freely: their limits constrain a step.
        self._bounded = [k for k, (lo, hi, wraps) in enumerate(
            zip(self._low, self._high, self._wraps, strict=True))
            if not wraps and math.isfinite(lo) and math.isfinite(hi)]
        self._mid: List[float] = self._q_mid.tolist()
        self._restart_low = [lo if math.isfinite(lo) else -math.pi for lo in self._low]
        self._restart_high = [hi if math.isfinite(hi) else math.pi for hi in self._high]
        self._restart_box = (np.array(self._restart_low), np.array(self._restart_high) -
                             np.array(self._restart_low), np.array(self._restart_high))
        self._draws = RestartDraws(self.params['restart_seed'], chain.n)
        fast = chain.fast_kinematics
        kinematics = fast if fast is not None else ChainKinematics(chain)
        self._pose_jacobian = kinematics.pose_jacobian
        self._position_jacobian = kinematics.position_jacobian
        # The Python descents: their step functions, built once per chain.
        self._descent = None if not chain.n else PythonDescent(
            chain.n, self._low, self._high, self._wraps, self._bounded, kinematics,
            fast is not None, self.params)
        self._pose = kinematics.pose
        # Position targets whose descent ends above tolerance: the closest-pose search.
        self._closest = None if not chain.n else ClosestPose(
            self._pose_jacobian, kinematics.position,
            fast.position_newton if fast is not None else None, self._low, self._high,
            self._wraps, [j.is_prismatic for j in chain.joints],
            max(sum(chain_lengths(chain)), 1e-3))
        self._exact = ExactLeg.of(chain) if self._closest is not None else None
        self._compiled = self._compiled_descent(chain, fast)
        if self._closest is not None and self._reach is not None and fast is not None:
            # Once per solver, with the generated kinematics of a serial chain (5-20 ms).
            self._closest.reach = measure_reach(self._closest, self._reach)
        # The reach checks of a target in one compiled call, beside the compiled descents.
        self._compiled_reach = None if self._compiled is None or self._closest is None else \
            CompiledReach.of(self._reach, self._closest.reach)
        if self._closest is not None and fast is not None and self._exact is None:
            self._closest.samples = tip_sample(chain)  # (a leg takes its closed form)
            self._closest.use_compiled(chain)
        #: The compiled descents where a solve starts with the seed's descent in one step
        #: (:meth:`_solve_values`): dls, no history, the seed first, the reach checks compiled.
        self._timeout = self.params['timeout']
        #: The compiled descents where a pose solve starts in one compiled call
        #: (:meth:`_first_pose`): as ``_lean``, one tip, a budget of 1 ms or more (the first
        #: chunk of iterations runs before the budget is asked), 6D descents compiled.
        self._first = None
        self._lean = self._compiled if (
            self._compiled_reach is not None and not self.params['record_history'] and
            self.params['first_start'] == 'seed') else None
        if self._lean is not None and not self._several_tips and self._timeout >= 1e-3 and \
                self._lean.settings[True] is not None:
            self._first = self._lean
        #: Position targets take the one-call start too where nothing but the reach checks
        #: decides before the descent (no plane bound, no leg's closed form).
        self._first_position = self._plane is None and self._exact is None

    def collision_term(self, checker) -> Optional[CollisionTerm]:
        """The collision term (:mod:`.collision_term`) of this solver's chain with ``checker``
        (the collision guard asks once), or None: a tree, or ``method: transpose``."""
        if self._several_tips or self.params['method'] != 'dls' or not self.chain.n:
            return None
        return CollisionTerm(self.chain, checker, self.params)

    def check_chain(self, chain: Chain) -> None:
        """A tree with a shared trunk is solved by :mod:`.tree` (method dls only); it is built
        here, so a chain it cannot solve is refused at construction."""
        self._tree_solver = None
        if len(chain.tip_links) > 1:
            if self.params['method'] != 'dls':
                raise ChainError(f'damped_jacobian: method {self.params["method"]!r} solves '
                                 'serial chains and independent legs only; a tree whose tips '
                                 'share joints needs method dls')
            self._tree_solver = TreeDampedLeastSquares(chain, self.params)

    def _solve_tree(self, targets: Sequence[TipTarget], q_seed: np.ndarray) -> RawSolution:
        """Every targeted tip at once (:class:`.tree.TreeDampedLeastSquares`)."""
        return self._tree_solver.solve(targets, q_seed)

    def _compiled_descent(self, chain: Chain, fast) -> Optional[CompiledDescent]:
        """The compiled descents (:mod:`.compiled`) where numba may serve and the chain is
        serial; else None (the Python descent serves). Their kernels load in the background
        (:mod:`ik_node.kernels`): the Python descent serves until then."""
        if not compiled.available() or fast is None or self._descent is None or \
                self.params['method'] != 'dls':
            return None
        return CompiledDescent(SerialJoints(
            fast.joint_transforms, fast.tip_transform, [j.is_prismatic for j in chain.joints],
            self._wraps, self._bounded, self._low, self._high,
            centring_terms(self._low, self._high, self._bounded)), self.params)

    # ------------------------------------------------------------------------------ solving
    def _solve_values(self, p_list: List[float], R_target: Optional[np.ndarray],
                      q_seed_list: List[float]) -> IkResult:
        """:meth:`Solver._solve_values`; where the compiled descents serve, the common case in
        one step: the reach checks and the seed's descent, and when that descent reaches the
        target, the result with the errors the kernel measured by FK at exactly the returned
        joints (no second FK). Otherwise the solve goes on from that descent as
        :meth:`_solve_dls` (a position target out of reach: the closest-pose search)."""
        kernel = self._lean
        orientation = R_target is not None
        if kernel is None or not kernel.serves(orientation) or (
                not orientation and self._plane is not None):
            return super()._solve_values(p_list, R_target, q_seed_list)
        start = time.perf_counter()
        run = kernel.start(p_list, R_target, q_seed_list)
        bound, gap = self._compiled_reach.checks(run.target)
        tolerance = self._tol_p
        if not orientation and (bound > tolerance or gap > tolerance or (
                self._exact is not None and self._exact.out_of_reach(p_list))):
            return super()._solve_values(p_list, R_target, q_seed_list)  # the closest pose
        min_residual = bound if bound > 0.0 else None
        floor, good_enough = 0.0, -1.0
        if min_residual is not None:
            floor = bound * bound
            if not orientation:
                good_enough = bound + tolerance
        budget = Budget(self.params['timeout'])
        first = run.descend(DescentStart(q_seed_list, floor, good_enough, near=None, pull=True),
                            budget)
        result = self._from_first((first, run, budget), p_list, R_target, q_seed_list,
                                  min_residual, gap, start)
        if self._collision is None:
            return result
        return self._collision.values(self, result, p_list, R_target, q_seed_list, start)

    def _from_first(self, seed_descent: tuple, p_list: List[float],
                    R_target: Optional[np.ndarray], q_seed_list: List[float],
                    min_residual: Optional[float], gap: float, start: float) -> IkResult:
        """The result of a solve whose seed's descent ended as ``seed_descent`` says: ``(first,
        run, budget)``, ``first`` what :meth:`.compiled_runs.DescentRun.descend` returned on the
        :class:`.compiled_runs.DescentRun` ``run``: that descent's answer, or the solve gone on from
        it as :meth:`_solve_dls`; before the collision check."""
        first, run, _ = seed_descent
        if first[0] == compiled.CONVERGED:  # the common case: the seed's descent reached it
            raw = RawSolution(first[1].tolist(), IkStatus.CONVERGED, first[2],
                              min_residual=min_residual, message='converged after 0 restarts',
                              measured=run.errors())
        else:
            p_target = np.array(p_list)
            raw = self._solve_dls(
                functools.partial(self._descent.evaluator, p_target, R_target),
                functools.partial(cost_function, self._pose, p_target, R_target,
                                  self.params['orientation_weight']),
                q_seed_list, min_residual, p_target, R_target, gap, first=seed_descent)
            if raw.min_residual is None or (min_residual is not None and
                                            min_residual > raw.min_residual):
                raw.min_residual = min_residual
        return self._finish(raw, p_list, R_target, time.perf_counter() - start, False,
                            q_seed_list)

    def solve(self, target_position=None, target_orientation=None, seed=None, *,
              targets: Optional[Mapping[str, Any]] = None) -> IkResult:
        """:meth:`Solver.solve`. A target on the compiled path starts in one compiled call
        (:meth:`_first_pose`; a position target on a chain that is neither planar nor a leg);
        anything else, and any input that call does not take, goes through
        :meth:`Solver.solve`."""
        if self._first is not None and targets is None and target_position is not None and \
                (target_orientation is not None or self._first_position):
            result = self._first_pose(target_position, target_orientation, seed)
            if result is not None:
                return result
        return super().solve(target_position, target_orientation, seed, targets=targets)

    def _first_pose(self, position, quat, seed) -> Optional[IkResult]:
        """A solve (a pose, or a position: ``quat`` None) whose reach checks, input checks
        and seed's first descent run in compiled calls (:func:`.compiled._first_pose`): the
        inputs' checks are those of :meth:`Solver.solve`, and an answer that descent reaches is
        returned with the errors the kernel's FK measured at exactly the joints returned. None,
        before anything is solved, for what :meth:`Solver.solve` then takes from the start:
        inputs that are not numeric vectors or that its checks refuse (it raises with its
        message), a position provably (or, position only, measurably) out of reach, the kernels
        not loaded yet. With the collision check, an answer in collision is retried from new
        seeds by the same compiled start (:meth:`_compiled_retry`)."""
        position = _vector(position)
        quat = _NO_ORIENTATION if quat is None else _vector(quat)
        seed_vector = self._q_mid if seed is None else _vector(seed)
        if position is None or quat is None or seed_vector is None or \
                position.shape[0] != 3 or not self._first.serves(quat is not _NO_ORIENTATION):
            return None
        start = time.perf_counter()
        found = self._first_solve(position, quat, seed_vector, start,
                                  self.params['timeout'])
        if found is None:
            return None
        result, run = found
        guard = self._collision
        if guard is None:
            return result
        if not result.reachable or guard.checker.answer_is_free(result.joint_positions):
            return timed(result, start)  # the common case: free
        return guard.repair(self, result, position.tolist(), self._rotation_of(run),
                            self._seed_values(seed_vector), start,
                            solve_from=functools.partial(self._compiled_retry, position, quat))

    def _first_solve(self, position: np.ndarray, quat: np.ndarray, seed_vector: np.ndarray,
                     start: float, timeout: float) -> Optional[tuple]:
        """:meth:`_first_pose` before the collision check, within ``timeout`` [s] from
        ``start``: ``(result, run)`` (the :class:`.compiled_runs.DescentRun` holding the
        target), or None for what the general path takes from the start."""
        bound, gap = self._compiled_reach.checks(position)
        if not bound <= 0.0 or (quat is _NO_ORIENTATION and not gap <= self._tol_p):
            return None  # provably or measurably out of reach (or not finite): the general path
        run = self._first.run()
        code = run.first_pose(position, quat, seed_vector, 0.0)
        if code == compiled.BAD_INPUT:
            return None
        if code == compiled.CONVERGED and not run.turns():
            position_error, angle_error = run.errors()
            if position_error <= self._tol_p and (angle_error is None or
                                                  angle_error <= self._tol_r):
                return new_result(
                    joint_positions=run.q.copy(), joint_names=self._joint_names,
                    reachable=True, status=IkStatus.CONVERGED, position_error=position_error,
                    orientation_error=angle_error, min_residual=None,
                    iterations=run.iterations(), solve_time=time.perf_counter() - start,
                    message='converged after 0 restarts', orientation_ignored=False,
                    history=None, tips=None, best_found=False), run
        budget = Budget(timeout, start)
        R_target = self._rotation_of(run)
        p_list, q_seed_list = position.tolist(), self._seed_values(seed_vector)
        return self._from_first((run.go_on(code, budget), run, budget), p_list, R_target,
                                q_seed_list, None, gap, start), run

    def _compiled_retry(self, position: np.ndarray, quat: np.ndarray,
                        seed: List[float]) -> Optional[IkResult]:
        """A collision retry (:meth:`.collision_guard.CollisionGuard.repair`) from ``seed``:
        the compiled start of :meth:`_first_pose` with the solver's ``timeout`` as the guard
        set it for this retry, no collision check (the guard checks); None where that start
        does not serve (the guard then solves by the general path)."""
        found = self._first_solve(position, quat, np.array(seed, dtype=float),
                                  time.perf_counter(), self.params['timeout'])
        return None if found is None else found[0]

    @staticmethod
    def _rotation_of(run) -> Optional[np.ndarray]:
        """The target rotation (3x3) of a compiled run, or None for a position target."""
        return run.target[3:].reshape(3, 3).copy() if run.with_orientation else None

    def _solve(self, p_target: np.ndarray, R_target: Optional[np.ndarray],
               q_seed: np.ndarray) -> RawSolution:
        checks = None if self._compiled_reach is None else self._compiled_reach.checks(p_target)
        if checks is None:  # the Python checks (the gap asked only where it matters)
            min_residual, reach_gap = self._min_residual(p_target), None
        else:  # both in one compiled call
            bound, reach_gap = checks
            min_residual = bound if bound > 0.0 else None
        if self._plane is not None and R_target is None:
            min_residual = self._plane_bound(p_target, min_residual, self._reach)
        if self.chain.n == 0:  # nothing to move: the measured error is the answer
            return RawSolution(q_seed, IkStatus.MAX_ITERATIONS, 0, min_residual=min_residual,
                               message='the chain has no moving joints')
        params = self.params
        if params['method'] == 'transpose':
            raw = solve_transpose(
                self._error_function(p_target, R_target), q_seed.tolist(), params['step_size'],
                params['max_iterations'], (_TOLERANCE_MARGIN * params['position_tolerance'],
                                           _TOLERANCE_MARGIN * params['orientation_tolerance']),
                (self._low, self._high, self._wraps), params['record_history'])
        else:
            if self._compiled is not None:
                self._compiled.start_loading()  # once, in the background
            evaluator = self._descent.evaluator
            raw = self._solve_dls(functools.partial(evaluator, p_target, R_target),
                                  functools.partial(cost_function, self._pose, p_target,
                                                    R_target, params['orientation_weight']),
                                  q_seed.tolist(), min_residual, p_target, R_target, reach_gap)
        if raw.min_residual is None or (min_residual is not None and
                                        min_residual > raw.min_residual):
            raw.min_residual = min_residual  # (a leg's closed form may prove more)
        return raw

    def _error_function(self, p_target: np.ndarray, R_target: Optional[np.ndarray]
                        ) -> Callable:
        """See :func:`~ik_node.solvers.geometry.residuals.error_function`."""
        return error_function(self._pose_jacobian, self._position_jacobian, p_target, R_target,
                              self.params['orientation_weight'])

    # ------------------------------------------------------------------------------ helpers
    def _min_residual(self, p_target: np.ndarray) -> Optional[float]:
        """A proven lower bound on the position error [m] when positive, else None (see
        :class:`~ik_node.solvers.geometry.reach_bound.ReachBound`)."""
        if self._reach is None:
            return None
        gap = self._reach.lower_bound(p_target.tolist())
        return gap if gap > 0.0 else None


#: The quaternion of a position target in the one-call start: none.
_NO_ORIENTATION = np.empty(0)


def _vector(value) -> Optional[np.ndarray]:
    """``value`` as a C-contiguous float64 vector (itself when it is one), or None when numpy
    does not read it as numbers (the general checks then say why)."""
    if type(value) is np.ndarray and value.dtype is FLOAT64 and value.ndim == 1 and \
            value.flags.c_contiguous:
        return value
    try:
        return np.ascontiguousarray(value, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        return None
