"""``~/base_placement``: where the robot's base may stand for a set of task poses, from a
capability map (:mod:`ik_node.capability`), with a heat map on the floor for RViz.

A ``geometry_msgs/PoseArray`` on ``~/base_placement/tasks`` (task poses in the floor's frame,
``header.frame_id``) is answered, when the ``capability_map`` parameter names a map folder, with

* ``~/base_placement/result`` (``geometry_msgs/PoseArray``, same frame, latched): the best
  base poses, best first (x, y on the floor, turned by yaw about z);
* ``~/base_placement/answer`` (``std_msgs/String``): JSON with each of them and the share of
  task poses the map calls reachable from it, or ``{"error": ...}`` for a bad request;
* ``~/base_placement/heat_map`` (``visualization_msgs/MarkerArray``, latched): one floor tile
  per grid position, coloured red (no task pose) to green (all), by its best yaw; the task
  poses as white spheres and a legend saying so, with the best base pose's share.

The grid: 2 m x 2 m around the task poses' centre at 5 cm and 10 degrees. The map is loaded on
the first request and again when the parameter changes.
"""

from __future__ import annotations

import json
import math
from typing import Callable, Optional, Tuple

import numpy as np
from geometry_msgs.msg import Pose, PoseArray
from rclpy.node import Node
from std_msgs.msg import ColorRGBA, String
from visualization_msgs.msg import Marker, MarkerArray

from ik_node.errors import IkError
from ik_node.ros.rviz.marker_output import LATCHED_QOS
from ik_node.ros.rviz.marker_shapes import marker_array, new_marker, point_msg, ramp

#: Base poses answered, best first.
TOP = 5
#: The grid around the task poses' centre: half width [m], step [m], yaw step [deg].
HALF_WIDTH_M, STEP_M, YAW_STEP_DEG = 1.0, 0.05, 10.0
NAMESPACE = 'base_placement'


class BasePlacement:
    """Answers task poses with base poses (the module docstring)."""

    def __init__(self, node: Node, send: Callable, map_folder: Callable[[], str]) -> None:
        self._node, self._send, self._folder = node, send, map_folder
        self._loaded: Tuple[str, Optional[object]] = ('', None)
        self._result = node.create_publisher(PoseArray, '~/base_placement/result',
                                             LATCHED_QOS)
        self._answer = node.create_publisher(String, '~/base_placement/answer', 10)
        self._heat = node.create_publisher(MarkerArray, '~/base_placement/heat_map',
                                           LATCHED_QOS)
        self._sub = node.create_subscription(PoseArray, '~/base_placement/tasks',
                                             self._on_tasks, 10)

    def _map(self):
        """The capability map the parameter names (loaded once per folder), or an error."""
        folder = self._folder()
        if not folder:
            raise IkError('no capability_map: set the parameter to a map folder '
                          '(ik-solve capability-map --out DIR)')
        if self._loaded[0] != folder:
            from ik_node.capability import load_map
            self._loaded = (folder, load_map(folder))
        return self._loaded[1]

    def _on_tasks(self, msg: PoseArray) -> None:
        try:
            answer, base_poses, heat = self.answer(msg)
        except IkError as exc:
            self._send(self._answer, String(data=json.dumps({'error': str(exc)})))
            return
        self._send(self._result, base_poses)
        self._send(self._heat, heat)
        self._send(self._answer, String(data=json.dumps(answer)))

    def answer(self, msg: PoseArray):
        """``(answer dict, result PoseArray, heat map MarkerArray)`` for a request."""
        from ik_node.capability import PlacementGrid
        from ik_node.capability.query import check_poses, placement_scan
        capability = self._map()
        poses = check_poses([[p.position.x, p.position.y, p.position.z, p.orientation.x,
                              p.orientation.y, p.orientation.z, p.orientation.w]
                             for p in msg.poses] or np.zeros((0, 7)))
        if not len(poses):
            raise IkError('base placement: the request holds no task pose')
        cx, cy = np.round(poses[:, :2].mean(axis=0) / STEP_M) * STEP_M
        grid = PlacementGrid((cx - HALF_WIDTH_M, cx + HALF_WIDTH_M, STEP_M),
                             (cy - HALF_WIDTH_M, cy + HALF_WIDTH_M, STEP_M),
                             math.radians(YAW_STEP_DEG))
        scan = placement_scan(capability, poses, grid)
        best = scan.best(TOP)
        result = PoseArray()
        result.header = msg.header
        for placement in best:
            pose = Pose()
            pose.position.x, pose.position.y = placement.x, placement.y
            pose.orientation.z = math.sin(0.5 * placement.yaw)
            pose.orientation.w = math.cos(0.5 * placement.yaw)
            result.poses.append(pose)
        answer = {'frame_id': msg.header.frame_id, 'poses': len(poses),
                  'placements': [{'x': p.x, 'y': p.y, 'yaw_deg': math.degrees(p.yaw),
                                  'map_share': p.share} for p in best]}
        return answer, result, heat_map(scan, msg.header, poses[:, :3], best)


