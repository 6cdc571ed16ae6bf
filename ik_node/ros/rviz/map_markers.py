"""The reachability map as RViz markers: per tip a bounded set of small opaque points in
the tip's own hue, shaded by the map's colour scale, and a legend in plain words in a top
corner of the robot's view, clear of the robot (no rclpy; the points come from
:func:`ik_node.reachability.map_points`)."""

from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker

from ik_node.reachability.map_points import DEPTH_SCALE, INDEX_SCALE, map_points
from ik_node.ros.rviz.camera import (FIELD_OF_VIEW, FILL, RENDER_PX, OrbitView, framing,
                                     on_screen, text_width)
from ik_node.ros.rviz.marker_shapes import delete_all, new_marker, place, point_msg
from ik_node.ros.rviz.markers import LINE_PITCH

#: Height of a legend line [m]: a share of the map's widest extent, within these bounds (the
#: least is the labels' least height).
LEGEND_HEIGHT_M = (0.04, 0.06)
LEGEND_SHARE = 0.04

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
#: One hue per tip's map (RGB), none of them the green, red, orange or amber that mean reached,
#: missed, the miss line and a warning: blue, violet, cyan, slate, then again.
TIP_HUES = ((0.25, 0.5, 1.0), (0.62, 0.38, 1.0), (0.1, 0.78, 0.9), (0.6, 0.65, 0.8))
#: How far a point near the edge of the sampled space is faded towards white.
EDGE_FADE = 0.7
#: The legend's namespace, and the colour of its words when several maps share it.
LEGEND_NAMESPACE = 'reachability/legend'
LEGEND_GREY = (0.85, 0.85, 0.85)
#: The legend in plain words, per colour scale of :func:`ik_node.reachability.map_points`: two
#: short lines after the tip's name (a long line runs off the view).
LEGEND = {DEPTH_SCALE: ('how deep inside', 'the reachable space (pale: edge)'),
          INDEX_SCALE: ('share of approach', 'directions reached (pale: few)')}


def tip_colour(k: int, value: float):
    """Colour (r, g, b) of a point of tip ``k``'s map with scale value ``value`` (0..1): the
    tip's hue, faded towards white by :data:`EDGE_FADE` at 0, full at 1."""
    fade = EDGE_FADE * (1.0 - min(max(float(value), 0.0), 1.0))
    return tuple(c + (1.0 - c) * fade for c in TIP_HUES[k % len(TIP_HUES)])


def legend_lines(pictures) -> list:
    """The legend as ``(text, rgb)`` lines: one map's in its hue, ``<tip> map: how deep
    inside`` / ``the reachable space (pale: edge)``; several maps' the words once in grey,
    then one line per tip in its hue, ``<tip> map``."""
    scale = pictures[0][2].scale
    first, second = LEGEND.get(scale, (scale, ''))
    if len(pictures) == 1:
        k, reach_map, _ = pictures[0]
        hue = TIP_HUES[k % len(TIP_HUES)]
        return [(f'{reach_map.tip_link} map: {first}', hue), (second, hue)]
    return [(f'map: {first}', LEGEND_GREY), (second, LEGEND_GREY)] + [
        (f'{reach_map.tip_link} map', TIP_HUES[k % len(TIP_HUES)])
        for k, reach_map, _ in pictures]


def legend_places(view: OrbitView, lines: Sequence[str], height: float,
                  points: np.ndarray) -> np.ndarray:
    """Centres [m] of the legend's lines: a column in a top corner of ``view`` (at the depth of
    its focal point), left-aligned there as RViz centres each line, the corner whose column
    covers fewer of ``points`` (the map), the left one on a tie."""
    depth = view.distance
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


def reachability_markers(frame_id: str, stamp, maps, max_points: int = SHOWN_POINTS,
                         view: Optional[OrbitView] = None) -> Sequence[Marker]:
    """DELETEALL, then per tip map (namespace ``reachability/<tip>``) one POINTS marker (id 0)
    in the tip's own hue, pale where the scale is low and deep where it is high
    (:func:`tip_colour`), and a legend in plain words (:func:`legend_lines`, namespace
    ``reachability/legend``, one text marker per line, id = line) in a top corner of ``view``
    (the robot's RViz view; None: a view framing the maps), clear of the robot in the middle.
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
    for k, reach_map, picture in pictures:
        ns = f'reachability/{reach_map.tip_link}'
        hue = TIP_HUES[k % len(TIP_HUES)]
        m = new_marker(frame_id, stamp, 0, Marker.POINTS, (*hue, REACH_ALPHA), ns)
        m.scale.x = m.scale.y = max(0.005, REACH_POINT_SHARE * picture.spacing)
        m.points = [point_msg(p) for p in picture.points]
        m.colors = []
        for value in picture.value:
            r, g, b = tip_colour(k, value)
            m.colors.append(ColorRGBA(r=r, g=g, b=b, a=REACH_ALPHA))
        out.append(m)
    lines = legend_lines(pictures)
    if view is None:
        view = framing(every, 0.45, 0.785398)
    places = legend_places(view, [text for text, _ in lines], height, every)
    for i, ((text, rgb), at) in enumerate(zip(lines, places, strict=True)):
        legend = new_marker(frame_id, stamp, i, Marker.TEXT_VIEW_FACING, (*rgb, 1.0),
                            LEGEND_NAMESPACE)
        legend.text = text
        legend.scale.x = legend.scale.y = legend.scale.z = height
        place(legend, at)
        out.append(legend)
    return out
