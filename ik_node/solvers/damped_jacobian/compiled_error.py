"""The error of a pose at a configuration, for the compiled descents of :mod:`.compiled`: a
descent's scratch arrays (:class:`_Work`), the tip's FK, the weighted cost, the rotation vector
between the tip and the target, and the normal equations of one step (:func:`_evaluate`, as
:meth:`.descent.PythonDescent.evaluator` in Python). Plain functions that :func:`.compiled.
compile` compiles with numba (see :mod:`.compiled`)."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ik_node.kernels import fk
from ik_node.solvers.damped_jacobian import compiled_layout as layout


class _Work(NamedTuple):
    """Scratch arrays of one kernel call, made once and reused by every evaluation."""

    axes: np.ndarray     # n x 3: joint axes (base frame)
    origins: np.ndarray  # n x 3: joint origins (base frame)
    T: np.ndarray        # 3 x 4: the tip
    E: np.ndarray        # 3 x 3: R_target R^T
    J: np.ndarray        # 6 x n: the Jacobian
    Jb: np.ndarray       # 3 x n: the Jacobian with the columns of joints sitting out
    out: np.ndarray      # n: 1.0 for each joint sitting out of a step, else 0.0
    L: np.ndarray        # n x n: a Cholesky factor
    x: np.ndarray        # n: a step
    y: np.ndarray        # 3: the dual system's solution
    r: np.ndarray        # 3: a right-hand side of the dual system
    d: np.ndarray        # n: the pull away from the limits
    q_new: np.ndarray    # n: a trial configuration
    shifted: np.ndarray  # n: the iterate moved along the self-motion


def _new_work(n):
    return _work_views(np.empty(layout.scratch_size(n)), n)


def _work_views(scratch, n):
    """The :class:`_Work` of a descent as views of ``scratch``
    (:func:`~.compiled_layout.scratch_size` floats): no allocation per kernel call."""
    sizes = (3 * n, 3 * n, 12, 9, 6 * n, 3 * n, n, n * n, n, 3, 3, n, n, n)
    views = []
    start = 0
    for size in sizes:
        views.append(scratch[start:start + size])
        start += size
    return _Work(views[0].reshape((n, 3)), views[1].reshape((n, 3)), views[2].reshape((3, 4)),
                 views[3].reshape((3, 3)), views[4].reshape((6, n)), views[5].reshape((3, n)),
                 views[6], views[7].reshape((n, n)), views[8], views[9], views[10], views[11],
                 views[12], views[13])


def _tip(model, n, q, work):
    """The tip's 3 x 4 transform at ``q`` into ``work.T``; each joint's axis and origin (base
    frame) into ``work.axes`` and ``work.origins`` (:func:`ik_node.kernels.fk.frames`)."""
    return fk.frames(model, n, q, work.axes, work.origins, work.T)


def _pose_cost(model, n, target, settings, q, work):
    """The cost of ``q`` as ``residuals.cost_function`` computes it (the angle by acos), which
    ranks restart candidates in the Python descent."""
    T = _tip(model, n, q, work)
    position_sq = (target[0] - T[0, 3]) ** 2 + (target[1] - T[1, 3]) ** 2 + \
        (target[2] - T[2, 3]) ** 2
    if settings.orientation == 0.0:
        return position_sq
    c = 0.0
    for a in range(3):
        for b in range(3):
            c += target[3 + 3 * a + b] * T[a, b]
    angle = math.acos(max(-1.0, min(1.0, 0.5 * (c - 1.0))))
    return position_sq + settings.w2 * angle * angle


def _rotation_vector(target, T, E, scale):
    """``scale`` times the rotation vector taking the tip's orientation (``T``) to the
    target's, and its angle [rad]: ``(angle, x, y, z)``, from the skew part and trace of
    ``E = R_target R^T`` (3 x 3 scratch); near half a turn the axis from ``(E + I) / 2 = a a^T``,
    signed by the skew part."""
    for a in range(3):
        for c in range(3):
            E[a, c] = (target[3 + 3 * a] * T[c, 0] + target[4 + 3 * a] * T[c, 1] +
                       target[5 + 3 * a] * T[c, 2])
    sx = 0.5 * (E[2, 1] - E[1, 2])
    sy = 0.5 * (E[0, 2] - E[2, 0])
    sz = 0.5 * (E[1, 0] - E[0, 1])
    c = 0.5 * (E[0, 0] + E[1, 1] + E[2, 2] - 1.0)
    sin_angle = math.sqrt(sx * sx + sy * sy + sz * sz)
    angle = math.atan2(sin_angle, c)
    if sin_angle > 1e-6:
        f = scale * angle / sin_angle
        return angle, sx * f, sy * f, sz * f
    if c > 0.0:
        return angle, scale * sx, scale * sy, scale * sz
    k = 0
    if E[1, 1] > E[k, k]:
        k = 1
    if E[2, 2] > E[k, k]:
        k = 2
    bkk = math.sqrt(max(0.5 * (E[k, k] + 1.0), 1e-300))
    ax = 0.5 * (E[0, k] + (1.0 if k == 0 else 0.0)) / bkk
    ay = 0.5 * (E[1, k] + (1.0 if k == 1 else 0.0)) / bkk
    az = 0.5 * (E[2, k] + (1.0 if k == 2 else 0.0)) / bkk
    if ax * sx + ay * sy + az * sz < 0.0:
        ax, ay, az = -ax, -ay, -az
    f = scale * angle
    return angle, ax * f, ay * f, az * f


def _evaluate(model, n, target, settings, q, A, b, work):
    """The error of ``q`` and, above the tolerances, its step system in ``A``, ``b``.

    Returns ``(cost, position error, angle error, built)``; ``A`` and ``b`` are filled when
    ``built`` (errors above the tolerances): the normal equations ``H`` (n x n, full) and ``g``,
    as ``pose_normal`` of :class:`~ik_node.model.fast_kinematics.SerialKinematics` (6D) or the
    generated normal equations (position only); or, in the dual system (``settings.dual``),
    the position Jacobian (3 x n) and the error, as ``position_residual``.
    """
    T = _tip(model, n, q, work)
    axes, origins, E, J = work.axes, work.origins, work.E, work.J
    w2, tol_p, tol_r = settings.w2, settings.tol_p, settings.tol_r
    orientation = settings.orientation != 0.0
    dx = target[0] - T[0, 3]
    dy = target[1] - T[1, 3]
    dz = target[2] - T[2, 3]
    angle = 0.0
    wx = wy = wz = 0.0
    if orientation:  # w2 times the rotation vector
        angle, wx, wy, wz = _rotation_vector(target, T, E, w2)
    position_sq = dx * dx + dy * dy + dz * dz
    position_error = math.sqrt(position_sq)
    cost = position_sq + w2 * angle * angle if orientation else position_sq
    if position_error <= tol_p and angle <= tol_r:
        return cost, position_error, angle, False
    dual = settings.dual != 0.0
    if dual:  # the position Jacobian itself is the system
        J = A
    fk.jacobian(model, n, (T[0, 3], T[1, 3], T[2, 3]), axes, origins, J, orientation)
    if dual:
        b[0], b[1], b[2] = dx, dy, dz
        return cost, position_error, angle, True
    for a in range(n):
        for c in range(a + 1):
            h = J[0, a] * J[0, c] + J[1, a] * J[1, c] + J[2, a] * J[2, c]
            if orientation:
                h += w2 * (J[3, a] * J[3, c] + J[4, a] * J[4, c] + J[5, a] * J[5, c])
            A[a, c] = h
            A[c, a] = h
        if orientation:
            b[a] = (J[0, a] * dx + J[1, a] * dy + J[2, a] * dz + J[3, a] * wx +
                    J[4, a] * wy + J[5, a] * wz)
        else:
            b[a] = J[0, a] * dx + J[1, a] * dy + J[2, a] * dz
    return cost, position_error, angle, True
