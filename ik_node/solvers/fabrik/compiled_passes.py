"""FABRIK's serial passes for the compiled path: one iteration's moves on a chain's model array.

The forward pass, the backward pass with each joint's 'bones' or 'points' fit and its clamp into
the limits, the stretching first pass and the rebuild (FK: the kernel library's
:mod:`~ik_node.kernels.fk` on FABRIK's model), each the same operations in the same
order on the same floats as :class:`~ik_node.solvers.fabrik.serial.SerialFabrik`'s. The run
that loops over them (extrapolation, polish, stall rule) is the kernel of
:mod:`ik_node.solvers.fabrik.compiled`; the tree kernel (:mod:`.compiled_tree_passes`) fits and
clamps its angles with :func:`angle_in_limits` and :func:`clip` too.

Plain Python functions in numba's subset, compiled in place by :func:`compile`, which the kernel
modules calling them run first (numba reads ``compiled_passes.backward`` when it compiles the
caller), as :mod:`ik_node.kernels.fk` does.
"""

from __future__ import annotations

import math

import numpy as np

import ik_node.kernels as kernels
from ik_node.kernels import fk
from ik_node.solvers.fabrik.iteration import EPS_M, TIP_FIT_WEIGHT, TWO_PI
from ik_node.kernels.small_matrix import mat_vec, vec_mat  # noqa: F401 - compiled here, for callers too

# Columns of the model array, one row per joint: the joint's FABRIK row (fk.fabrik_row: its q = 0
# rotation and origin _T_TP in its parent's frame, its axis _AXIS, Rodrigues' terms), then the
# columns below; row n holds the tip's offset at _T_TP.
_T_TP = 9       # 3: the origin in the parent's frame [m]
_AXIS = fk.AXIS  # 3: the hinge axis (joint frame)
# The limits [rad]; the fit; _W_PERP: 3 columns.
(_LOWER, _UPPER, _FIT, _W_PERP) = range(fk.COLUMNS, fk.COLUMNS + 4)
_W_CROSS = _W_PERP + 3   # 3
# The pull's terms (centring_terms).
(_CENTRED, _MIDDLE, _INVERSE_HALF) = range(_W_CROSS + 3, _W_CROSS + 6)
_COLUMNS = _INVERSE_HALF + 1
# How a joint fits its angle in the backward pass (SerialFabrik.align).
BONES = 0.0         # its child bone's direction
CHILD_AND_TIP = 1.0  # 'points': its child joint and the tip
TIP_ONLY = 2.0      # 'points': the tip


def place_tip(model, n, x, R):
    """The tip's position x[n] from the last joint's frame."""
    tip = fk.point_in(fk.load9(R, n - 1), fk.load3(x, n - 1),
                      (model[n, _T_TP], model[n, _T_TP + 1], model[n, _T_TP + 2]))
    x[n, 0], x[n, 1], x[n, 2] = tip[0], tip[1], tip[2]


def rebuild(model, n, q, x, R):
    """Node positions ``x`` and joint rotations ``R``: FK of ``q`` (SerialFabrik.rebuild)."""
    for i in range(n):
        R0, xi = fk.frame_of(model, i - 1, i, x, R)
        fk.place(i, fk.turned(model[i], R0, q[i]), xi, x, R)
    place_tip(model, n, x, R)


def error(x, n, target):
    """The tip's distance [m] from the target (SerialPasses._error_of)."""
    dx, dy, dz = x[n, 0] - target[0], x[n, 1] - target[1], x[n, 2] - target[2]
    return math.sqrt(dx * dx + dy * dy + dz * dz)


def clip(value, lower, upper):
    """``min(max(value, lower), upper)`` as Python evaluates it."""
    value = lower if lower > value else value
    return upper if upper < value else value


def remainder(angle):
    """``math.remainder(angle, TWO_PI)`` to round-off (numba has no ``math.remainder``)."""
    return angle - TWO_PI * np.rint(angle / TWO_PI)


def angle_in_limits(theta, q_old, lower, upper):
    """:func:`~ik_node.solvers.fabrik.iteration.angle_in_limits`."""
    q = theta + TWO_PI * np.rint((q_old - theta) / TWO_PI)
    if lower <= q <= upper:
        return q
    below, above = q - TWO_PI, q + TWO_PI
    below_in, above_in = lower <= below <= upper, lower <= above <= upper
    if below_in and above_in:
        return above if abs(above - q_old) < abs(below - q_old) else below
    if below_in:
        return below
    if above_in:
        return above
    d_lower = abs(remainder(theta - lower))
    d_upper = abs(remainder(theta - upper))
    return lower if d_lower <= d_upper else upper


def forward(n, x, L, target, P):
    """The forward pass (SerialFabrik.forward): the tip on the target, every joint but the
    first pulled after it, into ``P`` (rows 1 .. n)."""
    P[n, 0], P[n, 1], P[n, 2] = target[0], target[1], target[2]
    for u in range(n - 1, 0, -1):
        px, py, pz = P[u + 1, 0], P[u + 1, 1], P[u + 1, 2]
        dx, dy, dz = x[u, 0] - px, x[u, 1] - py, x[u, 2] - pz
        norm = math.sqrt(dx * dx + dy * dy + dz * dz)
        length = L[u + 1]
        if norm < EPS_M:  # the point is on the joint: keep the old bone direction
            dx, dy, dz = x[u, 0] - x[u + 1, 0], x[u, 1] - x[u + 1, 1], x[u, 2] - x[u + 1, 2]
            norm = max(length, EPS_M)
        f = length / max(norm, EPS_M)
        P[u, 0], P[u, 1], P[u, 2] = px + dx * f, py + dy * f, pz + dz * f


