"""damped_jacobian's restart loop: the descents of one solve within its budget, and the
hand-over of a position target to the closest-pose search.

:class:`RestartLoop` is the part of :class:`~.solver.DampedJacobianSolver` that runs one solve's
descents (:meth:`RestartLoop._solve_dls`): the seed's descent, then restarts (the mid
configuration, a stream's starts near its seed, the lowest-cost of random candidates), each
descent in :meth:`.descent.PythonDescent.descend` or in the compiled kernels
(:class:`.compiled_runs.DescentRun`, the plain restarts too), until one converges, the budget
or the ``restarts`` are spent, or the target is handed to the closest-pose search
(:mod:`ik_node.solvers.out_of_reach.closest_pose`, or a leg's closed form). The rules are in
the module docstring of :mod:`.solver`; the solver's construction sets what this reads
(``params``, the restart box and draws, the descents, the closest-pose search).
"""

from __future__ import annotations

import functools
import math
from typing import Callable, List, Optional

import numpy as np

from ik_node.solvers.damped_jacobian import compiled
from ik_node.solvers.damped_jacobian.compiled_runs import DescentStart, RestartPlan
from ik_node.solvers.damped_jacobian.descent import (GOOD_ENOUGH, DescentProblem,
                                                     DescentProgress)
from ik_node.solvers.damped_jacobian.starts import (NEAR_SEED_RADII, near_candidates,
                                                    restart_candidates)
from ik_node.solvers.numerics.budget import Budget
from ik_node.solvers.numerics.dls_settings import TOLERANCE_MARGIN as _TOLERANCE_MARGIN
from ik_node.solvers.out_of_reach.closest_pose import SearchLimits
from ik_node.solvers.out_of_reach.outcome import STOP_STATUS, VOUCHED_STOPS, search_outcome
from ik_node.solvers.results import IkStatus, RawSolution

# A pose target whose position is provably out of reach: no descent can reach it, and its
# descents end crawling (Gauss-Newton misses the curvature of a large residual) rather than at
# a stationary point. The solve returns the best after the seed's descent and this many
# restarts (a second descent often lowers the weighted error, a third or fourth rarely).
_POSE_OUT_OF_REACH_RESTARTS = 1
# 6D: the closest-pose search on the position alone (is the position itself out of reach?)
# runs once this many descents are stuck: after the second when the position lies beyond the
# measured reach (the search then stops after one Newton descent), else after the eighth (the
# search costs about ten Python descents, and in reachable solves it is wasted time).
_POSITION_CHECK_BEYOND_REACH = 2
_POSITION_CHECK_AFTER = 8


