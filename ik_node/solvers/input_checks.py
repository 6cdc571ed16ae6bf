"""The checks of a solve's inputs, in plain floats, the clip into the joint limits, and the
rotation error of a result.

Bad input raises :class:`~ik_node.errors.TargetError` naming the value, once, at the boundary.
Re-exported by :mod:`ik_node.solvers.base`.
"""

from __future__ import annotations

import math
from typing import List, Optional

import numpy as np

from ik_node.errors import TargetError

#: Coordinates beyond this magnitude [m] are refused as nonsense rather than solved.
MAX_COORDINATE_M = 1e6
#: The dtype of native float64 arrays, one object: ``a.dtype is FLOAT64`` is the cheapest check
#: (a byte-swapped float64 array fails it and takes the general path).
FLOAT64 = np.dtype(np.float64)


def _float_values(value, count: int, name: str, wrong_count: str) -> List[float]:
    """``value`` as ``count`` floats (not checked for finiteness), or :class:`TargetError`: not
    numeric (named ``name``), or ``wrong_count`` formatted with how many values it has."""
    if type(value) is np.ndarray and value.dtype is FLOAT64 and value.shape == (count,):
        return value.tolist()  # the common case: no conversion
    try:
        values = np.asarray(value, dtype=float).reshape(-1).tolist()
    except (TypeError, ValueError) as exc:
        raise TargetError(f'{name} {value!r} is not numeric') from exc
    if len(values) != count:
        raise TargetError(wrong_count.format(len(values)))
    return values


def target_from_input(target_position) -> np.ndarray:
    """A (3,) finite float array, or :class:`TargetError` naming the bad value."""
    return np.array(target_values(target_position))


def target_values(target_position) -> List[float]:
    """The target position as 3 finite floats [m], or :class:`TargetError` naming the bad value.

    Accepts anything numpy reads as 3 numbers (list, tuple, (3,) or (1, 3) array).
    """
    values = _float_values(target_position, 3, 'target position',
                           'target position must have 3 values (x, y, z), got {}')
    x, y, z = values
    limit = MAX_COORDINATE_M
    if -limit <= x <= limit and -limit <= y <= limit and -limit <= z <= limit:
        return values  # finite and not beyond the limit (NaN fails every comparison)
    if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
        raise TargetError(f'target position contains NaN or inf: {values}')
    raise TargetError(f'target position {values} is beyond {MAX_COORDINATE_M:g} m')


def rotation_from_input(quat_xyzw) -> np.ndarray:
    """3x3 rotation of a quaternion (x, y, z, w), normalised; :class:`TargetError` if invalid."""
    values = _float_values(quat_xyzw, 4, 'orientation',
                           'orientation must be a quaternion (x, y, z, w), got {} values')
    x, y, z, w = values
    norm2 = x * x + y * y + z * z + w * w  # inf or NaN where a value is not finite
    if not norm2 <= _MAX_NORM2 and not all(math.isfinite(v) for v in values):
        raise TargetError(f'orientation quaternion contains NaN or inf: {values}')
    norm = math.sqrt(norm2)
    if norm < 1e-6:
        raise TargetError(f'orientation quaternion {values} has zero length')
    x, y, z, w = x / norm, y / norm, z / norm, w / norm
    # The unit-quaternion rotation matrix, in floats (transforms3d.quaternions.quat2mat's formula).
    return np.array([
        [1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - w * z), 2.0 * (x * z + w * y)],
        [2.0 * (x * y + w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - w * x)],
        [2.0 * (x * z - w * y), 2.0 * (y * z + w * x), 1.0 - 2.0 * (x * x + y * y)]])


#: A quaternion whose squared norm is at most this holds only finite values (one inf or NaN
#: makes the sum inf or NaN); above it the values are checked one by one.
_MAX_NORM2 = 1.7e308


def rotation_error(R_actual, R_target) -> float:
    """Angle [rad] of the rotation taking ``R_actual`` to ``R_target`` (3x3 arrays or nested
    lists of floats)."""
    (a00, a01, a02), (a10, a11, a12), (a20, a21, a22) = \
        R_actual.tolist() if isinstance(R_actual, np.ndarray) else R_actual
    (b00, b01, b02), (b10, b11, b12), (b20, b21, b22) = \
        R_target.tolist() if isinstance(R_target, np.ndarray) else R_target
    # R = R_actual^T R_target, element by element in floats: its trace, then its skew part.
    r00 = a00 * b00 + a10 * b10 + a20 * b20
    r11 = a01 * b01 + a11 * b11 + a21 * b21
    r22 = a02 * b02 + a12 * b12 + a22 * b22
    c = 0.5 * (r00 + r11 + r22 - 1.0)
    # acos is ill-conditioned near 0; use the skew part for small angles.
    if c > 0.99:
        sx = (a02 * b01 + a12 * b11 + a22 * b21) - (a01 * b02 + a11 * b12 + a21 * b22)  # R21 - R12
        sy = (a00 * b02 + a10 * b12 + a20 * b22) - (a02 * b00 + a12 * b10 + a22 * b20)  # R02 - R20
        sz = (a01 * b00 + a11 * b10 + a21 * b20) - (a00 * b01 + a10 * b11 + a20 * b21)  # R10 - R01
        s = 0.5 * math.sqrt(sx * sx + sy * sy + sz * sz)
        return math.asin(min(1.0, s))
    return math.acos(max(-1.0, min(1.0, c)))


def clip_values(values: List[float], lower: List[float], upper: List[float]
                ) -> Optional[List[float]]:
    """``values`` clipped into ``[lower, upper]`` element-wise (an infinite value beyond a finite
    limit becomes the limit); None if one is NaN. ``values`` itself when all are within.

    Comparisons rather than ``min(max(...))``: a third of the time for a handful of joints.
    """
    for v, lo, hi in zip(values, lower, upper):
        if not lo <= v <= hi:
            break
    else:
        return values  # the common case: nothing to clip
    out = []
    append = out.append
    for v, lo, hi in zip(values, lower, upper):
        if lo <= v <= hi:
            append(v)
        elif v < lo:
            append(lo)
        elif v > hi:
            append(hi)
        else:  # NaN: compares false with everything
            return None
    return out
