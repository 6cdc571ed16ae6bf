"""The compiled analytic legs: every leg of a tree of independent legs in one numba call.

:func:`_solve_legs` answers ``solve(targets={foot: position})`` of
:class:`~ik_node.solvers.hip_knee.solver.HipKneeSolver` on a tree of 3-joint legs (a
quadruped's four legs): per targeted leg the closed form of
:meth:`HipKneeSolver._solve_leg` (a leg whose pitch axis meets the first axis) or of
:class:`~ik_node.solvers.hip_knee.offset_leg.OffsetLeg` (an axis offset), in reach, with the
same candidates, ranking and angle choices, then what :meth:`Solver._measured
<ik_node.solvers.base.Solver._measured>` does to the answer: the clip into the limits, the check
of whole turns, the foot's position by forward kinematics of the returned joints (the kernel
library's :func:`~ik_node.kernels.fk.frames` on the chain's own constant transforms,
not the leg's geometry) and the error against the target.

The kernel answers only the common case: every targeted foot in reach, a limit-respecting
solution, no degenerate direction, the measured error within tolerance, finite input. Anything
else (a foot out of reach or behind the limits, a target on an axis, a NaN) returns
:data:`FALL_BACK` and the Python path answers, with its statuses, messages and errors: the same
answers either way (``test/core/test_compiled_legs.py``), the last bits of a few angles aside.
Each leg is one row of the model array (:func:`leg_row`, beside the kernel that reads it);
:class:`~ik_node.solvers.hip_knee.compiled_legs.CompiledLegs` binds the kernel to one tree.
The offset leg's nearest pose is a kernel module of its own (:mod:`.compiled_nearest`).

:mod:`ik_node.kernels` compiles the kernel (or loads it from numba's cache) in its
background thread; until then, and where numba cannot serve, the Python path answers.
"""

from __future__ import annotations

import math
from typing import Any, Dict

import numpy as np

import ik_node.kernels as kernels
from ik_node.kernels import fk, planar
# planar_core's constants (a test keeps them equal), shared with the offset leg's nearest pose.
from ik_node.solvers.hip_knee.compiled_nearest import DEGENERATE_DISTANCE_M, TIE_M
from ik_node.solvers.input_checks import MAX_COORDINATE_M

_PI = math.pi
_TWO_PI = 2.0 * math.pi

# The kernel's answer.
OK = 0
FALL_BACK = 1  # the Python path answers

# Columns of the model array, one row per leg: the three rows of leg coordinates, the kind, the
# leg's constants (as HipKneeSolver._leg_constants), the planar core's, the joints' indices in
# the tree, which of them turn whole turns, the tolerance. The forward kinematics of each leg is
# a (4, FK_COLUMNS) block of the frames array beside it (leg_frames): the kernel library's
# serial model (kernels.fk: the constant 3 x 4 transforms of SerialKinematics, joint axes along
# z, every joint revolute), three joints' rows and the tip's.
_ROWS = 0
(_KIND, _LO0, _HI0, _H, _AH, _R_INNER, _R_OUTER, _LO1, _HI1, _LO2, _HI2, _RANK_F, _RANK_B,
 _L1L1_L2L2, _TWO_L1L2, _KNEE_SIGN, _DELTA, _L1, _L2, _ALPHA1, _D, _PREF_F, _PREF_B,
 _J0, _J1, _J2, _TURN0, _TURN1, _TURN2, _TOL_P) = range(12, 42)
COLUMNS = 42  # the columns of a leg's row
FK_COLUMNS = fk.PRISMATIC + 1  # the columns of a row of a leg's frames (fk.frames' model)
# Kinds of leg (HipKneeSolver._kind).
LEG, OFFSET_LEG = 0, 1


# ------------------------------------------------------------------------- the kernel (numba)
def _bend(leg, r):
    """PlanarCore.bend: ``(gamma, q2 forward, q2 backward)``."""
    c = (r * r - leg[_L1L1_L2L2]) / leg[_TWO_L1L2]
    c = 1.0 if c > 1.0 else (-1.0 if c < -1.0 else c)
    gamma = math.acos(c)
    s, d = leg[_KNEE_SIGN], leg[_DELTA]
    return gamma, s * (gamma - d), s * (-gamma - d)


def _thigh_offset(leg, gamma):
    """PlanarCore.thigh_offset [rad]."""
    l2 = leg[_L2]
    return math.atan2(l2 * math.sin(gamma), leg[_L1] + l2 * math.cos(gamma))


