"""The planar angle helpers of the compiled path, written once for every kernel module.

Plain Python functions in numba's subset, compiled in place by :func:`compile` (which a kernel
module calling them runs first, as it calls ``planar.near_angle``: numba reads the module's
attribute when it compiles the caller). They compute what ``near_angle`` and
``clamp_on_circle`` of :mod:`ik_node.solvers.geometry.planar_core` compute on the Python path,
with the same operations.
"""

from __future__ import annotations

import math

import numpy as np

import ik_node.kernels as kernels

_PI = math.pi
_TWO_PI = 2.0 * math.pi
#: Joint values this far [rad] past a limit count as inside (planar_core's ``_LIMIT_SLACK``).
LIMIT_SLACK = 1e-9
#: Distances to the two limits this close [rad] count as equal: the limit nearer the seed wins.
_LIMIT_TIE = 1e-12


def near_angle(angle, seed, lower, upper):
    """``(found, value)``: the value of ``angle`` (mod 2 pi) inside [lower, upper] nearest
    ``seed`` [rad] (``planar_core.near_angle``; ``found`` False for its None)."""
    d = seed - angle
    a = angle if -_PI <= d <= _PI else angle + _TWO_PI * np.rint(d / _TWO_PI)
    if a < lower - LIMIT_SLACK:
        a += _TWO_PI
    elif a > upper + LIMIT_SLACK:
        a -= _TWO_PI
    else:
        return True, a
    return lower - LIMIT_SLACK <= a <= upper + LIMIT_SLACK, a


def wrap(angle):
    """``angle`` wrapped into [-pi, pi] [rad]."""
    return angle - _TWO_PI * np.rint(angle / _TWO_PI)


def clamp_on_circle(angle, seed, lower, upper):
    """``angle`` within [lower, upper] nearest ``seed``, else the limit nearer on the circle
    [rad] (``planar_core.clamp_on_circle``)."""
    found, a = near_angle(angle, seed, lower, upper)
    if found:
        return a
    d_lower, d_upper = abs(wrap(angle - lower)), abs(wrap(angle - upper))
    if abs(d_lower - d_upper) <= _LIMIT_TIE:
        return lower if abs(seed - lower) <= abs(seed - upper) else upper
    return lower if d_lower < d_upper else upper


_COMPILED = []


def compile() -> None:  # noqa: A001 - the kernel modules' entry point is named so
    """Compile these helpers in place (or load them from numba's cache on disk), once."""
    if not _COMPILED:
        kernels.jitted(globals(), ('near_angle', 'wrap', 'clamp_on_circle'), ())
        _COMPILED.append(True)
