"""Closed-form position IK of a leg whose plane misses its first axis (offsets ``h``, ``D``).

See :mod:`geometry` for the coordinates. A target at height ``x`` and distance ``rho`` from the
first axis (azimuth ``phi``) is reached only with the foot's distance from the axis equal to
``rho``: ``(D + Y)^2 + h^2 = rho^2``, so the planar core's ``Y = +-m - D`` with
``m = sqrt(rho^2 - h^2)`` (the two abduction solutions; none when ``rho < |h|``), and the
first joint turns the foot's azimuth ``atan2(h, +-m)`` onto ``phi``. Each gives the core's target
``(x, Y)`` and its two knee branches in closed form.

Out of reach, the nearest pose is the leg's pose for the nearest point of the foot's set
(:mod:`reach_set`) when its joints are within their limits. Otherwise (limits bind, or the
set has no closed form) the nearest pose within limits is found over the first joint: for each
of its angles the exact nearest pose of the planar core (:meth:`PlanarCore.nearest`) and the
distance off the plane give the error and its slope; the angle is sampled and the best basins
refined on the slope. Where numba serves, that search runs compiled
(:func:`~ik_node.solvers.hip_knee.compiled_nearest.nearest_offset_leg`: the same samples,
candidates and refinement) once the kernels are loaded (:mod:`ik_node.kernels`).
"""

from __future__ import annotations

import math
from typing import Callable, List, Tuple

from ik_node.solvers.hip_knee import compiled_nearest as compiled
from ik_node.solvers.hip_knee.geometry import LegGeometry
from ik_node.solvers.geometry.planar_core import (DEGENERATE_DISTANCE_M, TIE_M, annulus_distance,
                                                  near_angle)
from ik_node.solvers.geometry.reach_set import nearest_reach_point, reach_lower_bound

_TWO_PI = 2.0 * math.pi
#: Spacing [rad] of the first-joint angles sampled in the search for the nearest pose.
SAMPLE_STEP = 0.15
#: Basins of the sampled error refined (the lowest ones).
REFINED_BASINS = 3
#: The refinement stops at this bracket width [rad], or after this many steps.
ANGLE_TOLERANCE = 1e-12
MAX_REFINE_STEPS = 60


class OffsetLegSolve:
    """The outcome of one solve: ``q``, how it was found, and the proven bound.

    Attributes:
        q: joint positions [rad].
        in_reach: the target is reachable with the joint limits aside.
        within_limits: ``q`` reaches the target (in reach) or the nearest point of the foot's
            set (out of reach).
        bound: proven lower bound [m] of every pose's error, limits aside (0.0 in reach).
        exact_bound: ``bound`` is the target's distance from the foot's set (not only a bound).
        error: the predicted error [m] of ``q``.
        note: why the answer is not unique, or ''.
    """

    __slots__ = ('q', 'in_reach', 'within_limits', 'bound', 'exact_bound', 'error', 'note')

    def __init__(self, q, in_reach, within_limits, bound, exact_bound, error, note):
        self.q, self.in_reach, self.within_limits = q, in_reach, within_limits
        self.bound, self.exact_bound, self.error, self.note = bound, exact_bound, error, note