def _solve_leg(leg, x, e1, e2, s0, s1, s2):
    """HipKneeSolver._solve_leg in its common case (in reach, no note): ``(found, q0, q1,
    q2)``, found False where the Python path answers."""
    lo0, hi0, h, ah = leg[_LO0], leg[_HI0], leg[_H], leg[_AH]
    lo1, hi1, lo2, hi2 = leg[_LO1], leg[_HI1], leg[_LO2], leg[_HI2]
    pref_f, pref_b = leg[_RANK_F], leg[_RANK_B]
    rho = math.hypot(e1, e2)
    if h != 0.0:
        if rho < ah:
            return False, 0.0, 0.0, 0.0
        m = math.sqrt((rho - ah) * (rho + ah))
        tilt = math.atan2(h, m)
    else:
        m, tilt = rho, 0.0
    r = math.hypot(x, m)
    r_outer, r_inner = leg[_R_OUTER], leg[_R_INNER]
    miss = r - r_outer if r > r_outer else (r_inner - r if r < r_inner else 0.0)
    if miss > TIE_M or r <= DEGENERATE_DISTANCE_M or rho <= DEGENERATE_DISTANCE_M:
        return False, 0.0, 0.0, 0.0
    gamma, q2f, q2b = _bend(leg, r)
    psi, a1 = _thigh_offset(leg, gamma), leg[_ALPHA1]
    phi, beta = math.atan2(e2, e1), math.atan2(m, x)
    found = False
    best = b0 = b1 = b2 = 0.0
    ok_f, n2f = planar.near_angle(q2f, s2, lo2, hi2)
    ok_b, n2b = planar.near_angle(q2b, s2, lo2, hi2)
    for plane in range(2):
        if plane == 0:
            yaw, q1f, q1b = phi - tilt, beta - psi - a1, beta + psi - a1
        else:
            yaw, q1f, q1b = phi + _PI + tilt, -beta - psi - a1, -beta + psi - a1
        ok, q0 = planar.near_angle(yaw, s0, lo0, hi0)
        if not ok:
            continue
        d0 = (q0 - s0) ** 2
        if ok_f:
            ok, q1 = planar.near_angle(q1f, s1, lo1, hi1)
            if ok:
                rank = d0 + (q1 - s1) ** 2 + (n2f - s2) ** 2
                if pref_f != 0.0:
                    rank += pref_f
                if not found or rank < best:
                    found, best, b0, b1, b2 = True, rank, q0, q1, n2f
        if ok_b:
            ok, q1 = planar.near_angle(q1b, s1, lo1, hi1)
            if ok:
                rank = d0 + (q1 - s1) ** 2 + (n2b - s2) ** 2
                if pref_b != 0.0:
                    rank += pref_b
                if not found or rank < best:
                    found, best, b0, b1, b2 = True, rank, q0, q1, n2b
    return found, b0, b1, b2


def _solve_offset_leg(leg, x, e1, e2, s0, s1, s2):
    """OffsetLeg.solve in its common case (in reach within the limits, no note): ``(found,
    q0, q1, q2)``, found False where the Python path answers."""
    h, d = leg[_H], leg[_D]
    rho = math.hypot(e1, e2)
    if rho <= DEGENERATE_DISTANCE_M and h == 0.0:
        return False, 0.0, 0.0, 0.0
    if rho < abs(h):
        return False, 0.0, 0.0, 0.0
    phi = math.atan2(e2, e1)
    m = math.sqrt((rho - abs(h)) * (rho + abs(h))) if h != 0.0 else rho
    tilt = math.atan2(h, m)
    planes = 1 if m == 0.0 else 2
    lo0, hi0 = leg[_LO0], leg[_HI0]
    lo1, hi1, lo2, hi2 = leg[_LO1], leg[_HI1], leg[_LO2], leg[_HI2]
    r_inner, r_outer, a1 = leg[_R_INNER], leg[_R_OUTER], leg[_ALPHA1]
    found = False
    best_pref = best_dist = b0 = b1 = b2 = 0.0
    for plane in range(planes):
        if planes == 1:
            yaw, y = phi - tilt, -d
        elif plane == 0:
            yaw, y = phi - tilt, m - d
        else:
            yaw, y = phi + _PI + tilt, -m - d
        r = math.hypot(x, y)
        miss = r - r_outer if r > r_outer else (r_inner - r if r < r_inner else 0.0)
        if miss > TIE_M:
            continue
        ok, q0 = planar.near_angle(yaw, s0, lo0, hi0)
        if not ok:
            continue
        gamma, q2f, q2b = _bend(leg, r)
        if r <= DEGENERATE_DISTANCE_M:
            return False, 0.0, 0.0, 0.0  # a note: the Python path
        beta, psi = math.atan2(y, x), _thigh_offset(leg, gamma)
        q1f, q1b = beta - psi - a1, beta + psi - a1
        d0 = (q0 - s0) ** 2
        for branch in range(2):
            if branch == 0:
                pref, q1, q2 = leg[_PREF_F], q1f, q2f
            else:
                pref, q1, q2 = leg[_PREF_B], q1b, q2b
            ok, n2 = planar.near_angle(q2, s2, lo2, hi2)
            if not ok:
                continue
            ok, n1 = planar.near_angle(q1, s1, lo1, hi1)
            if not ok:
                continue
            dist = d0 + (n1 - s1) ** 2 + (n2 - s2) ** 2
            if not found or pref < best_pref or (pref == best_pref and dist < best_dist):
                found, best_pref, best_dist = True, pref, dist
                b0, b1, b2 = q0, n1, n2
    return found, b0, b1, b2


