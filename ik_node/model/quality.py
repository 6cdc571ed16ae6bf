"""How fragile a solution is: closeness to a singularity and to the joint limits.

:func:`solution_quality` is a pure function of a chain and a configuration ``q``; it returns the
immutable :class:`SolutionQuality`. Two measures of the geometric Jacobian ``J`` of the tip
(:meth:`ik_node.Chain.jacobian`), over the task rows only (position rows for position-only tasks,
all 6 rows otherwise), with ``m`` the number of task rows:

* Yoshikawa's manipulability ``w = sqrt(det(J J^T))``, the product of ``J``'s ``m`` singular
  values (0 when fewer than ``m`` joints move the tip). It measures the volume of the velocity
  ellipsoid, so it scales with the arm's size.
* The smallest singular value ``sigma_min`` (the ``m``-th; 0 when fewer than ``m`` joints move
  the tip): the slowest tip speed per unit joint speed in the worst direction; at 0 the tip
  cannot move in some direction, and damped least squares slows down near it.

Units: position rows are [m/rad] (revolute) or [m/m] (prismatic), orientation rows [rad/rad];
with all 6 rows the singular values mix them, so a threshold on ``sigma_min`` of a 6-row task is
only meaningful for one robot at a time.

And the joint limits: the smallest distance from ``q`` to a limit over the joints that move the
tip, in the joint's unit ([rad] or [m]), and which joint; negative when ``q`` is outside a limit.
Continuous joints have no limits and are left out.

Imports numpy only (and ik_node's chain).
"""

from __future__ import annotations

import math
from operator import mul
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ik_node.model.chain import Chain
from ik_node.errors import ConfigError, TargetError

#: Default threshold of :attr:`SolutionQuality.near_singular` on ``sigma_min``.
DEFAULT_SINGULAR_THRESHOLD = 0.01
#: Default threshold [rad or m] of :attr:`SolutionQuality.near_limit`.
DEFAULT_LIMIT_THRESHOLD = 0.05
#: Tips moved by fewer joints than this get position-only measures unless asked otherwise.
FULL_POSE_DOF = 6


@dataclass(frozen=True)
class SolutionQuality:
    """How close one configuration is to a singularity and to the joint limits.

    Attributes:
        tip_link: the tip measured.
        position_only: True when only the 3 position rows of the Jacobian were used.
        manipulability: Yoshikawa's ``sqrt(det(J J^T))`` over the task rows.
        min_singular_value: the smallest (``m``-th) singular value of the task rows of ``J``.
        limit_distance: smallest distance to a joint limit [rad or m], negative outside a
            limit; ``inf`` when every joint moving the tip is continuous.
        limit_joint: name of that joint (None when there is none).
        limit_side: ``'lower'`` or ``'upper'``, the limit it is nearest (None with no joint).
        singular_threshold: the threshold ``near_singular`` was decided with.
        limit_threshold: the threshold [rad or m] ``near_limit`` was decided with.
    """

    tip_link: str
    position_only: bool
    manipulability: float
    min_singular_value: float
    limit_distance: float
    limit_joint: Optional[str]
    limit_side: Optional[str]
    singular_threshold: float
    limit_threshold: float

    @property
    def near_singular(self) -> bool:
        """``min_singular_value < singular_threshold``."""
        return self.min_singular_value < self.singular_threshold

    @property
    def near_limit(self) -> bool:
        """``limit_distance < limit_threshold``."""
        return self.limit_distance < self.limit_threshold

    @property
    def fragile(self) -> bool:
        """Near a singularity or near a joint limit."""
        return self.near_singular or self.near_limit


def solution_quality(chain: Chain, q, tip: Optional[str] = None, *,
                     position_only: Optional[bool] = None,
                     singular_threshold: float = DEFAULT_SINGULAR_THRESHOLD,
                     limit_threshold: float = DEFAULT_LIMIT_THRESHOLD,
                     rank: Optional[int] = None) -> SolutionQuality:
    """Manipulability, smallest singular value and nearest joint limit of ``q`` for one tip.

    Args:
        chain: the robot.
        q: joint positions [rad or m], one per joint of the chain.
        tip: the tip link (``None``: the first tip).
        position_only: use the 3 position rows of the Jacobian; ``None``: when fewer than 6
            joints move the tip.
        singular_threshold: ``near_singular`` below this ``sigma_min`` (>= 0).
        limit_threshold: ``near_limit`` below this distance to a limit [rad or m] (>= 0).
        rank: the rank of the task rows at a generic configuration (:func:`task_rank`); a planar
            chain's position rows have rank 2, so its third singular value is always 0. The
            measures then use the ``rank`` largest singular values. ``None``: all task rows.

    Raises:
        TargetError: ``q`` has the wrong shape or a non-finite value.
        ConfigError: a threshold is negative or not finite.
        ChainError: ``tip`` is not a tip of ``chain``.
    """
    q = _checked(chain, q, singular_threshold, limit_threshold)
    plan = _plan(chain, tip, position_only, rank)
    return _measure(chain, q, plan, singular_threshold, limit_threshold)


