"""3x3 matrices and 3-vectors as tuples of plain floats, and a damped 3-row least-squares step.

For chains of 3-7 joints numpy's per-call overhead dominates arrays this small: FABRIK's serial
passes (:mod:`ik_node.solvers.fabrik.serial`) run on these. Rotations are row-major 9-tuples,
vectors 3-tuples.
"""

from __future__ import annotations

import math
from typing import List, Sequence, Tuple

Vec = Tuple[float, float, float]
Mat = Tuple[float, float, float, float, float, float, float, float, float]


def mat_mul(a: Mat, b: Mat) -> Mat:
    """``a @ b``."""
    a0, a1, a2, a3, a4, a5, a6, a7, a8 = a
    b0, b1, b2, b3, b4, b5, b6, b7, b8 = b
    return (a0 * b0 + a1 * b3 + a2 * b6, a0 * b1 + a1 * b4 + a2 * b7, a0 * b2 + a1 * b5 + a2 * b8,
            a3 * b0 + a4 * b3 + a5 * b6, a3 * b1 + a4 * b4 + a5 * b7, a3 * b2 + a4 * b5 + a5 * b8,
            a6 * b0 + a7 * b3 + a8 * b6, a6 * b1 + a7 * b4 + a8 * b7, a6 * b2 + a7 * b5 + a8 * b8)


def mat_vec(a: Mat, v: Vec) -> Vec:
    """``a @ v``."""
    x, y, z = v
    return (a[0] * x + a[1] * y + a[2] * z, a[3] * x + a[4] * y + a[5] * z,
            a[6] * x + a[7] * y + a[8] * z)


def vec_mat(v: Vec, a: Mat) -> Vec:
    """``v @ a`` (= a^T v): a world vector in the frame ``a``."""
    x, y, z = v
    return (x * a[0] + y * a[3] + z * a[6], x * a[1] + y * a[4] + z * a[7],
            x * a[2] + y * a[5] + z * a[8])


def mat_from_array(M) -> Mat:
    """A (3, 3) array as a row-major 9-tuple."""
    return tuple(float(v) for v in M.reshape(9))


def vec_from_array(v) -> Vec:
    """A (3,) array as a 3-tuple."""
    return tuple(float(c) for c in v)


def damped_step(cols: Sequence[Vec], free: Sequence[bool], e: Vec, damping: float) -> List[float]:
    """``(A^T A + damping I)^-1 A^T e`` over the free columns of ``A`` (3 rows, ``cols`` its
    columns), as ``A^T (A A^T + damping I)^-1 e`` (a 3 x 3 system; the same step). Raises
    ``ValueError`` or ``ZeroDivisionError`` when the system is not positive definite."""
    a00 = a01 = a02 = a11 = a12 = a22 = 0.0
    for k, (cx, cy, cz) in enumerate(cols):
        if free[k]:
            a00 += cx * cx
            a01 += cx * cy
            a02 += cx * cz
            a11 += cy * cy
            a12 += cy * cz
            a22 += cz * cz
    a00 += damping
    a11 += damping
    a22 += damping
    ex, ey, ez = e
    # Cholesky of the symmetric positive definite 3 x 3 matrix.
    l00 = math.sqrt(a00)
    l10, l20 = a01 / l00, a02 / l00
    l11 = math.sqrt(a11 - l10 * l10)
    l21 = (a12 - l20 * l10) / l11
    l22 = math.sqrt(a22 - l20 * l20 - l21 * l21)
    y0 = ex / l00
    y1 = (ey - l10 * y0) / l11
    y2 = (ez - l20 * y0 - l21 * y1) / l22
    z2 = y2 / l22
    z1 = (y1 - l21 * z2) / l11
    z0 = (y0 - l10 * z1 - l20 * z2) / l00
    return [(cx * z0 + cy * z1 + cz * z2) if free[k] else 0.0
            for k, (cx, cy, cz) in enumerate(cols)]
