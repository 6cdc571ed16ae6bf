"""The reachability map as RViz markers: per tip a bounded set of points coloured by the map's
colour scale, and a legend naming it (no rclpy; the points come from
:func:`ik_node.reachability.map_points`)."""

from __future__ import annotations

from typing import Sequence

import numpy as np
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker

from ik_node.reachability.map_points import DEFAULT_MAX_POINTS, map_points
from ik_node.ros.rviz.marker_shapes import delete_all, new_marker, place, point_msg, ramp

#: Map points are opaque (no blending: cheaper to draw) and small enough to see the robot
#: between them.
REACH_ALPHA = 1.0
#: A point's side as a share of the distance between neighbouring points.
REACH_POINT_SHARE = 0.15


def reachability_markers(frame_id: str, stamp, maps,
                         max_points: int = DEFAULT_MAX_POINTS) -> Sequence[Marker]:
    """DELETEALL, then per tip map (namespace ``reachability/<tip>``) one POINTS marker (id 0)
    coloured red (low) to green (high), and a legend (id 1) above it naming what the colour
    measures. ``max_points`` bounds the points of all maps together (shared evenly).

    Maps that bin approach directions are coloured by the reachability index, position-only
    maps by the depth inside the sampled workspace (:mod:`ik_node.reachability.map_points`).
    """
    out = list(delete_all(frame_id, stamp))
    out[0].ns = ''
    maps = list(maps)
    for k, reach_map in enumerate(maps):
        picture = map_points(reach_map, max(1, max_points // len(maps)))
        if not len(picture.points):
            continue
        ns = f'reachability/{reach_map.tip_link}'
        m = new_marker(frame_id, stamp, 0, Marker.POINTS, (1.0, 1.0, 1.0, REACH_ALPHA), ns)
        m.scale.x = m.scale.y = max(0.005, REACH_POINT_SHARE * picture.spacing)
        m.points = [point_msg(p) for p in picture.points]
        m.colors = []
        for value in picture.value:
            r, g, b = ramp(value)
            m.colors.append(ColorRGBA(r=r, g=g, b=b, a=REACH_ALPHA))
        legend = new_marker(frame_id, stamp, 1, Marker.TEXT_VIEW_FACING, (0.9, 0.9, 0.9, 1.0), ns)
        legend.text = (f'{reach_map.tip_link} map, colour: {picture.scale.split(" (")[0]} '
                       f'(red low, green high)')
        legend.scale.x = legend.scale.y = legend.scale.z = max(0.03, 0.4 * picture.spacing)
        low, top = picture.points.min(axis=0), picture.points.max(axis=0)
        middle = 0.5 * (low + top)
        above = max(picture.spacing, 0.25 * float(np.max(top[:2] - low[:2])))
        above += 1.5 * k * legend.scale.z  # one line per tip
        place(legend, (middle[0], middle[1], top[2] + above))  # over the robot in the middle
        out += [m, legend]
    return out
