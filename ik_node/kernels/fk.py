"""Forward kinematics and its Jacobian for the compiled path, written once, in the two forms the
kernels keep: frames (3 x 4 transforms, joint motion along z: the descents) and FABRIK's
joint rotations and node positions (Rodrigues' formula per joint).

A serial model is one row per joint, then one for the tip: columns 0-11 the constant 3 x 4
transform (row-major) from the previous frame to the joint's frame before its motion, which
turns about (revolute) or slides along (prismatic) that frame's z axis; column
:data:`PRISMATIC` 1.0 for a prismatic joint. A kernel module may add columns of its own after
it. Plain Python functions in numba's subset, compiled in place by :func:`compile`, which a
kernel module calling them runs first (numba reads ``fk.frames`` when it compiles the caller).

A FABRIK model (:mod:`ik_node.solvers.fabrik.compiled_passes`, ``compiled_tree_passes``) is
one row per joint: columns 0-8 the joint's q = 0 rotation in its parent's frame (row-major),
9-11 its origin there [m], then at :data:`AAT`, :data:`I_AAT`, :data:`K` the three 9-float terms
of Rodrigues' formula, ``R(q) = aa^T + cos q (I - aa^T) + sin q [a]x``. Rotations are row-major
9-tuples (the small-matrix helpers of :mod:`ik_node.kernels.small_matrix`, compiled
here too).

The Python path's forward kinematics is :class:`ik_node.model.chain.Chain`'s (numpy frames, and
generated plain-float code for a serial chain); FABRIK's Python passes place their nodes by
:func:`zero_frame` and :func:`turned`'s formula, in plain floats (serial) or numpy (tree).
"""

from __future__ import annotations

import math

import ik_node.kernels as kernels
from ik_node.kernels.small_matrix import mat_mul, mat_vec

#: The model column flagging a prismatic joint (after the 12 of the transform, the limits).
PRISMATIC = 14
#: The FABRIK model's columns of Rodrigues' terms (9 floats each).
AAT, I_AAT, K = 15, 24, 33


def frames(model, n, q, F, G, axes, origins, T):
    """The tip's 3 x 4 transform at ``q`` into ``T`` (returned); each joint's axis and origin
    (base frame) into ``axes`` and ``origins`` (n x 3). ``F`` and ``G`` (3 x 4) are scratch."""
    for r in range(3):
        for c in range(4):
            F[r, c] = 1.0 if r == c else 0.0
    for i in range(n):
        for r in range(3):
            for c in range(4):
                G[r, c] = F[r, 0] * model[i, c] + F[r, 1] * model[i, 4 + c] + \
                    F[r, 2] * model[i, 8 + c]
            G[r, 3] += F[r, 3]
            axes[i, r] = G[r, 2]
            origins[i, r] = G[r, 3]
        if model[i, PRISMATIC] != 0.0:
            for r in range(3):
                F[r, 0] = G[r, 0]
                F[r, 1] = G[r, 1]
                F[r, 2] = G[r, 2]
                F[r, 3] = G[r, 3] + G[r, 2] * q[i]
        else:
            cq = math.cos(q[i])
            sq = math.sin(q[i])
            for r in range(3):
                F[r, 0] = G[r, 0] * cq + G[r, 1] * sq
                F[r, 1] = G[r, 1] * cq - G[r, 0] * sq
                F[r, 2] = G[r, 2]
                F[r, 3] = G[r, 3]
    for r in range(3):
        for c in range(4):
            T[r, c] = F[r, 0] * model[n, c] + F[r, 1] * model[n, 4 + c] + F[r, 2] * model[n, 8 + c]
        T[r, 3] += F[r, 3]
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


def load9(M, i):
    """Row ``i`` of ``M`` as a 9-tuple."""
    return (M[i, 0], M[i, 1], M[i, 2], M[i, 3], M[i, 4], M[i, 5], M[i, 6], M[i, 7], M[i, 8])


def zero_frame(model, p, i, x, R):
    """``(R0, x_i)``: joint i's q = 0 rotation and its origin, from the frame of its parent
    joint ``p`` (its rotation ``R[p]``, origin ``x[p]``; ``p < 0``: the base)."""
    m = model[i]
    R_tp = (m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8])
    t = (m[9], m[10], m[11])
    if p < 0:
        return R_tp, t
    R_parent = load9(R, p)
    ox, oy, oz = mat_vec(R_parent, t)
    return mat_mul(R_parent, R_tp), (x[p, 0] + ox, x[p, 1] + oy, x[p, 2] + oz)


def turned(model, i, R0, q_i):
    """Joint i's rotation at ``q_i`` from its q = 0 rotation ``R0`` (Rodrigues)."""
    m = model[i]
    c, s = math.cos(q_i), math.sin(q_i)
    return mat_mul(R0, (
        m[AAT] + c * m[I_AAT] + s * m[K],
        m[AAT + 1] + c * m[I_AAT + 1] + s * m[K + 1],
        m[AAT + 2] + c * m[I_AAT + 2] + s * m[K + 2],
        m[AAT + 3] + c * m[I_AAT + 3] + s * m[K + 3],
        m[AAT + 4] + c * m[I_AAT + 4] + s * m[K + 4],
        m[AAT + 5] + c * m[I_AAT + 5] + s * m[K + 5],
        m[AAT + 6] + c * m[I_AAT + 6] + s * m[K + 6],
        m[AAT + 7] + c * m[I_AAT + 7] + s * m[K + 7],
        m[AAT + 8] + c * m[I_AAT + 8] + s * m[K + 8]))


def place(i, Ri, xi, x, R):
    """Store joint i's rotation ``Ri`` and origin ``xi``."""
    for k in range(9):
        R[i, k] = Ri[k]
    x[i, 0], x[i, 1], x[i, 2] = xi[0], xi[1], xi[2]


_COMPILED = []


def compile() -> None:  # noqa: A001 - the kernel modules' entry point is named so
    """Compile these functions in place (or load them from numba's cache on disk), once."""
    if not _COMPILED:
        kernels.jitted(globals(), ('mat_mul', 'mat_vec', 'load9', 'zero_frame', 'turned', 'place',
                                    'frames', 'jacobian'), ())
        _COMPILED.append(True)