def _foot_error(leg_frames, angles, target, work):
    """The distance [m] of the foot at ``angles`` (q0, q1, q2) from ``target`` (x, y, z):
    :func:`~ik_node.kernels.fk.frames` of the leg's serial model ``leg_frames``;
    ``work``: ``(axes, origins, T)``, that function's scratch."""
    axes, origins, T = work
    fk.frames(leg_frames, 3, angles, axes, origins, T)
    dx, dy, dz = T[0, 3] - target[0], T[1, 3] - target[1], T[2, 3] - target[2]
    return math.sqrt(dx * dx + dy * dy + dz * dz)


def _clip(value, lower, upper):
    """clip_values for one value: ``(finite, clipped)``."""
    if lower <= value <= upper:
        return True, value
    if value < lower:
        return True, lower
    if value > upper:
        return True, upper
    return False, value  # NaN


def _solve_legs(model, frames, P, targeted, seed, q, errors):
    """Every targeted leg solved from ``seed`` clipped into the limits: leg ``targeted[r]``
    (its row of ``model``, its block of ``frames``) toward ``P[r]`` (x, y, z [m]). The tree's
    joints into ``q`` (the clipped seed where no leg is targeted), the measured error [m] of foot
    ``targeted[r]`` into ``errors[r]``. :data:`OK`, or :data:`FALL_BACK` where the Python path
    answers."""
    work = (np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 4)))  # fk.frames' scratch
    for k in range(model.shape[0]):  # the seed, within the limits (a NaN or inf: Python)
        leg = model[k]
        for j in range(3):
            i = int(leg[_J0 + j])
            v = seed[i]
            if not math.isfinite(v):
                return FALL_BACK
            lower = leg[_LO0] if j == 0 else (leg[_LO1] if j == 1 else leg[_LO2])
            upper = leg[_HI0] if j == 0 else (leg[_HI1] if j == 1 else leg[_HI2])
            q[i] = lower if v < lower else (upper if v > upper else v)
    for r in range(P.shape[0]):
        leg = model[targeted[r]]
        tx, ty, tz = P[r, 0], P[r, 1], P[r, 2]
        if not (-MAX_COORDINATE_M <= tx <= MAX_COORDINATE_M and
                -MAX_COORDINATE_M <= ty <= MAX_COORDINATE_M and
                -MAX_COORDINATE_M <= tz <= MAX_COORDINATE_M):
            return FALL_BACK
        j0, j1, j2 = int(leg[_J0]), int(leg[_J1]), int(leg[_J2])
        s0, s1, s2 = q[j0], q[j1], q[j2]
        x = tx * leg[0] + ty * leg[1] + tz * leg[2] - leg[3]
        e1 = tx * leg[4] + ty * leg[5] + tz * leg[6] - leg[7]
        e2 = tx * leg[8] + ty * leg[9] + tz * leg[10] - leg[11]
        if leg[_KIND] == LEG:
            found, a0, a1, a2 = _solve_leg(leg, x, e1, e2, s0, s1, s2)
        else:
            found, a0, a1, a2 = _solve_offset_leg(leg, x, e1, e2, s0, s1, s2)
        if not found:
            return FALL_BACK
        ok0, v0 = _clip(a0, leg[_LO0], leg[_HI0])
        ok1, v1 = _clip(a1, leg[_LO1], leg[_HI1])
        ok2, v2 = _clip(a2, leg[_LO2], leg[_HI2])
        if not (ok0 and ok1 and ok2 and math.isfinite(v0 + v1 + v2)):
            return FALL_BACK
        # Whole turns: a joint not within half a turn of its seed takes nearest_turns (Python).
        if (leg[_TURN0] != 0.0 and not -_PI <= s0 - v0 <= _PI) or \
                (leg[_TURN1] != 0.0 and not -_PI <= s1 - v1 <= _PI) or \
                (leg[_TURN2] != 0.0 and not -_PI <= s2 - v2 <= _PI):
            return FALL_BACK
        error = _foot_error(frames[targeted[r]], (v0, v1, v2), (tx, ty, tz), work)
        if not error <= leg[_TOL_P]:
            return FALL_BACK
        q[j0], q[j1], q[j2] = v0, v1, v2
        errors[r] = error
    return OK