def task_rank(chain: Chain, tip: Optional[str] = None, position_only: bool = False,
              seed: int = 0) -> int:
    """The rank of a tip's task Jacobian rows at a random configuration within the limits
    (the rank almost everywhere: 2 for a planar chain's position, 3 for a leg, 6 for an arm)."""
    rng = np.random.default_rng(seed)
    low = np.where(np.isfinite(chain.lower), chain.lower, -np.pi)
    high = np.where(np.isfinite(chain.upper), chain.upper, np.pi)
    tip_link = chain.tip_links[chain.tip_index(tip)]
    joints = chain.joints_of_tip(tip_link)
    J = chain.jacobian(rng.uniform(low, high), tip_link)[:3 if position_only else 6, joints]
    return int(np.linalg.matrix_rank(J, tol=1e-9)) if joints else 0


def nearest_limit(chain: Chain, q, joints=None):
    """``(distance, joint name, 'lower' or 'upper')`` of the joint limit nearest ``q``.

    ``joints``: indices of the joints to consider (default: all). Distances are in each joint's
    unit [rad or m], negative outside a limit; ``(inf, None, None)`` when every considered joint
    is continuous.
    """
    joints = list(range(chain.n) if joints is None else joints)
    return _nearest_gap(np.asarray(q, dtype=float).tolist(), joints,
                        [float(chain.lower[i]) for i in joints],
                        [float(chain.upper[i]) for i in joints],
                        [chain.joint_names[i] for i in joints])


def _nearest_gap(values: List[float], joints: Sequence[int], lower: Sequence[float],
                 upper: Sequence[float], names: Sequence[str]) -> tuple:
    """:func:`nearest_limit` of ``values`` over ``joints`` with their limits and names given:
    lower then upper of each joint in order, the first smallest finite gap (plain floats: a
    handful of joints)."""
    best = (math.inf, None, None)
    for j, lo, hi, name in zip(joints, lower, upper, names):
        for side, gap in (('lower', values[j] - lo), ('upper', hi - values[j])):
            if gap < best[0] and math.isfinite(gap):
                best = (gap, name, side)
    return best


def cached_task_rank(chain: Chain, tip: str, position_only: bool) -> int:
    """The generic task rank of a tip, cached on the chain object."""
    cache = chain.__dict__.setdefault('_ik_node_task_rank', {})
    key = (tip, bool(position_only) or len(chain.joints_of_tip(tip)) < 6)
    if key not in cache:
        cache[key] = task_rank(chain, tip, key[1])
    return cache[key]


def _plan(chain: Chain, tip: Optional[str], position_only: Optional[bool],
          rank: Optional[int]) -> tuple:
    """What the measures of a tip need besides ``q``: ``(tip_link, joint indices, task rows,
    rank, their lower and upper limits, their names)``.
    ``position_only`` None: when fewer than 6 joints move the tip; ``rank`` None: all rows."""
    tip_link = chain.tip_links[chain.tip_index(tip)]
    joints = list(chain.joints_of_tip(tip_link))
    if position_only is None:
        position_only = len(joints) < FULL_POSE_DOF
    rows = 3 if position_only else 6
    rank = rows if rank is None else max(1, min(int(rank), rows))
    # The tip's Jacobian over its own joints, from the generated kinematics of its serial path
    # (a tree's numpy FK of every joint costs several times more; the node measures every
    # reached solve of every tip)
    path_kinematics = chain.serial_chain(tip_link).fast_kinematics if joints else None
    return (tip_link, joints, rows, rank, [float(chain.lower[i]) for i in joints],
            [float(chain.upper[i]) for i in joints], [chain.joint_names[i] for i in joints],
            path_kinematics)


def _tip_plan(chain: Chain, tip: str, position_only: bool) -> tuple:
    """:func:`_plan` at the tip's generic rank, cached on the chain object."""
    cache = chain.__dict__.setdefault('_ik_node_tip_plan', {})
    key = (tip, bool(position_only))
    plan = cache.get(key)
    if plan is None:
        plan = cache[key] = _plan(chain, tip, position_only or None,
                                  cached_task_rank(chain, tip, position_only))
    return plan


