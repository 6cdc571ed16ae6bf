"""The nearest pose of an offset leg, compiled: :meth:`OffsetLeg.nearest_within_limits
<ik_node.solvers.hip_knee.offset_leg.OffsetLeg.nearest_within_limits>` in one numba call.

The same samples of the first joint, the same planar-core candidates per sample, the same
brackets, refinement and ranking as the Python search (``test/core/test_closest_before_descent.py``
keeps them equal). An offset leg asks :func:`nearest_offset_leg` for the kernel per solve and
takes the Python search until :mod:`ik_node.kernels` has loaded it (one entry of its
``KERNEL_MODULES``).
"""

from __future__ import annotations

import math
from typing import Any, Dict

import numpy as np

import ik_node.kernels as kernels
from ik_node.kernels import planar

_PI = math.pi
_TWO_PI = 2.0 * math.pi
#: planar_core's constants (a test keeps them equal).
DEGENERATE_DISTANCE_M = 1e-9
TIE_M = 1e-10


def available() -> bool:
    """Whether the compiled path may serve (:func:`ik_node.kernels.available`)."""
    return kernels.available()

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


_KERNELS: Dict[str, Any] = {}


def compile() -> None:  # noqa: A001 - the kernel modules' entry point is named so
    """Compile the kernel (or load it from numba's cache on disk) and run it once;
    :mod:`ik_node.kernels` calls it in its loading thread."""
    if not _KERNELS:
        planar.compile()
        kernel = kernels.jitted(globals(), _NEAREST_HELPERS,
                                ('_nearest_offset_leg',))['_nearest_offset_leg']
        _exercise_nearest(kernel)
        _KERNELS['nearest_offset_leg'] = kernel
