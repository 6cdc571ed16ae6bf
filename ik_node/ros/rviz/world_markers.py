"""``~/collision_world``: the obstacles and the ground plane the collision check uses, for RViz
(no rclpy).

What the check holds in force is drawn: the obstacles of the ``collision.obstacles`` parameter
and those sent on ``~/obstacles``, each as the box, sphere or cylinder it is (namespace
``obstacles``, one marker per obstacle, its name's order), and ``collision.ground_z`` as a thin
square (namespace ``ground``). A translucent grey-brown, none of the green, red, orange or amber
that mean reached, missed, the miss line and a warning. Every array starts with DELETEALL, so
an obstacle taken away disappears.
"""

from __future__ import annotations

from typing import List, Mapping

import numpy as np
import transforms3d
from visualization_msgs.msg import Marker

from ik_node.ros.rviz.marker_shapes import delete_all, new_marker

#: RGBA of the obstacles and of the ground plane.
OBSTACLE_RGBA = (0.62, 0.55, 0.45, 0.6)
GROUND_RGBA = (0.6, 0.6, 0.6, 0.25)
#: The ground plane's square: side [m] and thickness [m].
GROUND_SIDE_M, GROUND_THICKNESS_M = 3.0, 0.002
_SHAPES = {'box': Marker.CUBE, 'sphere': Marker.SPHERE, 'cylinder': Marker.CYLINDER}


def world_markers(frame_id: str, stamp, world: Mapping) -> List[Marker]:
    """DELETEALL, then a marker per obstacle of ``world['obstacles']`` (objects with ``name``,
    ``kind``, ``size`` and ``T_base_obstacle``, as :class:`ik_node.collision.Obstacle`) and one
    for ``world['ground_z']`` when it is set, all in ``frame_id`` (the chain's base)."""
    out = list(delete_all(frame_id, stamp))
    out[0].ns = ''
    for k, obstacle in enumerate(sorted(world.get('obstacles') or (), key=lambda o: o.name)):
        m = new_marker(frame_id, stamp, k, _SHAPES[obstacle.kind], OBSTACLE_RGBA, 'obstacles')
        size = [float(s) for s in obstacle.size]
        if obstacle.kind == 'box':
            m.scale.x, m.scale.y, m.scale.z = size
        elif obstacle.kind == 'sphere':
            m.scale.x = m.scale.y = m.scale.z = 2.0 * size[0]
        else:  # cylinder: radius, length along its z
            m.scale.x = m.scale.y = 2.0 * size[0]
            m.scale.z = size[1]
        T = np.asarray(obstacle.T_base_obstacle, dtype=float)
        m.pose.position.x, m.pose.position.y, m.pose.position.z = (float(v) for v in T[:3, 3])
        w, x, y, z = transforms3d.quaternions.mat2quat(T[:3, :3])
        m.pose.orientation.x, m.pose.orientation.y = float(x), float(y)
        m.pose.orientation.z, m.pose.orientation.w = float(z), float(w)
        m.text = obstacle.name
        out.append(m)
    ground_z = world.get('ground_z')
    if ground_z is not None:
        g = new_marker(frame_id, stamp, 0, Marker.CUBE, GROUND_RGBA, 'ground')
        g.scale.x = g.scale.y = GROUND_SIDE_M
        g.scale.z = GROUND_THICKNESS_M
        g.pose.position.z = float(ground_z) - GROUND_THICKNESS_M / 2.0  # its top at ground_z
        out.append(g)
    return out
