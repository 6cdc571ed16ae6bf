"""Where a leg's foot can be, joint limits aside: the distance of a target from that set.

The set turns about the first axis, so it is described in a meridian half-plane: ``(X, R)``,
the height along the first axis and the distance from it (both [m], relative to the point ``O``
of :mod:`geometry`). The foot sits at ``X`` and ``R = sqrt(h^2 + (D + Y)^2)`` for every ``(X, Y)``
of the planar core's annulus ``r_inner <= |(X, Y)| <= r_outer``. A target at ``(x, rho)`` has the
same distance from the set as from its meridian profile (every circle of the set about the axis
is nearest the target in the target's half-plane).

- ``D = 0`` (the pitch axis meets the first axis; Go1, Solo 12, ANYmal): the profile is the
  annulus ``hypot(r_inner, h) <= |(X, R)| <= hypot(r_outer, h)`` cut by ``R >= |h|``.
- ``h = 0``: the planar annulus centred ``(0, D)`` folded onto ``R >= 0``: the nearer of the
  annuli centred ``(0, D)`` and ``(0, -D)``.

Both give the exact distance and the nearest point. With both offsets the profile has no such
form: :func:`reach_lower_bound` gives a proven, smaller bound.
"""

from __future__ import annotations

import math
from typing import Optional, Tuple


def _clamp(value: float, lower: float, upper: float) -> float:
    return lower if value < lower else (upper if value > upper else value)


def nearest_reach_point(x: float, rho: float, lateral: float, axis_offset: float,
                        r_inner: float, r_outer: float) -> Optional[Tuple[float, float, float]]:
    """``(distance [m], X, R)``: the point of the foot's set nearest the target ``(x, rho)``.

    Exact when ``lateral`` or ``axis_offset`` is 0.0; None when both are not (no closed form).
    A target in the set is its own nearest point (distance 0.0).
    """
    if axis_offset == 0.0:
        h = abs(lateral)
        inner, outer = math.hypot(r_inner, h), math.hypot(r_outer, h)
        n = math.hypot(x, rho)
        if inner <= n <= outer and rho >= h:
            return 0.0, x, rho
        candidates = [(_clamp(x, r_inner, r_outer), h), (_clamp(x, -r_outer, -r_inner), h)]
        if n > 0.0:  # straight toward or away from O, onto either sphere, if not inside R < h
            for radius in (outer, inner):
                point = (x * radius / n, rho * radius / n)
                if point[1] >= h:
                    candidates.append(point)
        best = min(candidates, key=lambda p: math.hypot(p[0] - x, p[1] - rho))
        return math.hypot(best[0] - x, best[1] - rho), best[0], best[1]
    if lateral != 0.0:
        return None
    best = None
    for centre in (axis_offset, -axis_offset):  # the annulus and its mirror image
        dy = rho - centre
        n = math.hypot(x, dy)
        if n == 0.0:  # at the centre: every direction is as near; take +X
            point = (r_inner, centre)
        else:
            scale = _clamp(n, r_inner, r_outer) / n
            point = (x * scale, centre + dy * scale)
        point = (point[0], abs(point[1]))
        distance = math.hypot(point[0] - x, point[1] - rho)
        if best is None or distance < best[0]:
            best = (distance, point[0], point[1])
    return best


def reach_lower_bound(x: float, rho: float, lateral: float, axis_offset: float,
                      r_inner: float, r_outer: float) -> float:
    """A proven lower bound [m] of the target's distance from the foot's set, any offsets.

    The foot is never nearer the first axis than ``|h|``, and lies at distance
    ``hypot(r, h)`` (``r`` in the annulus) from the hip centre, which circles the first axis at
    radius ``|D|`` at height 0: the target is at least as far from the set as from those
    shells.
    """
    h, d = abs(lateral), abs(axis_offset)
    nearest_centre = math.hypot(x, rho - d)
    farthest_centre = math.hypot(x, rho + d)
    return max(0.0, h - rho, nearest_centre - math.hypot(r_outer, h),
               math.hypot(r_inner, h) - farthest_centre)
