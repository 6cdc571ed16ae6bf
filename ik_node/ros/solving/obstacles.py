"""``~/obstacles``: boxes, spheres and cylinders for the collision check, as a
``visualization_msgs/MarkerArray`` (so the same message shows them in RViz).

Markers of type CUBE (``scale``: sizes [m]), SPHERE (``scale.x``: diameter; a sphere with unequal
scales is taken at its largest) and CYLINDER (``scale.x``: diameter, ``scale.z``: length along
its z) in the chain's base frame (``header.frame_id`` empty or the base link). ADD and MODIFY
set the obstacle ``ns/id``, DELETE removes it, DELETEALL removes every one. A message with a bad
marker (another type or frame, a non-finite or non-positive size, a non-unit orientation) is
refused whole, saying which marker and why; the obstacles in force stay. The obstacles and the
ground plane the check holds in force (parameters and topic together) are shown on
``~/collision_world`` (transient local).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable, Dict, Optional, Tuple

import numpy as np
import transforms3d
from visualization_msgs.msg import Marker, MarkerArray

from ik_node.ros.rviz.marker_output import LATCHED_QOS
from ik_node.ros.rviz.marker_shapes import marker_array
from ik_node.ros.rviz.world_markers import world_markers

if TYPE_CHECKING:  # the collision stack is imported by the first obstacle, not at start-up
    from ik_node.collision import Obstacle

TOPIC = '~/obstacles'
#: Where the obstacles and ground plane in force are shown (:mod:`ik_node.ros.rviz.world_markers`).
SHOWN_TOPIC = '~/collision_world'
_KINDS = {Marker.CUBE: 'box', Marker.SPHERE: 'sphere', Marker.CYLINDER: 'cylinder'}


def obstacle_from_marker(marker, base_link: str) -> Obstacle:
    """The obstacle of one ADD/MODIFY marker.

    Raises:
        ValueError: a marker that is not a base-frame CUBE, SPHERE or CYLINDER with finite
            positive sizes and a unit orientation (the message names it).
    """
    name = f'{marker.ns}/{marker.id}'
    if marker.type not in _KINDS:
        raise ValueError(f'marker {name}: type {marker.type} is not CUBE (1), SPHERE (2) or '
                         'CYLINDER (3)')
    frame = marker.header.frame_id.lstrip('/')
    if frame not in ('', base_link):
        raise ValueError(f'marker {name}: frame {marker.header.frame_id!r}; obstacles are '
                         f'taken in the base frame {base_link!r}')
    p, o, s = marker.pose.position, marker.pose.orientation, marker.scale
    quat_wxyz = np.array([o.w, o.x, o.y, o.z], dtype=float)
    position = np.array([p.x, p.y, p.z], dtype=float)
    if not (np.all(np.isfinite(position)) and np.all(np.isfinite(quat_wxyz))) or \
            abs(float(np.linalg.norm(quat_wxyz)) - 1.0) > 1e-3:
        raise ValueError(f'marker {name}: its pose must be finite with a unit quaternion')
    kind = _KINDS[marker.type]
    if kind == 'box':
        size = (s.x, s.y, s.z)
    elif kind == 'sphere':
        size = (0.5 * max(s.x, s.y, s.z),)
    else:
        size = (0.5 * max(s.x, s.y), s.z)
    T = np.eye(4)
    T[:3, :3] = transforms3d.quaternions.quat2mat(quat_wxyz / np.linalg.norm(quat_wxyz))
    T[:3, 3] = position
    if not all(math.isfinite(v) for v in size):
        raise ValueError(f'marker {name}: its scale must be finite')
    from ik_node.collision import CollisionModelError, Obstacle
    try:
        return Obstacle(name, kind, size, T)
    except CollisionModelError as exc:
        raise ValueError(str(exc)) from None


class ObstacleInput:
    """The ``~/obstacles`` subscription and the obstacles it has set.

    Args:
        node: the node that subscribes.
        base_link: gives the chain's base link (the frame obstacles are in).
        on_change: called with every obstacle from the topic after a change.
        on_error: called with the reason a message is refused.
    """

    def __init__(self, node, base_link: Callable[[], str],
                 on_change: Callable[[Tuple[Obstacle, ...]], None],
                 on_error: Callable[[str], None], send: Optional[Callable] = None):
        self._base_link = base_link
        self._on_change = on_change
        self._on_error = on_error
        self._node = node
        self._send = send or (lambda publisher, msg: publisher.publish(msg))
        self.obstacles: Dict[str, Obstacle] = {}
        self._subscription = node.create_subscription(MarkerArray, TOPIC, self._on_markers, 10)
        self._shown = node.create_publisher(MarkerArray, SHOWN_TOPIC, LATCHED_QOS)

    def _on_markers(self, msg) -> None:
        updated = dict(self.obstacles)
        base = self._base_link()
        try:
            for marker in msg.markers:
                if marker.action == Marker.DELETEALL:
                    updated.clear()
                elif marker.action == Marker.DELETE:
                    updated.pop(f'{marker.ns}/{marker.id}', None)
                elif marker.action in (Marker.ADD, Marker.MODIFY):
                    obstacle = obstacle_from_marker(marker, base)
                    updated[obstacle.name] = obstacle
                else:
                    raise ValueError(f'marker {marker.ns}/{marker.id}: unknown action '
                                     f'{marker.action}')
        except ValueError as exc:
            self._on_error(f'obstacles on {TOPIC} refused (the obstacles in force stay): {exc}')
            return
        self.obstacles = updated
        self._on_change(tuple(updated.values()))

    def show(self, base_link: str, world: Dict) -> None:
        """Publish ``world`` (:meth:`world`'s dict) on ``~/collision_world`` for RViz."""
        self._send(self._shown, marker_array(world_markers(
            base_link, self._node.get_clock().now().to_msg(), world)))

    def world(self, configured) -> Dict:
        """``Solver.configure_collision`` arguments: the configuration's collision world
        (``IkConfig.collision``) with the topic's obstacles added."""
        world = {'srdf': None, 'ground_z': None, 'obstacles': ()}
        world.update(configured or {})
        world['obstacles'] = tuple(world['obstacles']) + tuple(self.obstacles.values())
        return world
