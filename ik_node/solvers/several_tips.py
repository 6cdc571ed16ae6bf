"""Solves of several tips at once: ``solve(targets={tip_link: position or (position, quat)})``.

* :func:`tip_targets_from_input` reads the mapping once, at the boundary (unknown tips, bad
  positions and quaternions raise :class:`~ik_node.errors.TargetError` naming the tip).
* :func:`shared_joints` tells a tree whose tips share moving joints (a trunk, solved whole by the
  solvers that can) from independent legs (every tip's path its own joints: a quadruped's four
  legs from the trunk).
* :class:`Legs` solves independent legs one by one, each with its own solver on the leg's serial
  chain (:meth:`~ik_node.model.chain.Chain.serial_chain`), in one call: a leg is one serial
  solve, so every solver that fits one leg fits all four.
* :func:`result_of_tips` sums per-tip results up into one :class:`IkResult`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from ik_node.errors import ChainError, TargetError
from ik_node.model.chain import Chain
from ik_node.solvers.input_checks import FLOAT64, rotation_from_input, target_values
from ik_node.solvers.results import (IkResult, IkStatus, TipResult, combined_status,
                                     new_result, new_tip_result)

_CONVERGED = IkStatus.CONVERGED


class TipTarget(NamedTuple):
    """One tip's target, validated.

    Attributes:
        index: the tip's index in ``chain.tip_links``.
        link: the tip link.
        position: target position in the base frame [m], 3 floats.
        quat_xyzw: the target orientation as given (x, y, z, w), or None for position only.
        R: the normalised rotation of ``quat_xyzw`` (3x3), or None.
    """

    index: int
    link: str
    position: List[float]
    quat_xyzw: Optional[Tuple[float, ...]]
    R: Optional[np.ndarray]


def tip_targets_from_input(targets: Any, tip_links: Sequence[str],
                           tip_index: Optional[Mapping[str, int]] = None
                           ) -> Tuple[TipTarget, ...]:
    """The targets of ``solve(targets=...)``, in the order of ``tip_links``.

    Args:
        targets: ``{tip_link: position}`` or ``{tip_link: (position, quat_xyzw)}`` for any
            non-empty subset of ``tip_links``; a position is 3 numbers [m] in the base frame, a
            quaternion (x, y, z, w) or None.
        tip_links: the chain's tips.
        tip_index: ``{tip: index in tip_links}`` (built when not given).

    Raises:
        TargetError: not a non-empty mapping, an unknown tip, a bad position or quaternion
            (the message names the tip and lists the chain's tips).
    """
    if tip_index is None:
        tip_index = {tip: k for k, tip in enumerate(tip_links)}
    if (type(targets) is not dict and not isinstance(targets, Mapping)) or not targets:
        raise TargetError(f'targets must be a non-empty mapping tip_link -> position or '
                          f'(position, quat_xyzw), got {targets!r}. Tips: '
                          f'{", ".join(tip_links)}')
    out = []
    ordered = True  # the targets come in the order of tip_links (the common case: no sort)
    last = -1
    for tip, value in targets.items():
        index = tip_index.get(tip) if isinstance(tip, str) else None
        if index is None:
            raise TargetError(f'{tip!r} is not a tip of this chain. Tips: '
                              f'{", ".join(tip_links)}')
        if index < last:
            ordered = False
        last = index
        quat = None
        position = value
        if isinstance(value, (tuple, list)) and len(value) == 2:
            position, quat = value
        try:
            p = target_values(position)
            R = None if quat is None else rotation_from_input(quat)
        except TargetError as exc:
            raise TargetError(f'target of tip {tip!r}: {exc}') from None
        out.append(_new_tuple(TipTarget, (index, tip, p, None if quat is None else
                                          tuple(np.asarray(quat, float).tolist()), R)))
    if not ordered:
        out.sort(key=_index_of)
    return tuple(out)


#: ``_new_tuple(TipTarget, fields)``: a TipTarget of its five fields without the argument
#: handling of ``TipTarget.__new__`` (what ``TipTarget._make`` does, less its length check).
_new_tuple = tuple.__new__


def _index_of(target: TipTarget) -> int:
    return target.index


def shared_joints(chain: Chain) -> Dict[Tuple[str, str], List[str]]:
    """``{(tip_a, tip_b): names of the moving joints both paths hold}`` for every pair of tips
    that share any (empty: independent legs)."""
    paths = [set(chain.joints_of_tip(tip)) for tip in chain.tip_links]
    out = {}
    for a in range(len(paths)):
        for b in range(a + 1, len(paths)):
            common = sorted(paths[a] & paths[b])
            if common:
                out[(chain.tip_links[a], chain.tip_links[b])] = [chain.joint_names[i]
                                                                 for i in common]
    return out


def shared_text(shared: Mapping[Tuple[str, str], List[str]]) -> str:
    """The pairs of :func:`shared_joints` as text, e.g. ``'left_hand and right_hand share
    waist'``."""
    return '; '.join(f'{a} and {b} share {", ".join(names)}' for (a, b), names in shared.items())


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


def result_of_tips(q: np.ndarray, joint_names: Tuple[str, ...], tips: Dict[str, TipResult],
                   iterations: int, solve_time: float, message: str, orientation_ignored: bool,
                   history: Optional[Tuple[float, ...]] = None) -> IkResult:
    """One :class:`IkResult` for a solve of several tips: reached when every tip is; the largest
    errors and proven bound; the status from the tips' (:func:`combined_status`); the message
    names each tip that missed its target, with its status and its own message; ``best_found``
    when a tip's is (each tip's :attr:`~TipResult.excess_bound` is its own).

    One pass over the tips (this runs after every four-foot solve); the message and
    :func:`combined_status` only when some tip did not converge.
    """
    position_error = angle = bound = None
    reachable = converged = True
    best_found = False
    for t in tips.values():
        e = t.position_error
        if position_error is None or e > position_error:
            position_error = e
        a = t.orientation_error
        if a is not None and (angle is None or a > angle):
            angle = a
        b = t.min_residual
        if b is not None and (bound is None or b > bound):
            bound = b
        if not t.reachable:
            reachable = False
            if t.best_found:
                best_found = True
        if t.status is not _CONVERGED:
            converged = False
    if converged:
        status = _CONVERGED
    else:
        status = combined_status(t.status or IkStatus.MAX_ITERATIONS for t in tips.values())
    if not reachable:
        missed = [f'{tip} {t.status.value if t.status else "not reached"}, '
                  f'{t.position_error:.6g} m' + (f' ({t.message})' if t.message else '')
                  for tip, t in tips.items() if not t.reachable]
        message = (f'tips missing their targets: {"; ".join(missed)}' +
                   (f'; {message}' if message else ''))
    return new_result(q, joint_names, reachable, status, position_error, angle, bound,
                      int(iterations), solve_time, message, orientation_ignored, history, tips,
                      best_found)
