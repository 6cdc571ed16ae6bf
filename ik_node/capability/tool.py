"""A tool offset: the pose of the tool's frame (a TCP) in the chain's tip frame.

A map built with a tool offset answers for tool poses: a target ``T_tool`` is reached when IK
reaches the tip pose ``T_tip = T_tool * inverse(T_offset)``. The offset is stored as seven
numbers ``x y z qx qy qz qw`` (metres, a unit quaternion; ``()`` for none); the command line
also takes three (a translation) or six (``x y z roll pitch yaw``, the URDF's fixed-axis
convention ``R = Rz(yaw) Ry(pitch) Rx(roll)``).
"""

from __future__ import annotations

import math
from typing import Sequence, Tuple

import numpy as np

from ik_node.capability.orientations import quats_from_rotations, rotations_from_quats
from ik_node.errors import ConfigError


def tool_offset(values: Sequence[float]) -> Tuple[float, ...]:
    """The offset ``(x, y z, qx, qy, qz, qw)`` of 0, 3, 6 (xyz rpy) or 7 (xyz quaternion)
    numbers; ``()`` for none or the identity.

    Raises:
        ConfigError: another count, a value not finite, a zero quaternion.
    """
    values = [float(v) for v in values]
    if len(values) not in (0, 3, 6, 7):
        raise ConfigError(f'tool offset {values}: give x y z, x y z roll pitch yaw or '
                          'x y z qx qy qz qw')
    if not all(math.isfinite(v) for v in values):
        raise ConfigError(f'tool offset {values}: every value must be finite')
    if not values:
        return ()
    if len(values) == 6:
        roll, pitch, yaw = values[3:]
        cr, sr, cp, sp = math.cos(roll), math.sin(roll), math.cos(pitch), math.sin(pitch)
        cy, sy = math.cos(yaw), math.sin(yaw)
        R = np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                      [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                      [-sp, cp * sr, cp * cr]])
        quat = quats_from_rotations(R)[0].tolist()
    elif len(values) == 7:
        norm = math.sqrt(sum(v * v for v in values[3:]))
        if norm < 1e-6:
            raise ConfigError(f'tool offset {values}: the quaternion is zero')
        quat = [v / norm for v in values[3:]]
        if quat[3] < 0.0:
            quat = [-v for v in quat]
    else:
        quat = [0.0, 0.0, 0.0, 1.0]
    offset = tuple(round(v, 12) for v in values[:3] + quat)
    return () if offset == (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0) else offset


def offset_matrix(offset: Sequence[float]) -> np.ndarray:
    """The 4 x 4 transform of an offset (the identity for ``()``)."""
    T = np.eye(4)
    if len(offset):
        T[:3, :3] = rotations_from_quats(np.asarray(offset[3:], float))[0]
        T[:3, 3] = offset[:3]
    return T


def tip_targets(positions: np.ndarray, quats_xyzw: np.ndarray, offset: Sequence[float]):
    """``(positions (N, 3), quats (N, 4))`` of the tip poses that put the tool at the given
    poses: ``T_tip = T_tool * inverse(T_offset)`` (the inputs themselves for no offset)."""
    if not len(offset):
        return positions, quats_xyzw
    T = offset_matrix(offset)
    R_tip = rotations_from_quats(quats_xyzw) @ T[:3, :3].T
    p_tip = np.asarray(positions, float) - R_tip @ T[:3, 3]
    return np.ascontiguousarray(p_tip), np.ascontiguousarray(quats_from_rotations(R_tip))


def offset_length(offset: Sequence[float]) -> float:
    """How far the tool's origin is from the tip's [m]."""
    return float(np.linalg.norm(offset[:3])) if len(offset) else 0.0
