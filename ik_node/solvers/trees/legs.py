"""Independent legs solved one by one: :class:`Legs`.

A tree whose tips share no moving joint (a quadruped's four legs from its trunk) is solved leg by
leg, each leg with the configured solver on its own serial chain
(:meth:`~ik_node.model.chain.Chain.serial_chain`), in one call: a leg is one serial solve, so
every solver that fits one leg fits all four. :mod:`ik_node.solvers.registry` hands this class to
the :class:`~ik_node.solvers.base.Solver` contract, which imports no strategy.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ik_node.errors import ChainError
from ik_node.model.chain import Chain
from ik_node.solvers.input_checks import FLOAT64
from ik_node.solvers.results import IkResult, TipResult, new_tip_result
from ik_node.solvers.trees.several_tips import TipTarget, result_of_tips


@dataclass(frozen=True)
class Leg:
    """One independent leg: its tip, its joints' indices in the tree, its solver, and
    ``span``, the slice of the tree's joints that holds exactly its joints when they are
    consecutive (depth-first order makes them so), else None."""

    tip: str
    joints: Tuple[int, ...]
    solver: Any  # a Solver on the leg's serial chain
    span: Optional[slice] = None


def leg_span(joints: Sequence[int]) -> Optional[slice]:
    """``slice(first, last + 1)`` when ``joints`` are consecutive ascending indices, else None."""
    if joints and list(joints) == list(range(joints[0], joints[0] + len(joints))):
        return slice(joints[0], joints[0] + len(joints))
    return None


class Legs:
    """Independent legs (tips whose paths share no moving joint) solved one by one.

    Args:
        chain: the tree (every pair of tips without a shared moving joint).
        make_solver: ``make_solver(leg_chain) -> Solver``, the configured solver on one leg.

    Raises:
        ChainError: the solver does not fit a leg (the message names the leg's tip).
    """

    def __init__(self, chain: Chain, make_solver: Callable[[Chain], Any]):
        self.chain = chain
        self.legs: List[Leg] = []
        for tip in chain.tip_links:
            try:
                solver = make_solver(chain.serial_chain(tip))
            except ChainError as exc:
                joints = ', '.join(chain.joint_names[i] for i in chain.joints_of_tip(tip))
                raise ChainError(f'leg {tip!r} (joints {joints or "none"}): {exc}') from None
            joints = tuple(chain.joints_of_tip(tip))
            self.legs.append(Leg(tip, joints, solver, leg_span(joints)))
        self._timed = 'timeout' in self.legs[0].solver.params if self.legs else False
        self._joint_names = tuple(chain.joint_names)
        # What solve() reads of each leg, by tip index, with the solver's hooks bound once.
        self._plan = [(leg.tip, leg.span, leg.joints, leg.solver,
                       leg.solver._solve_floats if leg.solver._takes_floats else
                       leg.solver._raw_solution, leg.solver._measured,
                       leg.solver.supports_orientation) for leg in self.legs]

    def solve(self, targets: Sequence[TipTarget], q_seed: List[float], timeout: Optional[float]
              ) -> IkResult:
        """Each targeted leg solved from its joints of ``q_seed`` (within the limits); the other
        joints keep their seed values.

        Each leg's answer is exactly its own solver's (``solver.solve`` on the leg's serial chain
        from the same seed): the same solve and the same measurement
        (:meth:`~ik_node.solvers.base.Solver._measured`), without building a result per leg.

        ``timeout`` [s] (None: the legs' solvers take none) is shared: each leg gets what is
        left of it divided by the legs still to solve, so a quick leg leaves time to the next,
        but never less than an equal share of the whole (``timeout`` / targeted legs): a leg
        stretched by a stall of the machine does not starve the legs after it, and the solve
        overruns ``timeout`` by at most that stall.
        """
        start = time.perf_counter()
        q = list(q_seed)
        tips: Dict[str, TipResult] = {}
        iterations = 0
        ignored = False
        timed = self._timed and timeout is not None
        count = len(targets)
        plan = self._plan
        for i, target in enumerate(targets):
            tip, span, joints, solver, raw_solution, measured, orientation = plan[target.index]
            if timed:
                left = timeout - (time.perf_counter() - start)
                solver.params['timeout'] = max(left / (count - i), timeout / count)
            seed = q_seed[span] if span is not None else [q_seed[j] for j in joints]
            position, R = target.position, target.R
            if R is not None and not orientation:
                R, ignored = None, True
            raw = raw_solution(position, R, seed)
            q_leg, reached, status, error, angle, bound = measured(raw, position, R, seed)
            if span is not None:
                q[span] = q_leg
            else:
                for j, v in zip(joints, q_leg):
                    q[j] = v
            tips[tip] = new_tip_result(reached, error, bound, status, angle, raw.message,
                                       not reached and not raw.vouched)
            iterations += int(raw.iterations)
        return result_of_tips(np.array(q, FLOAT64), self._joint_names, tips, iterations,
                              time.perf_counter() - start, '', ignored)