#: The tiles' thickness [m]: their top is just below the floor (z = 0), so the best base poses
#: drawn on the floor (RViz's PoseArray display of ``~/base_placement/result``) show over them.
TILE_THICKNESS_M = 0.005
#: Task poses: small white spheres [m]; the legend's text height [m].
TASK_RADIUS_M, LEGEND_HEIGHT_M = 0.03, 0.09
#: The legend stands this far [m] beyond the grid's low y edge, at the middle of its x range:
#: beside the floor, not over the robot standing at the floor's origin.
LEGEND_OFFSET_M = 0.4
TASK_RGBA, LEGEND_RGBA = (1.0, 1.0, 1.0, 0.9), (1.0, 1.0, 1.0, 1.0)


def heat_map(scan, header, task_positions=None, best=()):
    """The heat map (namespace ``base_placement``): the scan's best share per floor position as
    a CUBE_LIST of flat tiles just below the floor (id 0), the ``task_positions`` [m] as white
    spheres (id 1) and a legend beyond the middle of the grid's low y edge (id 2): what the colours
    mean and the share of the ``best`` base pose."""
    shares = scan.shares.max(axis=0)  # (X, Y): the best yaw's share
    frame, stamp = header.frame_id, header.stamp
    tile = new_marker(frame, stamp, 0, Marker.CUBE_LIST, (1.0, 1.0, 1.0, 0.6), ns=NAMESPACE)
    step = float(scan.xs[1] - scan.xs[0]) if len(scan.xs) > 1 else STEP_M
    tile.scale.x = tile.scale.y = 0.95 * step
    tile.scale.z = TILE_THICKNESS_M
    for i, x in enumerate(scan.xs.tolist()):
        for j, y in enumerate(scan.ys.tolist()):
            tile.points.append(point_msg((x, y, -0.6 * TILE_THICKNESS_M)))
            r, g, b = ramp(shares[i, j])
            tile.colors.append(ColorRGBA(r=float(r), g=float(g), b=float(b), a=0.6))
    out = [tile]
    tasks = np.zeros((0, 3)) if task_positions is None else np.asarray(task_positions, float)
    spheres = new_marker(frame, stamp, 1, Marker.SPHERE_LIST, TASK_RGBA, ns=NAMESPACE)
    spheres.scale.x = spheres.scale.y = spheres.scale.z = 2.0 * TASK_RADIUS_M
    spheres.points = [point_msg(p) for p in tasks.tolist()]
    out.append(spheres)
    legend = new_marker(frame, stamp, 2, Marker.TEXT_VIEW_FACING, LEGEND_RGBA, ns=NAMESPACE)
    legend.scale.z = LEGEND_HEIGHT_M
    legend.text = legend_text(len(tasks), best)
    legend.pose.position.x = 0.5 * float(scan.xs.min() + scan.xs.max())
    legend.pose.position.y = float(scan.ys.min()) - LEGEND_OFFSET_M
    legend.pose.position.z = LEGEND_HEIGHT_M
    out.append(legend)
    return marker_array(out)


def legend_text(tasks: int, best=()) -> str:
    """What the heat map says: the colours, the task poses and the best base pose's share."""
    lines = [f'base placement for {tasks} task poses (white)',
             'floor: share reachable from there', '(green all, red none)']
    if best:
        top = best[0]
        lines += [f'best base (arrows): {100.0 * top.share:.0f} % at',
                  f'x {top.x:.2f} y {top.y:.2f} m, yaw {math.degrees(top.yaw):.0f} deg']
    return '\n'.join(lines)
