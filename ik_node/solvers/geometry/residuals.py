"""The error of a target as a function of the joints, for damped_jacobian.

* :func:`error_function`: ``q -> (cost, position error [m], angle error [rad], e, J)``, the
  residual ``e`` (position, then the rotation vector taking the tip's orientation to the
  target's) and its Jacobian, for the Jacobian-transpose method and for the damped systems of
  chains without a generated normal-equations function;
* :func:`cost_function`: the same weighted cost without a Jacobian (restart candidates);
* :class:`ChainKinematics`: the float interface of the generated
  :class:`~ik_node.model.fast_kinematics.SerialKinematics` (``pose_jacobian``, ``pose``,
  ``position``,
  ``position_jacobian``) through the numpy :class:`~ik_node.model.chain.Chain`, for chains that have
  no generated code.

The cost is ``|p_t - p|^2 + w^2 angle^2`` (``w`` the ``orientation_weight`` [m/rad]), or
``|p_t - p|^2`` for a position target. Plain floats; numpy only on the rare half-turn path.
"""

from __future__ import annotations

import math
from typing import Callable, List, Optional

import numpy as np

from ik_node.model.chain import Chain


def rotation_vector_from_matrix(R: np.ndarray) -> np.ndarray:
    """Rotation vector (axis * angle [rad]) of a 3x3 rotation matrix, robust near 0 and pi."""
    s = 0.5 * np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    c = 0.5 * (R[0, 0] + R[1, 1] + R[2, 2] - 1.0)
    sin_angle = float(np.linalg.norm(s))
    angle = math.atan2(sin_angle, c)
    if sin_angle > 1e-6:
        return s * (angle / sin_angle)
    if c > 0.0:  # angle ~ 0: the first-order term is exact to angle^3
        return s
    # angle ~ pi: (R + I) / 2 = a a^T; its dominant column is the axis (up to sign).
    B = 0.5 * (R + np.eye(3))
    k = int(np.argmax(np.diag(B)))
    axis = B[:, k] / math.sqrt(max(B[k, k], 1e-300))
    if float(axis @ s) < 0.0:
        axis = -axis
    return axis * angle


def error_function(pose_jacobian: Callable, position_jacobian: Callable, p_target: np.ndarray,
                   R_target: Optional[np.ndarray], orientation_weight: float) -> Callable:
    """``evaluate(q) -> (cost, position error [m], angle error [rad], e, J)``.

    ``e`` is the error (3 or 6 values, orientation part unweighted), ``J`` its Jacobian as
    rows, ``cost`` the weighted squared error. ``pose_jacobian(q) -> (p, R, J)`` and
    ``position_jacobian(q) -> (p, J)`` as :class:`ChainKinematics` has them.
    """
    tx, ty, tz = p_target.tolist()
    if R_target is None:
        def evaluate_position(q):
            (px, py, pz), J = position_jacobian(q)
            dx, dy, dz = tx - px, ty - py, tz - pz
            cost = dx * dx + dy * dy + dz * dz
            return cost, math.sqrt(cost), 0.0, (dx, dy, dz), J
        return evaluate_position

    w2 = orientation_weight ** 2
    t00, t01, t02, t10, t11, t12, t20, t21, t22 = R_target.ravel().tolist()

    def evaluate_pose(q):
        (px, py, pz), R, J = pose_jacobian(q)
        r00, r01, r02, r10, r11, r12, r20, r21, r22 = R
        dx, dy, dz = tx - px, ty - py, tz - pz
        # Rotation vector of R_err = R_target @ R^T from its skew part and trace.
        sx = 0.5 * (t20 * r10 + t21 * r11 + t22 * r12 - t10 * r20 - t11 * r21 - t12 * r22)
        sy = 0.5 * (t00 * r20 + t01 * r21 + t02 * r22 - t20 * r00 - t21 * r01 - t22 * r02)
        sz = 0.5 * (t10 * r00 + t11 * r01 + t12 * r02 - t00 * r10 - t01 * r11 - t02 * r12)
        c = 0.5 * (t00 * r00 + t01 * r01 + t02 * r02 + t10 * r10 + t11 * r11 + t12 * r12 +
                   t20 * r20 + t21 * r21 + t22 * r22 - 1.0)
        sin_angle = math.sqrt(sx * sx + sy * sy + sz * sz)
        angle = math.atan2(sin_angle, c)
        if sin_angle > 1e-6:
            f = angle / sin_angle
            omega = (sx * f, sy * f, sz * f)
        elif c > 0.0:
            omega = (sx, sy, sz)
        else:  # half a turn away: rare, take the careful path
            omega = tuple(rotation_vector_from_matrix(
                R_target @ np.array(R).reshape(3, 3).T).tolist())
        position_sq = dx * dx + dy * dy + dz * dz
        return (position_sq + w2 * angle * angle, math.sqrt(position_sq), angle,
                (dx, dy, dz) + omega, J)
    return evaluate_pose


def cost_function(pose: Callable, p_target: np.ndarray, R_target: Optional[np.ndarray],
                  orientation_weight: float) -> Callable:
    """``cost(q)``: the weighted squared error of :func:`error_function`, without a Jacobian
    (``pose(q) -> (p, R)``)."""
    tx, ty, tz = p_target.tolist()
    if R_target is None:
        def position_cost(q):
            (px, py, pz), _ = pose(q)
            return (tx - px) ** 2 + (ty - py) ** 2 + (tz - pz) ** 2
        return position_cost
    w2 = orientation_weight ** 2
    t = R_target.ravel().tolist()

    def pose_cost(q):
        (px, py, pz), R = pose(q)
        c = 0.5 * (t[0] * R[0] + t[1] * R[1] + t[2] * R[2] + t[3] * R[3] + t[4] * R[4] +
                   t[5] * R[5] + t[6] * R[6] + t[7] * R[7] + t[8] * R[8] - 1.0)
        angle = math.acos(max(-1.0, min(1.0, c)))
        return (tx - px) ** 2 + (ty - py) ** 2 + (tz - pz) ** 2 + w2 * angle * angle
    return pose_cost


class ChainKinematics:
    """The first tip's pose, position and Jacobian in floats through the numpy chain (the
    interface of the generated serial kinematics, for chains without it)."""

    def __init__(self, chain: Chain):
        self.chain = chain

    def pose_jacobian(self, q: List[float]):
        """``(p, R, J)``: tip position, rotation (row-major 9 floats) and 6 x n Jacobian rows."""
        chain = self.chain
        frames = chain.joint_frames(np.array(q))
        T = chain._tip_from_frames(frames, 0)
        J = chain.jacobian_from_frames(frames, T[:3, 3], 0)
        return tuple(T[:3, 3].tolist()), tuple(T[:3, :3].ravel().tolist()), J.tolist()

    def pose(self, q: List[float]):
        """``(p, R)``: tip position and rotation (row-major 9 floats)."""
        T = self.chain.fk(np.array(q))
        return tuple(T[:3, 3].tolist()), tuple(T[:3, :3].ravel().tolist())

    def position(self, q: List[float]):
        """The tip position (3 floats)."""
        return tuple(self.chain.fk(np.array(q))[:3, 3].tolist())

    def position_jacobian(self, q: List[float]):
        """``(p, J)``: tip position and the 3 x n linear Jacobian rows."""
        p, _, J = self.pose_jacobian(q)
        return p, J[:3]
