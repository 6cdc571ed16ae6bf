"""The geometry of a leg (or of a planar 2-link chain), read once from its chain at q = 0.

No axis or length is hard-coded. A leg is 3 revolute joints: a first joint about ``a`` (hip yaw
when the leg hangs along it, hip abduction when the leg hangs across it), then hip pitch and knee
about parallel axes ``u``, both perpendicular to ``a``. Every constant offset is allowed:

- ``axis_offset`` ``D`` [m]: the distance from the first axis to the pitch axis (their common
  perpendicular is ``e1 = u x a``; HyQ- and Bolt-type hips);
- ``lateral`` ``h`` [m]: the foot's constant coordinate along the pitch axis, measured from the
  first axis (the lateral hip offset of Go1, Solo 12, ANYmal);
- thigh, shank and foot offsets within the leg's plane: the planar core's lengths and angles.

Coordinates: ``O`` is the point of the first axis level with the pitch axis, the hip centre
``c = O + D e1`` the point of the pitch axis nearest the first axis. A target's height is
``x = (p - O) . a``, its horizontal coordinates ``(p - O) . e1`` and ``(p - O) . u``. Turning the
first joint by ``q0`` turns ``e1`` toward ``u``; the leg's plane (through ``c``, perpendicular to
the pitch axis) then lies ``h`` along the turned pitch axis, and within it the planar core's
``X`` runs along ``a`` and its ``Y`` along the turned ``e1``.

A planar 2-link chain (2 parallel revolute joints) uses the same core in the fixed plane
perpendicular to the first axis that holds the tip; ``X`` is the thigh's direction at q = 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from ik_node.errors import ChainError
from ik_node.model.chain import Chain
from ik_node.solvers.geometry.planar_core import PlanarCore

#: |cos| between axes that must be perpendicular, |sin| between axes that must be parallel.
AXIS_TOLERANCE = 1e-6
#: Offsets [m] this small count as zero (the leg's plane then holds the first axis).
OFFSET_TOLERANCE_M = 1e-6

EXPECTED = ('expected a leg of 3 revolute joints (a first joint, hip yaw or abduction, then hip '
            'pitch and knee about parallel axes perpendicular to the first axis) or a planar '
            'chain of 2 revolute joints about parallel axes')


@dataclass(frozen=True)
class LegGeometry:
    """What the analytic solver needs of a chain (see the module docstring).

    Attributes:
        n: 3 for a leg, 2 for a planar chain.
        core: the planar 2-link core (lengths, zero angles, pitch and knee limits).
        centre: the hip centre ``c`` [m] (base frame): where the core's coordinates start.
        limits: lower and upper joint limits [rad], as lists.
        rows: three ``(vx, vy, vz, v . point)`` rows; ``p . v - (v . point)`` gives the
            target's core or leg coordinates (leg: ``x``, along ``e1``, along ``u``).
        first_limits: the first joint's limits [rad] (leg).
        lateral: ``h`` [m] (leg; 0.0 when below the offset tolerance).
        axis_offset: ``D`` [m] (leg; 0.0 when below the offset tolerance).
        role: the first joint's role, ``'hip yaw'`` or ``'hip abduction'`` (leg).
        origin: ``O`` [m], the first axis's point level with the pitch axis (leg).
    """

    n: int
    core: PlanarCore
    centre: np.ndarray
    limits: Tuple[list, list]
    rows: tuple
    first_limits: Tuple[float, float] = (-math.inf, math.inf)
    lateral: float = 0.0
    axis_offset: float = 0.0
    role: str = 'hip yaw'
    origin: Optional[np.ndarray] = None

    @property
    def role_short(self) -> str:
        """``'yaw'`` or ``'abduction'``: the first joint's motion, for messages."""
        return self.role.split()[-1]


def _angle_deg(cos_or_sin: float) -> float:
    return math.degrees(math.asin(min(1.0, abs(cos_or_sin))))


def _dot_row(v: np.ndarray, point: np.ndarray) -> Tuple[float, float, float, float]:
    """(vx, vy, vz, v . point): p . v - (v . point) is then a coordinate of p along v."""
    return float(v[0]), float(v[1]), float(v[2]), float(np.dot(v, point))


def _first_role(a: np.ndarray, hip: np.ndarray, foot: np.ndarray) -> str:
    """'hip yaw' when the leg at q = 0 hangs within 45 deg of the first axis (turning it about
    its own length), else 'hip abduction' (swinging it sideways)."""
    leg = foot - hip
    length = float(np.linalg.norm(leg))
    if length > 0.0 and abs(float(np.dot(leg, a))) >= math.sqrt(0.5) * length:
        return 'hip yaw'
    return 'hip abduction'


