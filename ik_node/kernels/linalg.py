"""Small linear algebra for the compiled path, written once: the damped 3-row least-squares
step of FABRIK's serial polish (the Cholesky factor of a 3 x 3 system, as
:func:`ik_node.kernels.small_matrix.damped_step` computes it on the Python path, the
same operations in the same order), the damped normal equations with joints sitting out of
damped least squares and the closest-pose search (:func:`damped_solve`), and the linear solve
of FABRIK's tree polish (as LAPACK's).

Plain Python functions in numba's subset, compiled in place by :func:`compile`, which a kernel
module calling them runs first (numba reads ``linalg.damped_step`` when it compiles the
caller), as :mod:`~ik_node.kernels.fk` does.
"""

from __future__ import annotations

import math

import ik_node.kernels as kernels


def damped_step(cols, free, ex, ey, ez, damping, out):
    """:func:`~ik_node.kernels.small_matrix.damped_step` into ``out``: the damped
    least-squares step over the free columns (``free[k]`` not 0.0) of a 3-row matrix
    (``cols``: n x 3, its columns) toward ``(ex, ey, ez)``; False where the Python step raises
    (the system not positive definite)."""
    n = cols.shape[0]
    a00 = a01 = a02 = a11 = a12 = a22 = 0.0
    for k in range(n):
        if free[k] != 0.0:
            cx, cy, cz = cols[k, 0], cols[k, 1], cols[k, 2]
            a00 += cx * cx
            a01 += cx * cy
            a02 += cx * cz
            a11 += cy * cy
            a12 += cy * cz
            a22 += cz * cz
    a00 += damping
    a11 += damping
    a22 += damping
    if a00 < 0.0:
        return False
    l00 = math.sqrt(a00)
    if l00 == 0.0:
        return False
    l10, l20 = a01 / l00, a02 / l00
    square = a11 - l10 * l10
    if square < 0.0:
        return False
    l11 = math.sqrt(square)
    if l11 == 0.0:
        return False
    l21 = (a12 - l20 * l10) / l11
    square = a22 - l20 * l20 - l21 * l21
    if square < 0.0:
        return False
    l22 = math.sqrt(square)
    if l22 == 0.0:
        return False
    y0 = ex / l00
    y1 = (ey - l10 * y0) / l11
    y2 = (ez - l20 * y0 - l21 * y1) / l22
    z2 = y2 / l22
    z1 = (y1 - l21 * z2) / l11
    z0 = (y0 - l10 * z1 - l20 * z2) / l00
    for k in range(n):
        out[k] = (cols[k, 0] * z0 + cols[k, 1] * z1 + cols[k, 2] * z2) if free[k] != 0.0 \
            else 0.0
    return True


def damped_solve(H, g, lam, n, out, L, x):
    """``(H + lam I) x = g`` (n x n, symmetric) by Cholesky into ``x``, the joints ``k`` with
    ``out[k]`` not 0.0 sitting out (their rows and columns replaced by the identity's, their
    ``x`` 0); ``L`` (n x n) the factor. False where the system is not positive definite."""
    for a in range(n):
        for b in range(a + 1):
            if out[a] != 0.0 or out[b] != 0.0:
                s = 0.0
            else:
                s = H[a, b]
            if a == b:
                s += lam
            for k in range(b):
                s -= L[a, k] * L[b, k]
            if a == b:
                if s <= 0.0:
                    return False
                L[a, a] = math.sqrt(s)
            else:
                L[a, b] = s / L[b, b]
    for a in range(n):
        s = 0.0 if out[a] != 0.0 else g[a]
        for k in range(a):
            s -= L[a, k] * x[k]
        x[a] = s / L[a, a]
    for a in range(n - 1, -1, -1):
        s = x[a]
        for k in range(a + 1, n):
            s -= L[k, a] * x[k]
        x[a] = s / L[a, a]
    return True


def solve(G, g, m, out):
    """``G[:m, :m] y = g[:m]`` by Gaussian elimination with partial pivoting (as LAPACK's
    getrf/getrs), ``G`` and ``g`` overwritten; False when a pivot is zero (numpy raises)."""
    for j in range(m):
        p = j
        for i in range(j + 1, m):
            if abs(G[i, j]) > abs(G[p, j]):
                p = i
        if G[p, j] == 0.0:
            return False
        if p != j:
            for k in range(m):
                G[j, k], G[p, k] = G[p, k], G[j, k]
            g[j], g[p] = g[p], g[j]
        inverse = 1.0 / G[j, j]
        for i in range(j + 1, m):
            G[i, j] *= inverse
            for k in range(j + 1, m):
                G[i, k] -= G[i, j] * G[j, k]
            g[i] -= G[i, j] * g[j]
    for j in range(m - 1, -1, -1):
        total = g[j]
        for k in range(j + 1, m):
            total -= G[j, k] * out[k]
        out[j] = total / G[j, j]
    return True


_COMPILED = []


def compile() -> None:  # noqa: A001 - the kernel modules' entry point is named so
    """Compile these functions in place (or load them from numba's cache on disk), once."""
    if not _COMPILED:
        kernels.jitted(globals(), ('damped_step', 'damped_solve', 'solve'), ())
        _COMPILED.append(True)
