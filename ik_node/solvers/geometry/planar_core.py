"""The planar 2-link core of the analytic solver, in closed form, and its angle helpers.

A thigh of length ``l1`` at polar angle ``alpha1`` (q = 0) and a shin ``l2`` at ``alpha2`` in a
plane: the tip reaches exactly the annulus ``|l1 - l2| <= r <= l1 + l2`` around the hip. Both
knee branches in closed form, and the nearest pose within the joint limits when neither branch
is allowed. Plain floats and the math module: this runs once per solve of a target stream.
"""

from __future__ import annotations

import math
from typing import List, Optional, Tuple

#: A target closer than this [m] to the yaw axis or the hip centre has no defined direction.
DEGENERATE_DISTANCE_M = 1e-9

_LIMIT_SLACK = 1e-9  # joint values this far [rad] past a limit count as inside (then clipped)
TIE_M = 1e-10       # errors [m] this close count as equal; the nearer-seed pose wins
_PI = math.pi
_TWO_PI = 2.0 * math.pi


# ----------------------------------------------------------------------------- angle helpers
def _wrap(angle: float) -> float:
    """``angle`` wrapped into [-pi, pi] [rad]."""
    return angle - _TWO_PI * round(angle / _TWO_PI)


def near_angle(angle: float, seed: float, lower: float, upper: float) -> Optional[float]:
    """The value of ``angle`` (mod 2 pi) inside [lower, upper] nearest ``seed``, or None [rad]."""
    d = seed - angle
    # Within half a turn of the seed the rounding below gives 0: skip it (the common case).
    a = angle if -_PI <= d <= _PI else angle + _TWO_PI * round(d / _TWO_PI)
    if a < lower - _LIMIT_SLACK:
        a += _TWO_PI
    elif a > upper + _LIMIT_SLACK:
        a -= _TWO_PI
    else:
        return a
    return a if lower - _LIMIT_SLACK <= a <= upper + _LIMIT_SLACK else None


def clamp_on_circle(angle: float, seed: float, lower: float, upper: float) -> float:
    """The value in [lower, upper] nearest ``angle`` on the circle (ties: nearer ``seed``).

    The distance from a point on a circle to a fixed point grows with the angle between them, so
    this is also the closest reachable point of a joint that turns a point about a centre.
    """
    a = near_angle(angle, seed, lower, upper)
    if a is not None:
        return a
    d_lower, d_upper = abs(_wrap(angle - lower)), abs(_wrap(angle - upper))
    if abs(d_lower - d_upper) <= 1e-12:
        return lower if abs(seed - lower) <= abs(seed - upper) else upper
    return lower if d_lower < d_upper else upper


def annulus_distance(r: float, r_inner: float, r_outer: float) -> float:
    """Distance [m] from radius ``r`` to the interval [r_inner, r_outer]."""
    if r > r_outer:
        return r - r_outer
    if r < r_inner:
        return r_inner - r
    return 0.0


