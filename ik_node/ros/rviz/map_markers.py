"""The reachability map as RViz markers: per tip a bounded set of small translucent points in
the tip's own hue, shaded by the map's colour scale, and a legend naming it in plain words
(no rclpy; the points come from :func:`ik_node.reachability.map_points`)."""

from __future__ import annotations

from typing import Sequence

import numpy as np
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker

from ik_node.reachability.map_points import (DEFAULT_MAX_POINTS, DEPTH_SCALE, INDEX_SCALE,
                                             map_points)
from ik_node.ros.rviz.marker_shapes import delete_all, new_marker, place, point_msg
from ik_node.ros.rviz.markers import LINE_PITCH

#: Height of a legend line [m]: a share of the map's widest extent, within these bounds (the
#: least is the labels' least height).
LEGEND_HEIGHT_M = (0.04, 0.06)
LEGEND_SHARE = 0.04

#: Map points are translucent and small (a share of the distance between neighbouring points):
#: the robot, its targets and their labels show through and between them.
REACH_ALPHA = 0.45
#: A point's side as a share of the distance between neighbouring points.
REACH_POINT_SHARE = 0.15
#: One hue per tip's map (RGB), none of them the green, red, orange or amber that mean reached,
#: missed, the miss line and a warning: blue, violet, cyan, slate, then again.
TIP_HUES = ((0.25, 0.5, 1.0), (0.62, 0.38, 1.0), (0.1, 0.78, 0.9), (0.6, 0.65, 0.8))
#: How far a point near the edge of the sampled space is faded towards white.
EDGE_FADE = 0.7
#: The legend in plain words, per colour scale of :func:`ik_node.reachability.map_points`: two
#: short lines after the tip's name (a long line runs off the view).
LEGEND = {DEPTH_SCALE: ('how deep inside', 'the reachable space (pale: edge)'),
          INDEX_SCALE: ('share of approach', 'directions reached (pale: few)')}


def tip_colour(k: int, value: float):
    """Colour (r, g, b) of a point of tip ``k``'s map with scale value ``value`` (0..1): the
    tip's hue, faded towards white by :data:`EDGE_FADE` at 0, full at 1."""
    fade = EDGE_FADE * (1.0 - min(max(float(value), 0.0), 1.0))
    return tuple(c + (1.0 - c) * fade for c in TIP_HUES[k % len(TIP_HUES)])


def reachability_markers(frame_id: str, stamp, maps,
                         max_points: int = DEFAULT_MAX_POINTS) -> Sequence[Marker]:
    """DELETEALL, then per tip map (namespace ``reachability/<tip>``) one POINTS marker (id 0)
    in the tip's own hue, pale where the scale is low and deep where it is high
    (:func:`tip_colour`), and a legend (id 1) in that hue saying what the colour shows: the
    legends stacked inside the top of all maps together (in the robot's view), two lines per
    tip. ``max_points`` bounds the
    points of all maps together (shared evenly).

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
    # One stack of legends over the middle of all maps together, from their top down.
    every = np.vstack([picture.points for _, _, picture in pictures])
    low, top = every.min(axis=0), every.max(axis=0)
    middle = 0.5 * (low + top)
    height = min(max(LEGEND_SHARE * float(max(top - low)), LEGEND_HEIGHT_M[0]),
                 LEGEND_HEIGHT_M[1])
    for line, (k, reach_map, picture) in enumerate(pictures):
        ns = f'reachability/{reach_map.tip_link}'
        hue = TIP_HUES[k % len(TIP_HUES)]
        m = new_marker(frame_id, stamp, 0, Marker.POINTS, (*hue, REACH_ALPHA), ns)
        m.scale.x = m.scale.y = max(0.005, REACH_POINT_SHARE * picture.spacing)
        m.points = [point_msg(p) for p in picture.points]
        m.colors = []
        for value in picture.value:
            r, g, b = tip_colour(k, value)
            m.colors.append(ColorRGBA(r=r, g=g, b=b, a=REACH_ALPHA))
        legend = new_marker(frame_id, stamp, 1, Marker.TEXT_VIEW_FACING, (*hue, 1.0), ns)
        first, second = LEGEND.get(picture.scale, (picture.scale, ''))
        legend.text = f'{reach_map.tip_link} map: {first}\n{second}'
        legend.scale.x = legend.scale.y = legend.scale.z = height
        below = height * (1.0 + line * (2 * LINE_PITCH + 0.5))  # two lines per tip
        place(legend, (middle[0], middle[1], top[2] - below))
        out += [m, legend]
    return out
