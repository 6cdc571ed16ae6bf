"""Damped least squares on a tree whose tips share joints (a trunk): every targeted tip at once.

The residual stacks every targeted tip's error, each scaled by its weight ``w_k`` (the
``weights`` parameter, in the order of the chain's tips): the position error ``p_t - p`` [m]
and, for a pose target, ``orientation_weight`` times the rotation vector taking the tip's
orientation to the target's (as the serial solver's cost). The cost is the sum of squares:
``sum_k w_k^2 (|p_t,k - p_k|^2 + w_o^2 |omega_k|^2)``. Each iteration solves the damped normal
equations of the stacked Jacobian ``(J^T J + lambda I) dq = J^T e`` over the joints that move a
targeted tip (the others keep their seed values: an untargeted tip keeps its configuration
relative to its branch) and tries ``q + dq`` within the limits, with the serial solver's rules:
adaptive damping (a step that lowers the cost is kept and the damping shrinks, else it grows),
joints at a limit whose step points outwards sit out the step, full-turn joints wrap, a descent
is stuck when its cost above the proven floor has not fallen to a quarter within 5 iterations
(2 after a blocked step), then a restart from the best of 4 random configurations (the first
restart after a blocked descent from the mid configuration), within ``timeout``,
``max_iterations`` and ``restarts``. The best configuration of all descents is returned.

Each tip's pose and Jacobian come from the generated kinematics of its own serial path
(:meth:`~ik_node.model.chain.Chain.serial_chain`): a trunk joint is evaluated once per tip,
several times cheaper than the numpy tree.

Out of reach: each tip whose path is revolute has a proven bound (its
:class:`~ik_node.solvers.geometry.reach_bound.ReachBound`). Progress is measured above the
floor ``sum_k w_k^2 r_k^2``; with position targets only, a configuration whose every tip is
within tolerance of its bound is as close as the targets allow (status ``unreachable``); when a
tip's bound exceeds the tolerance no descent can converge, and the best of two descents is
returned, status ``unreachable`` (the proof is that tip's bound; the other tips report their own
measured errors).
"""

from __future__ import annotations

import functools
import math
import random
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ik_node.model.chain import Chain
from ik_node.solvers.damped_jacobian import compiled
from ik_node.solvers.damped_jacobian.tree_runs import tree_kernel
from ik_node.solvers.numerics.budget import Budget
from ik_node.solvers.numerics.codegen import damped_solve_function, limit_functions
from ik_node.solvers.numerics.dls_settings import LAMBDA_DOWN as _LAMBDA_DOWN
from ik_node.solvers.numerics.dls_settings import LAMBDA_MAX as _LAMBDA_MAX
from ik_node.solvers.numerics.dls_settings import LAMBDA_MIN as _LAMBDA_MIN
from ik_node.solvers.numerics.dls_settings import LAMBDA_UP as _LAMBDA_UP
from ik_node.solvers.numerics.dls_settings import RESTART_CANDIDATES as _RESTART_CANDIDATES
from ik_node.solvers.numerics.dls_settings import STALL_FACTOR as _STALL_FACTOR
from ik_node.solvers.numerics.dls_settings import STALL_ITERATIONS as _STALL_ITERATIONS
from ik_node.solvers.numerics.dls_settings import \
    STALL_ITERATIONS_BLOCKED as _STALL_ITERATIONS_BLOCKED
from ik_node.solvers.numerics.dls_settings import TOLERANCE_MARGIN as _TOLERANCE_MARGIN
from ik_node.solvers.results import IkStatus, RawSolution
from ik_node.solvers.trees.several_tips import TipTarget
from ik_node.solvers.trees.task_priority import (PriorityTask, solve_with_priority,
                                                 split_by_proof)
from ik_node.solvers.trees.residuals import TipPath, stacked_residual