def _measure(chain: Chain, q: np.ndarray, plan: tuple, singular_threshold: float,
             limit_threshold: float) -> SolutionQuality:
    """The measures of a checked ``q`` for one tip's :func:`_plan`."""
    tip_link, joints, rows, rank, lower, upper, names, path_kinematics = plan
    if joints:
        if path_kinematics is not None:
            q_list = q.tolist()
            J = np.array(path_kinematics.pose_jacobian([q_list[i] for i in joints])[2][:rows])
        else:
            J = chain.jacobian(q, tip_link)[:rows, joints]
        sigma = np.linalg.svd(J, compute_uv=False).tolist()
    else:
        sigma = []
    sigma = (sigma + [0.0] * max(0, rows - len(sigma)))[:rows][:rank]
    manipulability = 1.0
    for value in sigma:
        manipulability *= value
    distance, joint, side = _nearest_gap(q.tolist(), joints, lower, upper, names)
    return SolutionQuality(tip_link, rows == 3, float(manipulability), float(sigma[-1]),
                           distance, joint, side, float(singular_threshold),
                           float(limit_threshold))


def _checked(chain: Chain, q, singular_threshold: float, limit_threshold: float) -> np.ndarray:
    """``q`` as a float array after the checks both public functions promise (see their Raises)."""
    q = np.asarray(q, dtype=float)
    if q.shape != (chain.n,) or not np.all(np.isfinite(q)):
        raise TargetError(f'q must be {chain.n} finite joint positions '
                          f'({", ".join(chain.joint_names)}), got {q.tolist()!r}')
    for name, value in (('singular_threshold', singular_threshold),
                        ('limit_threshold', limit_threshold)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0.0):
            raise ConfigError(f'{name} must be a finite number >= 0, got {value!r}')
    return q


def fragility_report(chain: Chain, q, tips: Sequence[str], position_only: bool,
                     singular_threshold: float = DEFAULT_SINGULAR_THRESHOLD,
                     limit_threshold: float = DEFAULT_LIMIT_THRESHOLD, reached: bool = True
                     ) -> Tuple[Dict[str, str], str]:
    """The node's diagnostics of a solution: (key-values, what makes it fragile or '').

    A solution that misses its target (``reached`` False) is not called near a singularity:
    an arm stretched towards a target out of reach always is, and the miss says more.

    Over the targeted ``tips``: the smallest manipulability and singular value (at each tip's
    generic task rank, :func:`task_rank`), the nearest joint limit and its joint. The same
    measures as :func:`solution_quality`, with the per-chain constants cached (the node calls
    this for every reached solve).

    Raises:
        TargetError: ``q`` has the wrong shape or a non-finite value.
        ConfigError: a threshold is negative or not finite.
        ChainError: a tip is not a tip of ``chain``.
    """
    q = _checked(chain, q, singular_threshold, limit_threshold)
    qualities = [_measure(chain, q, _tip_plan(chain, tip, position_only), singular_threshold,
                          limit_threshold) for tip in tips]
    worst_sigma = min(qualities, key=lambda x: x.min_singular_value)
    nearest = min(qualities, key=lambda x: x.limit_distance)
    values = {'manipulability': f'{min(x.manipulability for x in qualities):.4g}',
              'min_singular_value': f'{worst_sigma.min_singular_value:.4g}',
              'limit_margin': f'{nearest.limit_distance:.4g}',
              'limit_joint': nearest.limit_joint or ''}
    why = fragility_reasons(worst_sigma)[:1] if worst_sigma.near_singular and reached else []
    if nearest.near_limit:
        why += fragility_reasons(nearest)[-1:]
    return values, ', '.join(why)


