"""The compiled analytic legs: every leg of a tree of independent legs in one numba call.

:class:`CompiledLegs` answers ``solve(targets={foot: position})`` of
:class:`~ik_node.solvers.hip_knee.solver.HipKneeSolver` on a tree of 3-joint legs (a
quadruped's four legs) in one call of :func:`_solve_legs`: per targeted leg the closed form of
:meth:`HipKneeSolver._solve_leg` (a leg whose pitch axis meets the first axis) or of
:class:`~ik_node.solvers.hip_knee.offset_leg.OffsetLeg` (an axis offset), in reach, with the
same candidates, ranking and angle choices, then what :meth:`Solver._measured
<ik_node.solvers.base.Solver._measured>` does to the answer: the clip into the limits, the check
of whole turns, the foot's position by forward kinematics of the returned joints (the chain's
own constant transforms, not the leg's geometry) and the error against the target.

The kernel answers only the common case: every targeted foot in reach, a limit-respecting
solution, no degenerate direction, the measured error within tolerance, finite input. Anything
else (a foot out of reach or behind the limits, a target on an axis, a NaN, an orientation, a
seed that is not a float array of the tree's size) returns None and the Python path answers, with
its statuses, messages and errors: the same answers either way
(``test/core/test_compiled_legs.py``), the last bits of a few angles aside.

:mod:`ik_node.solvers.kernels` compiles the kernel (or loads it from numba's cache) in its
background thread; until then, and where numba cannot serve, the Python path answers.
"""

from __future__ import annotations

import math
import time
from typing import Any, Dict, Optional

import numpy as np

import ik_node.solvers.kernels as kernels
from ik_node.solvers.kernels import planar
from ik_node.solvers.input_checks import FLOAT64, MAX_COORDINATE_M
from ik_node.solvers.results import IkResult, IkStatus, TipResult

_PI = math.pi
_TWO_PI = 2.0 * math.pi
#: planar_core's constants (a test keeps them equal).
DEGENERATE_DISTANCE_M = 1e-9
TIE_M = 1e-10

# The kernel's answer.
OK = 0
FALL_BACK = 1  # the Python path answers

# Columns of the model array, one row per leg: the three rows of leg coordinates, the kind, the
# leg's constants (as HipKneeSolver._leg_constants), the planar core's, the joints' indices in
# the tree, which of them turn whole turns, the tolerance, then the forward kinematics: three
# joints' constant 3 x 4 transforms and the tip's (SerialKinematics, joint axes along z).
_ROWS = 0
(_KIND, _LO0, _HI0, _H, _AH, _R_INNER, _R_OUTER, _LO1, _HI1, _LO2, _HI2, _RANK_F, _RANK_B,
 _L1L1_L2L2, _TWO_L1L2, _KNEE_SIGN, _DELTA, _L1, _L2, _ALPHA1, _D, _PREF_F, _PREF_B,
 _J0, _J1, _J2, _TURN0, _TURN1, _TURN2, _TOL_P) = range(12, 42)
_FK = 42
_COLUMNS = _FK + 48
# Kinds of leg (HipKneeSolver._kind).
LEG, OFFSET_LEG = 0, 1


def available() -> bool:
    """Whether the compiled path may serve (:func:`ik_node.solvers.kernels.available`)."""
    return kernels.available()


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


