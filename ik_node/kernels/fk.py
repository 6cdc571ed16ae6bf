"""Forward kinematics and its Jacobian for the compiled path, written once, in the two forms the
kernels keep: frames (3 x 4 transforms, joint motion along z: the descents, the analytic legs'
check, the out-of-reach search and the collision check) and FABRIK's joint rotations and node
positions (Rodrigues' formula per joint).

A model of the frames form is one row per joint (:func:`model_rows` builds it, from
:func:`ik_node.model.fast_kinematics.axis_frames`' transforms): columns 0-11 the constant 3 x 4
transform (row-major) from the frame the joint hangs from to the joint's frame before its
motion, which turns about (revolute) or slides along (prismatic) that frame's z axis; column
:data:`PRISMATIC` 1.0 for a prismatic joint. A kernel module may add columns of its own after
it. A joint's frame is written once, :func:`placed` then :func:`moved`: :func:`frames` chains
them along a serial model (whose last row is its tip's) and measures the tip, axes and origins
for :func:`jacobian`; :func:`joint_frames` places every joint of a serial chain or a tree (each
from its parent's frame) for the collision check (:mod:`ik_node.collision.kernel`). Plain
Python functions in numba's subset, compiled in place by :func:`compile`, which a kernel module
calling them runs first (numba reads ``fk.frames`` when it compiles the caller).

A FABRIK model row (:func:`fabrik_row`; the compiled passes,
:mod:`ik_node.solvers.fabrik.compiled_passes` and ``compiled_tree_passes``, add columns after
it) holds one joint: columns 0-8 its q = 0 rotation in its parent's frame (row-major), 9-11 its
origin there [m], :data:`AXIS` its unit axis (joint frame), then at :data:`AAT`, :data:`I_AAT`,
:data:`K` the three 9-float terms of Rodrigues' formula,
``R(q) = aa^T + cos q (I - aa^T) + sin q [a]x``. FABRIK places its nodes by :func:`base_frame`
or :func:`zero_frame` (a joint's q = 0 rotation and origin from its parent's), :func:`turned`
(a revolute joint's rotation), :func:`slid` (a prismatic joint's origin) and :func:`point_in`
(a tip), written once for both paths: compiled, on rows of a model array (:func:`frame_of`
reads the parent's frame from the arrays, :func:`place` stores a joint's), and in plain Python,
on rows that are tuples of floats, through :data:`plain` (FABRIK's Python passes,
:class:`~ik_node.solvers.fabrik.serial.SerialFabrik` and
:class:`~ik_node.solvers.fabrik.tree.FabrikTree`). Rotations are row-major 9-tuples, points
3-tuples (the small-matrix helpers of :mod:`ik_node.kernels.small_matrix`, compiled here too).

The Python path's other forward kinematics is :class:`ik_node.model.chain.Chain`'s (numpy
frames with the joint motions of :mod:`ik_node.model.joint_motion`, and generated plain-float
code for a serial chain).
"""

from __future__ import annotations

import math
import types
from typing import Callable, NamedTuple

import numpy as np

import ik_node.kernels as kernels
from ik_node.kernels.small_matrix import mat_mul, mat_vec

#: The model column flagging a prismatic joint (after the 12 of the transform, the limits).
PRISMATIC = 14
#: The FABRIK model's column of the joint's axis (3 floats), of Rodrigues' terms (9 each), and
#: the number of columns :func:`fabrik_row` fills.
AXIS, AAT, I_AAT, K, COLUMNS = 12, 15, 24, 33, 42
#: The base frame as :func:`placed` takes a frame (3 x 4, row-major).
IDENTITY = (1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0)


def placed(model, i, F):
    """Joint ``i``'s frame before its motion, ``F @ model_i``: ``F`` the frame it hangs from
    (its parent's, moved; the base: identity) and the result as 12-tuples (3 x 4, row-major).
    Row ``i`` may also be a tip's (its frame: the tip's transform)."""
    return (F[0] * model[i, 0] + F[1] * model[i, 4] + F[2] * model[i, 8],
            F[0] * model[i, 1] + F[1] * model[i, 5] + F[2] * model[i, 9],
            F[0] * model[i, 2] + F[1] * model[i, 6] + F[2] * model[i, 10],
            F[0] * model[i, 3] + F[1] * model[i, 7] + F[2] * model[i, 11] + F[3],
            F[4] * model[i, 0] + F[5] * model[i, 4] + F[6] * model[i, 8],
            F[4] * model[i, 1] + F[5] * model[i, 5] + F[6] * model[i, 9],
            F[4] * model[i, 2] + F[5] * model[i, 6] + F[6] * model[i, 10],
            F[4] * model[i, 3] + F[5] * model[i, 7] + F[6] * model[i, 11] + F[7],
            F[8] * model[i, 0] + F[9] * model[i, 4] + F[10] * model[i, 8],
            F[8] * model[i, 1] + F[9] * model[i, 5] + F[10] * model[i, 9],
            F[8] * model[i, 2] + F[9] * model[i, 6] + F[10] * model[i, 10],
            F[8] * model[i, 3] + F[9] * model[i, 7] + F[10] * model[i, 11] + F[11])