#: A tip provably out of reach: the best after the first descent and this many restarts.
_OUT_OF_REACH_RESTARTS = 1
#: The compiled descents' ends that answer (status, message), as the loop of _descents does.
_COMPILED_ENDS = {
    compiled.CONVERGED: (IkStatus.CONVERGED, 'converged after {restarts} restarts'),
    compiled.GOOD_ENOUGH: (IkStatus.UNREACHABLE, 'out of reach: every tip within tolerance of '
                           'its proven bound'),
    compiled.ITERATION_CAP: (IkStatus.MAX_ITERATIONS, '{iterations} iterations, {restarts} '
                             'restarts'),
    compiled.TIMEOUT: (IkStatus.TIMEOUT, 'timeout {timeout:g} s after {restarts} restarts')}
_TWO_PI = 2.0 * math.pi


class TreeDampedLeastSquares:
    """The damped least-squares solve of several tips of a tree with a shared trunk.

    Args:
        chain: the tree.
        params: the damped_jacobian parameters (validated): ``damping``, ``timeout``,
            ``max_iterations``, ``restarts``, ``restart_seed``, ``orientation_weight``,
            ``position_tolerance``, ``orientation_tolerance``, ``record_history``, ``weights``.
    """

    def __init__(self, chain: Chain, params: Dict):
        self.chain = chain
        self.params = params
        self._paths = [TipPath(chain, tip) for tip in chain.tip_links]
        weights = params['weights']
        self._weights = list(weights) if weights else [1.0] * len(chain.tip_links)
        low, high = chain.lower.tolist(), chain.upper.tolist()
        self._low, self._high = low, high
        self._wraps = [not j.is_prismatic and hi - lo >= _TWO_PI
                       for j, lo, hi in zip(chain.joints, low, high, strict=True)]
        self._mid = chain.mid_configuration().tolist()
        self._restart_low = [lo if math.isfinite(lo) else -math.pi for lo in low]
        self._restart_high = [hi if math.isfinite(hi) else math.pi for hi in high]
        self._plans: Dict[Tuple[int, ...], Tuple[List[int], Callable, Callable]] = {}
        # The compiled descents (same iterations as the loop of _descents) where numba serves.
        self._compiled = tree_kernel(chain, params, self._wraps) if compiled.available() \
            else None

    # ---------------------------------------------------------------------------- helpers
    def _plan(self, tips: Tuple[int, ...]) -> Tuple[List[int], Callable, Callable]:
        """The joints that move the targeted ``tips`` and their limit functions (cached)."""
        plan = self._plans.get(tips)
        if plan is None:
            active = sorted({j for k in tips for j in self._paths[k].joints})
            low = [self._low[j] for j in active]
            high = [self._high[j] for j in active]
            wraps = [self._wraps[j] for j in active]
            bounded = [c for c, j in enumerate(active) if not wraps[c] and
                       math.isfinite(low[c]) and math.isfinite(high[c])]
            advance, blocked = limit_functions(low, high, wraps, bounded)
            plan = (active, advance, blocked)
            self._plans[tips] = plan
        return plan

    @staticmethod
    @functools.lru_cache(maxsize=None)
    def _linear_algebra(n: int) -> Tuple[Callable, Tuple[np.ndarray, np.ndarray], List[List[int]]]:
        """For ``n`` joints: the generated damped Cholesky solve, the lower-triangle indices
        it reads ``H`` in, and for each joint the flat entries of its row and column."""
        rows, cols = np.tril_indices(n)
        touching = [[i for i, (a, b) in enumerate(zip(rows.tolist(), cols.tolist()))
                     if a == k or b == k] for k in range(n)]
        return damped_solve_function(n), (rows, cols), touching

    def bound(self, k: int, position: Sequence[float]) -> Optional[float]:
        """Proven lower bound [m] of tip ``k``'s position error, when positive; else None."""
        return self._paths[k].lower_bound(position)

    def _evaluator(self, targets: Sequence[TipTarget], active: List[int]) -> Callable:
        """:func:`~ik_node.solvers.trees.residuals.stacked_residual` of ``targets`` on the active
        joints, with the tips' weights."""
        return stacked_residual(self._paths, self._weights, targets, active,
                                self.params['orientation_weight'])

    # ------------------------------------------------------------------------------ solving
    def solve(self, targets: Sequence[TipTarget], q_seed: np.ndarray) -> RawSolution:
        """Every target of ``targets`` at once from ``q_seed`` (within the limits); when that
        misses and some tips are proven out of reach while others are not, the better of that
        answer and the task-priority one (:mod:`ik_node.solvers.trees.task_priority`: the others on
        their targets first)."""
        params = self.params
        if self._compiled is not None:
            self._compiled.start_loading()  # once, in the background
        budget = Budget(params['timeout'])
        raw = self._descents(targets, q_seed, budget, params['max_iterations'])
        if raw.status is IkStatus.CONVERGED:
            return raw
        split = split_by_proof(targets, [self.bound(t.index, t.position) for t in targets],
                               params['position_tolerance'])
        if split is None:
            return raw
        task = PriorityTask(self._paths, self._weights, params['orientation_weight'], self._low,
                            self._high, _TOLERANCE_MARGIN * params['position_tolerance'],
                            _TOLERANCE_MARGIN * params['orientation_tolerance'])
        return solve_with_priority(
            split, raw, task, budget, params['max_iterations'],
            lambda primary, q, most: self._descents(primary, q, budget, most))

    def _descents(self, targets: Sequence[TipTarget], q_seed: np.ndarray, budget: Budget,
                  max_iterations: int) -> RawSolution:
        """The descents and restarts of :meth:`solve` within ``budget`` and
        ``max_iterations``."""
        params = self.params
        tol_p = _TOLERANCE_MARGIN * params['position_tolerance']
        tol_r = _TOLERANCE_MARGIN * params['orientation_tolerance']
        tips = tuple(t.index for t in targets)
        active, advance, blocked_joints = self._plan(tips)
        evaluate = self._evaluator(targets, active)
        solve, tril, touching = self._linear_algebra(len(active))
        bounds = [self.bound(t.index, t.position) for t in targets]
        links = [t.link for t in targets]
        tip_residuals = {link: b for link, b in zip(links, bounds, strict=True) if b is not None}
        known = [b for b in bounds if b is not None]
        min_residual = max(known) if known else None
        floor = sum(self._weights[t.index] ** 2 * (b or 0.0) ** 2
                    for t, b in zip(targets, bounds, strict=True))
        position_only = all(t.R is None for t in targets)
        # Position targets only, every tip bounded: within tolerance of every bound is as close
        # as the targets can be approached.
        good_enough = None
        if position_only and all(b is not None for b in bounds):
            good_enough = [b + params['position_tolerance'] for b in bounds]
        out_of_reach = any(b is not None and b > params['position_tolerance'] for b in bounds)
        history: Optional[List[float]] = [] if params['record_history'] else None
        q_full = q_seed.tolist()
        x = [q_full[j] for j in active]
        mid = [self._mid[j] for j in active]
        spans = [(self._restart_low[j], self._restart_high[j] - self._restart_low[j])
                 for j in active]
        rng: Optional[random.Random] = None
        restarts = iterations = 0
        last_blocked = -1
        mid_next = x != mid
        best_x, best_cost = x, math.inf
        run = None
        if self._compiled is not None and history is None and self._compiled.serves():
            run = self._compiled.start(targets, active, self._weights, good_enough, floor,
                                       max_iterations)

        def answer(x_out: List[float], status: IkStatus, message: str) -> RawSolution:
            q = list(q_full)
            for c, j in enumerate(active):
                q[j] = x_out[c]
            return RawSolution(np.array(q), status, iterations, min_residual, message, history,
                               tip_residuals)

        while True:  # one descent from x per pass
            descent_start = iterations
            if run is not None:  # compiled: the iterations of the loop below
                end, x, iterations, last_blocked = run.descend(x, iterations, last_blocked,
                                                               budget)
                best_x = run.best_x.tolist()
                if end in _COMPILED_ENDS:
                    status, message = _COMPILED_ENDS[end]
                    return answer(x if status in (IkStatus.CONVERGED, IkStatus.UNREACHABLE)
                                  else best_x, status,
                                  message.format(iterations=iterations, restarts=restarts,
                                                 timeout=params['timeout']))
                stuck = True
            else:
                lam = params['damping']
                cost, errors, e, J = evaluate(x)
                if history is not None:
                    history.append(max(p for p, _ in errors))
                if cost < best_cost:
                    best_x, best_cost = x, cost
                normal = None  # (H as a flat lower triangle, g) at x
                stall_cost, stall_iteration = cost, iterations
                stuck = False
            while not stuck:
                if all(p <= tol_p and a <= tol_r for p, a in errors):
                    return answer(x, IkStatus.CONVERGED, f'converged after {restarts} restarts')
                if good_enough is not None and all(
                        p <= g for (p, _), g in zip(errors, good_enough, strict=True)):
                    return answer(x, IkStatus.UNREACHABLE, 'out of reach: every tip within '
                                  'tolerance of its proven bound')
                if iterations >= max_iterations:
                    return answer(best_x, IkStatus.MAX_ITERATIONS,
                                  f'{iterations} iterations, {restarts} restarts')
                if not budget.allows():
                    return answer(best_x, IkStatus.TIMEOUT, f'timeout {params["timeout"]:g} s '
                                  f'after {restarts} restarts')
                iterations += 1
                if normal is None:  # once per iterate: every damping tried reuses it
                    normal = (J.T @ J)[tril].tolist(), (J.T @ e).tolist()
                x_new = None
                try:
                    dq = solve(normal[0], normal[1], lam)
                    blocked = blocked_joints(x, dq)
                    if blocked:  # these joints sit out the step: their rows and columns go
                        last_blocked = iterations
                        H, g = list(normal[0]), list(normal[1])
                        for k in blocked:
                            g[k] = 0.0
                            for i in touching[k]:
                                H[i] = 0.0
                        dq = solve(H, g, lam)
                    x_new = advance(x, dq)
                except (ValueError, ZeroDivisionError):  # not positive definite (round-off)
                    x_new = None
                trial = None if x_new is None else evaluate(x_new)
                if trial is not None and trial[0] < cost:  # accept; trust the model more
                    x = x_new
                    cost, errors, e, J = trial
                    normal = None
                    if cost < best_cost:
                        best_x, best_cost = x, cost
                    lam = max(lam * _LAMBDA_DOWN, _LAMBDA_MIN)
                else:  # reject; damp more
                    lam *= _LAMBDA_UP
                    stuck = lam > _LAMBDA_MAX
                if history is not None:
                    history.append(max(p for p, _ in errors))
                if iterations - stall_iteration >= (_STALL_ITERATIONS_BLOCKED if
                                                    last_blocked > stall_iteration
                                                    else _STALL_ITERATIONS):
                    stuck = stuck or cost - floor > _STALL_FACTOR * (stall_cost - floor)
                    stall_cost, stall_iteration = cost, iterations
            if out_of_reach and restarts >= _OUT_OF_REACH_RESTARTS:
                return answer(best_x, IkStatus.UNREACHABLE, f'a tip is provably out of reach: '
                              f'the best of {restarts + 1} descents')
            if restarts >= params['restarts']:
                return answer(best_x, IkStatus.MAX_ITERATIONS, f'stuck after {restarts} '
                              'restarts (the restarts limit)')
            restarts += 1
            if mid_next and last_blocked >= descent_start:
                x, mid_next = mid, False
                continue
            mid_next = False
            if rng is None:
                rng = random.Random(params['restart_seed'])
            x = self._restart(rng, spans, evaluate if run is None else
                              lambda candidate: (run.cost(candidate),))

    @staticmethod
    def _restart(rng: random.Random, spans: List[Tuple[float, float]],
                 evaluate: Callable) -> List[float]:
        """The lowest-cost of a few uniformly random configurations of the active joints."""
        best, best_cost = None, math.inf
        for _ in range(_RESTART_CANDIDATES):
            candidate = [lo + span * rng.random() for lo, span in spans]
            cost = evaluate(candidate)[0]
            if best is None or cost < best_cost:
                best, best_cost = candidate, cost
        return best
