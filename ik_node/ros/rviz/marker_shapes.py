"""Building blocks of the node's RViz markers: a marker with its header, deletes, points,
circles and the red-yellow-green colour ramp (no rclpy)."""

from __future__ import annotations

import math
from typing import Sequence

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


def place(m: Marker, p) -> None:
    m.pose.position.x, m.pose.position.y, m.pose.position.z = (float(v) for v in p)


def plane_basis(normal) -> tuple:
    """Two unit vectors ``(u, v)`` with ``(u, v, normal)`` right-handed and orthonormal."""
    n = np.asarray(normal, dtype=float)
    n = n / np.linalg.norm(n)
    helper = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    u = np.cross(helper, n)
    u /= np.linalg.norm(u)
    return u, np.cross(n, u)


def circle_points(center, normal, radius: float, segments: int = CIRCLE_SEGMENTS) -> np.ndarray:
    """``(segments + 1, 3)`` points of a closed circle [m] about ``normal`` (first == last)."""
    u, v = plane_basis(normal)
    angles = np.linspace(0.0, 2.0 * math.pi, segments + 1)
    return np.asarray(center, dtype=float) + radius * (np.outer(np.cos(angles), u) +
                                                       np.outer(np.sin(angles), v))


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
