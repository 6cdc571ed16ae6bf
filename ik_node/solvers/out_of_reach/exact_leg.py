"""The exact closest pose of a leg, for the iterative solvers.

A chain that fits the analytic leg geometry (:mod:`ik_node.solvers.hip_knee.geometry`: a
first joint, then hip pitch and knee about parallel axes; or a planar 2-link chain) has its
closest pose within the limits in closed form (:class:`~ik_node.solvers.hip_knee.solver.
HipKneeSolver`: the nearest point of the foot's reach, or the exact nearest pose over the limit
boundary). ``damped_jacobian`` and ``fabrik`` hand such a chain's closest-pose search to it, so
a leg gets that pose whatever solver is configured, load or not: it costs tens of microseconds
and no restart.
"""

from __future__ import annotations

from typing import List, Optional

from ik_node.errors import ChainError
from ik_node.model.chain import Chain
from ik_node.solvers.hip_knee.solver import HipKneeSolver
from ik_node.solvers.results import RawSolution


class ExactLeg:
    """The closed-form closest pose of one leg chain (see the module docstring)."""

    def __init__(self, chain: Chain):
        self._solver = HipKneeSolver(chain, {'branch': 'closest'})

    @classmethod
    def of(cls, chain: Chain) -> Optional['ExactLeg']:
        """The chain's :class:`ExactLeg`, or None when it does not fit the leg geometry."""
        if len(chain.tip_links) != 1 or chain.n not in (2, 3):
            return None
        try:
            return cls(chain)
        except ChainError:
            return None

    def closest(self, p_target: List[float], q_seed: List[float]) -> RawSolution:
        """The closest pose to the position ``p_target`` [m] within the limits, the knee branch
        and first-joint solution nearest ``q_seed`` where several are as close: the analytic
        solver's answer, status, proven bound and message (a target within reach converges).
        ``vouched`` unless the geometry leaves the pose unproven (a leg with both offsets)."""
        result = self._solver.solve(p_target, None, q_seed)
        vouched = result.reachable or not result.best_found
        message = f'the leg\'s closed form: {result.message}' if result.message else \
            'the leg\'s closed form'
        return RawSolution(result.joint_positions, result.status, result.iterations,
                           result.min_residual, message, vouched=vouched)
