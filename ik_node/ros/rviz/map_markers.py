"""The reachability map as RViz markers: per tip a bounded set of small opaque points, all
tips' on one colour scale from violet to cyan, and a legend in plain words in a top corner of
the robot's view, in front of the map and clear of the robot (no rclpy; the points come from
:func:`ik_node.reachability.map_points`)."""

from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker

from ik_node.reachability.map_points import DEPTH_SCALE, INDEX_SCALE, map_points
from ik_node.ros.rviz.camera import (FIELD_OF_VIEW, FILL, RENDER_PX, OrbitView, framing,
                                     on_screen, text_corners, text_width)
from ik_node.ros.rviz.marker_shapes import delete_all, new_marker, place, point_msg
from ik_node.ros.rviz.labels import LINE_PITCH

#: Height of a legend line [m] at the view's focal distance: a share of the map's widest
#: extent, within these bounds (the least a little above the labels' least height).
LEGEND_HEIGHT_M = (0.045, 0.06)
LEGEND_SHARE = 0.045
#: The legend stands this share of the way from the camera to the nearest map point (its
#: height scaled to look as it would at the focal distance): in front of every point, so no
#: point hides its words.
LEGEND_DEPTH_SHARE = 0.5

#: The points of all maps together RViz is sent: RViz's cost grows with the number of points
#: (Mesa's software renderer, quad12's four maps: 0.97 of the frame rate without the map at 200
#: points, 0.82 at 800; benchmarks/results/rviz_frame_rate.md).
SHOWN_POINTS = 200
#: Map points are small (a share of the distance between neighbouring points): the robot, its
#: targets and their labels show between them. Opaque: blending them costs RViz's software
#: renderer frames (benchmarks/results/rviz_frame_rate.md).
REACH_ALPHA = 1.0
#: A point's side as a share of the distance between neighbouring points.
REACH_POINT_SHARE = 0.15
#: The map's one colour scale, the same for every tip's map (a tip's points are where its
#: tip reaches): violet at its low end, cyan at its high end (RGB), both bright on RViz's dark
#: background and none of the green, red, orange, amber or magenta that mean reached, missed,
#: the miss line, a warning and a collision.
LOW_RGB, HIGH_RGB = (0.62, 0.42, 1.0), (0.25, 0.95, 1.0)
#: The legend's namespace, and the colour of its title.
LEGEND_NAMESPACE = 'reachability/legend'
LEGEND_GREY = (0.85, 0.85, 0.85)
#: What the low and high ends of each colour scale of :func:`ik_node.reachability.map_points`
#: mean, in plain words (each legend line short: a long one runs off the view).
LEGEND = {DEPTH_SCALE: ('violet: at the edge of reach', 'cyan: deep inside the reach'),
          INDEX_SCALE: ('violet: few approach directions', 'cyan: all approach directions')}


def map_colour(value: float):
    """Colour (r, g, b) of a map point with scale value ``value`` (0..1): :data:`LOW_RGB` at
    0 through to :data:`HIGH_RGB` at 1."""
    t = min(max(float(value), 0.0), 1.0)
    return tuple(lo + t * (hi - lo) for lo, hi in zip(LOW_RGB, HIGH_RGB))


def legend_lines(pictures) -> list:
    """The legend as ``(text, rgb)`` lines: the title in grey (``foot reachability map``; a
    branched chain's ``reachability map of 4 tips``), then what violet means in violet and
    what cyan means in cyan."""
    scale = pictures[0][2].scale
    low, high = LEGEND.get(scale, (f'violet: low {scale}', f'cyan: high {scale}'))
    title = (f'{pictures[0][1].tip_link} reachability map' if len(pictures) == 1
             else f'reachability map of {len(pictures)} tips')
    return [(title, LEGEND_GREY), (low, LOW_RGB), (high, HIGH_RGB)]


def legend_places(view: OrbitView, lines: Sequence[str], height: float,
                  points: np.ndarray, depth: float) -> np.ndarray:
    """Centres [m] of the legend's lines ``height`` [m] high at ``depth`` [m] in front of
    the camera: a column in a top corner of ``view``, left-aligned there as RViz centres each
    line, the corner whose column covers fewer of ``points`` (the map), the left one on a
    tie."""
    forward, right, up = view.basis()
    t = math.tan(FIELD_OF_VIEW / 2)
    to_x = 1.0 / (depth * t * RENDER_PX[0] / RENDER_PX[1])  # metres -> screen units
    to_y = 1.0 / (depth * t)
    widths = [text_width(line, height) * to_x for line in lines]
    pitch = LINE_PITCH * height * to_y
    ys = [FILL - (i + 0.5) * pitch for i in range(len(lines))]
    screen = view.project(points)
    best = None
    for side in (-1.0, 1.0):  # left, right
        xs = [side * (FILL - 0.5 * w) for w in widths]
        edge = side * (FILL - max(widths))
        inside = (screen[:, 1] >= ys[-1] - 0.5 * pitch) & (
            (screen[:, 0] <= edge) if side < 0 else (screen[:, 0] >= edge))
        covered = int(np.count_nonzero(inside))
        if best is None or covered < best[0]:
            best = (covered, [on_screen(view, x, y, depth) for x, y in zip(xs, ys, strict=True)])
    return np.array(best[1])