def is_fragile(chain: Chain, q: np.ndarray, tips: Sequence[str], position_only: bool,
               singular_threshold: float = DEFAULT_SINGULAR_THRESHOLD,
               limit_threshold: float = DEFAULT_LIMIT_THRESHOLD) -> bool:
    """True when :func:`fragility_report` would name a reason (its second value is not empty),
    decided without its SVD where plain floats settle it.

    The node decides OK or WARN for every reached solve; the key-values (and so the SVD) are
    needed only for the statuses that go out. Per tip: the nearest limit in floats, then the
    singular values' test as a Cholesky factorisation of ``J Jᵀ - s² I`` (positive definite
    exactly when every singular value exceeds ``s``), with ``s`` the threshold raised by
    :data:`CLEAR_MARGIN` and :data:`GRAM_ROUNDING` so that rounding cannot clear a solution the
    SVD would call near singular. A tip the test does not clear (near singular, a task rank
    below its rows, fewer joints than rows) is measured by :func:`fragility_report`'s SVD.

    Args:
        q: the checked solution (finite floats, one per joint of ``chain``) [rad or m].

    Raises:
        ChainError: a tip is not a tip of ``chain``.
    """
    q_list = q.tolist()
    s2 = (float(singular_threshold) * CLEAR_MARGIN) ** 2
    for tip in tips:
        plan = _tip_plan(chain, tip, position_only)
        _, joints, rows, rank, lower, upper, names, path_kinematics = plan
        if _nearest_gap(q_list, joints, lower, upper, names)[0] < limit_threshold:
            return True
        if singular_threshold <= 0.0:
            continue  # no singular value is below 0
        if path_kinematics is not None and rank == rows <= len(joints):
            q_path = [q_list[i] for i in joints]
            J = path_kinematics.position_jacobian(q_path)[1] if rows == 3 else \
                path_kinematics.pose_jacobian(q_path)[2]
            if _gram_clears(J, s2):
                continue
        if _measure(chain, q, plan, singular_threshold, limit_threshold).near_singular:
            return True
    return False


#: :func:`is_fragile` clears a tip whose smallest singular value is above the threshold times
#: this: far beyond the rounding of ``J Jᵀ``, so it decides as the SVD does.
CLEAR_MARGIN = 1.0 + 1e-6
#: ... and whose ``J Jᵀ`` keeps every eigenvalue this share of its trace above the squared
#: threshold: a threshold near 0 is left to the SVD, whose singular values are exact to the
#: rounding of ``J`` (the Gram matrix's only to the square root of it).
GRAM_ROUNDING = 1e-12


def _gram_clears(J: Sequence[Sequence[float]], s2: float) -> bool:
    """True if ``J Jᵀ - (s2 + GRAM_ROUNDING trace(J Jᵀ)) I`` is positive definite: every
    singular value of ``J`` above ``sqrt(s2)`` beyond rounding. Its Cholesky factorisation in
    plain floats, ``J`` a few rows of a few joints."""
    diagonal = [sum(map(mul, row, row)) for row in J]
    s2 += GRAM_ROUNDING * sum(diagonal)
    if len(J) == 3:  # position rows: the LDLᵀ pivots, unrolled
        a, b, c = J
        d0 = diagonal[0] - s2
        if not d0 > 0.0:
            return False
        g10, g20 = sum(map(mul, b, a)), sum(map(mul, c, a))
        d1 = diagonal[1] - s2 - g10 * g10 / d0
        if not d1 > 0.0:
            return False
        g21 = sum(map(mul, c, b)) - g20 * g10 / d0
        return diagonal[2] - s2 - g20 * g20 / d0 - g21 * g21 / d1 > 0.0
    L: List[List[float]] = []
    for i, row_i in enumerate(J):
        L_i: List[float] = []
        for j in range(i):
            L_j = L[j]
            L_i.append((sum(map(mul, row_i, J[j])) - sum(map(mul, L_i, L_j))) / L_j[j])
        value = diagonal[i] - sum(map(mul, L_i, L_i)) - s2
        if not value > 0.0:
            return False
        L_i.append(math.sqrt(value))
        L.append(L_i)
    return True


def fragility_reasons(quality: SolutionQuality) -> List[str]:
    """What makes ``quality`` fragile, in words (the node's WARN message and RViz labels say
    the same): near a singularity, then the joint near its limit; empty when neither."""
    why = []
    if quality.near_singular:
        why.append(f'near a singularity (smallest singular value '
                   f'{quality.min_singular_value:.3g})')
    if quality.near_limit:
        why.append(f'{quality.limit_joint} {quality.limit_distance:.3g} from its '
                   f'{quality.limit_side} limit')
    return why


def tip_quality(chain: Chain, q, tip: str, position_only: bool,
                singular_threshold: float = DEFAULT_SINGULAR_THRESHOLD,
                limit_threshold: float = DEFAULT_LIMIT_THRESHOLD) -> SolutionQuality:
    """:func:`solution_quality` of one tip as :func:`fragility_report` measures it (the tip's
    generic task rank, per-chain constants cached), so a tip is fragile here exactly when it
    makes the report fragile.

    Raises:
        TargetError: ``q`` has the wrong shape or a non-finite value.
        ConfigError: a threshold is negative or not finite.
        ChainError: ``tip`` is not a tip of ``chain``.
    """
    q = _checked(chain, q, singular_threshold, limit_threshold)
    return _measure(chain, q, _tip_plan(chain, tip, position_only), singular_threshold,
                    limit_threshold)