def _foot_error(leg, q0, q1, q2, tx, ty, tz):
    """The distance [m] of the foot at ``(q0, q1, q2)`` (forward kinematics of the leg's
    constant transforms) from ``(tx, ty, tz)``."""
    # F: the frame so far (3 x 4, row-major), G: the next joint's frame before its turn.
    f00, f01, f02, f03 = 1.0, 0.0, 0.0, 0.0
    f10, f11, f12, f13 = 0.0, 1.0, 0.0, 0.0
    f20, f21, f22, f23 = 0.0, 0.0, 1.0, 0.0
    for i in range(3):
        c = _FK + 12 * i
        angle = q0 if i == 0 else (q1 if i == 1 else q2)
        g00 = f00 * leg[c] + f01 * leg[c + 4] + f02 * leg[c + 8]
        g01 = f00 * leg[c + 1] + f01 * leg[c + 5] + f02 * leg[c + 9]
        g02 = f00 * leg[c + 2] + f01 * leg[c + 6] + f02 * leg[c + 10]
        g03 = f00 * leg[c + 3] + f01 * leg[c + 7] + f02 * leg[c + 11] + f03
        g10 = f10 * leg[c] + f11 * leg[c + 4] + f12 * leg[c + 8]
        g11 = f10 * leg[c + 1] + f11 * leg[c + 5] + f12 * leg[c + 9]
        g12 = f10 * leg[c + 2] + f11 * leg[c + 6] + f12 * leg[c + 10]
        g13 = f10 * leg[c + 3] + f11 * leg[c + 7] + f12 * leg[c + 11] + f13
        g20 = f20 * leg[c] + f21 * leg[c + 4] + f22 * leg[c + 8]
        g21 = f20 * leg[c + 1] + f21 * leg[c + 5] + f22 * leg[c + 9]
        g22 = f20 * leg[c + 2] + f21 * leg[c + 6] + f22 * leg[c + 10]
        g23 = f20 * leg[c + 3] + f21 * leg[c + 7] + f22 * leg[c + 11] + f23
        cq, sq = math.cos(angle), math.sin(angle)
        f00, f01, f02, f03 = g00 * cq + g01 * sq, g01 * cq - g00 * sq, g02, g03
        f10, f11, f12, f13 = g10 * cq + g11 * sq, g11 * cq - g10 * sq, g12, g13
        f20, f21, f22, f23 = g20 * cq + g21 * sq, g21 * cq - g20 * sq, g22, g23
    c = _FK + 36
    px = f00 * leg[c + 3] + f01 * leg[c + 7] + f02 * leg[c + 11] + f03
    py = f10 * leg[c + 3] + f11 * leg[c + 7] + f12 * leg[c + 11] + f13
    pz = f20 * leg[c + 3] + f21 * leg[c + 7] + f22 * leg[c + 11] + f23
    dx, dy, dz = px - tx, py - ty, pz - tz
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


def _solve_legs(model, P, targeted, seed, q, errors):
    """Every targeted leg solved from ``seed`` clipped into the limits: leg ``targeted[r]``
    toward ``P[r]`` (x, y, z [m]). The tree's joints into ``q`` (the clipped seed where no leg
    is targeted), the measured error [m] of foot ``targeted[r]`` into ``errors[r]``.
    :data:`OK`, or :data:`FALL_BACK` where the Python path answers."""
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
        error = _foot_error(leg, v0, v1, v2, tx, ty, tz)
        if not error <= leg[_TOL_P]:
            return FALL_BACK
        q[j0], q[j1], q[j2] = v0, v1, v2
        errors[r] = error
    return OK


_KERNELS: Dict[str, Any] = {}
_HELPERS = ('_bend', '_thigh_offset', '_solve_leg', '_solve_offset_leg', '_foot_error', '_clip')


def compile() -> None:  # noqa: A001 - the kernel modules' entry point is named so
    """Compile the kernel (or load it from numba's cache on disk) and run it once;
    :mod:`ik_node.solvers.kernels` calls it in its loading thread."""
    if not _KERNELS:
        planar.compile()
        kernel = kernels.jitted(globals(), _HELPERS, ('_solve_legs',))['_solve_legs']
        _exercise(kernel)
        nearest = kernels.jitted(globals(), _NEAREST_HELPERS,
                                 ('_nearest_offset_leg',))['_nearest_offset_leg']
        _exercise_nearest(nearest)
        _KERNELS['nearest_offset_leg'] = nearest
        _KERNELS['solve_legs'] = kernel


def _exercise(kernel) -> None:
    """Run the kernel once on two made-up legs (one of each kind), so that numba compiles (or
    loads) it now, not in a solve."""
    model = np.zeros((2, _COLUMNS))
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
        for i in range(4):
            leg[_FK + 12 * i:_FK + 12 * i + 12] = np.eye(4)[:3].ravel()
    P = np.array([[0.3, 0.05, 0.0], [0.3, 0.05, 0.0]])
    targeted = np.arange(2)
    for seed in (np.zeros(6), np.zeros(12)[::2]):  # a seed in one block of memory, or not
        kernel(model, P, targeted, seed, np.empty(6), np.empty(2))


