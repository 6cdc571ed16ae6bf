"""One damped-least-squares descent in Python: its error function, its step and its loop.

A descent minimises the weighted squared error ``|p_t - p|^2 + w^2 |omega|^2`` (``omega`` is the
rotation vector taking the tip orientation to the target's, in the base frame; ``w`` the
``orientation_weight``), or ``|p_t - p|^2`` for a position-only target. Each iteration solves
the damped normal equations ``(J^T J + lambda I) dq = J^T e`` and tries ``q + dq`` brought into
the joint limits: a step that lowers the error is accepted and ``lambda`` shrinks, one that does
not is rejected and ``lambda`` grows (adaptive damping, as KDL's ``ChainIkSolverPos_LMA`` does).
So the error never rises within a descent (no jitter at unreachable targets), and a singular
start still moves: the damped system is always solvable. Where the gradient ``J^T e`` vanishes
(a stretched arm, target straight ahead) the descent stalls, and the restart loop
(:mod:`.solver`) starts another.

Joint limits: a revolute joint whose range spans a full turn (UR5's +-2 pi) wraps by whole turns
instead of being clipped (the same pose, so the limit costs nothing); other joints are clipped,
and a joint already at a limit whose step points outwards sits out that step, so the rest get a
full Gauss-Newton step rather than one bent by the clip. A descent is stuck when its error above
the proven residual floor has not fallen to a quarter within 5 iterations (a pose target's: to
half, ``POSE_STALL_FACTOR``), or to a quarter within 2 when joints at a limit sat out a step
meanwhile, or no damping finds a lower error.

Streams (docs/continuity.md): a descent that starts at or near a stream's seed (within
``STREAM_ERROR_M``, weighted, of its target) starts with a damping no larger than the error and
is stuck only when the error has not fallen by ``STREAM_STALL_FACTOR`` in ``STALL_ITERATIONS``
(near a singularity a descent converges slowly rather than restarting); on a chain with more
joints than the target has dimensions, the first step of the seed's descent also moves along the
self-motion away from the joint limits (``null_space_gain``,
:mod:`ik_node.solvers.numerics.null_space`).
A stream's descents run here, in Python (the compiled descent tells a stream's seed by its cost
and hands over).

Speed: serial chains use the generated pure-Python kinematics of
:mod:`ik_node.model.fast_kinematics`, and the damped systems are solved by generated, unrolled
Cholesky factorisations: for 6-7 joints both are several times faster than numpy, whose per-call
overhead dominates arrays this small. For 6D targets the n x n normal equations ``J^T J``,
``J^T e`` are built once per accepted iterate and every damping and every set of joints sitting
out a step reuses them; position only, the 3 x 3 system ``J J^T + lambda I`` is cheaper to build
for each trial. The n x n trial step (solve, joints sitting out, limits) is one generated
function, not four Python calls (the generators are in :mod:`ik_node.solvers.numerics.codegen`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np

from ik_node.solvers.numerics.budget import Budget
from ik_node.solvers.numerics.codegen import (damped_solve_function, damped_step_function,
                                              damped_trial_function, limit_functions,
                                              lower_index, normal_equations_function)
from ik_node.solvers.damped_jacobian import compiled
from ik_node.solvers.geometry.residuals import error_function
from ik_node.solvers.numerics.dls_settings import LAMBDA_DOWN as _LAMBDA_DOWN
from ik_node.solvers.numerics.dls_settings import LAMBDA_MAX as _LAMBDA_MAX
from ik_node.solvers.numerics.dls_settings import LAMBDA_MIN as _LAMBDA_MIN
from ik_node.solvers.numerics.dls_settings import LAMBDA_UP as _LAMBDA_UP
from ik_node.solvers.numerics.dls_settings import POSE_STALL_FACTOR as _POSE_STALL_FACTOR
from ik_node.solvers.numerics.dls_settings import STALL_FACTOR as _STALL_FACTOR
from ik_node.solvers.numerics.dls_settings import STALL_ITERATIONS as _STALL_ITERATIONS
from ik_node.solvers.numerics.dls_settings import \
    STALL_ITERATIONS_BLOCKED as _STALL_ITERATIONS_BLOCKED
from ik_node.solvers.numerics.dls_settings import TOLERANCE_MARGIN as _TOLERANCE_MARGIN
from ik_node.solvers.numerics.null_space import STREAM_ERROR_M, centring_terms, limit_pull

#: How a descent ends besides the kernel's codes (CONVERGED, STUCK, ITERATION_CAP, TIMEOUT):
#: position only, within tolerance of the proven bound.
GOOD_ENOUGH = -1
#: Near a stream's seed a descent is stuck only when its error has not fallen by this factor in
#: STALL_ITERATIONS: near a singularity it converges slowly, and a restart may land far away.
STREAM_STALL_FACTOR = 0.7
# The null-space projector I - J+ J is computed as mu (H + mu I)^-1 with this relative damping
# mu / (trace(H) / n): 1 on the null space, about mu / sigma^2 on the row space.
_NULL_SPACE_DAMPING = 1e-9


@dataclasses.dataclass(frozen=True)
class DescentProblem:
    """What every descent of one solve works toward.

    Attributes:
        evaluate: ``evaluate(q) -> (cost, position error [m], angle error [rad], A, b)``
            (:meth:`PythonDescent.evaluator`).
        with_orientation: a pose target (else position only).
        floor: the cost never falls below it (the squared proven residual [m^2]): progress is
            measured above it, so a descent toward an unreachable target's closest point does
            not count as stalled.
        good_enough: [m] position only: a descent within this of the target is as close as
            the target can be approached (the proven bound plus the tolerance); -1: none.
        budget: the solve's time.
        history: the position error [m] of every iterate is appended here, or None.
    """

    evaluate: Callable
    with_orientation: bool
    floor: float
    good_enough: float
    budget: Budget
    history: Optional[List[float]]


@dataclasses.dataclass
class DescentProgress:
    """What one descent carries on to the next of the same solve.

    Attributes:
        best_q: the solve's best configuration so far, and ``best_cost`` its cost.
        iterations: the solve's iterations so far (every descent's, the cap is the solve's).
        last_blocked: the last iteration in which joints at a limit sat out a step (-1: none).
    """

    best_q: List[float]
    best_cost: float
    iterations: int
    last_blocked: int


class PythonDescent:
    """The descents of one :class:`~.solver.DampedJacobianSolver` in Python: the step functions
    of its chain and target kinds, built once, and :meth:`descend`.

    Args:
        n: the chain's joint count (> 0).
        low, high: the joint limits [rad or m].
        wraps: per joint, whether it wraps by whole turns instead of being clipped.
        bounded: the joints whose limits constrain a step.
        kinematics: the chain's kinematics (``pose_jacobian``, ``position_jacobian``; with
            ``pose_normal`` and ``position_residual`` when generated for a serial chain).
        fast: whether ``kinematics`` is the generated kinematics of a serial chain.
        params: the solver's parameters.
    """

    def __init__(self, n: int, low: List[float], high: List[float], wraps: List[bool],
                 bounded: List[int], kinematics, fast: bool, params: dict):
        self._params = params
        # Per with_orientation: (normal, step); normal(J, e, w) -> (A, b) is what
        # step(q, A, b, lam) -> (q_new, joints that sat out the step) takes. Measured on
        # UR5/Panda: the n x n normal equations, built once per iterate and reused by every
        # damping and every set of blocked joints tried from it, beat the m x m system for 6D;
        # position only (3 rows), the 3 x 3 system built for each trial is cheaper (A, b = J, e).
        # The n x n step is one generated function (solve, blocked joints, limits).
        weight = params['orientation_weight']
        self.steps = {}
        #: Per with_orientation: the normal-equations function, or None (the m x m system).
        self.normals = {}
        advance, blocked_joints = limit_functions(low, high, wraps, bounded)
        for with_orientation in (False, True):
            rows = 6 if with_orientation else 3
            if 2 * rows <= n:
                self.normals[with_orientation] = None
                self.steps[with_orientation] = functools.partial(
                    trial_dual, damped_step_function(rows, n), weight, blocked_joints, advance)
            else:
                self.normals[with_orientation] = normal_equations_function(rows, n)
                self.steps[with_orientation] = damped_trial_function(low, high, wraps, bounded)
        # The null-space pull: per bounded joint (index, middle, 1 / half range), and the
        # projector's solve for each target kind with more joints than error rows.
        self._centring = centring_terms(low, high, bounded)
        self._null_space = {}
        if params['null_space_gain'] > 0.0 and self._centring:
            for with_orientation in (False, True):
                rows = 6 if with_orientation else 3
                if n > rows:
                    self._null_space[with_orientation] = (
                        damped_step_function(rows, n) if self.normals[with_orientation]
                        is None else damped_solve_function(n))
        self._kinematics = kinematics
        self._pose_normal = kinematics.pose_normal if fast else None
        # (iteration cap, tolerances with their margin, initial damping) of every descent
        self._constants = (
            params['max_iterations'], _TOLERANCE_MARGIN * params['position_tolerance'],
            _TOLERANCE_MARGIN * params['orientation_tolerance'], params['damping'])

    def evaluator(self, p_target: np.ndarray, R_target: Optional[np.ndarray]) -> Callable:
        """``evaluate(q) -> (cost, position error [m], angle error [rad], A, b)``, where
        ``(A, b)`` is what the step function of this target kind takes: the normal equations
        ``(H, g)``, or ``(J, e)`` when the smaller m x m system is built for each trial.

        6D on a serial chain: one generated function (:meth:`SerialKinematics.pose_normal`)
        computes the error and the normal equations without packing a Jacobian.
        """
        params = self._params
        with_orientation = R_target is not None
        if with_orientation and self._pose_normal is not None and \
                self.normals[True] is not None:
            target = tuple(p_target.tolist()) + tuple(R_target.ravel().tolist())
            # H, g are not built at an iterate within the tolerances of descend: its loop
            # returns there before any step (the same comparisons on the same floats).
            tolerances = (_TOLERANCE_MARGIN * params['position_tolerance'],
                          _TOLERANCE_MARGIN * params['orientation_tolerance'])
            return functools.partial(self._pose_normal, target,
                                     params['orientation_weight'] ** 2, tolerances)
        normal = self.normals[with_orientation]
        if not with_orientation and normal is None and self._pose_normal is not None:
            # J, e are not built within the position tolerance of descend (see above).
            return functools.partial(self._kinematics.position_residual,
                                     tuple(p_target.tolist()),
                                     _TOLERANCE_MARGIN * params['position_tolerance'])
        evaluate = error_function(self._kinematics.pose_jacobian,
                                  self._kinematics.position_jacobian, p_target, R_target,
                                  params['orientation_weight'])
        if normal is None:
            def evaluate_dual(q):
                cost, position_error, angle_error, e, J = evaluate(q)
                return cost, position_error, angle_error, J, e
            return evaluate_dual
        weight = params['orientation_weight']

        def evaluate_normal(q):
            cost, position_error, angle_error, e, J = evaluate(q)
            return (cost, position_error, angle_error) + normal(J, e, weight)
        return evaluate_normal

    def descend(self, problem: DescentProblem, progress: DescentProgress, q: List[float],
                near: Optional[bool] = False, pull: bool = False, keep_best: bool = True
                ) -> Tuple[int, List[float], bool]:
        """One descent of ``problem`` from ``q``: ``(how it ended, its last iterate, near)``;
        ``progress`` (the solve's best configuration and its cost, its iterations, the last
        iteration in which joints at a limit sat out a step) is carried on in place.

        ``near``: the descent starts at or near a stream's seed (None: it does when ``q``'s
        weighted error is within ``STREAM_ERROR_M``). Then it starts with a damping no larger
        than the error and is stuck only when its error has not fallen by
        ``STREAM_STALL_FACTOR`` in ``STALL_ITERATIONS``, and with ``pull`` its first step
        also moves along the self-motion away from the limits (:meth:`null_space_shift`).
        ``keep_best`` False: its configurations do not become the solve's best.

        Ends CONVERGED, STUCK, ITERATION_CAP (of the whole solve), TIMEOUT, GOOD_ENOUGH
        (position only, within tolerance of the proven bound), or STUCK when the budget is spent
        on a position target with enough left to hand it to the closest-pose search.
        """
        max_iterations, tol_p, tol_r, lam = self._constants
        evaluate, with_orientation, floor = (problem.evaluate, problem.with_orientation,
                                             problem.floor)
        good_enough, budget, history = problem.good_enough, problem.budget, problem.history
        best_q, best_cost = progress.best_q, progress.best_cost
        iterations, last_blocked = progress.iterations, progress.last_blocked
        step = self.steps[with_orientation]
        cost, position_error, angle_error, A, b = evaluate(q)
        if history is not None:
            history.append(position_error)
        if near is None:
            near = cost <= STREAM_ERROR_M * STREAM_ERROR_M
        # The stall factors of the plain window and of one in which joints at a limit sat out.
        stall_factor = _POSE_STALL_FACTOR if with_orientation else _STALL_FACTOR
        blocked_factor = _STALL_FACTOR
        null_pending = False
        if near:
            # A stream's step: the error is small, and a small damping lets a descent near a
            # singularity converge instead of crawling into a restart.
            lam = min(lam, max(cost, _LAMBDA_MIN))
            stall_factor = blocked_factor = STREAM_STALL_FACTOR
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
                end = GOOD_ENOUGH
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
                shifted = self.null_space_shift(q, A, cost, with_orientation)
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
            if last_blocked > stall_iteration:
                window, factor = _STALL_ITERATIONS_BLOCKED, blocked_factor
            else:
                window, factor = _STALL_ITERATIONS, stall_factor
            if iterations - stall_iteration >= window:
                stuck = stuck or cost - floor > factor * (stall_cost - floor)
                stall_cost, stall_iteration = cost, iterations
        progress.best_q, progress.best_cost = best_q, best_cost
        progress.iterations, progress.last_blocked = iterations, last_blocked
        return end, q, near

    def null_space_shift(self, q: List[float], A, cost: float, with_orientation: bool
                         ) -> Optional[List[float]]:
        """``q + N d``: ``d`` pulls every bounded joint away from its limits
        (:func:`~ik_node.solvers.numerics.null_space.limit_pull` with scale ``null_space_gain *
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
        d = limit_pull(q, self._centring, self._params['null_space_gain'] * math.sqrt(cost))
        n = len(q)
        solve = self._null_space[with_orientation]
        try:
            if self.normals[with_orientation] is not None:  # A = H
                trace = sum(A[lower_index(k, k)] for k in range(n))
                mu = _NULL_SPACE_DAMPING * max(trace / n, 1e-12)
                x = solve(A, d, mu)
                return [v + mu * dv for v, dv in zip(q, x, strict=True)]
            J = A
            Jd = [sum(row[k] * d[k] for k in range(n)) for row in J]
            trace = sum(v * v for row in J for v in row)
            mu = _NULL_SPACE_DAMPING * max(trace / len(J), 1e-12)
            r = solve(J, Jd, mu, self._params['orientation_weight'])
            return [v + dv - rv for v, dv, rv in zip(q, d, r, strict=True)]
        except (ValueError, ZeroDivisionError):
            return None


def trial_dual(step: Callable, weight: float, blocked_joints: Callable, advance: Callable,
               q: List[float], J, e, lam: float) -> Tuple[List[float], Sequence[int]]:
    """The step of :func:`~ik_node.solvers.numerics.codegen.damped_trial_function` for fewer error
    rows than joints (position only): the m x m system ``J J^T + lam I`` is the smaller one, built
    again for each trial. Joints at a limit whose step points outwards sit out the step (their
    Jacobian columns are zeroed). ``blocked_joints`` and ``advance`` are the chain's
    :func:`~ik_node.solvers.numerics.codegen.limit_functions`. Raises ``ValueError`` or
    ``ZeroDivisionError`` if the system is not positive definite (round-off).
    """
    dq = step(J, e, lam, weight)
    blocked = blocked_joints(q, dq)
    if blocked:
        J = [list(row) for row in J]
        for row in J:
            for k in blocked:
                row[k] = 0.0
        dq = step(J, e, lam, weight)
    return advance(q, dq), blocked