def legend_box(view: OrbitView, places: np.ndarray, lines: Sequence[str],
               height: float) -> tuple:
    """``(x_min, x_max, y_min, y_max)`` on the screen of the legend's lines ``height`` [m] high
    centred on ``places``, with half a line of margin: the map's points there are not drawn
    (RViz draws text under the points behind it)."""
    corners = np.vstack([text_corners(view, at, text_width(line, height) + height,
                                      2.0 * LINE_PITCH * height)
                         for at, line in zip(places, lines, strict=True)])
    screen = view.project(corners)
    return (float(screen[:, 0].min()), float(screen[:, 0].max()),
            float(screen[:, 1].min()), float(screen[:, 1].max()))


def legend_depth(view: OrbitView, points: np.ndarray) -> float:
    """Depth [m] of the legend in ``view``: :data:`LEGEND_DEPTH_SHARE` of the way to the
    nearest of ``points`` (and of the focal point)."""
    forward, _, _ = view.basis()
    nearest = float(np.min((np.atleast_2d(points) - view.eye()) @ forward))
    return LEGEND_DEPTH_SHARE * max(min(nearest, view.distance), 0.05)


def reachability_markers(frame_id: str, stamp, maps, max_points: int = SHOWN_POINTS,
                         view: Optional[OrbitView] = None) -> Sequence[Marker]:
    """DELETEALL, then per tip map (namespace ``reachability/<tip>``) one POINTS marker (id 0)
    on one colour scale for every tip, violet where the scale is low and cyan where it is high
    (:func:`map_colour`), and a legend in plain words (:func:`legend_lines`, namespace
    ``reachability/legend``, one text marker per line, id = line) in a top corner of ``view``
    (the robot's RViz view; None: a view framing the maps), clear of the robot in the middle
    and in front of every map point (:func:`legend_depth`); the points behind the legend on the
    screen are left out (:func:`legend_box`).
    ``max_points`` bounds the points of all maps together (shared evenly).

    Maps that bin approach directions are coloured by the reachability index, position-only
    maps by the depth inside the sampled workspace (:mod:`ik_node.reachability.map_points`).
    """
    out = list(delete_all(frame_id, stamp))
    out[0].ns = ''
    maps = list(maps)
    pictures = [(k, reach_map, map_points(reach_map, max(1, max_points // len(maps))))
                for k, reach_map in enumerate(maps)]
    pictures = [(k, reach_map, picture) for k, reach_map, picture in pictures
                if len(picture.points)]
    if not pictures:
        return out
    every = np.vstack([picture.points for _, _, picture in pictures])
    low, top = every.min(axis=0), every.max(axis=0)
    height = min(max(LEGEND_SHARE * float(max(top - low)), LEGEND_HEIGHT_M[0]),
                 LEGEND_HEIGHT_M[1])
    lines = legend_lines(pictures)
    if view is None:
        view = framing(every, 0.45, 0.785398)
    depth = legend_depth(view, every)
    height *= depth / view.distance  # as large on the screen as at the focal distance
    places = legend_places(view, [text for text, _ in lines], height, every, depth)
    legends = []
    for i, ((text, rgb), at) in enumerate(zip(lines, places, strict=True)):
        legend = new_marker(frame_id, stamp, i, Marker.TEXT_VIEW_FACING, (*rgb, 1.0),
                            LEGEND_NAMESPACE)
        legend.text = text
        legend.scale.x = legend.scale.y = legend.scale.z = height
        place(legend, at)
        legends.append(legend)
    box = legend_box(view, places, [text for text, _ in lines], height)
    for _, reach_map, picture in pictures:
        ns = f'reachability/{reach_map.tip_link}'
        m = new_marker(frame_id, stamp, 0, Marker.POINTS, (*HIGH_RGB, REACH_ALPHA), ns)
        m.scale.x = m.scale.y = max(0.005, REACH_POINT_SHARE * picture.spacing)
        screen = view.project(picture.points)
        clear = ~((screen[:, 0] >= box[0]) & (screen[:, 0] <= box[1]) &
                  (screen[:, 1] >= box[2]) & (screen[:, 1] <= box[3]))
        m.points = [point_msg(p) for p in picture.points[clear]]
        m.colors = []
        for value in np.asarray(picture.value)[clear]:
            r, g, b = map_colour(value)
            m.colors.append(ColorRGBA(r=r, g=g, b=b, a=REACH_ALPHA))
        out.append(m)
    out += legends
    return out