# ---------------------------------------------------------------------------- the wrap
class CompiledLegs:
    """The compiled kernel bound to one tree of legs (a ``HipKneeSolver`` with ``legs``).

    :meth:`solve` answers ``solve(targets=..., seed=...)`` in the common case and returns None
    otherwise (the Python path then answers). Built only where numba may serve
    (:func:`of`); the kernel loads in the background from the first solve on.
    """

    def __init__(self, solver, compiled_kernels: Optional[Dict[str, Any]] = None):
        chain = solver.chain
        legs = solver.legs.legs
        self.n = chain.n
        self.tips = tuple(chain.tip_links)
        self.tip_index = dict(solver._tip_index)
        self.joint_names = tuple(chain.joint_names)
        self.q_mid = chain.mid_configuration()
        model = np.zeros((len(legs), _COLUMNS))
        for k, leg in enumerate(legs):
            model[k] = _leg_row(leg)
        self.model = model
        self.legs = len(legs)
        self._shape = (chain.n,)
        self._every_leg = np.arange(len(legs), dtype=np.intp)
        self._kernels = _KERNELS if compiled_kernels is None else compiled_kernels
        self._kernel = None  # set once loaded
        self._loading = False

    @classmethod
    def of(cls, solver) -> Optional['CompiledLegs']:
        """The compiled legs of ``solver`` (a HipKneeSolver) where numba may serve, the tree's
        legs are 3-joint legs that cover every joint, and no history is recorded; else None."""
        legs = getattr(solver, 'legs', None)
        if legs is None or not available() or solver.params['record_history']:
            return None
        covered = sorted(j for leg in legs.legs for j in leg.joints)
        if covered != list(range(solver.chain.n)) or any(
                getattr(leg.solver, '_kind', None) not in (LEG, OFFSET_LEG) or
                leg.solver._n != 3 or leg.solver._fast_kinematics is None
                for leg in legs.legs):
            return None
        return cls(solver)

    def ready(self) -> bool:
        """Whether the kernel is loaded (never blocks)."""
        return bool(self._kernels) and (self._kernels is not _KERNELS or kernels.ready())

    def solve(self, targets: Any, seed: Any) -> Optional[IkResult]:
        """The :class:`~ik_node.solvers.results.IkResult` of ``solve(targets=targets,
        seed=seed)`` when every targeted foot is reached in the kernel's common case, else None
        (the Python path answers: unusual input, a foot out of reach, behind the limits, on an
        axis, or the kernel not loaded yet)."""
        kernel = self._kernel
        if kernel is None:
            kernel = self._kernel = self._loaded_kernel()
            if kernel is None:
                return None
        start = time.perf_counter()
        if type(targets) is not dict:
            return None
        if seed is None:
            seed = self.q_mid
        elif type(seed) is not np.ndarray or seed.dtype is not FLOAT64 or \
                seed.shape != self._shape:
            return None  # the Python path reads (or refuses) it
        try:  # the positions as one (targets, 3) array (a quaternion makes it ragged: Python)
            P = np.array(list(targets.values()), dtype=FLOAT64)
        except (TypeError, ValueError):
            return None
        if P.shape != (len(targets), 3) or not targets:
            return None
        tips = self.tips
        if len(targets) == self.legs and tuple(targets) == tips:  # every foot, in tip order
            targeted, order = self._every_leg, tips
        else:
            index = self.tip_index
            try:
                rows = [index[tip] for tip in targets]
            except (KeyError, TypeError):  # not a tip: the Python path names it
                return None
            targeted = np.array(rows, dtype=np.intp)
            order = None
        q = np.empty(self.n)
        errors = np.empty(len(targets))
        if kernel(self.model, P, targeted, seed, q, errors) != OK:
            return None
        values = errors.tolist()
        if order is None:  # the tips in the order of the chain's tips
            pairs = sorted(zip(rows, values))
            order = [tips[k] for k, _ in pairs]
            values = [e for _, e in pairs]
        results = {}
        for tip, error in zip(order, values):
            result = _new_object(TipResult)
            _set_attribute(result, '__dict__', {
                'reachable': True, 'position_error': error, 'min_residual': 0.0,
                'status': _CONVERGED, 'orientation_error': None, 'message': '',
                'best_found': False})
            results[tip] = result
        result = _new_object(IkResult)  # new_result's dict, without its keyword arguments
        _set_attribute(result, '__dict__', {
            'joint_positions': q, 'joint_names': self.joint_names, 'reachable': True,
            'status': _CONVERGED, 'position_error': max(values), 'orientation_error': None,
            'min_residual': 0.0, 'iterations': len(values),
            'solve_time': time.perf_counter() - start, 'message': '', 'orientation_ignored': False,
            'history': None, 'tips': results, 'best_found': False})
        return result

    def _loaded_kernel(self):
        """The kernel once loaded, else None (the first call starts loading it)."""
        if self.ready():
            return self._kernels['solve_legs']
        if not self._loading:
            self._loading = True
            kernels.start()  # once, in the background
        return None