def moved(model, i, G, q_i):
    """Joint ``i``'s frame ``G`` (12-tuple, :func:`placed`) after its motion ``q_i`` [rad or
    m]: turned about its z axis, or slid along it (:data:`PRISMATIC`)."""
    if model[i, PRISMATIC] != 0.0:
        return (G[0], G[1], G[2], G[3] + G[2] * q_i, G[4], G[5], G[6], G[7] + G[6] * q_i,
                G[8], G[9], G[10], G[11] + G[10] * q_i)
    cq = math.cos(q_i)
    sq = math.sin(q_i)
    return (G[0] * cq + G[1] * sq, G[1] * cq - G[0] * sq, G[2], G[3],
            G[4] * cq + G[5] * sq, G[5] * cq - G[4] * sq, G[6], G[7],
            G[8] * cq + G[9] * sq, G[9] * cq - G[8] * sq, G[10], G[11])


def joint_frames(model, parents, n, q, out):
    """Every joint's frame at ``q`` (base frame, after its motion) into ``out``, joint ``i``'s
    3 x 4 transform (row-major) at ``out[12 i:12 i + 12]``; ``parents[i]`` the joint it hangs
    from (-1: the base, any joint before ``i``): a serial chain or a tree."""
    for i in range(n):
        p = parents[i]
        if p < 0:
            F = IDENTITY
        else:
            o = 12 * p
            F = (out[o], out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5],
                 out[o + 6], out[o + 7], out[o + 8], out[o + 9], out[o + 10], out[o + 11])
        F = moved(model, i, placed(model, i, F), q[i])
        o = 12 * i
        for k in range(12):
            out[o + k] = F[k]


def frames(model, n, q, axes, origins, T):
    """The tip's 3 x 4 transform at ``q`` into ``T`` (returned) for a serial model (row ``n``
    the tip's); each joint's axis and origin (base frame) into ``axes`` and ``origins``
    (n x 3)."""
    F = IDENTITY
    for i in range(n):
        G = placed(model, i, F)
        axes[i, 0], axes[i, 1], axes[i, 2] = G[2], G[6], G[10]
        origins[i, 0], origins[i, 1], origins[i, 2] = G[3], G[7], G[11]
        F = moved(model, i, G, q[i])
    F = placed(model, n, F)
    for r in range(3):
        for c in range(4):
            T[r, c] = F[4 * r + c]
    return T


def jacobian(model, n, p, axes, origins, J, orientation):
    """The Jacobian at tip position ``p`` (3 floats) from the :func:`frames` ``axes`` and
    ``origins`` into ``J``: linear rows 0-2, and with ``orientation`` angular rows 3-5; one
    column per joint."""
    px, py, pz = p[0], p[1], p[2]
    for i in range(n):
        zx, zy, zz = axes[i, 0], axes[i, 1], axes[i, 2]
        if model[i, PRISMATIC] != 0.0:
            J[0, i], J[1, i], J[2, i] = zx, zy, zz
            if orientation:
                J[3, i] = J[4, i] = J[5, i] = 0.0
        else:
            ex = px - origins[i, 0]
            ey = py - origins[i, 1]
            ez = pz - origins[i, 2]
            J[0, i] = zy * ez - zz * ey
            J[1, i] = zz * ex - zx * ez
            J[2, i] = zx * ey - zy * ex
            if orientation:
                J[3, i], J[4, i], J[5, i] = zx, zy, zz


def fabrik_row(R_tp, t_tp, axis) -> tuple:
    """A joint's FABRIK model row, columns 0 to :data:`COLUMNS` - 1 (see above), as a tuple of
    floats: its q = 0 rotation ``R_tp`` (3 x 3) and origin ``t_tp`` [m] in its parent's frame,
    its unit ``axis`` (joint frame) and Rodrigues' terms of that axis."""
    a = np.asarray(axis, dtype=float).reshape(3)
    aaT = np.outer(a, a)
    skew = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    return tuple(float(v) for v in np.concatenate([
        np.asarray(R_tp, dtype=float).reshape(9), np.asarray(t_tp, dtype=float).reshape(3), a,
        aaT.reshape(9), (np.eye(3) - aaT).reshape(9), skew.reshape(9)]))


def point_in(R, x, t):
    """``x + R t``: the point at offset ``t`` [m] in the frame of rotation ``R`` and origin
    ``x`` (a child joint's origin, a tip)."""
    ox, oy, oz = mat_vec(R, t)
    return (x[0] + ox, x[1] + oy, x[2] + oz)


def base_frame(row):
    """``(R0, x_i)``: the q = 0 rotation and origin of a joint hanging from the base, from its
    model ``row``."""
    return ((row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7], row[8]),
            (row[9], row[10], row[11]))


