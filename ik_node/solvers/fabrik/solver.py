"""FABRIK: Forward And Backward Reaching Inverse Kinematics (Aristidou and Lasenby, 2011).

Position-only, for serial chains and for kinematic trees with several end effectors (a serial
chain is the one-tip case). The passes themselves are in :mod:`ik_node.solvers.fabrik.tree`.

Joint handling: revolute joints are limited in the backward pass (the bone is projected on the
plane normal to the joint's hinge axis and its angle clamped to the joint's limits); continuous
joints are unbounded. **Chains with a prismatic joint are refused** when the solver is built,
naming the joints: FABRIK keeps every bone's length, so it could only hold such a joint at its
seed value (a lift that never moves: TIAGo's torso), and damped_jacobian moves it. Joints that
move no targeted tip keep their seed value.

Beyond the paper, each documented where it is done: joints above non-planar subtrees or offset
links fit points instead of bones (where the classic rule does not converge); a stall at
joint limits restarts from a random configuration (``restarts``); a linearly converging run is
extrapolated (``extrapolate``). A finishing step that is *not* FABRIK, the hybrid many FABRIK
implementations use: when an iteration cuts the error by less than half, a few damped
least-squares steps on the targeted tips' stacked position Jacobian (``polish_iterations``;
0 switches it off; it ends after two steps in a row that cut the error by less than 10 %: near a
reachable target Gauss-Newton steps cut far more, out of reach they crawl, and the stall handling
takes over).
``min_residual`` is a proven lower bound on a tip's error (None when nothing positive is
proven).

One target on a serial chain of revolute joints (the common case) runs the same passes in plain
floats (:mod:`ik_node.solvers.fabrik.serial`, several times faster than the numpy tree code;
compiled by numba where it serves: :mod:`ik_node.solvers.fabrik.compiled`, the same runs), and
FABRIK's own random restarts give way to the closest-pose search (not FABRIK either:
:mod:`ik_node.solvers.out_of_reach.closest_pose`): a run that stalls above tolerance is finished
by Newton descents to the closest stationary point (a target out of reach, provably or beyond the
measured reach, goes to them from the seed, without a FABRIK pass), restarted only until two
descents from different starts agree, one of them from a random start, or stopped at the proven
bound or the measured reach (status ``unreachable``). ``timeout`` bounds the wall time of
a solve: no iteration starts that would end after it (judged by the second-slowest iteration so
far: one iteration stretched by a stall of the machine does not end the solve early; a run
stopped for time with time left hands the rest to the closest-pose search).
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np

from ik_node.model.chain import Chain, chain_lengths
from ik_node.errors import ChainError, ConfigError
from ik_node.solvers.base import IkStatus, ParamSpec, RawSolution, Solver, SolverParts
from ik_node.solvers.params import FloatListSpec
from ik_node.solvers.trees.several_tips import TipTarget
from ik_node.solvers.trees.task_priority import (PriorityTask, solve_with_priority,
                                                 split_by_proof)
from ik_node.solvers.trees.residuals import TipPath
from ik_node.solvers.numerics.budget import Budget
from ik_node.solvers.out_of_reach.closest_pose import (SEARCH_MAX_ITERATIONS, ClosestPose,
                                                       SearchLimits)
from ik_node.solvers.out_of_reach.measured_reach import measure_reach
from ik_node.solvers.hip_knee.exact_leg import ExactLeg
from ik_node.solvers.out_of_reach.outcome import VOUCHED_STOPS, search_outcome
from ik_node.solvers.out_of_reach.tip_sample import tip_sample
from ik_node.solvers.geometry.reach_bound import ReachBound, reach_bound
from ik_node.solvers.out_of_reach.compiled_reach import CompiledReach
from ik_node.solvers.fabrik.compiled_runs import CompiledFabrik
from ik_node.solvers.fabrik.compiled_tree import CompiledTree
from ik_node.solvers.fabrik.iteration import FabrikProblem, FabrikSettings
from ik_node.solvers.fabrik.serial import SerialFabrik
from ik_node.solvers.fabrik.tree import FabrikTree

#: The closest-pose search counts the target reached below this fraction of the tolerance (a
#: margin for the round-off of the FK that base.py measures independently).
_TOLERANCE_MARGIN = 0.5
#: The weights of a serial run's one target.
_ONE_WEIGHT = np.ones(1)


class FabrikSolver(Solver):
    """FABRIK for chains and trees; position only.

    ``solve(p)`` targets the tip of a serial chain; ``solve(targets={tip: p, ...})`` several
    tips of a tree at once (independent legs one by one, each with its own serial FABRIK).
    """

    name = 'fabrik'
    supports_orientation = False
    solves_trees = True
    PER_TIP_PARAMS = ('weights',)
    PARAMS: Dict[str, ParamSpec] = {
        'max_iterations': ParamSpec(
            int, 100, 'iteration cap of the FABRIK iterations of one solve (polish steps '
            'included); the closest-pose search that finishes a serial chain\'s target above '
            f'tolerance counts its Newton steps apart, at most {SEARCH_MAX_ITERATIONS}, within '
            'timeout', '', min=1, max=1_000_000),
        'weights': FloatListSpec(
            list, (), 'priority of each tip when targets conflict, in the order of the chain\'s '
            'tip_links (one number > 0 per tip; a branching joint is pulled to the weighted mean '
            'of its branches, a branch weighing the sum of its targeted tips); empty = all 1',
            'unitless'),
        'min_improvement': ParamSpec(
            float, 1e-9, 'the solve stops as stalled when the weighted RMS tip error has not '
            'improved by this much in stall_iterations iterations (0: never stall)', 'm',
            min=0.0, max=1.0),
        'stall_iterations': ParamSpec(
            int, 5, 'iterations without min_improvement before the solve stops as stalled', '',
            min=1, max=1_000_000),
        'extrapolate': ParamSpec(
            bool, True, 'after each iteration also try its joint step stretched to where a '
            'linearly converging sequence would end (rho / (1 - rho) times, rho the iteration\'s '
            'error ratio, at most 30 times), kept only if it lowers the error; false (with '
            'restarts and polish_iterations 0) gives plain FABRIK'),
        'restarts': ParamSpec(
            int, 20, 'after a stall (a local minimum at joint limits), start again this many '
            'times from a random configuration drawn with a fixed seed (reproducible), within '
            'max_iterations; the best configuration seen is returned', '', min=0, max=1000),
        'timeout': ParamSpec(
            float, 0.005, 'wall-time budget of one solve, the closest-pose search included: no '
            'iteration starts that would end after it (status timeout, the best configuration '
            'found is returned)', 's', min=0.0, max=3600.0, min_inclusive=False),
        'polish_iterations': ParamSpec(
            int, 10, 'finishing step, not FABRIK: when a FABRIK iteration cuts the tip error by '
            'less than half, up to this many damped least-squares steps on the targeted tips\' '
            'stacked position Jacobian, within the joint limits, each kept only if it lowers the '
            'error and counted as an iteration (0: FABRIK passes only)', '', min=0, max=1000),
        'null_space_gain': ParamSpec(
            float, 0.5, 'serial chains with more than 3 joints, when the seed is within 5 cm of '
            'the target (a stream): the first polish step also moves along the self-motion (the '
            'null space of the position Jacobian) away from the joint limits, by this gain '
            'times the seed\'s error, more near a limit; 0: off', 'rad/m', min=0.0, max=100.0),
    }

    def check_chain(self, chain: Chain) -> None:
        """Refuse a chain with prismatic joints (FABRIK keeps bone lengths: it cannot move them),
        naming them and the solver that moves them."""
        prismatic = [j.name for j in chain.joints if j.is_prismatic]
        if prismatic:
            raise ChainError(f'fabrik cannot move prismatic joint(s) {", ".join(prismatic)}: '
                             'FABRIK keeps every bone\'s length, so it would hold them at their '
                             'seed values; use damped_jacobian, which moves them')

    def __init__(self, chain: Chain, params: Optional[Mapping[str, Any]] = None,
                 parts: Optional[SolverParts] = None):
        super().__init__(chain, params, parts)
        weights = self.params['weights']
        if weights and len(weights) != len(chain.tip_links):
            raise ConfigError(f'parameter \'weights\' has {len(weights)} values {list(weights)}; '
                              f'the chain has {len(chain.tip_links)} tips, in this order: '
                              f'{", ".join(chain.tip_links)}')
        self._weights = np.array(weights if weights else [1.0] * len(chain.tip_links))
        self._tree = FabrikTree(chain)
        # A tree solved whole: each tip's serial path for the task-priority phase.
        self._tip_paths = [TipPath(chain, tip) for tip in chain.tip_links] \
            if self._several_tips and self.legs is None else None
        # A tip's error is provably at least (distance from its first joint - total bone length):
        # the first joint never moves and revolute joints keep the bone lengths (tightened by
        # the first joint's arc, see ReachBound). A tip with no moving joint (a chain without
        # any: check_every_tip_moves refuses such a tip of a tree) is fixed: its distance is
        # exact.
        self._bounds: list = []
        for k, tip in enumerate(chain.tip_links):
            if not self._tree.path_to_tip(k)[:-1]:
                self._bounds.append(chain.fk(np.zeros(chain.n), tip)[:3, 3].copy())
            else:
                self._bounds.append(reach_bound(chain, tip))
        # Serial chains: a single-target solve that FABRIK leaves above tolerance is finished by
        # the closest-pose search (not FABRIK; see ik_node.solvers.out_of_reach.closest_pose).
        fast = chain.fast_kinematics
        self._closest = self._serial = None
        if fast is not None:
            self._serial = SerialFabrik(self._tree)  # the same passes in floats
            low, high = chain.lower.tolist(), chain.upper.tolist()
            self._closest = ClosestPose(
                fast.pose_jacobian, fast.position, fast.position_newton, low, high,
                [not j.is_prismatic and hi - lo >= 2.0 * math.pi
                 for j, lo, hi in zip(chain.joints, low, high, strict=True)],
                [j.is_prismatic for j in chain.joints],
                max(float(sum(chain_lengths(chain))), 1e-3))
            if isinstance(self._bounds[0], ReachBound):  # see out_of_reach.measured_reach
                self._closest.reach = measure_reach(self._closest, self._bounds[0])
        self._exact = ExactLeg.of(chain) if self._closest is not None else None
        # The serial passes compiled (numba, loaded in the background): the same runs.
        self._compiled = CompiledFabrik.of(self._serial)
        # The tree passes compiled (numba, loaded in the background): the same runs.
        self._compiled_tree = CompiledTree.of(self._tree) if len(chain.tip_links) > 1 else None
        # A target's proven bound and gap to the measured reach in one compiled call.
        self._compiled_reach = CompiledReach.of(self._bounds[0], self._closest.reach) \
            if self._compiled is not None and isinstance(self._bounds[0], ReachBound) else None
        if self._closest is not None and self._exact is None:
            self._closest.samples = tip_sample(chain)  # (a leg takes its closed form)
            self._closest.use_compiled(chain)

    # ------------------------------------------------------------------------------ solving
    def _solve_tree(self, targets: Sequence[TipTarget], q_seed: np.ndarray) -> RawSolution:
        """The FABRIK passes over the whole tree for every target at once (positions only).

        When some tips are proven out of reach and others are not, the passes run without
        restarts (no restart reaches a tip out of reach), and an answer that misses is followed
        by the task-priority phase (:mod:`ik_node.solvers.trees.task_priority`, not FABRIK: the tips
        not proven out of reach on their targets first, by FABRIK on them alone, then the others
        as close as that allows); the better answer is returned.
        """
        if self._compiled_tree is not None:
            self._compiled_tree.start_loading()  # once, in the background
        params = self.params
        tolerance = params['position_tolerance']
        bounds = {t.index: self.min_residual(t.index, np.array(t.position)) for t in targets}
        split = split_by_proof(targets, [bounds[t.index] for t in targets], tolerance)
        budget = Budget(params['timeout'])

        def run(some: Sequence[TipTarget], q: np.ndarray, max_iterations: int,
                restarts: int) -> RawSolution:
            return self._run([t.index for t in some], np.array([t.position for t in some]), q,
                             budget, max_iterations, restarts, [bounds[t.index] for t in some])

        raw = run(targets, q_seed, params['max_iterations'], 0 if split else params['restarts'])
        if split is None or raw.status is IkStatus.CONVERGED:
            return raw
        task = PriorityTask(self._tip_paths, self._weights.tolist(), 1.0, self._tree.lower,
                            self._tree.upper, _TOLERANCE_MARGIN * tolerance,
                            params['orientation_tolerance'])
        return solve_with_priority(
            split, raw, task, budget, params['max_iterations'],
            lambda primary, q, most: run(primary, q, most, params['restarts']))

    def _solve(self, p_target: np.ndarray, R_target: Optional[np.ndarray],
               q_seed: np.ndarray) -> RawSolution:
        if self._compiled is not None:
            self._compiled.start_loading()  # once, in the background
        checks = None if self._compiled_reach is None else self._compiled_reach.checks(p_target)
        if checks is None:  # the Python checks (the gap asked only where it matters)
            residual, reach_gap = self.min_residual(0, p_target), None
        else:
            bound, reach_gap = checks
            residual = bound if bound > 0.0 else None
        if self._plane is not None:  # a planar chain: off its plane is out of reach, proven
            reach = self._bounds[0] if isinstance(self._bounds[0], ReachBound) else None
            residual = self._plane_bound(p_target, residual, reach)
        return self._run([0], p_target[None, :], q_seed, residuals=[residual],
                         reach_gap=reach_gap)

    def min_residual(self, tip_index: int, p_target: np.ndarray) -> Optional[float]:
        """Proven lower bound [m] on tip ``tip_index``'s error for ``p_target``, or None.

        It is ``|p_target - first joint| - total bone length`` when that is positive and the
        tip's path has revolute/continuous joints only; None otherwise (nothing proven).
        """
        bound = self._bounds[tip_index]
        if bound is None:
            return None
        if isinstance(bound, ReachBound):
            excess = bound.lower_bound(np.asarray(p_target, dtype=float).tolist())
        else:  # a fixed tip
            excess = float(np.linalg.norm(p_target - bound))
        return excess if excess > 0.0 else None

    def _run(self, tip_indices: Sequence[int], p_targets: np.ndarray, q_seed: np.ndarray,
             budget: Optional[Budget] = None, max_iterations: Optional[int] = None,
             restarts: Optional[int] = None,
             residuals: Optional[List[Optional[float]]] = None,
             reach_gap: Optional[float] = None) -> RawSolution:
        """FABRIK for ``p_targets`` of the tips ``tip_indices`` from ``q_seed``, within
        ``budget`` (a new one of ``timeout``), ``max_iterations`` and ``restarts`` (tree
        passes; None: the parameters); ``residuals``: the targets' :meth:`min_residual` when
        the caller has them; ``reach_gap``: a single target's gap to the measured reach [m]
        when the caller has it."""
        if residuals is None:
            residuals = [self.min_residual(k, p)
                         for k, p in zip(tip_indices, p_targets, strict=True)]
        stretch = tip_indices[0] if len(tip_indices) == 1 and residuals[0] is not None else None
        params = self.params
        if budget is None:
            budget = Budget(params['timeout'])
        if max_iterations is None:
            max_iterations = params['max_iterations']
        deadline = budget.deadline
        tolerance = params['position_tolerance']
        # A single target on a serial chain: FABRIK alone, handing a stall above tolerance to
        # the closest-pose search; out of reach (provably or beyond the measured reach), straight
        # to that search from the seed (as damped_jacobian does). No stretching FABRIK pass
        # first: it would be one more start for the search to descend from, which costs more
        # descents than it saves.
        search = self._closest is not None and len(tip_indices) == 1
        if search and ((residuals[0] is not None and residuals[0] > tolerance) or
                       (self._closest.reach_gap(p_targets[0].tolist()) if reach_gap is None
                        else reach_gap) > tolerance):
            return self._closest_pose(q_seed, 0, [] if params['record_history'] else None,
                                      p_targets[0], residuals[0], budget, residuals,
                                      tip_indices)
        settings = FabrikSettings(
            tolerance, max_iterations, params['min_improvement'], params['stall_iterations'],
            params['extrapolate'], params['polish_iterations'], params['record_history'],
            params['null_space_gain'])
        if search:
            problem = FabrikProblem(q_seed, tuple(tip_indices), p_targets, _ONE_WEIGHT, stretch,
                                    stop_when_stuck=True, deadline=deadline)
            run = None if self._compiled is None else self._compiled.run(problem, settings)
            if run is None:  # not loaded yet, or a run the kernel leaves to the Python passes
                run = self._serial.run(problem, settings)
        else:
            problem = FabrikProblem(
                q_seed, tuple(tip_indices), p_targets, self._weights[list(tip_indices)], stretch,
                params['restarts'] if restarts is None else restarts, restarts == 0, deadline)
            run = None if self._compiled_tree is None else \
                self._compiled_tree.run(problem, settings)
            if run is None:  # not loaded yet, or a run the kernel leaves to the Python passes
                run = self._tree.run(problem, settings)
        known = [r for r in residuals if r is not None]
        if run.converged:
            status, message = IkStatus.CONVERGED, ''
        elif search and (self._exact is not None or not run.timed_out or
                         budget.can_hand_over()):  # (a leg's closed form: always)
            # Also after a run that stopped for time: its iterations are paced by the slowest
            # so far, and the search's Newton steps may still fit (one FABRIK iteration
            # stretched by a stall of the machine ended runs with most of the budget left).
            return self._closest_pose(run.q, run.iterations, run.history, p_targets[0],
                                      residuals[0], budget, known, tip_indices)
        elif run.timed_out:
            status, message = IkStatus.TIMEOUT, (f'timeout {params["timeout"]:g} s after '
                                                 f'{run.iterations} iterations')
        else:
            status = IkStatus.MAX_ITERATIONS
            message = (f'stalled after {run.iterations} iterations (no improvement of '
                       f'{params["min_improvement"]:g} m in {params["stall_iterations"]})'
                       if run.stalled else f'no convergence in {run.iterations} iterations')
        raw = RawSolution(q=run.q, status=status, iterations=run.iterations,
                          min_residual=max(known) if known else None, message=message,
                          history=run.history,
                          tip_residuals={self.chain.tip_links[k]: r
                                         for k, r in zip(tip_indices, residuals, strict=True)
                                         if r is not None})
        return raw

    def _closest_pose(self, q: np.ndarray, iterations: int, history: Optional[list],
                      p_target: np.ndarray, bound: Optional[float], budget: Budget, known: list,
                      tip_indices: Sequence[int]) -> RawSolution:
        """The closest-pose search from ``q`` (FABRIK's best configuration, or the seed), within
        what is left of the solve's time and iterations after ``iterations`` (restarts: the
        ``restarts`` parameter)."""
        if self._exact is not None:  # a leg: its closed form (hip_knee.exact_leg)
            raw = self._exact.closest(p_target.tolist(), q.tolist())
            raw.iterations += iterations
            raw.history = history
            if bound is not None and (raw.min_residual is None or bound > raw.min_residual):
                raw.min_residual = bound
            if raw.min_residual is not None:
                raw.tip_residuals = {self.chain.tip_links[tip_indices[0]]: raw.min_residual}
            return raw
        params = self.params
        tolerance = params['position_tolerance']
        limits = SearchLimits(SEARCH_MAX_ITERATIONS, params['restarts'],
                              _TOLERANCE_MARGIN * tolerance, tolerance)
        found = self._closest.search(p_target.tolist(), q.tolist(), budget, limits, bound, 0,
                                     history)
        iterations += found.iterations
        restarts = max(found.descents - 1, 0)
        status, message = search_outcome(found, self.chain.joint_names, iterations, restarts,
                                         params['timeout'])
        return RawSolution(q=np.array(found.q), status=status, iterations=iterations,
                           min_residual=max(known) if known else None, message=message,
                           history=history,
                           tip_residuals={self.chain.tip_links[tip_indices[0]]: bound}
                           if bound is not None else {}, vouched=found.stop in VOUCHED_STOPS)