_new_object = object.__new__
_set_attribute = object.__setattr__
_CONVERGED = IkStatus.CONVERGED


def _leg_row(leg) -> np.ndarray:
    """The model row of one leg (a :class:`~ik_node.solvers.trees.legs.Leg` whose solver is a
    3-joint HipKneeSolver)."""
    solver = leg.solver
    row = np.zeros(_COLUMNS)
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
    fast = solver._fast_kinematics
    for i, C in enumerate(list(fast.joint_transforms) + [fast.tip_transform]):
        row[_FK + 12 * i:_FK + 12 * i + 12] = np.asarray(C, dtype=float)[:3, :4].ravel()
    return row



# ------------------------------------------------ the nearest pose of an offset leg (numba)
# OffsetLeg.nearest_within_limits, compiled: the same samples of the first joint, the same
# planar-core candidates per sample, the same brackets, refinement and ranking.
# Columns of its row (nearest_row): the planar core's constants, the offsets, the first
# joint's limits, then the core's limit edges: up to two thigh edges (q1, knee x, knee y) and
# up to two knee edges (q2, the rigid leg's direction at zero thigh angle).
(_C_L1, _C_L2, _C_ALPHA1, _C_ALPHA2, _C_SIGN, _C_DELTA, _C_LO1, _C_HI1, _C_LO2, _C_HI2,
 _C_L1L1_L2L2, _C_TWO_L1L2, _C_H, _C_D, _C_LO0, _C_HI0, _C_FULL, _C_THIGHS, _C_THIGH,
 _C_KNEES) = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 24)
_C_KNEE = 25
_C_COLUMNS = 29
#: OffsetLeg's constants (a test keeps them equal).
SAMPLE_STEP = 0.15
REFINED_BASINS = 3
ANGLE_TOLERANCE = 1e-12
MAX_REFINE_STEPS = 60


def nearest_row(offset_leg) -> np.ndarray:
    """The kernel's row of constants of an :class:`~ik_node.solvers.hip_knee.offset_leg.
    OffsetLeg`."""
    core = offset_leg.core
    row = np.zeros(_C_COLUMNS)
    row[_C_L1], row[_C_L2], row[_C_ALPHA1], row[_C_ALPHA2] = core.l1, core.l2, core.alpha1, \
        core.alpha2
    row[_C_SIGN], row[_C_DELTA] = core.knee_sign, core.delta
    row[_C_LO1], row[_C_HI1], row[_C_LO2], row[_C_HI2] = core.lower1, core.upper1, \
        core.lower2, core.upper2
    row[_C_L1L1_L2L2], row[_C_TWO_L1L2] = core.l1l1_l2l2, core.two_l1l2
    row[_C_H], row[_C_D] = offset_leg.h, offset_leg.d
    row[_C_LO0], row[_C_HI0] = offset_leg.first_limits
    row[_C_FULL] = 1.0 if offset_leg.full_turn else 0.0
    row[_C_THIGHS] = len(core._thigh_edges)
    for k, edge in enumerate(core._thigh_edges):
        row[_C_THIGH + 3 * k:_C_THIGH + 3 * k + 3] = edge
    row[_C_KNEES] = len(core._knee_edges)
    for k, edge in enumerate(core._knee_edges):
        row[_C_KNEE + 2 * k:_C_KNEE + 2 * k + 2] = edge
    return row