def zero_frame(row, R_parent, x_parent):
    """``(R0, x_i)``: a joint's q = 0 rotation and its origin, from its model ``row`` and its
    parent joint's rotation ``R_parent`` (9-tuple) and origin ``x_parent`` (3-tuple)."""
    R_tp, t = base_frame(row)
    x_i = point_in(R_parent, x_parent, t)
    return mat_mul(R_parent, R_tp), x_i


def turned(row, R0, q_i):
    """A revolute joint's rotation at ``q_i`` [rad] from its q = 0 rotation ``R0`` (Rodrigues;
    ``row``: its model row)."""
    c, s = math.cos(q_i), math.sin(q_i)
    # The columns AAT, I_AAT and K written out: in plain Python, looking the globals up per
    # term makes a call a quarter slower.
    return mat_mul(R0, (
        row[15] + c * row[24] + s * row[33], row[16] + c * row[25] + s * row[34],
        row[17] + c * row[26] + s * row[35], row[18] + c * row[27] + s * row[36],
        row[19] + c * row[28] + s * row[37], row[20] + c * row[29] + s * row[38],
        row[21] + c * row[30] + s * row[39], row[22] + c * row[31] + s * row[40],
        row[23] + c * row[32] + s * row[41]))


def slid(row, R0, x0, q_i):
    """A prismatic joint's origin at ``q_i`` [m] from its q = 0 rotation ``R0`` and origin
    ``x0`` (its rotation stays ``R0``; ``row``: its model row)."""
    ax, ay, az = mat_vec(R0, (row[12], row[13], row[14]))
    return (x0[0] + ax * q_i, x0[1] + ay * q_i, x0[2] + az * q_i)


def model_rows(transforms, prismatic, columns=PRISMATIC + 1) -> np.ndarray:
    """A model of the frames form (numpy, not compiled): per constant transform (3 x 4 or
    4 x 4, e.g. :func:`ik_node.model.fast_kinematics.axis_frames`') one row of ``columns``
    floats, its first 12 the transform, column :data:`PRISMATIC` 1.0 where ``prismatic`` (one
    flag per joint row; rows past them, a tip's, have none); zeros elsewhere, for the caller's
    own columns."""
    rows = np.zeros((len(transforms), columns))
    for i, C in enumerate(transforms):
        rows[i, :12] = np.asarray(C, dtype=float)[:3, :4].ravel()
    for i, flag in enumerate(prismatic):
        rows[i, PRISMATIC] = float(flag)
    return rows


def load9(M, i):
    """Row ``i`` of ``M`` as a 9-tuple."""
    return (M[i, 0], M[i, 1], M[i, 2], M[i, 3], M[i, 4], M[i, 5], M[i, 6], M[i, 7], M[i, 8])


def load3(M, i):
    """Row ``i`` of ``M`` as a 3-tuple."""
    return (M[i, 0], M[i, 1], M[i, 2])


def frame_of(model, p, i, x, R):
    """:func:`zero_frame` of joint i of a model array, its parent joint ``p``'s rotation and
    origin read from rows of ``R`` (n x 9) and ``x`` (``p < 0``: :func:`base_frame`)."""
    if p < 0:
        return base_frame(model[i])
    return zero_frame(model[i], load9(R, p), load3(x, p))


def place(i, Ri, xi, x, R):
    """Store joint i's rotation ``Ri`` and origin ``xi``."""
    for k in range(9):
        R[i, k] = Ri[k]
    x[i, 0], x[i, 1], x[i, 2] = xi[0], xi[1], xi[2]


class _Plain(NamedTuple):
    """The FABRIK-form functions as plain Python, for the Python passes (:data:`plain`)."""

    point_in: Callable
    base_frame: Callable
    zero_frame: Callable
    turned: Callable
    slid: Callable


def _plain() -> _Plain:
    """The FABRIK-form functions bound to a copy of this module's globals as they are at
    import (plain Python): :func:`compile` replaces the globals with numba's dispatchers, which
    a Python caller must not reach (each call a typed dispatch) and the functions here would
    otherwise call."""
    namespace = dict(globals())
    for name in _Plain._fields:
        f = namespace[name]
        namespace[name] = types.FunctionType(f.__code__, namespace, f.__name__, f.__defaults__,
                                             f.__closure__)
    return _Plain(*(namespace[name] for name in _Plain._fields))


#: :func:`point_in`, :func:`base_frame`, :func:`zero_frame`, :func:`turned` and :func:`slid` in
#: plain Python whether or not :func:`compile` ran: the Python passes call these.
plain = _plain()

_COMPILED = []


def compile() -> None:  # noqa: A001 - the kernel modules' entry point is named so
    """Compile these functions in place (or load them from numba's cache on disk), once."""
    if not _COMPILED:
        kernels.jitted(globals(), ('mat_mul', 'mat_vec', 'load9', 'load3', 'point_in',
                                    'base_frame', 'zero_frame', 'turned', 'slid', 'frame_of',
                                    'place', 'placed', 'moved', 'joint_frames', 'frames',
                                    'jacobian'), (),
                       inlined=('load9', 'load3', 'point_in', 'base_frame', 'zero_frame',
                                'turned', 'slid', 'frame_of', 'place'))
        _COMPILED.append(True)
