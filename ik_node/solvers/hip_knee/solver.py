"""Closed-form position IK of a leg (first joint, hip pitch, knee) or of a planar 2-link chain.

The geometry is read once from the chain at q = 0 (:mod:`geometry`); no axis or length is
hard-coded. The first joint is a hip yaw (``leg3``) or a hip abduction (quadrupeds); the pitch
and knee axes are parallel and perpendicular to it.

A leg whose plane holds its first axis (no lateral offset ``h``, no axis offset ``D``) is solved
here: at first-joint angle ``q0`` the leg moves in the plane through the axis spanned by ``a``
and ``Rot(a, q0) (u x a)``, with ``X`` along ``a`` and ``Y`` along ``Rot(a, q0) (u x a)``
relative to the hip centre ``c``; a turn by +theta about ``u`` is a counter-clockwise turn in
(X, Y), so the pitch angle adds to the thigh's polar angle. A leg with offsets goes to
:mod:`offset_leg`, which uses the same core.

Planar 2-link chain (2 parallel revolute joints): the same core, in the fixed plane
perpendicular to the first axis that holds the tip; ``X`` is the thigh's direction at q = 0.

Core: thigh length ``l1`` at polar angle ``alpha1`` (q = 0), shin ``l2`` at ``alpha2``. The knee
bend ``gamma = alpha2 - alpha1 + s * q_knee`` (``s = +-1``: knee axis along ``+-u``) is the shin's
angle from the thigh, and ``|tip - c|^2 = l1^2 + l2^2 + 2 l1 l2 cos(gamma)``: the tip reaches
exactly the annulus ``|l1 - l2| <= r <= l1 + l2`` around ``c`` in the leg's plane.

Knee branches: ``forward`` is ``gamma`` in (0, pi), the shin turned from the thigh in the
positive sense about the pitch axis; ``backward`` is ``gamma`` in (-pi, 0). For a leg hanging
along -z with pitch axes along +y (both leg3 URDFs) ``forward`` puts the knee ahead (+x) of the
hip-foot line, as in a human knee.
"""

from __future__ import annotations

import math
from typing import Any, List, Mapping, Optional, Tuple

import numpy as np

from ik_node.model.chain import Chain
from ik_node.solvers.base import (FloatSolver, IkResult, IkStatus, ParamSpec, RawSolution,
                                  SolverParts)
from ik_node.solvers.hip_knee.compiled_legs import CompiledLegs
from ik_node.solvers.hip_knee.geometry import geometry_from_chain
from ik_node.solvers.hip_knee.offset_leg import OffsetLeg
from ik_node.solvers.geometry.planar_core import (DEGENERATE_DISTANCE_M, TIE_M, PlanarCore,
                                                  annulus_distance, clamp_on_circle, near_angle)

_PI = math.pi
_CONVERGED = IkStatus.CONVERGED
# What _solve_floats runs: a leg whose pitch axis meets the first axis (with or without a
# lateral offset), a leg with an axis offset, a planar 2-link chain.
_LEG, _OFFSET_LEG, _PLANAR = 0, 1, 2
#: A joint this close [rad] to a limit is named as held there in messages.
_AT_LIMIT = 1e-9
#: Added to the rank of a branch that is not the preferred one: more than any squared distance
#: from the seed of a value that near_angle returns (within 3 pi of it, per joint) [rad^2].
_NOT_PREFERRED = 1e4


