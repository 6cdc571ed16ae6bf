"""Damped least squares (Levenberg-Marquardt) IK, and the Jacobian-transpose teaching baseline.

Why one file of this size: the restart loop, the descents, the stream rules and the hand-over
to the closest-pose search share the solver's state and one wall-time budget; the pure parts
live beside it (residuals.py, tree.py, compiled.py, ../codegen.py, ../null_space.py). Split
the restart loop from the descents next if it grows.

``method: dls`` minimises the weighted squared error ``|p_t - p|^2 + w^2 |omega|^2`` (``omega``
is the rotation vector taking the tip orientation to the target's, in the base frame; ``w`` the
``orientation_weight``), or ``|p_t - p|^2`` for a position-only target. Each iteration solves the
damped normal equations ``(J^T J + lambda I) dq = J^T e`` and tries ``q + dq`` brought into the
joint limits: a step that lowers the error is accepted and ``lambda`` shrinks, one that does not
is rejected and ``lambda`` grows (adaptive damping, as KDL's ``ChainIkSolverPos_LMA`` does). So
the error never rises within a descent (no jitter at unreachable targets), and a singular start
still moves: the damped system is always solvable, and where the gradient ``J^T e`` vanishes
(a stretched arm, target straight ahead) a descent that stalls restarts from a random
configuration. Restarts continue within ``timeout`` and ``restarts``; the best configuration of
all descents is returned.

Joint limits: a revolute joint whose range spans a full turn (UR5's +-2 pi) wraps by whole turns
instead of being clipped (the same pose, so the limit costs nothing); other joints are clipped,
and a joint already at a limit whose step points outwards sits out that step, so the rest get a
full Gauss-Newton step rather than one bent by the clip. A descent is stuck when its error above
the proven residual floor has not fallen to a quarter within 5 iterations (2 when joints at a
limit sat out a step meanwhile), or no damping finds a lower error.

Position targets: a descent stuck above tolerance, or a target out of reach from the start
(provably, or beyond the chain's measured reach), goes to the closest-pose search
(:mod:`ik_node.solvers.out_of_reach.closest_pose`): Newton descents with the exact Hessian to
stationary
points of the error within the limits, restarted only until two descents from different starts
agree on the best one (one of them from a random start), or it reaches the proven bound or the
measured reach. The answer is then the closest pose, status ``unreachable``.

Pose (6D) targets: the first descent begins at the seed; with ``first_start: lower_cost``, at the
seed or the mid configuration, whichever has the lower weighted error (faster on 7-joint arms,
but the answer may leave the seed's branch). For the first restart after a descent in which
joints at a limit sat out a step, the descent begins at the mid configuration (far from every
limit); the others begin at
the lowest-error of 4 random configurations. When the position is provably out of reach, no
restart can reach the pose and the descents crawl (Gauss-Newton misses the curvature of a large
residual): the best of 2 descents is returned, status ``unreachable``. Otherwise, once two
descents are stuck (eight when the position lies within the measured reach: there the search is
costly and usually wasted), the closest-pose search on the position alone runs once: when it
confirms the position out of reach, no restart can reach the pose either, and the best pose found
so far is returned, status ``unreachable`` (the rule of the position search, not a proof: the
message says so); when it reaches the position, the restarts go on.

Streams (docs/continuity.md): a seed within ``STREAM_ERROR_M`` (weighted) of its target is one
step of a stream away. Its descents start with a damping no larger than the error and are stuck
only when the error has not fallen by ``_STREAM_STALL_FACTOR`` in ``_STALL_ITERATIONS`` (near a
singularity a descent converges slowly rather than restarting); on a chain with more joints
than the target has dimensions its first step also moves along the self-motion away from the
joint limits (``null_space_gain``, :mod:`ik_node.solvers.null_space`); when stuck, the next
starts are near the seed (``_NEAR_SEED_RADII``) before the mid or a random configuration, and
an unconverged answer is the best one near the seed. A stream's descents run in Python (the
compiled descent tells a stream's seed by its cost and hands over).

``method: transpose`` is plain gradient descent ``q <- clip(q + step_size * J^T e)``: no line
search, no scaling, no restarts, stopping only at the tolerance or ``max_iterations``.

Speed: serial chains use the generated pure-Python kinematics of
:mod:`ik_node.model.fast_kinematics`, and the damped systems are solved by generated, unrolled
Cholesky
factorisations: for 6-7 joints both are several times faster than numpy, whose per-call overhead
dominates arrays this small. For 6D targets the n x n normal equations ``J^T J``, ``J^T e`` are
built once per accepted iterate and every damping and every set of joints sitting out a step
reuses them; position only, the 3 x 3 system ``J J^T + lambda I`` is cheaper to build for each
trial. The n x n trial step (solve, joints sitting out, limits) is one generated function, not
four Python calls (the generators are in :mod:`ik_node.solvers.codegen`).
"""