def nearest_offset_leg():
    """The compiled :meth:`OffsetLeg.nearest_within_limits
    <ik_node.solvers.hip_knee.offset_leg.OffsetLeg.nearest_within_limits>`,
    ``kernel(row, x, e1, e2, s0, s1, s2) -> (error, q0, q1, q2)``, once the kernels are loaded;
    else None (never blocks)."""
    return _KERNELS.get('nearest_offset_leg') if kernels.ready() else None


def _core_tip(c, q1, q2):
    """PlanarCore.tip: ``(X, Y)`` [m]."""
    t1 = c[_C_ALPHA1] + q1
    t2 = c[_C_ALPHA2] + q1 + c[_C_SIGN] * q2
    return (c[_C_L1] * math.cos(t1) + c[_C_L2] * math.cos(t2),
            c[_C_L1] * math.sin(t1) + c[_C_L2] * math.sin(t2))


def _core_nearest(c, x, y, seed1, seed2):
    """PlanarCore.nearest: ``(error [m], q1, q2)``."""
    lo1, hi1, lo2, hi2 = c[_C_LO1], c[_C_HI1], c[_C_LO2], c[_C_HI2]
    s = c[_C_SIGN]
    r = math.hypot(x, y)
    if r <= DEGENERATE_DISTANCE_M:
        q2 = planar.clamp_on_circle(s * (_PI - c[_C_DELTA]), seed2, lo2, hi2)
        tx, ty = _core_tip(c, seed1, q2)
        return math.hypot(tx - x, ty - y), seed1, q2
    beta = math.atan2(y, x)
    cand1 = np.empty(6)
    cand2 = np.empty(6)
    count = 0
    cosine = (r * r - c[_C_L1L1_L2L2]) / c[_C_TWO_L1L2]
    cosine = 1.0 if cosine > 1.0 else (-1.0 if cosine < -1.0 else cosine)
    gamma = math.acos(cosine)
    q2f, q2b = s * (gamma - c[_C_DELTA]), s * (-gamma - c[_C_DELTA])
    l1, l2, alpha1, alpha2 = c[_C_L1], c[_C_L2], c[_C_ALPHA1], c[_C_ALPHA2]
    psi = math.atan2(l2 * math.sin(gamma), l1 + l2 * math.cos(gamma))
    for branch in range(2):
        q1 = beta - psi - alpha1 if branch == 0 else beta + psi - alpha1
        q2 = q2f if branch == 0 else q2b
        found1, n1 = planar.near_angle(q1, seed1, lo1, hi1)
        found2, n2 = planar.near_angle(q2, seed2, lo2, hi2)
        if found1 and found2:
            cand1[count], cand2[count] = n1, n2
            count += 1
    for k in range(int(c[_C_THIGHS])):  # thigh at a limit: the shin turns about the knee
        q1, kx, ky = c[_C_THIGH + 3 * k], c[_C_THIGH + 3 * k + 1], c[_C_THIGH + 3 * k + 2]
        shin = math.atan2(y - ky, x - kx)
        cand1[count] = q1
        cand2[count] = planar.clamp_on_circle(s * (shin - alpha2 - q1), seed2, lo2, hi2)
        count += 1
    for k in range(int(c[_C_KNEES])):  # knee at a limit: the rigid leg turns about the hip
        q2, leg = c[_C_KNEE + 2 * k], c[_C_KNEE + 2 * k + 1]
        cand1[count] = planar.clamp_on_circle(beta - leg, seed1, lo1, hi1)
        cand2[count] = q2
        count += 1
    best_err, best_q1, best_q2, best_dist = math.inf, seed1, seed2, math.inf
    for k in range(count):
        q1, q2 = cand1[k], cand2[k]
        t1 = alpha1 + q1
        t2 = alpha2 + q1 + s * q2
        err = math.hypot(l1 * math.cos(t1) + l2 * math.cos(t2) - x,
                         l1 * math.sin(t1) + l2 * math.sin(t2) - y)
        dist = (q1 - seed1) ** 2 + (q2 - seed2) ** 2
        if k == 0 or err < best_err - TIE_M or (err <= best_err + TIE_M and dist < best_dist):
            best_err, best_q1, best_q2, best_dist = err, q1, q2, dist
    return best_err, best_q1, best_q2