def fit_points(model, n, i, first, every, frame, nodes, P):
    """Joint i's angle moving nodes (rigidly, at their old ``x``) onto ``P``: every node below
    it with ``every``, else ``first`` and the tip (SerialFabrik._fit_points); False when they
    are all on the axis. ``frame``: the joint's ``(R0, x_i)`` (:func:`fk.frame_of`);
    ``nodes``: ``(q, x, R)``, the configuration and its node positions and rotations."""
    R0, xi = frame
    q, x, R = nodes
    Ri = fk.load9(R, i)
    m0 = m1 = m2 = m3 = m4 = m5 = m6 = m7 = m8 = 0.0
    for v in range(i + 1, n + 1):
        if not (every or v == first or v == n):
            continue
        w = TIP_FIT_WEIGHT if v == n else 1.0
        rx, ry, rz = vec_mat((x[v, 0] - x[i, 0], x[v, 1] - x[i, 1], x[v, 2] - x[i, 2]), Ri)
        bx, by, bz = vec_mat((P[v, 0] - xi[0], P[v, 1] - xi[1], P[v, 2] - xi[2]), R0)
        rx, ry, rz = rx * w, ry * w, rz * w
        m0 += rx * bx
        m1 += rx * by
        m2 += rx * bz
        m3 += ry * bx
        m4 += ry * by
        m5 += ry * bz
        m6 += rz * bx
        m7 += rz * by
        m8 += rz * bz
    ax, ay, az = model[i, _AXIS], model[i, _AXIS + 1], model[i, _AXIS + 2]
    s = ax * (m5 - m7) + ay * (m6 - m2) + az * (m1 - m3)
    aMa = (ax * (m0 * ax + m1 * ay + m2 * az) + ay * (m3 * ax + m4 * ay + m5 * az)
           + az * (m6 * ax + m7 * ay + m8 * az))
    c = m0 + m4 + m8 - aMa
    if s * s + c * c <= EPS_M * EPS_M:
        return False
    q[i] = angle_in_limits(math.atan2(s, c), q[i], model[i, _LOWER], model[i, _UPPER])
    return True


def backward(model, n, q, x, R, P):
    """The backward pass (SerialFabrik.backward): from the base, fit each joint's angle,
    clamp it, rebuild (in place)."""
    for i in range(n):
        R0, xi = fk.frame_of(model, i - 1, i, x, R)
        fit = model[i, _FIT]
        if fit == BONES:
            bx, by, bz = vec_mat((P[i + 1, 0] - xi[0], P[i + 1, 1] - xi[1],
                                  P[i + 1, 2] - xi[2]), R0)
            s = model[i, _W_CROSS] * bx + model[i, _W_CROSS + 1] * by + \
                model[i, _W_CROSS + 2] * bz
            c = model[i, _W_PERP] * bx + model[i, _W_PERP + 1] * by + model[i, _W_PERP + 2] * bz
            fitted = s * s + c * c > EPS_M * EPS_M
            if fitted:
                q[i] = angle_in_limits(math.atan2(s, c), q[i], model[i, _LOWER],
                                       model[i, _UPPER])
        else:
            first = i + 1 if fit == CHILD_AND_TIP else n
            fitted = fit_points(model, n, i, first, False, (R0, xi), (q, x, R), P)
        if not fitted:  # every node below
            fit_points(model, n, i, i + 1, True, (R0, xi), (q, x, R), P)
        fk.place(i, fk.turned(model[i], R0, q[i]), xi, x, R)
    place_tip(model, n, x, R)


def stretch(model, n, q, x, R, L, target, P):
    """The backward pass with the chain laid straight from its first joint to the target
    (SerialFabrik.stretch)."""
    ox, oy, oz = x[0, 0], x[0, 1], x[0, 2]
    dx, dy, dz = target[0] - ox, target[1] - oy, target[2] - oz
    norm = max(math.sqrt(dx * dx + dy * dy + dz * dz), EPS_M)
    dx, dy, dz = dx / norm, dy / norm, dz / norm
    reach = 0.0
    for v in range(n + 1):
        if v:
            reach += L[v]
        P[v, 0], P[v, 1], P[v, 2] = ox + reach * dx, oy + reach * dy, oz + reach * dz
    backward(model, n, q, x, R, P)


_COMPILED = []
_HELPERS = ('mat_vec', 'vec_mat', 'place_tip', 'rebuild', 'error', 'clip', 'remainder',
            'angle_in_limits', 'forward', 'fit_points', 'backward', 'stretch')


def compile() -> None:  # noqa: A001 - the kernel modules' entry point is named so
    """Compile these functions in place (or load them from numba's cache on disk), once."""
    if not _COMPILED:
        fk.compile()
        kernels.jitted(globals(), _HELPERS, ())
        _COMPILED.append(True)