from __future__ import annotations

import functools
import math
import random
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np

from ik_node.model.chain import Chain, chain_lengths
from ik_node.errors import ChainError
from ik_node.solvers.base import IkStatus, ParamSpec, RawSolution, Solver
from ik_node.solvers.damped_jacobian.tree import TreeDampedLeastSquares
from ik_node.solvers.params import FloatListSpec
from ik_node.solvers.several_tips import TipTarget
from ik_node.solvers.budget import Budget
from ik_node.solvers.out_of_reach.closest_pose import ClosestPose
from ik_node.solvers.codegen import (MAX_STEP, damped_solve_function, damped_step_function,
                                     damped_trial_function, limit_functions, lower_index,
                                     normal_equations_function)
from ik_node.solvers.damped_jacobian import compiled
from ik_node.solvers.damped_jacobian.settings import LAMBDA_DOWN as _LAMBDA_DOWN
from ik_node.solvers.damped_jacobian.settings import LAMBDA_MAX as _LAMBDA_MAX
from ik_node.solvers.damped_jacobian.settings import LAMBDA_MIN as _LAMBDA_MIN
from ik_node.solvers.damped_jacobian.settings import LAMBDA_UP as _LAMBDA_UP
from ik_node.solvers.damped_jacobian.settings import RESTART_CANDIDATES as _RESTART_CANDIDATES
from ik_node.solvers.damped_jacobian.settings import STALL_FACTOR as _STALL_FACTOR
from ik_node.solvers.damped_jacobian.settings import STALL_ITERATIONS as _STALL_ITERATIONS
from ik_node.solvers.damped_jacobian.settings import \
    STALL_ITERATIONS_BLOCKED as _STALL_ITERATIONS_BLOCKED
from ik_node.solvers.damped_jacobian.settings import TOLERANCE_MARGIN as _TOLERANCE_MARGIN
from ik_node.solvers.damped_jacobian.residuals import ChainKinematics, cost_function, error_function
from ik_node.solvers.null_space import STREAM_ERROR_M, centring_terms, limit_pull
from ik_node.solvers.out_of_reach.measured_reach import measure_reach
from ik_node.solvers.out_of_reach.outcome import STOP_STATUS, search_outcome
from ik_node.solvers.out_of_reach.reach_bound import reach_bound

# A pose target whose position is provably out of reach: no descent can reach it, and its
# descents end crawling (Gauss-Newton misses the curvature of a large residual) rather than at
# a stationary point. The solve returns the best after the seed's descent and this many
# restarts (a second descent often lowers the weighted error, a third or fourth rarely:
# benchmarks/results/design-notes.md).
_POSE_OUT_OF_REACH_RESTARTS = 1
_TWO_PI = 2.0 * math.pi
# 6D: the closest-pose search on the position alone (is the position itself out of reach?)
# runs once this many descents are stuck: after the second when the position lies beyond the
# measured reach (the search then stops after one Newton descent), else after the eighth (the
# search costs about ten Python descents, and in reachable solves it is wasted time;
# benchmarks/results/design-notes.md).
_POSITION_CHECK_BEYOND_REACH = 2
_POSITION_CHECK_AFTER = 8
# How a descent ends besides the kernel's codes (CONVERGED, STUCK, ITERATION_CAP, TIMEOUT):
# position only, within tolerance of the proven bound.
_GOOD_ENOUGH = -1
# The null-space projector I - J+ J is computed as mu (H + mu I)^-1 with this relative damping
# mu / (trace(H) / n): 1 on the null space, about mu / sigma^2 on the row space.
_NULL_SPACE_DAMPING = 1e-9
# A seed within STREAM_ERROR_M (weighted) of the target is one step of a stream away: its first
# step pulls along the self-motion (redundant chains); when its descent is stuck, the next
# starts are near the seed, within these radii [rad or m] (each the lowest-cost of
# _RESTART_CANDIDATES), before the mid or a random configuration.
_NEAR_SEED_RADII = (0.05, 0.15, 0.4, 1.0)
# Near a stream's seed a descent is stuck only when its error has not fallen by this factor in
# _STALL_ITERATIONS: near a singularity it converges slowly, and a restart may land far away.
_STREAM_STALL_FACTOR = 0.7


