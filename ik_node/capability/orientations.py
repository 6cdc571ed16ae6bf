"""The orientations of a capability map: approach directions spread evenly on the sphere, each
with rolls about it, and the bin of any orientation.

The tool's approach axis is its z axis (``tool0`` of a ROS-Industrial arm, a gripper's TCP). A
direction ``d`` comes from a Fibonacci lattice on the sphere (``directions`` points, equal area
each, no pole clustering); its reference frame has z = ``d`` and x = the unit part of the base's
z axis (else x axis, near the poles) orthogonal to ``d``, turned about ``d`` by each of ``rolls``
evenly spaced angles. An orientation's bin is its nearest direction by the angle of its z axis,
then its nearest roll about that direction.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ik_node.errors import ConfigError

#: Most directions and rolls a map may have.
MAX_DIRECTIONS = 10_000
MAX_ROLLS = 360


class OrientationSet(NamedTuple):
    """The binned orientations of a map.

    Attributes:
        directions: (K, 3) unit approach directions (the tool's z axis) in the base frame.
        rolls: R, the rolls per direction (angles ``2 pi r / R``).
        rotations: (K * R, 3, 3) the orientation of bin ``k * R + r``.
        quats_xyzw: (K * R, 4) the same as quaternions (x, y, z, w).
    """

    directions: np.ndarray
    rolls: int
    rotations: np.ndarray
    quats_xyzw: np.ndarray

    def __len__(self) -> int:
        return len(self.rotations)


def fibonacci_directions(count: int) -> np.ndarray:
    """``count`` unit vectors spread evenly on the sphere (a Fibonacci lattice)."""
    k = np.arange(count, dtype=float) + 0.5
    z = 1.0 - 2.0 * k / count
    radius = np.sqrt(np.maximum(0.0, 1.0 - z * z))
    phi = k * math.pi * (3.0 - math.sqrt(5.0))
    return np.stack([radius * np.cos(phi), radius * np.sin(phi), z], axis=1)


def _reference_x(directions: np.ndarray) -> np.ndarray:
    """Per direction a unit x axis orthogonal to it: the base's z axis (else x axis near the
    poles) with its part along the direction taken out."""
    helper = np.zeros_like(directions)
    near_pole = np.abs(directions[:, 2]) > 0.9
    helper[~near_pole, 2] = 1.0
    helper[near_pole, 0] = 1.0
    x = helper - np.sum(helper * directions, axis=1, keepdims=True) * directions
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def orientation_set(directions: int, rolls: int = 1) -> OrientationSet:
    """The orientations of ``directions`` approach directions times ``rolls`` rolls.

    Raises:
        ConfigError: fewer than 1 or more than :data:`MAX_DIRECTIONS` directions, or rolls
            outside 1 .. :data:`MAX_ROLLS`.
    """
    if not 1 <= int(directions) <= MAX_DIRECTIONS or int(directions) != directions:
        raise ConfigError(f'orientations: {directions!r} directions; give a whole number in '
                          f'1 .. {MAX_DIRECTIONS}')
    if not 1 <= int(rolls) <= MAX_ROLLS or int(rolls) != rolls:
        raise ConfigError(f'rolls: {rolls!r}; give a whole number in 1 .. {MAX_ROLLS}')
    d = fibonacci_directions(int(directions))
    x0 = _reference_x(d)
    y0 = np.cross(d, x0)
    angles = 2.0 * math.pi * np.arange(rolls) / rolls
    c, s = np.cos(angles)[None, :, None], np.sin(angles)[None, :, None]
    x = c * x0[:, None, :] + s * y0[:, None, :]
    y = -s * x0[:, None, :] + c * y0[:, None, :]
    z = np.broadcast_to(d[:, None, :], x.shape)
    R = np.stack([x, y, z], axis=-1).reshape(-1, 3, 3)  # columns: the tool's axes
    return OrientationSet(d, int(rolls), R, quats_from_rotations(R))


def quats_from_rotations(R: np.ndarray) -> np.ndarray:
    """(N, 4) quaternions (x, y, z, w, w >= 0) of (N, 3, 3) rotation matrices."""
    R = np.asarray(R, dtype=float).reshape(-1, 3, 3)
    trace = R[:, 0, 0] + R[:, 1, 1] + R[:, 2, 2]
    K = np.empty((len(R), 4, 4))  # Bar-Itzhack's symmetric matrix: its top eigenvector
    K[:, 0, 0] = R[:, 0, 0] - R[:, 1, 1] - R[:, 2, 2]
    K[:, 1, 1] = R[:, 1, 1] - R[:, 0, 0] - R[:, 2, 2]
    K[:, 2, 2] = R[:, 2, 2] - R[:, 0, 0] - R[:, 1, 1]
    K[:, 3, 3] = trace
    K[:, 0, 1] = K[:, 1, 0] = R[:, 1, 0] + R[:, 0, 1]
    K[:, 0, 2] = K[:, 2, 0] = R[:, 2, 0] + R[:, 0, 2]
    K[:, 1, 2] = K[:, 2, 1] = R[:, 2, 1] + R[:, 1, 2]
    K[:, 0, 3] = K[:, 3, 0] = R[:, 2, 1] - R[:, 1, 2]
    K[:, 1, 3] = K[:, 3, 1] = R[:, 0, 2] - R[:, 2, 0]
    K[:, 2, 3] = K[:, 3, 2] = R[:, 1, 0] - R[:, 0, 1]
    _, vectors = np.linalg.eigh(K / 3.0)
    q = vectors[:, :, -1]
    q *= np.where(q[:, 3:4] < 0.0, -1.0, 1.0)
    return q


def rotations_from_quats(quats_xyzw: np.ndarray) -> np.ndarray:
    """(N, 3, 3) rotations of (N, 4) quaternions (x, y, z, w; normalised here)."""
    q = np.asarray(quats_xyzw, dtype=float).reshape(-1, 4)
    q = q / np.linalg.norm(q, axis=1, keepdims=True)
    x, y, z, w = q.T
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
    ], axis=1)


def orientation_bins(orientations: OrientationSet, R: np.ndarray) -> np.ndarray:
    """(N,) the bin of each of (N, 3, 3) rotations: nearest direction, then nearest roll."""
    R = np.asarray(R, dtype=float).reshape(-1, 3, 3)
    z = R[:, :, 2]
    k = np.argmax(z @ orientations.directions.T, axis=1)
    rolls = orientations.rolls
    if rolls == 1:
        return k
    d = orientations.directions[k]
    x0 = _reference_x(d)
    y0 = np.cross(d, x0)
    x = R[:, :, 0]
    angle = np.arctan2(np.sum(x * y0, axis=1), np.sum(x * x0, axis=1))
    r = np.rint(angle / (2.0 * math.pi / rolls)).astype(np.int64) % rolls
    return k * rolls + r
