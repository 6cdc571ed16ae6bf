"""The compiled descents of a tree whose tips share joints, as
:class:`~.tree.TreeDampedLeastSquares` drives them: per tip its serial path's model, per set of
targeted tips the stacked model, and one solve's run, which calls the tree kernels of
:mod:`.compiled` chunk by chunk and asks the solve's budget in between.
"""

from __future__ import annotations

import math
from typing import List, Optional, Sequence, Tuple

import numpy as np

import ik_node.kernels as kernels
from ik_node.kernels import fk
from ik_node.solvers.damped_jacobian.compiled_layout import (
    _BEST_COST, _BOUNDED, _FLOOR, _FRESH, _HIGH, _ITERATIONS, _KERNELS, _LAST_BLOCKED, _LOW,
    _MODEL_COLUMNS, _STATE, _TIP_COLUMNS, _TIP_JOINTS, _TIP_ORIENTATION, _TIP_ROW,
    _TIP_WEIGHT, _WRAPS, CHUNK_DONE, TIMEOUT, TreeProblem)
from ik_node.solvers.damped_jacobian.compiled_runs import CompiledDescent, descent_settings


def tree_kernel(chain, params: dict, wraps: Sequence[bool]) -> Optional['TreeKernel']:
    """The :class:`TreeKernel` of ``chain`` where every tip's path has generated kinematics;
    else None (the Python descents serve). The caller asks first whether numba may serve
    (:func:`.compiled.available`)."""
    try:
        return TreeKernel(chain, params, wraps)
    except ValueError:
        return None


class TreeKernel:
    """The compiled descents of :class:`~.tree.TreeDampedLeastSquares` on one tree: per tip
    its serial path's model (the generated kinematics' constant transforms), per set of
    targeted tips the stacked model (cached), and :meth:`start` for one solve.

    Args:
        chain: the tree (its tips' serial paths have generated kinematics).
        params: the damped_jacobian parameters (``orientation_weight``, the tolerances,
            ``damping``, ``max_iterations``).
        wraps: per joint of the tree, whether it wraps by whole turns.
    """

    def __init__(self, chain, params: dict, wraps: Sequence[bool]):
        self._paths = []
        for tip in chain.tip_links:
            fast = chain.serial_chain(tip).fast_kinematics
            if fast is None:
                raise ValueError(f'tip {tip!r}: no generated kinematics for its path')
            joints = chain.joints_of_tip(tip)
            model = fk.model_rows(list(fast.joint_transforms) + [fast.tip_transform],
                                  [chain.joints[j].is_prismatic for j in joints], _MODEL_COLUMNS)
            self._paths.append((joints, model))
        self._low, self._high = chain.lower.tolist(), chain.upper.tolist()
        self._wraps = list(wraps)
        self._plans = {}
        self.settings = descent_settings(params)

    def serves(self) -> bool:
        """Whether the kernels are loaded (never blocks)."""
        return bool(_KERNELS) and kernels.ready()

    def start_loading(self) -> None:
        """As :meth:`CompiledDescent.start_loading`."""
        if not self.serves():
            kernels.start()

    def _plan(self, tips: Tuple[int, ...], active: Sequence[int], weights: Sequence[float]):
        """The stacked model of the targeted ``tips`` (in order) on the ``active`` joints."""
        key = (tips, tuple(weights))
        plan = self._plans.get(key)
        if plan is None:
            column = {j: c for c, j in enumerate(active)}
            rows = [self._paths[k][1] for k in tips]
            tree_model = np.concatenate(rows)
            table = np.zeros((len(tips), 5))
            columns: List[int] = []
            row = 0
            for t, k in enumerate(tips):
                joints = self._paths[k][0]
                table[t, _TIP_ROW], table[t, _TIP_JOINTS] = row, len(joints)
                table[t, _TIP_WEIGHT], table[t, _TIP_COLUMNS] = weights[k], len(columns)
                columns += [column[j] for j in joints]
                row += len(joints) + 1
            active_model = np.zeros((len(active), _MODEL_COLUMNS))
            for c, j in enumerate(active):
                lo, hi, wrap = self._low[j], self._high[j], self._wraps[j]
                active_model[c, _LOW], active_model[c, _HIGH] = lo, hi
                active_model[c, _WRAPS] = float(wrap)
                active_model[c, _BOUNDED] = float(not wrap and math.isfinite(lo) and
                                                  math.isfinite(hi))
            plan = (tree_model, table, np.array(columns, dtype=float), active_model)
            self._plans[key] = plan
        return plan

    def start(self, targets, active: Sequence[int], weights: Sequence[float],
              good_enough: Optional[Sequence[float]], floor: float,
              max_iterations: int) -> 'TreeRun':
        """The descents of one solve of ``targets`` (:class:`TipTarget` s: ``index``,
        ``position``, ``R``) on the ``active`` joints."""
        tree_model, table, columns, active_model = self._plan(
            tuple(t.index for t in targets), active, weights)
        table = table.copy()
        target_array = np.zeros((len(targets), 12))
        for k, t in enumerate(targets):
            target_array[k, :3] = t.position
            if t.R is not None:
                target_array[k, 3:] = np.asarray(t.R, dtype=float).ravel()
                table[k, _TIP_ORIENTATION] = 1.0
        settings = self.settings._replace(max_iterations=float(max_iterations))
        good = np.full(len(targets), -1.0) if good_enough is None else \
            np.array(good_enough, dtype=float)
        return TreeRun((TreeProblem(tree_model, table, columns, target_array), active_model,
                        settings), good, floor, len(active))


class TreeRun:
    """The compiled descents of one tree solve: the best configuration of the active joints
    :attr:`best_x` with its cost :attr:`best_cost`."""

    def __init__(self, problem: tuple, good: np.ndarray, floor: float, n: int):
        self._problem = problem
        self._good = good
        self.x = np.empty(n)
        self.best_x = np.empty(n)
        self.state = np.zeros(_STATE)
        self.state[_BEST_COST] = math.inf
        self.state[_FLOOR] = floor

    @property
    def best_cost(self) -> float:
        """The cost of :attr:`best_x` (infinite before any descent)."""
        return float(self.state[_BEST_COST])

    def descend(self, x: Sequence[float], iterations: int, last_blocked: int,
                budget) -> Tuple[int, List[float], int, int]:
        """One descent from ``x`` (the active joints); ``budget`` is asked before each chunk of
        iterations. Returns ``(code, last iterate, iterations, last_blocked)``: CONVERGED,
        GOOD_ENOUGH, STUCK, ITERATION_CAP or TIMEOUT."""
        tree, active_model, settings = self._problem
        self.x[:] = x
        state = self.state
        state[_ITERATIONS], state[_LAST_BLOCKED], state[_FRESH] = iterations, last_blocked, 1.0
        descend = _KERNELS['tree_descend']
        while True:
            if not budget.allows():
                code = TIMEOUT
                break
            code = descend(tree, active_model, settings, self.x, self.best_x, self._good, state,
                           CompiledDescent.CHUNK)
            if code != CHUNK_DONE:
                break
        return code, self.x.tolist(), int(state[_ITERATIONS]), int(state[_LAST_BLOCKED])

    def cost(self, x: Sequence[float]) -> float:
        """The stacked cost of ``x`` (the active joints)."""
        tree, _, settings = self._problem
        return float(_KERNELS['tree_cost'](tree, settings, np.asarray(x, dtype=float)))