def _offset_error_at(c, q0, x, e1, e2, s1, s2):
    """OffsetLeg._error_at: ``(error [m], q1, q2, slope)``."""
    cq, sq = math.cos(q0), math.sin(q0)
    along, across = e1 * cq + e2 * sq, e2 * cq - e1 * sq
    y_target, off_plane = along - c[_C_D], across - c[_C_H]
    err, q1, q2 = _core_nearest(c, x, y_target, s1, s2)
    _, y_near = _core_tip(c, q1, q2)
    slope = (y_target - y_near) * across - off_plane * along
    return math.hypot(err, off_plane), q1, q2, slope


def _offset_refine(c, point, seeds, end_a, end_b):
    """OffsetLeg._refine: ``(error, q0, q1, q2)``. ``point``: the target's leg coordinates
    ``(x, e1, e2)``; ``seeds``: ``(s1, s2)``; ``end_a``, ``end_b``: the bracket's ends, each
    ``(angle, error, q1, q2, slope)``."""
    x, e1, e2 = point
    s1, s2 = seeds
    a, fa0, fa1, fa2, ga = end_a
    b, fb0, fb1, fb2, gb = end_b
    if fb0 < fa0:
        best0, best_q0, best1, best2 = fb0, b, fb1, fb2
    else:
        best0, best_q0, best1, best2 = fa0, a, fa1, fa2
    side = 0
    for _ in range(MAX_REFINE_STEPS):
        if b - a <= ANGLE_TOLERANCE:
            break
        m = b - gb * (b - a) / (gb - ga) if gb != ga else 0.5 * (a + b)
        if not a < m < b:
            m = 0.5 * (a + b)
        err, q1, q2, gm = _offset_error_at(c, m, x, e1, e2, s1, s2)
        if err < best0:
            best0, best_q0, best1, best2 = err, m, q1, q2
        if gm == 0.0:
            break
        if gm < 0.0:
            a, ga = m, gm
            if side == -1:
                gb *= 0.5
            side = -1
        else:
            b, gb = m, gm
            if side == 1:
                ga *= 0.5
            side = 1
    return best0, best_q0, best1, best2


