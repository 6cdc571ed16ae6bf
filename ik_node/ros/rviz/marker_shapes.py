"""Building blocks of the node's RViz markers: a marker with its header, deletes, points,
circles and the red-yellow-green colour ramp (no rclpy)."""

from __future__ import annotations

import math
from typing import List, Sequence

import numpy as np
from geometry_msgs.msg import Point
from visualization_msgs.msg import Marker, MarkerArray

NAMESPACE = 'ik'
#: Points per circle of the envelope outline and the joint rings.
CIRCLE_SEGMENTS = 48


def new_marker(frame_id: str, stamp, mid: int, mtype: int, rgba, ns: str = NAMESPACE) -> Marker:
    m = Marker()
    m.header.frame_id = frame_id
    m.header.stamp = stamp
    m.ns = ns
    m.id = mid
    m.type = mtype
    m.action = Marker.ADD
    m.pose.orientation.w = 1.0
    m.color.r, m.color.g, m.color.b, m.color.a = (float(c) for c in rgba)
    return m


def deleted(frame_id: str, stamp, mid: int) -> Marker:
    m = Marker()
    m.header.frame_id = frame_id
    m.header.stamp = stamp
    m.ns = NAMESPACE
    m.id = mid
    m.action = Marker.DELETE
    return m


def point_msg(p) -> Point:
    return Point(x=float(p[0]), y=float(p[1]), z=float(p[2]))


def points_msg(xyz: np.ndarray) -> List[Point]:
    """``geometry_msgs/Point`` s of the rows of ``xyz`` ``(n, 3)`` [m] (through plain floats:
    the markers of a 12-joint robot hold about 600 points)."""
    return [Point(x=x, y=y, z=z) for x, y, z in np.asarray(xyz, dtype=float).tolist()]


def place(m: Marker, p) -> None:
    m.pose.position.x, m.pose.position.y, m.pose.position.z = (float(v) for v in p)


def plane_basis(normal) -> tuple:
    """Two unit vectors ``(u, v)`` with ``(u, v, normal)`` right-handed and orthonormal."""
    x, y, z = np.asarray(normal, dtype=float).reshape(3).tolist()
    norm = math.sqrt(x * x + y * y + z * z)
    x, y, z = x / norm, y / norm, z / norm
    # u = helper x n with helper the x axis, or the y axis when n is near x
    u = (0.0, -z, y) if abs(x) < 0.9 else (z, 0.0, -x)
    norm = math.sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2])
    u = (u[0] / norm, u[1] / norm, u[2] / norm)
    v = (y * u[2] - z * u[1], z * u[0] - x * u[2], x * u[1] - y * u[0])  # n x u
    return np.array(u), np.array(v)


def circle_points(center, normal, radius: float, segments: int = CIRCLE_SEGMENTS) -> np.ndarray:
    """``(segments + 1, 3)`` points of a closed circle [m] about ``normal`` (first == last)."""
    u, v = plane_basis(normal)
    cos_sin = _CIRCLE if segments == CIRCLE_SEGMENTS else _unit_circle(segments)
    return np.asarray(center, dtype=float) + radius * (cos_sin @ np.array([u, v]))


def _unit_circle(segments: int) -> np.ndarray:
    """``(segments + 1, 2)``: cos and sin of ``segments + 1`` angles from 0 to 2 pi."""
    angles = np.linspace(0.0, 2.0 * math.pi, segments + 1)
    return np.stack([np.cos(angles), np.sin(angles)], axis=1)


_CIRCLE = _unit_circle(CIRCLE_SEGMENTS)


def quat_xyzw_z_onto(normal) -> tuple:
    """The rotation (x, y, z, w) taking the z axis onto unit ``normal``."""
    z = np.array([0.0, 0.0, 1.0])
    n = np.asarray(normal, dtype=float) / np.linalg.norm(normal)
    axis = np.cross(z, n)
    s, c = float(np.linalg.norm(axis)), float(z @ n)
    if s < 1e-12:
        return (0.0, 0.0, 0.0, 1.0) if c > 0 else (1.0, 0.0, 0.0, 0.0)
    half = 0.5 * math.atan2(s, c)
    x, y, zq = axis / s * math.sin(half)
    return float(x), float(y), float(zq), math.cos(half)


def ramp(x: float):
    """Red (0) -> yellow (0.5) -> green (1)."""
    x = min(max(float(x), 0.0), 1.0)
    return (min(1.0, 2.0 * (1.0 - x)), min(1.0, 2.0 * x), 0.1)


def marker_array(markers: Sequence[Marker]) -> MarkerArray:
    """A ``visualization_msgs/MarkerArray`` of ``markers``."""
    msg = MarkerArray()
    msg.markers = list(markers)
    return msg


def delete_all(frame_id: str, stamp) -> Sequence[Marker]:
    """One DELETEALL marker: RViz drops every marker of this publisher (e.g. a chain change)."""
    m = Marker()
    m.header.frame_id = frame_id
    m.header.stamp = stamp
    m.ns = NAMESPACE
    m.action = Marker.DELETEALL
    return [m]