def geometry_from_chain(chain: Chain) -> LegGeometry:
    """Check the chain's structure and derive the solver's constants.

    Raises:
        ChainError: naming the expected structure, the joints by role, and what is wrong.
    """
    found = ', '.join(f'{j.name} ({j.type})' for j in chain.joints) or 'none'
    if len(chain.tips) != 1 or not chain.is_serial:
        raise ChainError(f'analytic_hip_knee needs a serial chain with one tip: {EXPECTED}; '
                         f'found tips {chain.tip_links} and joints {found}')
    if chain.n not in (2, 3):
        raise ChainError(f'analytic_hip_knee: {EXPECTED}; found {chain.n} moving joints: '
                         f'{found}')
    prismatic = [j.name for j in chain.joints if j.is_prismatic]
    if prismatic:
        raise ChainError(f'analytic_hip_knee: {EXPECTED}; found prismatic joint(s) '
                         f'{", ".join(prismatic)}')
    q0 = np.zeros(chain.n)
    frames = chain.joint_frames(q0)
    origins = [frames[i, :3, 3].copy() for i in range(chain.n)]
    axes = [frames[i, :3, :3] @ j.axis for i, j in enumerate(chain.joints)]
    p_tip = chain.fk(q0)[:3, 3].copy()
    names = chain.joint_names
    pitch, knee = (1, 2) if chain.n == 3 else (0, 1)
    u, u_knee = axes[pitch], axes[knee]
    sin_pk = float(np.linalg.norm(np.cross(u, u_knee)))
    if sin_pk > AXIS_TOLERANCE:
        raise ChainError(f'analytic_hip_knee: the axes of the hip pitch {names[pitch]!r} and '
                         f'the knee {names[knee]!r} must be parallel; they are '
                         f'{_angle_deg(sin_pk):.3g} deg apart ({EXPECTED})')
    lateral = axis_offset = 0.0
    if chain.n == 3:
        a, o = axes[0], origins[0]
        role = _first_role(a, origins[1], p_tip)
        cos_ya = float(np.dot(a, u))
        if abs(cos_ya) > AXIS_TOLERANCE:
            raise ChainError(f'analytic_hip_knee: the first axis (hip yaw or abduction) of '
                             f'{names[0]!r} must be perpendicular to the hip pitch axis of '
                             f'{names[1]!r}; they are {90.0 - _angle_deg(cos_ya):.3g} deg apart')
        origin = o + float(np.dot(origins[1] - o, a)) * a  # the first axis, level with pitch
        side = np.cross(u, a)                               # e1
        across = np.cross(a, side)                          # u, made exactly normal to a
        axis_offset = float(np.dot(origins[1] - origin, side))
        if abs(axis_offset) <= OFFSET_TOLERANCE_M:
            axis_offset = 0.0
        centre = origin + axis_offset * side
        lateral_exact = float(np.dot(p_tip - centre, across))
        lateral = lateral_exact if abs(lateral_exact) > OFFSET_TOLERANCE_M else 0.0
        tip_in_plane = p_tip - lateral_exact * across
        b1, b2 = a, side
        rows = (_dot_row(a, centre) + _dot_row(side, origin) + _dot_row(across, origin))
    else:
        role, origin = 'hip yaw', None
        height = float(np.dot(p_tip - origins[0], u))
        centre = origins[0] + height * u  # the plane the tip moves in, on the first axis
        tip_in_plane = p_tip
        thigh = origins[1] - origins[0]
        thigh = thigh - float(np.dot(thigh, u)) * u
        if np.linalg.norm(thigh) <= OFFSET_TOLERANCE_M:
            raise ChainError(f'analytic_hip_knee: the axis of {names[1]!r} coincides with the '
                             f'axis of {names[0]!r}: the first link has no length')
        b1 = thigh / np.linalg.norm(thigh)
        b2 = np.cross(u, b1)
        rows = (_dot_row(b1, centre) + _dot_row(b2, centre) + _dot_row(u, centre))
    knee_point = origins[knee] - float(np.dot(origins[knee] - centre, u)) * u
    d1, d2 = knee_point - centre, tip_in_plane - knee_point
    l1, l2 = float(np.linalg.norm(d1)), float(np.linalg.norm(d2))
    if l1 <= OFFSET_TOLERANCE_M:
        raise ChainError(f'analytic_hip_knee: the knee axis of {names[knee]!r} passes through '
                         f'the hip pitch axis of {names[pitch]!r}: the thigh has no length')
    if l2 <= OFFSET_TOLERANCE_M:
        raise ChainError(f'analytic_hip_knee: tip {chain.tip_link!r} lies on the knee axis of '
                         f'{names[knee]!r}: the shin has no length')
    lower, upper = chain.lower.tolist(), chain.upper.tolist()
    core = PlanarCore(
        l1, l2, math.atan2(float(np.dot(d1, b2)), float(np.dot(d1, b1))),
        math.atan2(float(np.dot(d2, b2)), float(np.dot(d2, b1))),
        1.0 if float(np.dot(u, u_knee)) > 0.0 else -1.0,
        (lower[pitch], upper[pitch], lower[knee], upper[knee]))
    return LegGeometry(n=chain.n, core=core, centre=np.asarray(centre, dtype=float),
                       limits=(lower, upper), rows=rows, first_limits=(lower[0], upper[0]),
                       lateral=lateral, axis_offset=axis_offset, role=role, origin=origin)