_KERNELS: Dict[str, Any] = {}
_HELPERS = ('_bend', '_thigh_offset', '_solve_leg', '_solve_offset_leg', '_foot_error', '_clip')


def compile() -> None:  # noqa: A001 - the kernel modules' entry point is named so
    """Compile the kernel (or load it from numba's cache on disk) and run it once;
    :mod:`ik_node.kernels` calls it in its loading thread."""
    if not _KERNELS:
        fk.compile()
        planar.compile()
        kernel = kernels.jitted(globals(), _HELPERS, ('_solve_legs',))['_solve_legs']
        _exercise(kernel)
        _KERNELS['solve_legs'] = kernel


def _exercise(kernel) -> None:
    """Run the kernel once on two made-up legs (one of each kind), so that numba compiles (or
    loads) it now, not in a solve."""
    model = np.zeros((2, COLUMNS))
    for k in range(2):
        leg = model[k]
        leg[0], leg[5], leg[10] = -1.0, 1.0, 1.0  # x down, e1 along y, e2 along z
        leg[_KIND] = (LEG, OFFSET_LEG)[k]
        leg[_LO0] = leg[_LO1] = leg[_LO2] = -3.0
        leg[_HI0] = leg[_HI1] = leg[_HI2] = 3.0
        leg[_R_INNER], leg[_R_OUTER] = 0.0, 0.4
        leg[_L1] = leg[_L2] = 0.2
        leg[_L1L1_L2L2], leg[_TWO_L1L2], leg[_KNEE_SIGN] = 0.08, 0.08, 1.0
        leg[_J0], leg[_J1], leg[_J2] = 3 * k, 3 * k + 1, 3 * k + 2
        leg[_TOL_P] = 1e-5
    frames = np.zeros((2, 4, FK_COLUMNS))
    frames[:, :, 0] = frames[:, :, 5] = frames[:, :, 10] = 1.0  # identity transforms
    P = np.array([[0.3, 0.05, 0.0], [0.3, 0.05, 0.0]])
    targeted = np.arange(2)
    for seed in (np.zeros(6), np.zeros(12)[::2]):  # a seed in one block of memory, or not
        kernel(model, frames, P, targeted, seed, np.empty(6), np.empty(2))


def leg_row(leg) -> np.ndarray:
    """The model row of one leg (a :class:`~ik_node.solvers.trees.legs.Leg` whose solver is a
    3-joint HipKneeSolver)."""
    solver = leg.solver
    row = np.zeros(COLUMNS)
    row[0:12] = solver._rows
    row[_KIND] = solver._kind
    (row[_LO0], row[_HI0], row[_H], row[_AH], row[_R_INNER], row[_R_OUTER], row[_LO1],
     row[_HI1], row[_LO2], row[_HI2], row[_RANK_F], row[_RANK_B]) = solver._leg_constants
    core = solver._core
    row[_L1L1_L2L2], row[_TWO_L1L2] = core.l1l1_l2l2, core.two_l1l2
    row[_KNEE_SIGN], row[_DELTA] = core.knee_sign, core.delta
    row[_L1], row[_L2], row[_ALPHA1] = core.l1, core.l2, core.alpha1
    row[_D] = solver._geometry.axis_offset
    row[_PREF_F], row[_PREF_B] = solver._pref_forward, solver._pref_backward
    row[_J0:_J0 + 3] = leg.joints
    for i in solver._turn_joints:
        row[_TURN0 + i] = 1.0
    row[_TOL_P] = solver._tol_p
    return row


def leg_frames(leg) -> np.ndarray:
    """The frames block of one leg, (4, :data:`FK_COLUMNS`): its joints' and its foot's
    constant transforms as :func:`~ik_node.kernels.fk.frames` reads them."""
    fast = leg.solver._fast_kinematics
    return fk.model_rows(list(fast.joint_transforms) + [fast.tip_transform], (), FK_COLUMNS)