class OffsetLeg:
    """Solves a leg with a lateral offset ``h`` and/or an axis offset ``D`` (plain floats)."""

    def __init__(self, geometry: LegGeometry, pref_forward: int, pref_backward: int):
        self.core = geometry.core
        self.h, self.d = geometry.lateral, geometry.axis_offset
        self.first_limits = geometry.first_limits
        lo0, hi0 = geometry.first_limits
        self.full_turn = not (math.isfinite(lo0) and math.isfinite(hi0)) or hi0 - lo0 >= _TWO_PI
        self.pref_forward, self.pref_backward = pref_forward, pref_backward
        short = geometry.role_short
        self.axis_note = (f'target on the {geometry.role} axis: {short} is free, kept the '
                          f'seed\'s {short}')
        #: The compiled search's constants (:func:`compiled.nearest_offset_leg`).
        self.row = compiled.nearest_row(self)

    # ------------------------------------------------------------------------------ in reach
    def planes(self, e1: float, e2: float, rho: float,
               seed: List[float]) -> Tuple[tuple, str]:
        """The candidate first-joint angles with the core's ``Y`` there, and a note."""
        h, d = self.h, self.d
        if rho <= DEGENERATE_DISTANCE_M and h == 0.0:  # on the axis: the foot must be too
            s0 = seed[0]
            return ((s0, e1 * math.cos(s0) + e2 * math.sin(s0) - d),), self.axis_note
        if rho < abs(h):
            return (), ''
        phi = math.atan2(e2, e1)
        m = math.sqrt((rho - abs(h)) * (rho + abs(h))) if h else rho
        tilt = math.atan2(h, m)
        if m == 0.0:
            return ((phi - tilt, -d),), ''
        return ((phi - tilt, m - d), (phi + math.pi + tilt, -m - d)), ''

    def best_in_planes(self, x: float, planes: tuple, seed: List[float]):
        """``(best, in_reach, note)``: the best limit-respecting ``[q0, q1, q2]`` (or None) over
        the planes whose core target is in reach, by branch preference then seed distance."""
        core = self.core
        s0, s1, s2 = seed
        lo0, hi0 = self.first_limits
        lo1, hi1, lo2, hi2 = core.lower1, core.upper1, core.lower2, core.upper2
        r_inner, r_outer, a1 = core.r_inner, core.r_outer, core.alpha1
        best, in_reach, note = None, False, ''
        for yaw, y in planes:
            r = math.hypot(x, y)
            if annulus_distance(r, r_inner, r_outer) > TIE_M:
                continue
            in_reach = True
            q0 = near_angle(yaw, s0, lo0, hi0)
            if q0 is None:
                continue
            gamma, q2f, q2b = core.bend(r)
            if r <= DEGENERATE_DISTANCE_M:
                note = ('target at the hip pitch axis: direction undefined, kept the seed\'s '
                        'thigh direction')
                q1f = q1b = s1
            else:
                beta, psi = math.atan2(y, x), core.thigh_offset(gamma)
                q1f, q1b = beta - psi - a1, beta + psi - a1
            d0 = (q0 - s0) ** 2
            for pref, q1, q2 in ((self.pref_forward, q1f, q2f), (self.pref_backward, q1b, q2b)):
                n2 = near_angle(q2, s2, lo2, hi2)
                if n2 is None:
                    continue
                n1 = near_angle(q1, s1, lo1, hi1)
                if n1 is None:
                    continue
                key = (pref, d0 + (n1 - s1) ** 2 + (n2 - s2) ** 2)
                if best is None or key < best[0]:
                    best = (key, q0, n1, n2)
        return (None if best is None else list(best[1:])), in_reach, note

    def solve(self, x: float, e1: float, e2: float, seed: List[float]) -> OffsetLegSolve:
        """Solve for the target with leg coordinates ``(x, e1, e2)`` [m] from ``seed``."""
        rho = math.hypot(e1, e2)
        planes, note = self.planes(e1, e2, rho, seed)
        q, in_reach, pitch_note = self.best_in_planes(x, planes, seed)
        note = note or pitch_note
        if q is not None:
            return OffsetLegSolve(q, True, True, 0.0, True, 0.0, note)
        if in_reach:  # the limits forbid every solution
            error, q = self.nearest_within_limits(x, e1, e2, seed)
            return OffsetLegSolve(q, True, False, 0.0, True, error, note)
        core = self.core
        nearest = nearest_reach_point(x, rho, self.h, self.d, core.r_inner, core.r_outer)
        if nearest is not None:
            bound, x_near, rho_near = nearest
            if rho > DEGENERATE_DISTANCE_M:
                phi = math.atan2(e2, e1)
            else:  # on the axis: every azimuth is as near; keep the seed's first joint
                m = math.sqrt(max(0.0, (rho_near - abs(self.h)) * (rho_near + abs(self.h))))
                phi = seed[0] + math.atan2(self.h, m)
                note = note or self.axis_note
            near_e1, near_e2 = rho_near * math.cos(phi), rho_near * math.sin(phi)
            near_planes, _ = self.planes(near_e1, near_e2, rho_near, seed)
            q, _, _ = self.best_in_planes(x_near, near_planes, seed)
            if q is not None:
                return OffsetLegSolve(q, False, True, bound, True, bound, note)
            exact = True
        else:
            bound = reach_lower_bound(x, rho, self.h, self.d, core.r_inner, core.r_outer)
            exact = False
        error, q = self.nearest_within_limits(x, e1, e2, seed)
        return OffsetLegSolve(q, False, False, bound, exact, error, note)

    # ---------------------------------------------------------------------- nearest pose
    def _error_at(self, q0: float, x: float, e1: float, e2: float, s1: float, s2: float):
        """``(error [m], q1, q2, slope)`` with the first joint at ``q0``: the nearest pose within
        the pitch and knee limits (exact: the planar core's nearest pose and the distance off
        the leg's plane), and half the derivative of the squared error in ``q0``.

        The slope holds the nearest pose fixed (the squared distance to a fixed set has that
        derivative wherever its nearest point is unique; elsewhere it only drops).
        """
        c, s = math.cos(q0), math.sin(q0)
        along, across = e1 * c + e2 * s, e2 * c - e1 * s
        y_target, off_plane = along - self.d, across - self.h
        err, q1, q2 = self.core.nearest(x, y_target, s1, s2)
        _, y_near = self.core.tip(q1, q2)
        slope = (y_target - y_near) * across - off_plane * along
        return math.hypot(err, off_plane), q1, q2, slope

    def nearest_within_limits(self, x: float, e1: float, e2: float,
                              seed: List[float]) -> Tuple[float, List[float]]:
        """The pose within all limits nearest the target: ``(error [m], [q0, q1, q2])``; in the
        compiled kernel once it is loaded, else :meth:`nearest_in_python` (the same search)."""
        kernel = compiled.nearest_offset_leg()
        if kernel is None:
            return self.nearest_in_python(x, e1, e2, seed)
        s0, s1, s2 = seed
        error, q0, q1, q2 = kernel(self.row, x, e1, e2, s0, s1, s2)
        return error, [q0, q1, q2]

    def nearest_in_python(self, x: float, e1: float, e2: float,
                          seed: List[float]) -> Tuple[float, List[float]]:
        """The pose within all limits nearest the target: ``(error [m], [q0, q1, q2])``.

        The first joint's range (a full turn about the seed when its limits span one) is
        sampled about every :data:`SAMPLE_STEP`; each sampled interval where the error turns
        from falling to rising holds a minimum, and the :data:`REFINED_BASINS` lowest are
        refined by regula falsi on the slope (Illinois). A range's ends are minima where the
        error rises into the range. Ties go to the pose nearer the seed.
        """
        s0, s1, s2 = seed
        lo0, hi0 = self.first_limits
        if self.full_turn:
            count = max(3, math.ceil(_TWO_PI / SAMPLE_STEP))
            step = _TWO_PI / count
            angles = [s0 - math.pi + k * step for k in range(count + 1)]  # last = first + 2 pi
        else:
            count = max(2, math.ceil((hi0 - lo0) / SAMPLE_STEP))
            step = (hi0 - lo0) / count
            angles = [lo0 + k * step for k in range(count)] + [hi0]
        samples = [self._error_at(a, x, e1, e2, s1, s2) for a in angles[:count]]
        samples.append(samples[0] if self.full_turn else
                       self._error_at(hi0, x, e1, e2, s1, s2))
        found = []  # (error, q0, q1, q2) of each local minimum
        if not self.full_turn:
            if samples[0][3] >= 0.0:
                found.append((samples[0][0], angles[0]) + samples[0][1:3])
            if samples[-1][3] <= 0.0:
                found.append((samples[-1][0], angles[-1]) + samples[-1][1:3])
        brackets = [k for k in range(count) if samples[k][3] < 0.0 <= samples[k + 1][3]]
        brackets.sort(key=lambda k: min(samples[k][0], samples[k + 1][0]))
        for k in brackets[:REFINED_BASINS]:
            found.append(self._refine(
                angles[k], samples[k], angles[k + 1], samples[k + 1],
                lambda q0: self._error_at(q0, x, e1, e2, s1, s2)))
        if not found:  # no slope changes sign (a constant error): the best sample
            k = min(range(count), key=lambda i: samples[i][0])
            found.append((samples[k][0], angles[k]) + samples[k][1:3])
        best = None
        for err, q0, q1, q2 in found:
            q0 = near_angle(q0, s0, lo0, hi0) if self.full_turn else min(max(q0, lo0), hi0)
            dist = (q0 - s0) ** 2 + (q1 - s1) ** 2 + (q2 - s2) ** 2
            if best is None or err < best[0] - TIE_M or (err <= best[0] + TIE_M and
                                                          dist < best[1]):
                best = (err, dist, q0, q1, q2)
        return best[0], list(best[2:])

    def _refine(self, a: float, fa: tuple, b: float, fb: tuple, error_at: Callable[[float], tuple]
                ) -> Tuple[float, float, float, float]:
        """The minimum in ``[a, b]`` where the slope turns from negative (``fa``) to
        non-negative (``fb``): ``(error, q0, q1, q2)``. Illinois regula falsi on the slope,
        which only drops where it jumps: a sign change from - to + is always a minimum.
        ``error_at(q0)`` is :meth:`_error_at` for this target."""
        ga, gb = fa[3], fb[3]
        best = min(((fa[0], a) + fa[1:3]), ((fb[0], b) + fb[1:3]))
        side = 0
        for _ in range(MAX_REFINE_STEPS):
            if b - a <= ANGLE_TOLERANCE:
                break
            c = b - gb * (b - a) / (gb - ga) if gb != ga else 0.5 * (a + b)
            if not a < c < b:
                c = 0.5 * (a + b)
            fc = error_at(c)
            if fc[0] < best[0]:
                best = (fc[0], c) + fc[1:3]
            gc = fc[3]
            if gc == 0.0:
                break
            if gc < 0.0:
                a, ga = c, gc
                if side == -1:
                    gb *= 0.5
                side = -1
            else:
                b, gb = c, gc
                if side == 1:
                    ga *= 0.5
                side = 1
        return best