def _nearest_offset_leg(c, x, e1, e2, s0, s1, s2):
    """OffsetLeg.nearest_within_limits: ``(error [m], q0, q1, q2)``."""
    lo0, hi0 = c[_C_LO0], c[_C_HI0]
    full_turn = c[_C_FULL] != 0.0
    if full_turn:
        count = max(3, math.ceil(_TWO_PI / SAMPLE_STEP))
        step = _TWO_PI / count
        start = s0 - _PI
    else:
        count = max(2, math.ceil((hi0 - lo0) / SAMPLE_STEP))
        step = (hi0 - lo0) / count
        start = lo0
    angles = np.empty(count + 1)
    for k in range(count + 1):
        angles[k] = start + k * step
    if not full_turn:
        angles[count] = hi0
    errs = np.empty(count + 1)
    q1s = np.empty(count + 1)
    q2s = np.empty(count + 1)
    slopes = np.empty(count + 1)
    for k in range(count + 1):
        if k == count and full_turn:
            errs[k], q1s[k], q2s[k], slopes[k] = errs[0], q1s[0], q2s[0], slopes[0]
        else:
            errs[k], q1s[k], q2s[k], slopes[k] = _offset_error_at(c, angles[k], x, e1, e2,
                                                                  s1, s2)
    found = np.empty((REFINED_BASINS + 3, 4))  # (error, q0, q1, q2) of each local minimum
    n_found = 0
    if not full_turn:
        if slopes[0] >= 0.0:
            found[n_found, 0], found[n_found, 1] = errs[0], angles[0]
            found[n_found, 2], found[n_found, 3] = q1s[0], q2s[0]
            n_found += 1
        if slopes[count] <= 0.0:
            found[n_found, 0], found[n_found, 1] = errs[count], angles[count]
            found[n_found, 2], found[n_found, 3] = q1s[count], q2s[count]
            n_found += 1
    brackets = np.empty(count, dtype=np.int64)
    keys = np.empty(count)
    n_brackets = 0
    for k in range(count):
        if slopes[k] < 0.0 <= slopes[k + 1]:
            brackets[n_brackets] = k
            keys[n_brackets] = min(errs[k], errs[k + 1])
            n_brackets += 1
    used = np.zeros(n_brackets, dtype=np.bool_)
    for _basin in range(min(REFINED_BASINS, n_brackets)):  # the lowest keys, stable order
        pick = -1
        for i in range(n_brackets):
            if not used[i] and (pick < 0 or keys[i] < keys[pick]):
                pick = i
        used[pick] = True
        k = brackets[pick]
        err, q0, q1, q2 = _offset_refine(
            c, (x, e1, e2), (s1, s2), (angles[k], errs[k], q1s[k], q2s[k], slopes[k]),
            (angles[k + 1], errs[k + 1], q1s[k + 1], q2s[k + 1], slopes[k + 1]))
        found[n_found, 0], found[n_found, 1], found[n_found, 2], found[n_found, 3] = \
            err, q0, q1, q2
        n_found += 1
    if n_found == 0:  # no slope changes sign (a constant error): the best sample
        k = 0
        for i in range(1, count):
            if errs[i] < errs[k]:
                k = i
        found[0, 0], found[0, 1], found[0, 2], found[0, 3] = errs[k], angles[k], q1s[k], q2s[k]
        n_found = 1
    best_err, best_dist = math.inf, math.inf
    best_q0 = best_q1 = best_q2 = 0.0
    for i in range(n_found):
        err, q0, q1, q2 = found[i, 0], found[i, 1], found[i, 2], found[i, 3]
        if full_turn:
            inside, q0 = planar.near_angle(q0, s0, lo0, hi0)
        else:
            q0 = min(max(q0, lo0), hi0)
        dist = (q0 - s0) ** 2 + (q1 - s1) ** 2 + (q2 - s2) ** 2
        if i == 0 or err < best_err - TIE_M or (err <= best_err + TIE_M and dist < best_dist):
            best_err, best_dist, best_q0, best_q1, best_q2 = err, dist, q0, q1, q2
    return best_err, best_q0, best_q1, best_q2


_NEAREST_HELPERS = ('_core_tip', '_core_nearest', '_offset_error_at', '_offset_refine')


def _exercise_nearest(kernel) -> None:
    """Run the nearest-pose kernel once on a made-up leg (limited and full-turn first joint),
    so that numba compiles (or loads) it now, not in a solve."""
    row = np.zeros(_C_COLUMNS)
    row[_C_L1] = row[_C_L2] = 0.2
    row[_C_SIGN], row[_C_L1L1_L2L2], row[_C_TWO_L1L2] = 1.0, 0.08, 0.08
    row[_C_LO1] = row[_C_LO2] = row[_C_LO0] = -1.0
    row[_C_HI1] = row[_C_HI2] = row[_C_HI0] = 1.0
    row[_C_H] = 0.05
    row[_C_THIGHS], row[_C_THIGH:_C_THIGH + 3] = 1.0, (1.0, 0.1, 0.1)
    row[_C_KNEES], row[_C_KNEE:_C_KNEE + 2] = 1.0, (1.0, 0.5)
    for full in (0.0, 1.0):
        row[_C_FULL] = full
        kernel(row, 0.5, 0.1, 0.2, 0.0, 0.0, 0.0)