class HipKneeSolver(FloatSolver):
    """Closed-form IK of a 3-joint leg (hip yaw or abduction, hip pitch, knee) or of a planar
    2-link chain.

    Position only; one "iteration". Reachable exactly when some first-joint angle puts the
    target in the leg's plane at a distance from the hip centre within ``[|l1 - l2|, l1 + l2]``
    and some solution respects the joint limits. Candidates are the two knee branches, and for
    the leg also the other first-joint solution (the yaw flip, or the other abduction angle);
    the ``branch`` parameter orders them, the seed breaks ties. When none respects the limits
    the nearest pose within limits is returned (exact search over the limit boundary, or over
    the first joint's angle for a leg with offsets).

    ``min_residual`` is a proven lower bound of the position error [m]: the target's distance
    from the set the foot reaches limits aside (exact when the leg's plane holds the first axis,
    or has only one of the two offsets; a smaller proven bound with both), plus, for the planar
    chain, the distance off its plane; 0.0 when a limit-respecting solution was found; None when
    the target is geometrically reachable but the limits forbid it (status ``joint_limited``).
    """

    name = 'analytic_hip_knee'
    supports_orientation = False
    PARAMS = {
        'branch': ParamSpec(str, 'closest', 'knee branch: forward (shin turned positively about '
                            'the pitch axis), backward, or closest to the seed (continuity)',
                            choices=('forward', 'backward', 'closest')),
    }

    def __init__(self, chain: Chain, params: Optional[Mapping[str, Any]] = None,
                 parts: Optional[SolverParts] = None):
        super().__init__(chain, params, parts)
        #: A tree of legs: every leg in one compiled call where numba serves (else None).
        self._compiled_legs = CompiledLegs.of(self)

    def solve(self, target_position=None, target_orientation=None, seed=None, *,
              targets: Optional[Mapping[str, Any]] = None) -> IkResult:
        """:meth:`Solver.solve <ik_node.solvers.base.Solver.solve>`; on a tree of legs, where
        the compiled kernel serves, ``solve(targets={foot: position})`` runs every leg in one
        call (:mod:`.compiled`), the Python path answering whatever that call does not (the same
        answers)."""
        legs = self._compiled_legs
        if legs is not None and target_position is None and target_orientation is None and \
                self._collision is None:
            result = legs.solve(targets, seed)
            if result is not None:
                return result
        return super().solve(target_position, target_orientation, seed, targets=targets)

    def check_chain(self, chain: Chain) -> None:
        """Refuse chains that are not a 3-joint leg or a planar 2-link chain.

        Also derives and stores the solver's geometry (lengths, zero angles, offsets, frames).

        Raises:
            ChainError: naming the expected structure and what the chain has instead.
        """
        g = geometry_from_chain(chain)
        self._geometry = g
        self._n = g.n
        self._core: PlanarCore = g.core
        branch = self.params['branch']
        self._pref_forward = 1 if branch == 'backward' else 0
        self._pref_backward = 1 if branch == 'forward' else 0
        self._record = self.params['record_history']
        self._centre = g.centre
        self._rows = g.rows
        self._yaw_limits = g.first_limits
        self._roles = (g.role, 'hip pitch', 'knee') if g.n == 3 else ('first joint',
                                                                      'second joint')
        self._kind = _PLANAR if g.n == 2 else (_OFFSET_LEG if g.axis_offset else _LEG)
        self._offset_leg = None
        if g.n == 3 and (g.lateral or g.axis_offset):
            self._offset_leg = OffsetLeg(g, self._pref_forward, self._pref_backward)
        self._axis_note = (f'target on the {g.role} axis: {g.role_short} is free, kept the '
                           f'seed\'s {g.role_short}')
        core = g.core
        # What _solve_leg reads on every solve, in one tuple (one load instead of twelve).
        self._leg_constants = (
            *g.first_limits, g.lateral, abs(g.lateral), core.r_inner, core.r_outer, core.lower1,
            core.upper1, core.lower2, core.upper2, _NOT_PREFERRED if self._pref_forward else 0.0,
            _NOT_PREFERRED if self._pref_backward else 0.0)

    def reach_envelope(self, tip: Optional[str] = None) -> Tuple[np.ndarray, float, float]:
        """The geometric reach: ``(centre, r_min, r_max)`` [m].

        For the leg every tip position lies (limits aside) in the spherical shell between the
        radii about the centre (the hip centre, or with an axis offset the first axis's point
        level with the pitch axis), and the tip touches both spheres. For the planar core, the
        annulus in its plane. Used by the node's envelope marker.
        """
        g, core = self._geometry, self._core
        if g.n == 2 or not (g.lateral or g.axis_offset):
            return self._centre.copy(), core.r_inner, core.r_outer
        h, d = g.lateral, abs(g.axis_offset)
        if d == 0.0:
            return self._centre.copy(), math.hypot(core.r_inner, h), math.hypot(core.r_outer, h)
        nearest = max(0.0, core.r_inner - d, d - core.r_outer)
        return g.origin.copy(), math.hypot(nearest, h), math.hypot(core.r_outer + d, h)

    # ------------------------------------------------------------------------------ solving
    def _solve_floats(self, p_target: List[float], R_target: Optional[np.ndarray],
                      q_seed: List[float]) -> RawSolution:
        px, py, pz = p_target
        # Leg: x the height along the first axis, e1 and e2 the coordinates across it.
        ax, ay, az, ak, bx, by, bz, bk, cx, cy, cz, ck = self._rows
        x = px * ax + py * ay + pz * az - ak
        e1 = px * bx + py * by + pz * bz - bk
        e2 = px * cx + py * cy + pz * cz - ck
        kind = self._kind
        if kind == _LEG:
            return self._solve_leg(x, e1, e2, q_seed)
        if kind == _OFFSET_LEG:
            return self._solve_offset_leg(x, e1, e2, q_seed)
        return self._solve_planar(x, e1, e2, q_seed)

    def _solve_offset_leg(self, x: float, e1: float, e2: float,
                          seed: List[float]) -> RawSolution:
        """A leg with offsets (:class:`OffsetLeg`): status, proven residual and message."""
        out = self._offset_leg.solve(x, e1, e2, seed)
        history = [out.error] if self._record else None
        note = out.note
        # Out of reach by rounding only (at the rim of the set): counted as in reach.
        in_reach = out.in_reach or (out.exact_bound and out.bound <= TIE_M)
        if in_reach and out.within_limits:
            status = IkStatus.DEGENERATE if note else IkStatus.CONVERGED
            return RawSolution(out.q, status, 1, 0.0, note, history)
        if in_reach:
            message = (f'every solution breaks a joint limit: returned the nearest pose within '
                       f'limits, {out.error:.4g} m from the target{self._at_limits(out.q)}')
            return RawSolution(out.q, IkStatus.JOINT_LIMITED, 1, None,
                               f'{message}; {note}' if note else message, history, vouched=True)
        limited = '' if out.within_limits else \
            f'; joint limits bind too{self._at_limits(out.q)}'
        if out.bound > TIE_M:
            message = (f'target is {out.bound:.4g} m out of the leg\'s reach: returned the '
                       f'nearest pose{limited}')
            return RawSolution(out.q, IkStatus.UNREACHABLE, 1, out.bound,
                               f'{message}; {note}' if note else message, history, vouched=True)
        # Out of reach by an amount the geometry does not bound (both offsets): not claimed.
        message = (f'target is out of the leg\'s reach: returned the nearest pose found, '
                   f'{out.error:.4g} m from the target{limited}')
        return RawSolution(out.q, IkStatus.MAX_ITERATIONS, 1, out.bound or None,
                           f'{message}; {note}' if note else message, history)

    def _solve_leg(self, x: float, e1: float, e2: float, seed: List[float]) -> RawSolution:
        """A leg whose pitch axis meets the first axis (``D = 0``), with or without ``h``.

        The foot's distance from the first axis is ``hypot(h, Y)``: a target at ``rho`` needs
        the core's ``Y = +-m`` with ``m = sqrt(rho^2 - h^2)`` (``m = rho`` without ``h``), both at
        the same distance ``r = hypot(x, m)`` from the hip centre, and the first joint turning
        the foot's azimuth ``atan2(h, +-m)`` onto the target's ``phi``. Without ``h`` these are
        the plane through the target and its yaw flip.
        """
        core = self._core
        s0, s1, s2 = seed
        lo0, hi0, h, ah, r_inner, r_outer, lo1, hi1, lo2, hi2, pref_f, pref_b = \
            self._leg_constants
        rho = math.hypot(e1, e2)
        if h:
            if rho < ah:  # nearer the first axis than the foot ever comes
                return self._solve_offset_leg(x, e1, e2, seed)
            m = math.sqrt((rho - ah) * (rho + ah))
            tilt = math.atan2(h, m)
        else:
            m, tilt = rho, 0.0
        r = math.hypot(x, m)
        # annulus_distance, inline
        miss = r - r_outer if r > r_outer else (r_inner - r if r < r_inner else 0.0)
        if h and miss > TIE_M:  # out of reach: the nearest pose is not a stretched leg
            return self._solve_offset_leg(x, e1, e2, seed)
        gamma, q2f, q2b = core.bend(r)
        note = ''
        # Candidate planes: (first joint, hip pitch of the forward branch, of the backward one).
        if r <= DEGENERATE_DISTANCE_M:
            if h:
                note = 'target at the hip pitch axis: kept the seed\'s thigh direction'
                planes = ((math.atan2(e2, e1) - tilt, s1, s1),)
            else:
                note = ('target at the hip pitch origin: direction undefined, kept the seed\'s '
                        'yaw and thigh direction')
                planes = ((s0, s1, s1),)
        else:
            psi, a1 = core.thigh_offset(gamma), core.alpha1
            if rho <= DEGENERATE_DISTANCE_M:
                note = self._axis_note
                beta = math.atan2(e1 * math.cos(s0) + e2 * math.sin(s0), x)
                planes = ((s0, beta - psi - a1, beta + psi - a1),)
            else:  # both first-joint solutions (without h: the yaw flip, plane mirrored)
                phi, beta = math.atan2(e2, e1), math.atan2(m, x)
                planes = ((phi - tilt, beta - psi - a1, beta + psi - a1),
                          (phi + math.pi + tilt, -beta - psi - a1, -beta + psi - a1))
        # near_angle inline where the value is within half a turn of the seed and within the
        # limits (the common case; same result), the function otherwise.
        d = s2 - q2f
        n2f = q2f if -_PI <= d <= _PI and lo2 <= q2f <= hi2 else near_angle(q2f, s2, lo2, hi2)
        d = s2 - q2b
        n2b = q2b if -_PI <= d <= _PI and lo2 <= q2b <= hi2 else near_angle(q2b, s2, lo2, hi2)
        # A branch that is not the preferred one (pref_f, pref_b: _NOT_PREFERRED) ranks after
        # every preferred one.
        best = None  # (rank: preference + squared distance to the seed, q0, q1, q2)
        for yaw, q1f, q1b in planes:
            d = s0 - yaw
            q0 = yaw if -_PI <= d <= _PI and lo0 <= yaw <= hi0 else near_angle(yaw, s0, lo0, hi0)
            if q0 is None:
                continue
            d0 = (q0 - s0) ** 2
            if n2f is not None:
                d = s1 - q1f
                q1 = q1f if -_PI <= d <= _PI and lo1 <= q1f <= hi1 else \
                    near_angle(q1f, s1, lo1, hi1)
                if q1 is not None:
                    rank = d0 + (q1 - s1) ** 2 + (n2f - s2) ** 2
                    if pref_f:
                        rank += pref_f
                    if best is None or rank < best[0]:
                        best = (rank, q0, q1, n2f)
            if n2b is not None:
                d = s1 - q1b
                q1 = q1b if -_PI <= d <= _PI and lo1 <= q1b <= hi1 else \
                    near_angle(q1b, s1, lo1, hi1)
                if q1 is not None:
                    rank = d0 + (q1 - s1) ** 2 + (n2b - s2) ** 2
                    if pref_b:
                        rank += pref_b
                    if best is None or rank < best[0]:
                        best = (rank, q0, q1, n2b)
        if best is not None:
            if not note and miss <= TIE_M and not self._record:  # the common case
                return RawSolution([best[1], best[2], best[3]], _CONVERGED, 1, 0.0)
            q = list(best[1:])
            error = miss
        elif h:  # the limits forbid every solution
            return self._solve_offset_leg(x, e1, e2, seed)
        else:
            error, q = self._nearest_leg(x, e1, e2, rho, seed)
        return self._raw(q, miss, miss, best is not None, error, note)

    def _nearest_leg(self, x: float, e1: float, e2: float, rho: float,
                     seed: List[float]) -> Tuple[float, List[float]]:
        """Nearest pose within all limits (exact; see :meth:`PlanarCore.nearest`).

        For fixed hip pitch and knee the tip circles the yaw axis, nearest the target at the
        allowed yaw closest (on the circle) to the target's azimuth (tip ahead of the axis) or
        to the azimuth + pi (tip behind it): those two yaws are the only candidates.
        """
        s0, s1, s2 = seed
        lo0, hi0 = self._yaw_limits
        if rho <= DEGENERATE_DISTANCE_M:
            phi, yaws = s0, (s0,)
        else:
            phi = math.atan2(e2, e1)
            yaws = (clamp_on_circle(phi, s0, lo0, hi0),
                    clamp_on_circle(phi + math.pi, s0, lo0, hi0))
        best = None
        for q0 in yaws:
            off_plane = rho * math.sin(q0 - phi)
            if best is not None and abs(off_plane) > best[0] + TIE_M:
                continue  # its error is at least the off-plane part: it can neither win nor tie
            err, q1, q2 = self._core.nearest(x, rho * math.cos(q0 - phi), s1, s2)
            err = math.hypot(err, off_plane)
            dist = (q0 - s0) ** 2 + (q1 - s1) ** 2 + (q2 - s2) ** 2
            if best is None or err < best[0] - TIE_M or (err <= best[0] + TIE_M and
                                                          dist < best[1]):
                best = (err, dist, q0, q1, q2)
        return best[0], list(best[2:])

    def _solve_planar(self, x: float, y: float, off_plane: float,
                      seed: List[float]) -> RawSolution:
        core = self._core
        s1, s2 = seed
        r = math.hypot(x, y)
        miss = annulus_distance(r, core.r_inner, core.r_outer)
        bound = math.hypot(miss, off_plane) if off_plane else miss
        gamma, q2f, q2b = core.bend(r)
        note = ''
        if r <= DEGENERATE_DISTANCE_M:
            note = ('target on the first joint\'s axis: direction undefined, kept the seed\'s '
                    'thigh direction')
            q1f = q1b = s1
        else:
            beta, psi = math.atan2(y, x), core.thigh_offset(gamma)
            q1f, q1b = beta - psi - core.alpha1, beta + psi - core.alpha1
        best = None
        for pref, q1, q2 in ((self._pref_forward, q1f, q2f), (self._pref_backward, q1b, q2b)):
            n1 = near_angle(q1, s1, core.lower1, core.upper1)
            n2 = near_angle(q2, s2, core.lower2, core.upper2)
            if n1 is not None and n2 is not None:
                key = (pref, (n1 - s1) ** 2 + (n2 - s2) ** 2)
                if best is None or key < best[0]:
                    best = (key, n1, n2)
        if best is not None:
            q = list(best[1:])
            error = bound
        else:
            error, q1, q2 = core.nearest(x, y, s1, s2)
            error, q = math.hypot(error, off_plane), [q1, q2]
        return self._raw(q, miss, bound, best is not None, error, note)

    def _at_limits(self, q: List[float]) -> str:
        """`` (at a limit: knee 'FL_knee' -0.6 rad, ...)``: the joints of ``q`` at a limit, by
        role, for a message ('' when none is)."""
        lower, upper = self._geometry.limits
        held = [f'{role} {name!r} {value:.4g} rad'
                for role, name, value, lo, hi in zip(self._roles, self.chain.joint_names, q,
                                                      lower, upper, strict=True)
                if abs(value - lo) <= _AT_LIMIT or abs(value - hi) <= _AT_LIMIT]
        return f' (at a limit: {", ".join(held)})' if held else ''

    def _raw(self, q: List[float], miss: float, bound: float, within_limits: bool,
             error: float, note: str) -> RawSolution:
        """Status, proven residual and message of a pose (``error``: its predicted miss [m])."""
        history = [error] if self._record else None
        if bound > TIE_M:  # below: rounding at the rim of the shell
            core = self._core
            where = (f'{miss:.4g} m outside the reachable shell [{core.r_inner:.4g}, '
                     f'{core.r_outer:.4g}] m around the hip' if miss > 0.0 else
                     f'{bound:.4g} m off the plane of the chain')
            limited = '' if within_limits else f'; joint limits bind too{self._at_limits(q)}'
            message = f'target is {where}: returned the nearest pose{limited}'
            return RawSolution(q, IkStatus.UNREACHABLE, 1, bound,
                               f'{message}; {note}' if note else message, history, vouched=True)
        if within_limits:
            status = IkStatus.DEGENERATE if note else IkStatus.CONVERGED
            return RawSolution(q, status, 1, 0.0, note, history)
        message = (f'every solution breaks a joint limit: returned the nearest pose within '
                   f'limits, {error:.4g} m from the target{self._at_limits(q)}')
        return RawSolution(q, IkStatus.JOINT_LIMITED, 1, None,
                           f'{message}; {note}' if note else message, history, vouched=True)
