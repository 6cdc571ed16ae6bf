"""RViz's Orbit camera as plain numbers: where a point lands in the 3D view, and how to keep a
marker and its label inside it.

The node draws a target far outside the robot's reach at the edge of the robot's view (on the
line from the tip towards it) and keeps every label's text inside the view: both need to know
where the shipped camera puts a point on the screen (:meth:`OrbitView.project`). The camera of a
chain is computed in :mod:`ik_node.ros.rviz.views`.

Imports numpy only (no rclpy, no messages).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Sequence, Tuple

import numpy as np

#: RViz's Orbit camera: vertical field of view [rad] (rviz_default_plugins' default).
FIELD_OF_VIEW = math.pi / 4
#: The 3D view of ``rviz/ik.rviz``'s window (1200 x 846, the Displays dock on the left at its
#: default width, the right dock hidden) [px]: width, height, as measured in RViz 1.14 (the
#: rviz1 looking tool's window tree).
RENDER_PX = (820, 755)
#: Share of the 3D view (from its middle to an edge) the framed robot may take, and inside
#: which a marker or label drawn at the view's edge is kept (the rest is margin).
FILL = 0.9
#: Width of a character of RViz's text as a share of the text height (RViz 1.14's font with
#: its wide spaces measured at 0.68 on a label line: a little more, so a label kept inside
#: the view or beside a handle by it is not cut or over the handle).
CHAR_WIDTH = 0.72


@dataclass(frozen=True)
class OrbitView:
    """RViz's Orbit view: the camera at ``focal + distance * (cos yaw cos pitch, sin yaw cos
    pitch, sin pitch)`` looking at ``focal`` (fixed frame, z up) [m, rad]."""

    focal: tuple
    distance: float
    pitch: float
    yaw: float

    def eye(self) -> np.ndarray:
        return self._frame[0].copy()

    def basis(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(forward, right, up)`` unit vectors of the camera in the fixed frame."""
        return tuple(v.copy() for v in self._frame[1:])

    @cached_property
    def _frame(self) -> Tuple[np.ndarray, ...]:
        """``(eye, forward, right, up)``, computed once per view."""
        c = math.cos(self.pitch)
        focal = np.asarray(self.focal, dtype=float)
        eye = focal + self.distance * np.array(
            [math.cos(self.yaw) * c, math.sin(self.yaw) * c, math.sin(self.pitch)])
        forward = focal - eye
        forward /= np.linalg.norm(forward)
        right = np.cross(forward, [0.0, 0.0, 1.0])
        right /= np.linalg.norm(right)
        return eye, forward, right, np.cross(right, forward)

    def project(self, points: np.ndarray, render_px: Sequence[int] = RENDER_PX) -> np.ndarray:
        """``(n, 2)`` normalised screen coordinates of ``points`` (-1..1 across the 3D view; a
        point behind the camera gets inf)."""
        eye, forward, right, up = self._frame
        d = np.atleast_2d(np.asarray(points, dtype=float)) - eye
        depth = d @ forward
        t = math.tan(FIELD_OF_VIEW / 2)
        aspect = render_px[0] / render_px[1]
        with np.errstate(divide='ignore', invalid='ignore'):
            x = np.where(depth > 0, (d @ right) / depth / (t * aspect), np.inf)
            y = np.where(depth > 0, (d @ up) / depth / t, np.inf)
        return np.column_stack([x, y])

    def contains(self, points: np.ndarray, fill: float = FILL) -> bool:
        """Whether every point lands within ``fill`` of the 3D view's middle-to-edge."""
        return bool(np.all(np.abs(self.project(points)) <= fill))


def text_width(text: str, height: float) -> float:
    """Estimated width [m] of RViz's text ``text`` (its longest line) ``height`` [m] high."""
    return CHAR_WIDTH * height * max((len(line) for line in text.split('\n')), default=0)


def text_corners(view: OrbitView, centre: np.ndarray, width: float,
                 height: float) -> np.ndarray:
    """The four corners [m] of a view-facing text block ``width`` x ``height`` [m] centred on
    ``centre`` (RViz centres view-facing text on its position)."""
    _, right, up = view.basis()
    c = np.asarray(centre, dtype=float)
    return np.array([c + sx * 0.5 * width * right + sy * 0.5 * height * up
                     for sx in (-1.0, 1.0) for sy in (-1.0, 1.0)])


def pulled_into_view(view: OrbitView, inside: np.ndarray, outside: np.ndarray,
                     keep, steps: int = 24) -> Tuple[np.ndarray, float]:
    """The point on the segment from ``inside`` to ``outside`` farthest from ``inside`` for
    which ``keep(point)`` (an iterable of points that must be in view) is inside the view, and
    the segment's share it covers (1.0: ``outside`` itself is kept).

    The view is a convex frustum, so along the segment the points that keep everything in view
    form one interval from ``inside``: bisection finds its end.
    """
    a = np.asarray(inside, dtype=float)
    b = np.asarray(outside, dtype=float)
    if view.contains(keep(b)):
        return b, 1.0
    low, high = 0.0, 1.0
    for _ in range(steps):
        middle = 0.5 * (low + high)
        if view.contains(keep(a + middle * (b - a))):
            low = middle
        else:
            high = middle
    return a + low * (b - a), low


def shifted_into_view(view: OrbitView, centre: np.ndarray, width: float,
                      height: float) -> np.ndarray:
    """``centre`` of a view-facing text block moved across the screen (along the camera's
    right and up vectors, at its own depth) just far enough that the whole block lands within
    :data:`FILL` of the view; unchanged when it already does or cannot fit."""
    c = np.asarray(centre, dtype=float)
    forward, right, up = view.basis()
    depth = float((c - view.eye()) @ forward)
    if depth <= 0.0:
        return c
    t = math.tan(FIELD_OF_VIEW / 2)
    half_x = 0.5 * width / (depth * t * RENDER_PX[0] / RENDER_PX[1])  # in screen units
    half_y = 0.5 * height / (depth * t)
    x, y = view.project(c)[0]
    room_x, room_y = FILL - half_x, FILL - half_y
    new_x = min(max(x, -room_x), room_x) if room_x > 0 else x
    new_y = min(max(y, -room_y), room_y) if room_y > 0 else y
    return c + (new_x - x) * depth * t * RENDER_PX[0] / RENDER_PX[1] * right + \
        (new_y - y) * depth * t * up


def framing(points: np.ndarray, pitch: float, yaw: float) -> OrbitView:
    """The Orbit view from ``pitch`` and ``yaw`` [rad] that frames ``points``: looking at the
    middle of their box, as near as the 3D view still holds all of them within :data:`FILL` of
    its width and height (to the centimetre)."""
    points = np.asarray(points, dtype=float)
    focal = tuple(float(v) + 0.0 for v in
                  np.round(0.5 * (points.min(axis=0) + points.max(axis=0)), 3))
    near, far = 0.05, 50.0
    while far - near > 0.005:
        middle = 0.5 * (near + far)
        if OrbitView(focal, middle, pitch, yaw).contains(points):
            far = middle
        else:
            near = middle
    return OrbitView(focal, round(math.ceil(far * 100.0) / 100.0, 2), pitch, yaw)


def on_screen(view: OrbitView, x: float, y: float, depth: float) -> np.ndarray:
    """The point [m] at normalised screen coordinates ``(x, y)`` and ``depth`` [m] in front of
    the camera."""
    forward, right, up = view.basis()
    t = math.tan(FIELD_OF_VIEW / 2)
    return view.eye() + depth * (forward + x * t * RENDER_PX[0] / RENDER_PX[1] * right +
                                 y * t * up)
