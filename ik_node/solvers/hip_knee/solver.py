"""Closed-form position IK of a leg (hip yaw, hip pitch, knee) or of its planar 2-link core.

The geometry is read once from the chain at q = 0; no axis or length is hard-coded.

Leg (3 revolute joints): the hip yaw axis ``a`` (unit, base frame) through the yaw joint's
origin; the hip pitch axis ``u`` perpendicular to ``a`` and meeting it at the hip centre ``c``;
the knee axis parallel to ``u`` (either sense). At yaw ``q0`` the leg moves in the plane through
the yaw axis spanned by ``a`` and ``Rot(a, q0) (u x a)``. In that plane, coordinates relative to
``c`` are ``X`` along ``a`` and ``Y`` along ``Rot(a, q0) (u x a)``; a turn by +theta about ``u``
is then a counter-clockwise turn in (X, Y), so the pitch angle adds to the thigh's polar angle.

Planar 2-link chain (2 parallel revolute joints): the same core, in the fixed plane
perpendicular to the first axis that holds the tip; ``X`` is the thigh's direction at q = 0.

Core: thigh length ``l1`` at polar angle ``alpha1`` (q = 0), shin ``l2`` at ``alpha2``. The knee
bend ``gamma = alpha2 - alpha1 + s * q_knee`` (``s = +-1``: knee axis along ``+-u``) is the shin's
angle from the thigh, and ``|tip - c|^2 = l1^2 + l2^2 + 2 l1 l2 cos(gamma)``: the tip reaches
exactly the annulus ``|l1 - l2| <= r <= l1 + l2`` around ``c``.

Knee branches: ``forward`` is ``gamma`` in (0, pi), the shin turned from the thigh in the
positive sense about the pitch axis; ``backward`` is ``gamma`` in (-pi, 0). For a leg hanging
along -z with pitch axes along +y (both leg3 URDFs) ``forward`` puts the knee ahead (+x) of the
hip-foot line, as in a human knee.
"""

from __future__ import annotations

import math
from typing import List, Optional, Tuple

import numpy as np

from ik_node.model.chain import Chain
from ik_node.errors import ChainError
from ik_node.solvers.base import FloatSolver, IkStatus, ParamSpec, RawSolution
from ik_node.solvers.hip_knee.planar_core import (DEGENERATE_DISTANCE_M, TIE_M, PlanarCore,
                                          annulus_distance, clamp_on_circle, near_angle)

#: |cos| between axes that must be perpendicular, |sin| between axes that must be parallel.
AXIS_TOLERANCE = 1e-6
#: Offsets [m] that must be zero for the structure (lateral offsets, axis distances).
OFFSET_TOLERANCE_M = 1e-6

_EXPECTED = ('expected a leg of 3 revolute joints (hip yaw, then hip pitch and knee about '
             'parallel axes perpendicular to the yaw axis) or a planar chain of 2 revolute '
             'joints about parallel axes')


# ------------------------------------------------------------------------- chain geometry
def _angle_deg(cos_or_sin: float) -> float:
    return math.degrees(math.asin(min(1.0, abs(cos_or_sin))))