class DampedJacobianSolver(Solver):
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
    }

    def __init__(self, chain: Chain, params=None):
        super().__init__(chain, params)
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
        self._restart_spans = [(lo, hi - lo) for lo, hi in
                               zip(self._restart_low, self._restart_high, strict=True)]
        # Per with_orientation: (normal, step); normal(J, e, w) -> (A, b) is what
        # step(q, A, b, lam) -> (q_new, joints that sat out the step) takes. Measured on
        # UR5/Panda: the n x n normal equations, built once per iterate and reused by every
        # damping and every set of blocked joints tried from it, beat the m x m system for 6D;
        # position only (3 rows), the 3 x 3 system built for each trial is cheaper (A, b = J, e).
        # The n x n step is one generated function (solve, blocked joints, limits).
        weight = self.params['orientation_weight']
        self._steps = {}
        self._normals = {}
        if chain.n:
            self._advance, self._blocked_joints = limit_functions(
                self._low, self._high, self._wraps, self._bounded)
        for with_orientation in (False, True) if chain.n else ():
            rows = 6 if with_orientation else 3
            if 2 * rows <= chain.n:
                self._normals[with_orientation] = None
                self._steps[with_orientation] = functools.partial(
                    self._trial_dual, damped_step_function(rows, chain.n), weight)
            else:
                self._normals[with_orientation] = normal_equations_function(rows, chain.n)
                self._steps[with_orientation] = damped_trial_function(
                    self._low, self._high, self._wraps, self._bounded)
        # The null-space pull: per bounded joint (index, middle, 1 / half range), and the
        # projector's solve for each target kind with more joints than error rows.
        self._centring = centring_terms(self._low, self._high, self._bounded)
        self._null_space = {}
        if self.params['null_space_gain'] > 0.0 and self._centring:
            for with_orientation in (False, True):
                rows = 6 if with_orientation else 3
                if chain.n > rows:
                    self._null_space[with_orientation] = (
                        damped_step_function(rows, chain.n) if self._normals[with_orientation]
                        is None else damped_solve_function(chain.n))
        fast = chain.fast_kinematics
        self._pose_normal = None if fast is None else fast.pose_normal
        kinematics = fast if fast is not None else ChainKinematics(chain)
        self._pose_jacobian = kinematics.pose_jacobian
        self._position_jacobian = kinematics.position_jacobian
        self._pose = kinematics.pose
        # Position targets whose descent ends above tolerance: the closest-pose search.
        self._closest = None if not chain.n else ClosestPose(
            self._pose_jacobian, kinematics.position,
            fast.position_newton if fast is not None else None, self._low, self._high,
            self._wraps, [j.is_prismatic for j in chain.joints],
            max(sum(chain_lengths(chain)), 1e-3))
        self._compiled = self._compiled_descent(chain, fast)
        params = self.params
        # (iteration cap, tolerances with their margin, initial damping) of every descent
        self._descent_constants = (
            params['max_iterations'], _TOLERANCE_MARGIN * params['position_tolerance'],
            _TOLERANCE_MARGIN * params['orientation_tolerance'], params['damping'])
        if self._closest is not None and self._reach is not None and fast is not None:
            # Once per solver, with the generated kinematics of a serial chain (the cost:
            # benchmarks/results/design-notes.md).
            self._closest.reach = measure_reach(self._closest, self._reach)

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

    def _compiled_descent(self, chain: Chain, fast) -> Optional[compiled.CompiledDescent]:
        """The compiled 6D descent (:mod:`.compiled`) where numba is installed and the chain
        is serial with the n x n normal equations; else None (the Python descent serves)."""
        params = self.params
        if not compiled.available() or fast is None or self._normals.get(True) is None or \
                params['method'] != 'dls':
            return None
        kernel = compiled.CompiledDescent(
            fast.joint_transforms, fast.tip_transform, [j.is_prismatic for j in chain.joints],
            self._wraps, self._bounded, self._low, self._high, params['orientation_weight'],
            _TOLERANCE_MARGIN * params['position_tolerance'],
            _TOLERANCE_MARGIN * params['orientation_tolerance'], _LAMBDA_MIN, _LAMBDA_MAX,
            _LAMBDA_DOWN, _LAMBDA_UP, _STALL_ITERATIONS, _STALL_ITERATIONS_BLOCKED,
            _STALL_FACTOR, MAX_STEP, params['max_iterations'])
        kernel.warm_up()
        return kernel

    # ------------------------------------------------------------------------------ solving
    def _solve(self, p_target: np.ndarray, R_target: Optional[np.ndarray],
               q_seed: np.ndarray) -> RawSolution:
        min_residual = self._min_residual(p_target)
        if self.chain.n == 0:  # nothing to move: the measured error is the answer
            return RawSolution(q_seed, IkStatus.MAX_ITERATIONS, 0, min_residual=min_residual,
                               message='the chain has no moving joints')
        if self.params['method'] == 'transpose':
            raw = self._solve_transpose(self._error_function(p_target, R_target),
                                        q_seed.tolist())
        else:
            raw = self._solve_dls(self._dls_evaluator(p_target, R_target)
                                  if R_target is None or self._compiled is None else
                                  functools.partial(self._dls_evaluator, p_target, R_target),
                                  functools.partial(cost_function, self._pose, p_target,
                                                    R_target, self.params['orientation_weight']),
                                  q_seed.tolist(), R_target is not None, min_residual,
                                  p_target, R_target)
        raw.min_residual = min_residual
        return raw

    def _dls_evaluator(self, p_target: np.ndarray, R_target: Optional[np.ndarray]) -> Callable:
        """``evaluate(q) -> (cost, position error [m], angle error [rad], A, b)``, where
        ``(A, b)`` is what the step function of this target kind takes: the normal equations
        ``(H, g)``, or ``(J, e)`` when the smaller m x m system is built for each trial.

        6D on a serial chain: one generated function (:meth:`SerialKinematics.pose_normal`)
        computes the error and the normal equations without packing a Jacobian.
        """
        with_orientation = R_target is not None
        if with_orientation and self._pose_normal is not None and \
                self._normals[True] is not None:
            target = tuple(p_target.tolist()) + tuple(R_target.ravel().tolist())
            # H, g are not built at an iterate within the tolerances of _solve_dls: its loop
            # returns there before any step (the same comparisons on the same floats).
            tolerances = (_TOLERANCE_MARGIN * self.params['position_tolerance'],
                          _TOLERANCE_MARGIN * self.params['orientation_tolerance'])
            return functools.partial(self._pose_normal, target,
                                     self.params['orientation_weight'] ** 2, tolerances)
        normal = self._normals[with_orientation]
        if not with_orientation and normal is None and self._pose_normal is not None:
            # J, e are not built within the position tolerance of _solve_dls (see above).
            return functools.partial(self.chain.fast_kinematics.position_residual,
                                     tuple(p_target.tolist()),
                                     _TOLERANCE_MARGIN * self.params['position_tolerance'])
        evaluate = self._error_function(p_target, R_target)
        if normal is None:
            def evaluate_dual(q):
                cost, position_error, angle_error, e, J = evaluate(q)
                return cost, position_error, angle_error, J, e
            return evaluate_dual
        weight = self.params['orientation_weight']

        def evaluate_normal(q):
            cost, position_error, angle_error, e, J = evaluate(q)
            return (cost, position_error, angle_error) + normal(J, e, weight)
        return evaluate_normal

    def _error_function(self, p_target: np.ndarray, R_target: Optional[np.ndarray]
                        ) -> Callable:
        """See :func:`~ik_node.solvers.damped_jacobian.residuals.error_function`."""
        return error_function(self._pose_jacobian, self._position_jacobian, p_target, R_target,
                              self.params['orientation_weight'])

    def _reached(self, position_error: float, angle_error: float) -> bool:
        return (position_error <= _TOLERANCE_MARGIN * self.params['position_tolerance'] and
                angle_error <= _TOLERANCE_MARGIN * self.params['orientation_tolerance'])

    def _clip(self, q: Sequence[float]) -> List[float]:
        """``q`` within the limits: wrapped by whole turns where the joint allows a full turn
        (the same pose), else clipped."""
        out = []
        for v, lo, hi, wraps in zip(q, self._low, self._high, self._wraps, strict=True):
            if v < lo:
                v = v + _TWO_PI * math.ceil((lo - v) / _TWO_PI) if wraps else lo
            elif v > hi:
                v = v - _TWO_PI * math.ceil((v - hi) / _TWO_PI) if wraps else hi
            out.append(v)
        return out

    def _solve_transpose(self, evaluate: Callable, q: List[float]) -> RawSolution:
        eta = self.params['step_size']
        history: Optional[List[float]] = [] if self.params['record_history'] else None
        iterations = 0
        while True:
            _, position_error, angle_error, e, J = evaluate(q)
            if history is not None:
                history.append(position_error)
            if self._reached(position_error, angle_error):
                return RawSolution(np.array(q), IkStatus.CONVERGED, iterations, history=history)
            if iterations >= self.params['max_iterations']:
                return RawSolution(np.array(q), IkStatus.MAX_ITERATIONS, iterations,
                                   history=history, message=f'transpose: {iterations} '
                                   f'iterations with step size {eta:g}')
            gradient = np.asarray(e) @ np.asarray(J)  # J^T e
            q = self._clip((np.asarray(q) + eta * gradient).tolist())
            iterations += 1

    def _solve_dls(self, evaluator: Callable, make_cost_function: Callable, q: List[float],
                   with_orientation: bool, min_residual: Optional[float],
                   p_target: np.ndarray, R_target: Optional[np.ndarray] = None) -> RawSolution:
        """Descents from ``q``, then from random restarts; ``make_cost_function()`` gives the
        ``cost(q)`` that ranks restart candidates and, with ``first_start: lower_cost``, the seed
        against the mid configuration (built when first needed). ``evaluator`` is the
        ``evaluate(q)`` of :meth:`_dls_evaluator` for the Python descents, or (a pose target
        where the compiled descents serve) a function making it. Each descent runs in
        :meth:`_descend`, or in the compiled kernel (:mod:`.compiled`) for a pose target where
        numba is installed: the same iterations either way."""
        params = self.params
        budget = Budget(params['timeout'])
        history: Optional[List[float]] = [] if params['record_history'] else None
        # The cost never falls below floor (the squared proven residual): progress is measured
        # above it, so a descent toward an unreachable target's closest point is not stalled.
        floor = 0.0 if min_residual is None else min_residual * min_residual
        # Position only: no configuration beats the proven bound, so a descent within tolerance
        # of it is as close as the target can be approached.
        good_enough = -1.0
        if min_residual is not None and not with_orientation:
            good_enough = min_residual + params['position_tolerance']
        rng: Optional[random.Random] = None
        restarts = 0
        best_q, best_cost, iterations = q, math.inf, 0
        last_blocked = -1  # the last iteration in which joints at a limit sat out the step
        # 6D: the first restart after a descent that ended pressed against a joint limit begins
        # at the mid configuration (unless the seed was it), far from every limit: a descent
        # from there converges more often than one from a random configuration. Not for
        # position only, where a mid configuration may be stretched straight, singular (planar4).
        mid_next = with_orientation and q != self._mid
        # 6D: once two (or eight) descents are stuck, the closest-pose search on the position
        # alone tells a position out of reach (no restart can reach the pose) from a hard pose.
        position_checked = not with_orientation or self._closest is None
        cost_of: Optional[Callable] = None
        if mid_next and params['first_start'] == 'lower_cost':
            # Fewer iterations on 7-joint arms from unrelated seeds
            # (benchmarks/results/design-notes.md).
            cost_of = make_cost_function()
            if cost_of(self._mid) < cost_of(q):
                q, mid_next = self._mid, False
        if not with_orientation and (
                (min_residual is not None and min_residual > params['position_tolerance']) or
                self._closest.reach_gap(p_target.tolist()) > params['position_tolerance']):
            # Out of reach (proven, or beyond the measured reach): no Gauss-Newton descent can
            # arrive; look for the closest pose.
            return self._closest_pose(p_target, q, budget, 0, 0,
                                      min_residual, history)
        kernel = self._compiled if with_orientation and history is None else None
        evaluate = None if with_orientation and self._compiled is not None else evaluator
        check_after = _POSITION_CHECK_AFTER  # _POSITION_CHECK_BEYOND_REACH once known beyond
        run = None if kernel is None else kernel.start(p_target, R_target, q)
        q_seed = q
        # Whether the next descent starts at or near a stream's seed (within STREAM_ERROR_M of
        # the target): None, the seed's descent tells (it evaluates the seed anyway). A
        # stream's descents run in Python, where its rules are (_descend): the compiled
        # descent's cost of the seed tells here.
        near: Optional[bool] = None
        if run is not None and run.cost(q) <= STREAM_ERROR_M * STREAM_ERROR_M:
            near, run = True, None
        first_descent, stream = True, False
        near_seed_radii: List[float] = []  # the next starts of a stream's stuck solve
        while True:  # one descent from q per pass
            descent_start = iterations
            if run is not None:
                end, q, iterations, last_blocked = run.descend(
                    q, params['damping'], floor, iterations, last_blocked, budget)
                best_q, best_cost = run.best_q, run.best_cost  # arrays of the run
            else:
                if evaluate is None:  # 6D, compiled descents, a history recorded
                    evaluate = evaluator()
                # Once a stream's near starts are spent, its best stays the best near the seed.
                end, q, best_q, best_cost, iterations, last_blocked, near = self._descend(
                    evaluate, q, best_q, best_cost, iterations, last_blocked, with_orientation,
                    floor, good_enough, budget, history, near=near, pull=first_descent,
                    keep_best=near is not False or not stream)
                if first_descent and near:
                    stream, near_seed_radii = True, list(_NEAR_SEED_RADII)
            first_descent = False
            if end == compiled.CONVERGED:
                return RawSolution(np.array(q), IkStatus.CONVERGED, iterations,
                                   history=history,
                                   message=f'converged after {restarts} restarts')
            if end == _GOOD_ENOUGH:
                return RawSolution(np.array(q), IkStatus.UNREACHABLE, iterations,
                                   history=history, message='out of reach: the closest '
                                   'configuration found is within tolerance of the bound')
            if end == compiled.ITERATION_CAP:
                return RawSolution(np.array(best_q), IkStatus.MAX_ITERATIONS, iterations,
                                   history=history,
                                   message=f'{iterations} iterations, {restarts} restarts')
            if end == compiled.TIMEOUT:
                return RawSolution(np.array(best_q), IkStatus.TIMEOUT, iterations,
                                   history=history, message=f'timeout '
                                   f'{params["timeout"]:g} s after {restarts} restarts')
            # stuck, or (position only) out of time with enough left to hand over
            if not with_orientation:  # stuck above tolerance: is it the closest pose?
                return self._closest_pose(p_target, best_q, budget,
                                          iterations, restarts, min_residual, history)
            if restarts >= params['restarts']:
                return RawSolution(np.array(best_q), IkStatus.MAX_ITERATIONS, iterations,
                                   history=history, message=f'stuck after {restarts} restarts '
                                   '(the restarts limit)')
            if restarts >= _POSE_OUT_OF_REACH_RESTARTS and min_residual is not None and \
                    min_residual > params['position_tolerance']:
                return RawSolution(np.array(best_q), IkStatus.UNREACHABLE, iterations,
                                   history=history, message=f'position provably out of reach: '
                                   f'the best of {restarts + 1} descents')
            if restarts + 1 == _POSITION_CHECK_BEYOND_REACH and not position_checked and \
                    self._closest.reach_gap(p_target.tolist()) > params['position_tolerance']:
                check_after = _POSITION_CHECK_BEYOND_REACH  # asked only where it can matter
            if restarts + 1 >= check_after and not position_checked and (
                    min_residual is None or min_residual <= params['position_tolerance']):
                # Is the position itself out of reach (unproven by the bound)? Asked after the
                # second or the eighth stuck descent: _POSITION_CHECK_AFTER.
                position_checked = True
                found = self._search(p_target, np.asarray(best_q).tolist(), budget, iterations,
                                     restarts, None, None)
                iterations += found.iterations
                budget.mark()
                if found.stop in ('proven', 'reach', 'confirmed'):  # the position: not reached
                    return RawSolution(np.array(best_q), STOP_STATUS[found.stop], iterations,
                                       history=history, message=f'position out of reach: the '
                                       f'closest position is {found.error:.3g} m away (the '
                                       f'closest-pose search, {found.descents} descents); the '
                                       f'best pose of {restarts + 1} descents')
            restarts += 1
            if near_seed_radii:  # a stream: stay near the seed before anything far
                if rng is None:
                    rng = random.Random(params['restart_seed'])
                if cost_of is None:
                    cost_of = make_cost_function()
                q = min(self._near_candidates(rng, q_seed, near_seed_radii.pop(0)), key=cost_of)
                near = True
                continue
            near = False
            if mid_next and last_blocked >= descent_start:
                q, mid_next = self._mid, False
                continue
            mid_next = False
            if rng is None:
                rng = random.Random(params['restart_seed'])
            if run is not None:  # the candidates' costs in the kernel, one call
                q = run.lowest_cost(self._restart_candidates(rng))
                continue
            if cost_of is None:
                cost_of = make_cost_function()
            q = min(self._restart_candidates(rng), key=cost_of)

    def _descend(self, evaluate: Callable, q: List[float], best_q: List[float],
                 best_cost: float, iterations: int, last_blocked: int, with_orientation: bool,
                 floor: float, good_enough: float, budget: Budget,
                 history: Optional[List[float]], near: Optional[bool] = False,
                 pull: bool = False, keep_best: bool = True) -> Tuple:
        """One descent from ``q`` in Python: ``(how it ended, its last iterate, the best
        configuration of the solve so far and its cost, the iterations of the solve, the last
        iteration in which joints at a limit sat out a step, near)``.

        ``near``: the descent starts at or near a stream's seed (None: it does when ``q``'s
        weighted error is within ``STREAM_ERROR_M``). Then it starts with a damping no larger
        than the error and is stuck only when its error has not fallen by
        ``_STREAM_STALL_FACTOR`` in ``_STALL_ITERATIONS``, and with ``pull`` its first step
        also moves along the self-motion away from the limits (:meth:`_null_space_shift`).
        ``keep_best`` False: its configurations do not become the solve's best.

        Ends CONVERGED, STUCK, ITERATION_CAP (of the whole solve), TIMEOUT, _GOOD_ENOUGH
        (position only, within tolerance of the proven bound), or STUCK when the budget is spent
        on a position target with enough left to hand it to the closest-pose search.
        """
        max_iterations, tol_p, tol_r, lam = self._descent_constants
        step = self._steps[with_orientation]
        cost, position_error, angle_error, A, b = evaluate(q)
        if history is not None:
            history.append(position_error)
        if near is None:
            near = cost <= STREAM_ERROR_M * STREAM_ERROR_M
        stall_factor = _STALL_FACTOR
        null_pending = False
        if near:
            # A stream's step: the error is small, and a small damping lets a descent near a
            # singularity converge instead of crawling into a restart.
            lam = min(lam, max(cost, _LAMBDA_MIN))
            stall_factor = _STREAM_STALL_FACTOR
            null_pending = pull and with_orientation in self._null_space
        if cost < best_cost and keep_best:
            best_q, best_cost = q, cost
        stall_cost, stall_iteration = cost, iterations
        end = compiled.STUCK
        stuck = False
        while not stuck:
            if position_error <= tol_p and angle_error <= tol_r:
                end = compiled.CONVERGED
                break
            if position_error <= good_enough:
                end = _GOOD_ENOUGH
                break
            if iterations >= max_iterations:
                end = compiled.ITERATION_CAP
                break
            if not budget.allows():
                # Position only: the next step is paced by the slowest while there is only
                # one: after a stall of the machine in the first, the search's Newton steps
                # may still fit (it paces its own steps).
                end = compiled.STUCK if not with_orientation and budget.can_hand_over() \
                    else compiled.TIMEOUT
                break
            iterations += 1
            shifted = None
            if null_pending:
                null_pending = False
                shifted = self._null_space_shift(q, A, cost, with_orientation)
            try:
                q_new, blocked = step(q if shifted is None else shifted, A, b, lam)
            except (ValueError, ZeroDivisionError):  # not positive definite (round-off)
                q_new, blocked = None, ()
            if blocked:
                last_blocked = iterations
            trial = None if q_new is None else evaluate(q_new)
            if trial is not None and trial[0] < cost:  # accept; trust the model more
                q = q_new
                cost, position_error, angle_error, A, b = trial
                if cost < best_cost and keep_best:
                    best_q, best_cost = q, cost
                lam = max(lam * _LAMBDA_DOWN, _LAMBDA_MIN)
            elif shifted is not None:  # the pull spoilt the step: the plain one next
                pass
            else:  # reject; damp more
                lam *= _LAMBDA_UP
                stuck = lam > _LAMBDA_MAX
            if history is not None:
                history.append(position_error)
            if iterations - stall_iteration >= (_STALL_ITERATIONS_BLOCKED if
                                                last_blocked > stall_iteration
                                                else _STALL_ITERATIONS):
                stuck = stuck or cost - floor > stall_factor * (stall_cost - floor)
                stall_cost, stall_iteration = cost, iterations
        return end, q, best_q, best_cost, iterations, last_blocked, near

    def _closest_pose(self, p_target: np.ndarray, q: List[float], budget: Budget,
                      iterations: int, restarts: int, min_residual: Optional[float],
                      history: Optional[List[float]]) -> RawSolution:
        """The closest-pose search (:mod:`ik_node.solvers.out_of_reach.closest_pose`) from ``q``,
        within what
        is left of the solve's time, iterations and restarts."""
        params = self.params
        search = self._search(p_target, q, budget, iterations, restarts, min_residual, history)
        iterations += search.iterations
        restarts += search.descents - 1
        status, message = search_outcome(search, self._joint_names, iterations, restarts,
                                         params['timeout'])
        return RawSolution(np.array(search.q), status, iterations, history=history,
                           message=message)

    def _search(self, p_target: np.ndarray, q: List[float], budget: Budget, iterations: int,
                restarts: int, min_residual: Optional[float], history: Optional[List[float]]):
        """The closest-pose search on the target position from ``q`` with what is left of the
        solve's iterations and restarts."""
        params = self.params
        tolerance = params['position_tolerance']
        return self._closest.search(
            p_target.tolist(), q, budget, params['max_iterations'] - iterations,
            params['restarts'] - restarts, _TOLERANCE_MARGIN * tolerance, tolerance,
            min_residual, random.Random(params['restart_seed']), history)

    def _trial_dual(self, step: Callable, weight: float, q: List[float], J, e, lam: float
                    ) -> Tuple[List[float], Sequence[int]]:
        """The step of :func:`~ik_node.solvers.codegen.damped_trial_function` for fewer
        error rows than joints (position only): the m x m system ``J J^T + lam I`` is the
        smaller one, built again for each trial. Joints at a limit whose step points outwards
        sit out the step (their Jacobian columns are zeroed). Raises ``ValueError`` or
        ``ZeroDivisionError`` if the system is not positive definite (round-off).
        """
        dq = step(J, e, lam, weight)
        blocked = self._blocked_joints(q, dq)
        if blocked:
            J = [list(row) for row in J]
            for row in J:
                for k in blocked:
                    row[k] = 0.0
            dq = step(J, e, lam, weight)
        return self._advance(q, dq), blocked

    def _null_space_shift(self, q: List[float], A, cost: float, with_orientation: bool
                          ) -> Optional[List[float]]:
        """``q + N d``: ``d`` pulls every bounded joint away from its limits
        (:func:`~ik_node.solvers.null_space.limit_pull` with scale ``null_space_gain *
        sqrt(cost)``), and ``N = I - J+ J`` keeps of it only the self-motion, which leaves the tip
        where it is to first order. The damped step taken from the shifted point reaches the
        target as it would from ``q``; the pull is proportional to the seed's error, so a
        target that stays put (the seed within tolerance) moves nothing, and a stream's answers
        move along the self-motion by a fraction of their own step.

        ``A`` is what the step function of this target kind takes: the normal equations' flat
        lower triangle ``H`` (then ``N d = mu (H + mu I)^-1 d``) or the Jacobian ``J`` (then
        ``N d = d - J+ J d``, by the damped m x m solve). None when the projection fails
        (round-off: not positive definite).
        """
        d = limit_pull(q, self._centring, self.params['null_space_gain'] * math.sqrt(cost))
        n = len(q)
        solve = self._null_space[with_orientation]
        try:
            if self._normals[with_orientation] is not None:  # A = H
                trace = sum(A[lower_index(k, k)] for k in range(n))
                mu = _NULL_SPACE_DAMPING * max(trace / n, 1e-12)
                x = solve(A, d, mu)
                return [v + mu * dv for v, dv in zip(q, x, strict=True)]
            J = A
            Jd = [sum(row[k] * d[k] for k in range(n)) for row in J]
            trace = sum(v * v for row in J for v in row)
            mu = _NULL_SPACE_DAMPING * max(trace / len(J), 1e-12)
            r = solve(J, Jd, mu, self.params['orientation_weight'])
            return [v + dv - rv for v, dv, rv in zip(q, d, r, strict=True)]
        except (ValueError, ZeroDivisionError):
            return None

    def _near_candidates(self, rng: random.Random, q_seed: List[float],
                         radius: float) -> List[List[float]]:
        """A few random configurations within ``radius`` [rad or m] of ``q_seed`` per joint,
        inside the limits; a near-seed start begins at the lowest-cost one."""
        random_unit = rng.random
        return [[min(max(v + radius * (2.0 * random_unit() - 1.0), lo), hi)
                 for v, lo, hi in zip(q_seed, self._restart_low, self._restart_high,
                                      strict=True)]
                for _ in range(_RESTART_CANDIDATES)]

    def _restart_candidates(self, rng: random.Random) -> List[List[float]]:
        """A few uniformly random configurations; a restart begins at the lowest-cost one (the
        first of equals)."""
        random_unit = rng.random
        # lo + span * random() is what rng.uniform(lo, hi) computes, without its call.
        return [[lo + span * random_unit() for lo, span in self._restart_spans]
                for _ in range(_RESTART_CANDIDATES)]

    # ------------------------------------------------------------------------------ helpers
    def _min_residual(self, p_target: np.ndarray) -> Optional[float]:
        """A proven lower bound on the position error [m] when positive, else None (see
        :class:`~ik_node.solvers.out_of_reach.reach_bound.ReachBound`)."""
        if self._reach is None:
            return None
        gap = self._reach.lower_bound(p_target.tolist())
        return gap if gap > 0.0 else None
