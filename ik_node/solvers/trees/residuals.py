"""The stacked error of several tips of a tree, from each tip's own serial path.

* :class:`TipPath`: one tip's joints (indices into the tree's q), the generated kinematics of
  its serial path (:meth:`~ik_node.model.chain.Chain.serial_chain`) and its proven reach bound.
* :func:`stacked_residual`: ``evaluate(x) -> (cost, errors, e, J)`` over the joints that move the
  targeted tips, every tip's error scaled by its weight.

Used by the damped least-squares tree solve and by the task-priority phase of both tree solvers
(:mod:`ik_node.solvers.trees.task_priority`). A trunk joint is evaluated once per tip, several times
cheaper than the numpy tree.
"""

from __future__ import annotations

from typing import Callable, List, Optional, Sequence

import numpy as np

from ik_node.model.chain import Chain
from ik_node.solvers.geometry.residuals import error_function
from ik_node.solvers.geometry.reach_bound import reach_bound
from ik_node.solvers.trees.several_tips import TipTarget


class TipPath:
    """One tip's serial path: its joints (indices into the tree's q) and generated kinematics."""

    def __init__(self, chain: Chain, tip: str):
        self.joints: List[int] = chain.joints_of_tip(tip)
        kinematics = chain.serial_chain(tip).fast_kinematics
        self.pose_jacobian = kinematics.pose_jacobian
        self.position_jacobian = kinematics.position_jacobian
        self.bound = reach_bound(chain, tip)

    def lower_bound(self, position: Sequence[float]) -> Optional[float]:
        """Proven lower bound [m] of this tip's position error for ``position``, when positive;
        else None."""
        if self.bound is None:
            return None
        gap = self.bound.lower_bound(list(position))
        return gap if gap > 0.0 else None


def stacked_residual(paths: Sequence[TipPath], weights: Sequence[float],
                     targets: Sequence[TipTarget], active: Sequence[int],
                     orientation_weight: float) -> Callable:
    """``evaluate(x) -> (cost, errors, e, J)`` on the active joints ``x`` (values of the tree's
    joints ``active``, in that order).

    ``e`` stacks each target's error in the order of ``targets`` (3 rows for a position [m], 6
    for a pose: then ``orientation_weight`` [m/rad] times the rotation vector), scaled by the
    tip's weight ``weights[tip index]``; ``J`` (numpy, rows of ``e`` by ``active``) is its
    Jacobian, ``cost = |e|^2`` and ``errors`` each tip's (position [m], angle [rad]) errors.
    """
    column = {j: c for c, j in enumerate(active)}
    parts = []
    rows = 0
    for t in targets:
        path = paths[t.index]
        evaluate = error_function(path.pose_jacobian, path.position_jacobian,
                                  np.array(t.position), t.R, orientation_weight)
        m = 3 if t.R is None else 6
        w = weights[t.index]
        scale = np.full(m, w)
        scale[3:] *= orientation_weight
        parts.append((evaluate, [column[j] for j in path.joints], rows, rows + m, scale, w * w))
        rows += m
    n = len(active)

    def evaluate(x: List[float]):
        J = np.zeros((rows, n))
        e = np.empty(rows)
        cost = 0.0
        errors = []
        for tip_evaluate, columns, r0, r1, scale, w2 in parts:
            tip_cost, position_error, angle_error, tip_e, tip_J = tip_evaluate(
                [x[c] for c in columns])
            cost += w2 * tip_cost
            e[r0:r1] = tip_e
            e[r0:r1] *= scale
            J[r0:r1, columns] = np.asarray(tip_J) * scale[:, None]
            errors.append((position_error, angle_error))
        return cost, errors, e, J
    return evaluate