def _geometry_from_chain(chain: Chain) -> dict:
    """Check the chain's structure and derive the solver's constants; ChainError says why not."""
    found = ', '.join(f'{j.name} ({j.type})' for j in chain.joints) or 'none'
    if len(chain.tips) != 1 or not chain.is_serial:
        raise ChainError(f'analytic_hip_knee needs a serial chain with one tip: {_EXPECTED}; '
                         f'found tips {chain.tip_links} and joints {found}')
    if chain.n not in (2, 3):
        raise ChainError(f'analytic_hip_knee: {_EXPECTED}; found {chain.n} moving joints: '
                         f'{found}')
    prismatic = [j.name for j in chain.joints if j.is_prismatic]
    if prismatic:
        raise ChainError(f'analytic_hip_knee: {_EXPECTED}; found prismatic joint(s) '
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
        raise ChainError(f'analytic_hip_knee: the axes of {names[pitch]!r} and {names[knee]!r} '
                         f'must be parallel; they are {_angle_deg(sin_pk):.3g} deg apart '
                         f'({_EXPECTED})')
    geometry = {'n': chain.n, 'limits': (chain.lower.tolist(), chain.upper.tolist())}
    if chain.n == 3:
        a, o = axes[0], origins[0]
        cos_ya = float(np.dot(a, u))
        if abs(cos_ya) > AXIS_TOLERANCE:
            raise ChainError(f'analytic_hip_knee: the hip yaw axis of {names[0]!r} must be '
                             f'perpendicular to the hip pitch axis of {names[1]!r}; they are '
                             f'{90.0 - _angle_deg(cos_ya):.3g} deg apart')
        off = float(np.dot(origins[1] - o, np.cross(a, u)))
        if abs(off) > OFFSET_TOLERANCE_M:
            raise ChainError(f'analytic_hip_knee: the hip pitch axis of {names[1]!r} must meet '
                             f'the hip yaw axis of {names[0]!r}; it passes {abs(off):.4g} m '
                             'from it')
        centre = o + float(np.dot(origins[1] - o, a)) * a  # where the pitch axis meets yaw
        b1, b2 = a, np.cross(u, a)
        geometry.update(yaw_axis=a, side=b2, side_perp=np.cross(a, b2), origin=o)
    else:
        height = float(np.dot(p_tip - origins[0], u))
        centre = origins[0] + height * u  # the plane the tip moves in, on the first axis
        thigh = origins[1] - origins[0]
        thigh = thigh - float(np.dot(thigh, u)) * u
        if np.linalg.norm(thigh) <= OFFSET_TOLERANCE_M:
            raise ChainError(f'analytic_hip_knee: the axis of {names[1]!r} coincides with the '
                             f'axis of {names[0]!r}: the first link has no length')
        b1 = thigh / np.linalg.norm(thigh)
        b2 = np.cross(u, b1)
        geometry.update(normal=u, height=height)
    lateral = float(np.dot(p_tip - centre, u))
    if abs(lateral) > OFFSET_TOLERANCE_M:
        raise ChainError(f'analytic_hip_knee: lateral offset of {lateral:.4g} m along the hip '
                         f'pitch axis of {names[pitch]!r}: tip {chain.tip_link!r} is off the '
                         'plane through the hip yaw axis; the thigh and shin must lie in the '
                         'plane perpendicular to the pitch axes')
    knee_point = origins[knee] - float(np.dot(origins[knee] - centre, u)) * u
    d1, d2 = knee_point - centre, p_tip - knee_point
    l1, l2 = float(np.linalg.norm(d1)), float(np.linalg.norm(d2))
    if l1 <= OFFSET_TOLERANCE_M:
        raise ChainError(f'analytic_hip_knee: the knee axis of {names[knee]!r} passes through '
                         'the hip centre: the thigh has no length')
    if l2 <= OFFSET_TOLERANCE_M:
        raise ChainError(f'analytic_hip_knee: tip {chain.tip_link!r} lies on the knee axis of '
                         f'{names[knee]!r}: the shin has no length')
    lower, upper = geometry['limits']
    geometry['core'] = PlanarCore(
        l1, l2, math.atan2(float(np.dot(d1, b2)), float(np.dot(d1, b1))),
        math.atan2(float(np.dot(d2, b2)), float(np.dot(d2, b1))),
        1.0 if float(np.dot(u, u_knee)) > 0.0 else -1.0,
        (lower[pitch], upper[pitch], lower[knee], upper[knee]))
    geometry.update(centre=centre, b1=b1, b2=b2)
    return geometry


def _dot_row(v: np.ndarray, point: np.ndarray) -> Tuple[float, float, float, float]:
    """(vx, vy, vz, v . point): p . v - (v . point) is then a coordinate of p along v."""
    return float(v[0]), float(v[1]), float(v[2]), float(np.dot(v, point))


# --------------------------------------------------------------------------------- solver
class HipKneeSolver(FloatSolver):
    """Closed-form IK of a hip-yaw + hip-pitch + knee leg, or of a planar 2-link chain.

    Position only; one "iteration". Reachable exactly when the tip-to-hip distance lies in
    ``[|l1 - l2|, l1 + l2]`` and some solution respects the joint limits. Candidates are the two
    knee branches, and for the leg also the yaw flip (yaw + pi with the plane mirrored); the
    ``branch`` parameter orders them, the seed breaks ties. When none respects the limits the
    nearest pose within limits is returned (exact search over the limit boundary).

    ``min_residual`` is a proven lower bound of the position error [m]: the distance from the
    target to the reachable annulus (plus, for the planar chain, the distance off its plane);
    0.0 when a limit-respecting solution was found; None when the target is geometrically
    reachable but the limits forbid it (status ``joint_limited``).
    """

    name = 'analytic_hip_knee'
    supports_orientation = False
    PARAMS = {
        'branch': ParamSpec(str, 'closest', 'knee branch: forward (shin turned positively about '
                            'the pitch axis), backward, or closest to the seed (continuity)',
                            choices=('forward', 'backward', 'closest')),
    }

    def check_chain(self, chain: Chain) -> None:
        """Refuse chains that are not a hip-yaw + 2-link leg or a planar 2-link chain.

        Also derives and stores the solver's geometry (lengths, zero angles, frames).

        Raises:
            ChainError: naming the expected structure and what the chain has instead.
        """
        g = _geometry_from_chain(chain)
        self._n = g['n']
        self._core: PlanarCore = g['core']
        lower, upper = g['limits']
        branch = self.params['branch']
        self._pref_forward = 1 if branch == 'backward' else 0
        self._pref_backward = 1 if branch == 'forward' else 0
        self._record = self.params['record_history']
        c = g['centre']
        self._centre = np.asarray(c, dtype=float)
        if self._n == 3:
            self._yaw_limits = (lower[0], upper[0])
            # X: height above the hip centre; E1, E2: horizontal coordinates about the yaw axis.
            self._rows = (_dot_row(g['yaw_axis'], c) + _dot_row(g['side'], c) +
                          _dot_row(g['side_perp'], c))
        else:
            self._rows = (_dot_row(g['b1'], c) + _dot_row(g['b2'], c) +
                          _dot_row(g['normal'], c))

    def reach_envelope(self, tip: Optional[str] = None) -> Tuple[np.ndarray, float, float]:
        """The geometric reach: ``(centre, r_min, r_max)`` [m] about the hip centre.

        For the leg the tip reaches (limits aside) the spherical shell between the radii; for the
        planar core, the annulus in its plane. Used by the node's envelope marker.
        """
        return self._centre.copy(), self._core.r_inner, self._core.r_outer

    # ------------------------------------------------------------------------------ solving
    def _solve_floats(self, p_target: List[float], R_target: Optional[np.ndarray],
                      q_seed: List[float]) -> RawSolution:
        px, py, pz = p_target
        ax, ay, az, ak, bx, by, bz, bk, cx, cy, cz, ck = self._rows
        x = px * ax + py * ay + pz * az - ak
        e1 = px * bx + py * by + pz * bz - bk
        e2 = px * cx + py * cy + pz * cz - ck
        if self._n == 3:
            return self._solve_leg(x, e1, e2, q_seed)
        return self._solve_planar(x, e1, e2, q_seed)

    def _solve_leg(self, x: float, e1: float, e2: float, seed: List[float]) -> RawSolution:
        core = self._core
        s0, s1, s2 = seed
        lo0, hi0 = self._yaw_limits
        rho = math.hypot(e1, e2)
        r = math.hypot(x, rho)
        miss = annulus_distance(r, core.r_inner, core.r_outer)
        gamma, q2f, q2b = core.bend(r)
        note = ''
        # Candidate planes: (yaw, hip pitch of the forward branch, of the backward branch).
        if r <= DEGENERATE_DISTANCE_M:
            note = ('target at the hip pitch origin: direction undefined, kept the seed\'s yaw '
                    'and thigh direction')
            planes = ((s0, s1, s1),)
        else:
            psi, a1 = core.thigh_offset(gamma), core.alpha1
            if rho <= DEGENERATE_DISTANCE_M:
                note = 'target on the hip yaw axis: yaw is free, kept the seed\'s yaw'
                beta = math.atan2(e1 * math.cos(s0) + e2 * math.sin(s0), x)
                planes = ((s0, beta - psi - a1, beta + psi - a1),)
            else:  # the plane through the target, and the yaw flip (plane mirrored)
                phi, beta = math.atan2(e2, e1), math.atan2(rho, x)
                planes = ((phi, beta - psi - a1, beta + psi - a1),
                          (phi + math.pi, -beta - psi - a1, -beta + psi - a1))
        lo1, hi1, lo2, hi2 = core.lower1, core.upper1, core.lower2, core.upper2
        n2f, n2b = near_angle(q2f, s2, lo2, hi2), near_angle(q2b, s2, lo2, hi2)
        pref_f, pref_b = self._pref_forward, self._pref_backward
        best = None  # ((preference, squared distance to the seed), q0, q1, q2)
        for yaw, q1f, q1b in planes:
            q0 = near_angle(yaw, s0, lo0, hi0)
            if q0 is None:
                continue
            d0 = (q0 - s0) ** 2
            if n2f is not None:
                q1 = near_angle(q1f, s1, lo1, hi1)
                if q1 is not None:
                    key = (pref_f, d0 + (q1 - s1) ** 2 + (n2f - s2) ** 2)
                    if best is None or key < best[0]:
                        best = (key, q0, q1, n2f)
            if n2b is not None:
                q1 = near_angle(q1b, s1, lo1, hi1)
                if q1 is not None:
                    key = (pref_b, d0 + (q1 - s1) ** 2 + (n2b - s2) ** 2)
                    if best is None or key < best[0]:
                        best = (key, q0, q1, n2b)
        if best is not None:
            q = list(best[1:])
            error = miss
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

    def _raw(self, q: List[float], miss: float, bound: float, within_limits: bool,
             error: float, note: str) -> RawSolution:
        """Status, proven residual and message of a pose (``error``: its predicted miss [m])."""
        history = [error] if self._record else None
        if bound > TIE_M:  # below: rounding at the rim of the shell
            core = self._core
            where = (f'{miss:.4g} m outside the reachable shell [{core.r_inner:.4g}, '
                     f'{core.r_outer:.4g}] m around the hip' if miss > 0.0 else
                     f'{bound:.4g} m off the plane of the chain')
            limited = '' if within_limits else '; joint limits bind too'
            message = f'target is {where}: returned the nearest pose{limited}'
            return RawSolution(q, IkStatus.UNREACHABLE, 1, bound,
                               f'{message}; {note}' if note else message, history)
        if within_limits:
            status = IkStatus.DEGENERATE if note else IkStatus.CONVERGED
            return RawSolution(q, status, 1, 0.0, note, history)
        message = (f'every solution breaks a joint limit: returned the nearest pose within '
                   f'limits, {error:.4g} m from the target')
        return RawSolution(q, IkStatus.JOINT_LIMITED, 1, None,
                           f'{message}; {note}' if note else message, history)
