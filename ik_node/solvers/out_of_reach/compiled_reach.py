"""The reach checks of a position target in one numba call: the proven bound and the measured
reach's gap.

Before its descents a position solve of ``damped_jacobian`` asks two questions of its target:
the proven lower bound of the error (:meth:`ReachBound.lower_bound
<ik_node.solvers.geometry.reach_bound.ReachBound.lower_bound>`, ``min_residual``) and how
far it lies beyond the measured reach (:meth:`MeasuredReach.gap
<ik_node.solvers.out_of_reach.measured_reach.MeasuredReach.gap>`). :func:`_reach_checks` computes
both, with the same formulas, in one call where the compiled kernels serve
(``test/core/test_compiled_reach.py`` compares them with the Python methods); the Python
methods answer until then and where numba cannot serve.
"""

from __future__ import annotations

import math
import sys
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

import ik_node.kernels as kernels
from ik_node.kernels import planar

_ROUND_OFF = 64.0 * sys.float_info.epsilon
# Entries of the reach array: a ReachBound's origin, reach, axis, perpendicular part of the
# second origin, radius, height, reach from the second joint, the first joint's limits and
# whether it turns a full turn; (with a measured reach) its centre, axis, least and largest
# distance, clearance, then the second bound's reach from the second joint (NaN: none).
(_OX, _OY, _OZ, _REACH, _AX, _AY, _AZ, _VX, _VY, _VZ, _RADIUS, _HEIGHT, _REACH_SECOND, _LO,
 _HI, _FULL_TURN, _MEASURED, _CX, _CY, _CZ, _MX, _MY, _MZ, _LEAST, _LARGEST, _CLEARANCE,
 _SECOND) = range(27)
_SIZE = 27


def _lower_bound(r, reach, reach_second, tx, ty, tz):
    """ReachBound.lower_bound with ``reach`` and ``reach_second`` [m]."""
    dx, dy, dz = tx - r[_OX], ty - r[_OY], tz - r[_OZ]
    first = math.sqrt(dx * dx + dy * dy + dz * dz) - reach
    ax, ay, az = r[_AX], r[_AY], r[_AZ]
    along = dx * ax + dy * ay + dz * az
    px, py, pz = dx - along * ax, dy - along * ay, dz - along * az
    distance_perp = math.sqrt(px * px + py * py + pz * pz)
    rho = r[_RADIUS]
    if rho <= 1e-12 or distance_perp <= 1e-12:
        cos_gap = 1.0 if rho <= 1e-12 else 0.0
    else:
        vx, vy, vz = r[_VX], r[_VY], r[_VZ]
        phi = math.atan2(ax * (vy * pz - vz * py) + ay * (vz * px - vx * pz) +
                         az * (vx * py - vy * px), vx * px + vy * py + vz * pz)
        if r[_FULL_TURN] != 0.0:
            cos_gap = 1.0
        else:
            cos_gap = math.cos(planar.clamp_on_circle(phi, phi, r[_LO], r[_HI]) - phi)
    rise = along - r[_HEIGHT]
    term0 = rise * rise + rho * rho + distance_perp * distance_perp
    term1 = 2.0 * rho * distance_perp * cos_gap
    square = term0 - term1 - _ROUND_OFF * (term0 + abs(term1))
    second = math.sqrt(max(square, 0.0)) - reach_second
    return max(first, second)


def _reach_checks(r, target):
    """``(bound, gap)`` [m] of ``target``: ReachBound.lower_bound, and MeasuredReach.gap
    (-inf without a measured reach)."""
    tx, ty, tz = target[0], target[1], target[2]
    bound = _lower_bound(r, r[_REACH], r[_REACH_SECOND], tx, ty, tz)
    if r[_MEASURED] == 0.0:
        return bound, -math.inf
    dx, dy, dz = tx - r[_CX], ty - r[_CY], tz - r[_CZ]
    squared = dx * dx + dy * dy + dz * dz
    distance = math.sqrt(squared)
    height = dx * r[_MX] + dy * r[_MY] + dz * r[_MZ]
    from_axis = math.sqrt(max(squared - height * height, 0.0))
    gap = max(distance - r[_LARGEST], r[_LEAST] - distance, r[_CLEARANCE] - from_axis)
    if not math.isnan(r[_SECOND]):
        gap = max(gap, _lower_bound(r, math.inf, r[_SECOND], tx, ty, tz))
    return bound, gap


_KERNELS: Dict[str, Any] = {}
_HELPERS = ('_lower_bound',)


def compile() -> None:  # noqa: A001 - the kernel modules' entry point is named so
    """Compile the kernel (or load it from numba's cache on disk) and run it once;
    :mod:`ik_node.kernels` calls it in its loading thread."""
    if not _KERNELS:
        planar.compile()
        kernel = kernels.jitted(globals(), _HELPERS, ('_reach_checks',))['_reach_checks']
        r = np.zeros(_SIZE)
        r[_RADIUS], r[_AZ], r[_HI], r[_MEASURED], r[_SECOND] = 0.1, 1.0, 1.0, 1.0, 0.5
        kernel(r, np.array([0.3, 0.2, 0.1]))
        _KERNELS['reach_checks'] = kernel


class CompiledReach:
    """The compiled reach checks of one chain: its :class:`ReachBound` and, where measured,
    its :class:`MeasuredReach` (whose second bound shares the ReachBound's geometry)."""

    def __init__(self, bound, measured=None):
        r = np.zeros(_SIZE)
        r[_OX:_OZ + 1] = bound.origin
        r[_REACH] = bound.reach
        r[_AX:_AZ + 1] = bound._axis
        r[_VX:_VZ + 1] = bound._perp
        r[_RADIUS], r[_HEIGHT], r[_REACH_SECOND] = bound._radius, bound._height, \
            bound._reach_second
        r[_LO], r[_HI] = bound._limits
        r[_FULL_TURN] = float(bound._full_turn)
        r[_SECOND] = math.nan
        if measured is not None:
            r[_MEASURED] = 1.0
            r[_CX:_CZ + 1] = measured.centre
            r[_MX:_MZ + 1] = measured.axis
            r[_LEAST], r[_LARGEST], r[_CLEARANCE] = measured.least, measured.largest, \
                measured.clearance
            if measured.second is not None:
                r[_SECOND] = measured.second._reach_second
        self.reach = r
        self._kernel = None

    @classmethod
    def of(cls, bound, measured) -> Optional['CompiledReach']:
        """The compiled checks where numba may serve and ``measured.second`` (if any) has the
        geometry of ``bound`` (:meth:`ReachBound.with_second_reach`); else None."""
        if bound is None or not kernels.available():
            return None
        second = getattr(measured, 'second', None)
        if second is not None and (second.origin != bound.origin or
                                   second._second != bound._second or
                                   second._limits != bound._limits or
                                   second._full_turn != bound._full_turn or
                                   second.reach != math.inf):
            return None
        return cls(bound, measured)

    def checks(self, target: Sequence[float]) -> Optional[Tuple[float, float]]:
        """``(bound, gap)`` [m] of ``target`` (3 floats or a (3,) float array), or None while
        the kernel is not loaded."""
        kernel = self._kernel
        if kernel is None:
            if not kernels.ready():
                return None
            kernel = self._kernel = _KERNELS['reach_checks']
        return kernel(self.reach, target)