# ------------------------------------------------------------------------------ planar core
class PlanarCore:
    """The 2-link core in its plane: branches in closed form, nearest pose within limits."""

    def __init__(self, l1: float, l2: float, alpha1: float, alpha2: float, knee_sign: float,
                 limits: Tuple[float, float, float, float]):
        self.l1, self.l2, self.alpha1, self.alpha2 = l1, l2, alpha1, alpha2
        self.knee_sign = knee_sign
        self.delta = alpha2 - alpha1
        self.lower1, self.upper1, self.lower2, self.upper2 = limits
        self.r_inner, self.r_outer = abs(l1 - l2), l1 + l2
        self.l1l1_l2l2 = l1 * l1 + l2 * l2
        self.two_l1l2 = 2.0 * l1 * l2
        # The edges of the box of limits that :meth:`nearest` tries, with what does not depend
        # on the target: a thigh at a limit (the knee's position), a knee at a limit (the
        # direction of the rigid leg at zero thigh angle).
        self._thigh_edges = tuple((q1, l1 * math.cos(alpha1 + q1), l1 * math.sin(alpha1 + q1))
                                  for q1 in (self.lower1, self.upper1) if math.isfinite(q1))
        self._knee_edges = tuple((q2, math.atan2(y, x)) for q2 in (self.lower2, self.upper2)
                                 if math.isfinite(q2) for x, y in (self.tip(0.0, q2),))

    def bend(self, r: float) -> Tuple[float, float, float]:
        """Knee bend gamma in [0, pi] for tip distance ``r`` (clamped to the annulus), and the
        knee values [rad] of the forward (+gamma) and backward (-gamma) branches (unwrapped)."""
        c = (r * r - self.l1l1_l2l2) / self.two_l1l2
        c = 1.0 if c > 1.0 else (-1.0 if c < -1.0 else c)
        gamma = math.acos(c)
        s, d = self.knee_sign, self.delta
        return gamma, s * (gamma - d), s * (-gamma - d)

    def thigh_offset(self, gamma: float) -> float:
        """Angle [rad] from the thigh to the hip-tip line at knee bend ``gamma``."""
        return math.atan2(self.l2 * math.sin(gamma), self.l1 + self.l2 * math.cos(gamma))

    def tip(self, q1: float, q2: float) -> Tuple[float, float]:
        """Planar forward kinematics: tip (X, Y) [m] relative to the hip centre."""
        t1 = self.alpha1 + q1
        t2 = self.alpha2 + q1 + self.knee_sign * q2
        return (self.l1 * math.cos(t1) + self.l2 * math.cos(t2),
                self.l1 * math.sin(t1) + self.l2 * math.sin(t2))

    def nearest(self, x: float, y: float, seed1: float, seed2: float) -> Tuple[float, float, float]:
        """The pose within the joint limits whose tip is nearest (x, y): (error [m], q1, q2).

        Exact: the minimum of the distance over the box of limits is either an unconstrained
        critical point (the closed-form branches, stretched or folded toward the target when out
        of reach) or lies on an edge of the box, where one joint is at a limit and the other turns
        a point about a centre (solved by :func:`clamp_on_circle`).
        """
        lo1, hi1, lo2, hi2 = self.lower1, self.upper1, self.lower2, self.upper2
        s = self.knee_sign
        r = math.hypot(x, y)
        if r <= DEGENERATE_DISTANCE_M:  # target at the centre: only the bend matters
            q2 = clamp_on_circle(s * (_PI - self.delta), seed2, lo2, hi2)
            tx, ty = self.tip(seed1, q2)
            return math.hypot(tx - x, ty - y), seed1, q2
        beta = math.atan2(y, x)
        candidates: List[Tuple[float, float]] = []
        gamma, q2f, q2b = self.bend(r)
        psi = self.thigh_offset(gamma)
        for q1, q2 in ((beta - psi - self.alpha1, q2f), (beta + psi - self.alpha1, q2b)):
            n1, n2 = near_angle(q1, seed1, lo1, hi1), near_angle(q2, seed2, lo2, hi2)
            if n1 is not None and n2 is not None:
                candidates.append((n1, n2))
        alpha2 = self.alpha2
        for q1, kx, ky in self._thigh_edges:  # thigh at a limit: the shin turns about the knee
            shin = math.atan2(y - ky, x - kx)
            candidates.append((q1, clamp_on_circle(s * (shin - alpha2 - q1), seed2, lo2, hi2)))
        for q2, leg in self._knee_edges:  # knee at a limit: the rigid leg turns about the hip
            candidates.append((clamp_on_circle(beta - leg, seed1, lo1, hi1), q2))
        best = None
        l1, l2, alpha1 = self.l1, self.l2, self.alpha1
        cos, sin, hypot = math.cos, math.sin, math.hypot
        for q1, q2 in candidates:  # self.tip, inline
            t1 = alpha1 + q1
            t2 = alpha2 + q1 + s * q2
            err = hypot(l1 * cos(t1) + l2 * cos(t2) - x, l1 * sin(t1) + l2 * sin(t2) - y)
            dist = (q1 - seed1) ** 2 + (q2 - seed2) ** 2
            if best is None or err < best[0] - TIE_M or (err <= best[0] + TIE_M and
                                                          dist < best[3]):
                best = (err, q1, q2, dist)
        return best[0], best[1], best[2]