class RestartLoop:
    """The restart loop of :class:`~.solver.DampedJacobianSolver` (a base class of it: the
    solver's construction sets every attribute read here)."""

    def _solve_dls(self, evaluator: Callable, make_cost_function: Callable, q: List[float],
                   min_residual: Optional[float], p_target: np.ndarray,
                   R_target: Optional[np.ndarray] = None, reach_gap: Optional[float] = None,
                   first: Optional[tuple] = None) -> RawSolution:
        """Descents from ``q``, then from random restarts; ``make_cost_function()`` gives the
        ``cost(q)`` that ranks restart candidates and, with ``first_start: lower_cost``, the seed
        against the mid configuration (built when first needed). ``evaluator`` is the
        ``evaluate(q)`` of :meth:`.descent.PythonDescent.evaluator` for the Python descents, or
        (a pose target where the compiled descents serve) a function making it. Each descent
        runs in :meth:`.descent.PythonDescent.descend`, or in the compiled kernel
        (:mod:`.compiled`) for a pose target where numba is installed: the same iterations
        either way. ``reach_gap``: the target's gap to the measured reach [m] where already
        known (else asked where it matters). ``first``: ``(outcome, run, budget)`` of the seed's
        compiled descent already run (:meth:`_solve_values`): the solve goes on from it."""
        params = self.params
        with_orientation = R_target is not None
        if reach_gap is None:
            reach_gap = self._closest.reach_gap
        else:
            reach_gap = functools.partial(_known, reach_gap)
        budget = Budget(params['timeout']) if first is None else first[2]
        history: Optional[List[float]] = [] if params['record_history'] else None
        # The cost never falls below floor (the squared proven residual): progress is measured
        # above it, so a descent toward an unreachable target's closest point is not stalled.
        floor = 0.0 if min_residual is None else min_residual * min_residual
        # Position only: no configuration beats the proven bound, so a descent within tolerance
        # of it is as close as the target can be approached.
        good_enough = -1.0
        if min_residual is not None and not with_orientation:
            good_enough = min_residual + params['position_tolerance']
        draws = 0  # the batches of self._draws used by this solve
        # 6D, no proven residual above tolerance: the plain restarts may run in the kernel.
        plain_restarts = with_orientation and (
            min_residual is None or min_residual <= params['position_tolerance'])
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
            # Fewer iterations on 7-joint arms from unrelated seeds.
            cost_of = make_cost_function()
            if cost_of(self._mid) < cost_of(q):
                q, mid_next = self._mid, False
        if first is None and not with_orientation and (
                (min_residual is not None and min_residual > params['position_tolerance']) or
                reach_gap(p_target.tolist()) > params['position_tolerance'] or
                (self._exact is not None and self._exact.out_of_reach(p_target.tolist()))):
            # Out of reach (proven, beyond the measured reach, or outside a leg's reach in
            # closed form): no Gauss-Newton descent can arrive; look for the closest pose.
            return self._closest_pose(p_target, q, budget, 0, 0,
                                      min_residual, history)
        outcome = None  # the seed's descent, when _solve_values ran it
        if first is not None:
            outcome, run, _ = first
        else:
            kernel = self._compiled
            if kernel is not None and (history is not None or
                                       not kernel.serves(with_orientation)):
                kernel = None  # a history, or the kernels not loaded yet: the Python descents
            run = None if kernel is None else kernel.start(p_target, R_target, q)
        check_after = _POSITION_CHECK_AFTER  # _POSITION_CHECK_BEYOND_REACH once known beyond
        q_seed = q
        # Whether the next descent starts at or near a stream's seed (within STREAM_ERROR_M of
        # the target): None, the seed's descent tells (it evaluates the seed anyway).
        near: Optional[bool] = None
        first_descent, stream = True, False
        near_seed_radii: List[float] = []  # the next starts of a stream's stuck solve
        descend = self._descent.descend
        problem: Optional[DescentProblem] = None  # the Python descents', built when first needed
        while True:  # one descent from q per pass
            descent_start = iterations
            # Once a stream's near starts are spent, its best stays the best near the seed.
            keep_best = near is not False or not stream
            if outcome is not None:  # the seed's descent, run by _solve_values
                end, q, iterations, last_blocked, near = outcome
                outcome = None
                if end != compiled.CONVERGED and end != GOOD_ENOUGH:
                    best_q = run.best_q.tolist()
            elif run is not None and plain_restarts and near is False and not mid_next and \
                    not near_seed_radii:
                # The plain restarts (random candidates, no check due) in the kernel, until a
                # descent ends otherwise than stuck or stuck where a check below is due.
                decide_at = params['restarts']
                if not position_checked:
                    decide_at = min(decide_at, check_after - 1, 1 if restarts <= 1 else decide_at)
                low, span, _ = self._restart_box
                end, q, iterations, last_blocked, near, restarts, draws = run.descend_restarts(
                    DescentStart(q, floor, good_enough, iterations, last_blocked,
                                          keep_best=keep_best),
                    budget, RestartPlan(restarts, decide_at, self._draws, low, span,
                                                 draws))
                if end != compiled.CONVERGED and end != GOOD_ENOUGH:  # (those return q)
                    best_q = run.best_q.tolist()
            elif run is not None:
                end, q, iterations, last_blocked, near = run.descend(
                    DescentStart(q, floor, good_enough, iterations, last_blocked,
                                          near=near, pull=first_descent, keep_best=keep_best),
                    budget)
                if end != compiled.CONVERGED and end != GOOD_ENOUGH:  # (those return q)
                    best_q = run.best_q.tolist()
            else:
                if problem is None:
                    problem = DescentProblem(evaluator(), with_orientation, floor, good_enough,
                                             budget, history)
                progress = DescentProgress(best_q, best_cost, iterations, last_blocked)
                end, q, near = descend(problem, progress, q, near=near, pull=first_descent,
                                       keep_best=keep_best)
                best_q, best_cost = progress.best_q, progress.best_cost
                iterations, last_blocked = progress.iterations, progress.last_blocked
            if first_descent and near:
                stream, near_seed_radii = True, list(NEAR_SEED_RADII)
            first_descent = False
            if end == compiled.CONVERGED:
                return RawSolution(np.array(q), IkStatus.CONVERGED, iterations,
                                   history=history,
                                   message=f'converged after {restarts} restarts',
                                   measured=None if run is None else run.errors())
            if end == GOOD_ENOUGH:
                return RawSolution(np.array(q), IkStatus.UNREACHABLE, iterations,
                                   history=history, message='out of reach: the closest '
                                   'configuration found is within tolerance of the bound',
                                   vouched=True)
            if end in (compiled.ITERATION_CAP, compiled.TIMEOUT) and not with_orientation and \
                    self._exact is not None:  # a leg's closed form costs no iteration
                return self._closest_pose(p_target, best_q, budget, iterations, restarts,
                                          min_residual, history)
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
                    reach_gap(p_target.tolist()) > params['position_tolerance']:
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
            low, span, high = self._restart_box
            if near_seed_radii:  # a stream: stay near the seed before anything far
                if cost_of is None:
                    cost_of = make_cost_function()
                q = min(near_candidates(self._draws.batch(draws), q_seed, near_seed_radii.pop(0),
                                        low, high).tolist(), key=cost_of)
                draws += 1
                near = True
                continue
            near = False
            if mid_next and last_blocked >= descent_start:
                q, mid_next = self._mid, False
                continue
            mid_next = False
            candidates = restart_candidates(self._draws.batch(draws), low, span)
            draws += 1
            if run is not None:  # the candidates' costs in the kernel, one call
                q = run.lowest_cost(candidates)
                continue
            if cost_of is None:
                cost_of = make_cost_function()
            q = min(candidates.tolist(), key=cost_of)

    def _closest_pose(self, p_target: np.ndarray, q: List[float], budget: Budget,
                      iterations: int, restarts: int, min_residual: Optional[float],
                      history: Optional[List[float]]) -> RawSolution:
        """The closest-pose search (:mod:`ik_node.solvers.out_of_reach.closest_pose`) from ``q``,
        within what is left of the solve's time, iterations and restarts."""
        if self._exact is not None:  # a leg: its closed form (hip_knee.exact_leg)
            raw = self._exact.closest(p_target.tolist(), list(q))
            raw.iterations += iterations
            raw.history = history
            return raw
        params = self.params
        search = self._search(p_target, q, budget, iterations, restarts, min_residual, history)
        iterations += search.iterations
        restarts += search.descents - 1
        status, message = search_outcome(search, self._joint_names, iterations, restarts,
                                         params['timeout'])
        return RawSolution(np.array(search.q), status, iterations, history=history,
                           message=message, vouched=search.stop in VOUCHED_STOPS)

    def _search(self, p_target: np.ndarray, q: List[float], budget: Budget, iterations: int,
                restarts: int, min_residual: Optional[float], history: Optional[List[float]]):
        """The closest-pose search on the target position from ``q`` with what is left of the
        solve's iterations and restarts."""
        params = self.params
        tolerance = params['position_tolerance']
        limits = SearchLimits(params['max_iterations'] - iterations,
                              params['restarts'] - restarts, _TOLERANCE_MARGIN * tolerance,
                              tolerance)
        return self._closest.search(p_target.tolist(), q, budget, limits, min_residual,
                                    params['restart_seed'], history)


def _known(value: float, target: List[float]) -> float:
    """A value computed before (``functools.partial(_known, value)`` stands for a function of
    the target)."""
    return value
