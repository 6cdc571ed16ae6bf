"""Solves of several tips at once: ``solve(targets={tip_link: position or (position, quat)})``.

* :func:`tip_targets_from_input` reads the mapping once, at the boundary (unknown tips, bad
  positions and quaternions raise :class:`~ik_node.errors.TargetError` naming the tip).
* :func:`shared_joints` tells a tree whose tips share moving joints (a trunk, solved whole by the
  solvers that can) from independent legs (every tip's path its own joints: a quadruped's four
  legs from the trunk).
* :func:`check_every_tip_moves` refuses a tree with a tip that no joint moves.
* :func:`result_of_tips` sums per-tip results up into one :class:`IkResult`.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from ik_node.errors import ChainError, TargetError
from ik_node.model.chain import Chain
from ik_node.solvers.input_checks import rotation_error, rotation_from_input, target_values
from ik_node.solvers.results import (IkResult, IkStatus, RawSolution, TipResult, combined_status,
                                     new_result)

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


def check_every_tip_moves(chain: Chain) -> None:
    """Refuse a chain with several tips when one of them has no moving joint between the base
    and it (:class:`ChainError` naming it): no solver can bring it to a target, and its targets
    would only ever miss."""
    if len(chain.tip_links) < 2:
        return
    fixed = [tip for tip in chain.tip_links if not chain.joints_of_tip(tip)]
    if fixed:
        raise ChainError(f'tip(s) {", ".join(fixed)} of {chain.base_link!r} have no moving '
                         'joint between the base and them (fixed to the base): no solver can '
                         f'move them. Leave them out of tip_links ({", ".join(chain.tip_links)})')


def shared_text(shared: Mapping[Tuple[str, str], List[str]]) -> str:
    """The pairs of :func:`shared_joints` as text, e.g. ``'left_hand and right_hand share
    waist'``."""
    return '; '.join(f'{a} and {b} share {", ".join(names)}' for (a, b), names in shared.items())


def measured_tips(T_tips: Dict[str, np.ndarray], targets: Sequence[TipTarget], raw: RawSolution,
                  tol_p: float, tol_r: float) -> Dict[str, TipResult]:
    """Every targeted tip's result, measured on ``T_tips`` (FK of the joints a tree solve
    returns) against its target: converged when within ``tol_p`` [m] and ``tol_r`` [rad],
    unreachable when its proven bound (``raw.tip_residuals``) exceeds ``tol_p``, else the
    solve's reason to stop (``max_iterations`` when the solve claimed more)."""
    fallback = raw.status if raw.status in (IkStatus.TIMEOUT, IkStatus.MAX_ITERATIONS,
                                            IkStatus.JOINT_LIMITED) \
        else IkStatus.MAX_ITERATIONS
    tips: Dict[str, TipResult] = {}
    for target in targets:
        T = T_tips[target.link]
        error = math.dist(T[:3, 3].tolist(), target.position)
        angle = None if target.R is None else rotation_error(T[:3, :3], target.R)
        reached = error <= tol_p and (angle is None or angle <= tol_r)
        bound = raw.tip_residuals.get(target.link)
        if reached:
            status, message = IkStatus.CONVERGED, ''
        elif bound is not None and bound > tol_p:
            status = IkStatus.UNREACHABLE
            message = f'out of reach: at least {bound:.6g} m from every reachable point'
        else:
            status, message = fallback, ''
        tips[target.link] = TipResult(reached, error, bound, status, angle, message,
                                      not reached)  # a tree solve vouches for no pose
    return tips


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
    return new_result(
        joint_positions=q, joint_names=joint_names, reachable=reachable, status=status,
        position_error=position_error, orientation_error=angle, min_residual=bound,
        iterations=int(iterations), solve_time=solve_time, message=message,
        orientation_ignored=orientation_ignored, history=history, tips=tips,
        best_found=best_found)
