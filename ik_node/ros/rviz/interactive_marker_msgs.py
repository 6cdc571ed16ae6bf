"""The interactive target markers as messages: one ``InteractiveMarker`` per tip (no rclpy).

:class:`ik_node.ros.rviz.interactive.InteractiveTargets` serves these; RViz's InteractiveMarkers
display draws them. A 6-DOF marker moves and rotates on all three axes, its body showing the
target's axes as arrows; a position-only one only moves (its axes fixed to the base frame), a
planar chain's in the chain's plane only. The body is coloured by the last solve: green
reached, red not, grey before any. An idle tip of a branched chain gets its body alone
(:func:`idle_marker`).
"""

from __future__ import annotations

import math
from typing import List, Optional, Tuple

import numpy as np
from geometry_msgs.msg import Point, Pose, Quaternion
from visualization_msgs.msg import InteractiveMarker, InteractiveMarkerControl, Marker

from ik_node.ros.rviz.marker_shapes import plane_basis
from ik_node.ros.rviz.markers import AXES_RGBA, GREEN, RED
from ik_node.ros.inputs.targets import quat_xyzw_from_rotation

DEFAULT_SCALE_M = 0.25
GREY = (0.6, 0.6, 0.6, 0.9)
_S = math.sqrt(0.5)
#: Control axes as (name, quaternion xyzw): a control acts along/about its frame's x axis.
_AXES = (('x', (_S, 0.0, 0.0, _S)), ('y', (0.0, 0.0, _S, _S)), ('z', (0.0, _S, 0.0, _S)))
IDENTITY_XYZW = np.array([0.0, 0.0, 0.0, 1.0])

def finite_floats(values, size: int, what: str) -> Tuple[float, ...]:
    """``values`` as ``size`` finite floats, else ValueError naming ``what``."""
    try:
        out = tuple(values.tolist() if isinstance(values, np.ndarray) else values)
        out = tuple(float(v) for v in out)
    except (TypeError, ValueError):
        raise ValueError(f'{what} must be {size} finite values, got {values!r}') from None
    if len(out) != size or not all(math.isfinite(v) for v in out):
        raise ValueError(f'{what} must be {size} finite values, got {list(out)}')
    return out


def pose_from_input(pose) -> Tuple[np.ndarray, np.ndarray]:
    """``(position [m], unit quat_xyzw)`` of a 4x4 ``T_base_tip`` or a ``(position, quat)`` pair.

    Raises:
        ValueError: wrong shapes, non-finite values or a zero quaternion.
    """
    if isinstance(pose, np.ndarray) and pose.shape == (4, 4):
        position, quat = pose[:3, 3], quat_xyzw_from_rotation(pose[:3, :3])
    else:
        try:
            position, quat = pose
        except (TypeError, ValueError):
            raise ValueError(f'pose must be a 4x4 transform or (position, quat_xyzw), got '
                             f'{pose!r}') from None
    position = np.asarray(position, dtype=float).reshape(-1)
    quat = np.asarray(quat, dtype=float).reshape(-1)
    if position.shape != (3,) or quat.shape != (4,):
        raise ValueError(f'pose needs 3 position and 4 quaternion values, got {position.size} '
                         f'and {quat.size}')
    if not (np.all(np.isfinite(position)) and np.all(np.isfinite(quat))):
        raise ValueError(f'pose contains NaN or inf: {position.tolist()}, {quat.tolist()}')
    norm = float(np.linalg.norm(quat))
    if norm < 1e-9:
        raise ValueError(f'pose quaternion {quat.tolist()} has zero length')
    return position, quat / norm


def pose_msg(position: np.ndarray, quat_xyzw: np.ndarray) -> Pose:
    msg = Pose()
    msg.position.x, msg.position.y, msg.position.z = (float(v) for v in position)
    o = msg.orientation
    o.x, o.y, o.z, o.w = (float(v) for v in quat_xyzw)
    return msg


def _quat_xyzw_x_onto(direction) -> Tuple[float, float, float, float]:
    """The rotation (x, y, z, w) taking the x axis onto unit ``direction`` (a control acts
    along or about its frame's x axis)."""
    d = np.asarray(direction, dtype=float) / np.linalg.norm(direction)
    axis = np.cross([1.0, 0.0, 0.0], d)
    s, c = float(np.linalg.norm(axis)), float(d[0])
    if s < 1e-12:
        return (0.0, 0.0, 0.0, 1.0) if c > 0 else (0.0, 0.0, 1.0, 0.0)
    half = 0.5 * math.atan2(s, c)
    x, y, z = axis / s * math.sin(half)
    return float(x), float(y), float(z), math.cos(half)


def _coloured(marker: Marker, rgba) -> Marker:
    marker.color.r, marker.color.g, marker.color.b, marker.color.a = (float(v) for v in rgba)
    return marker


def _body(six_dof: bool, reached: Optional[bool], scale: float) -> List[Marker]:
    """The always-visible body, coloured by the last solve (its first marker).

    6-DOF: a small sphere and the target's x, y, z axes as arrows (red, green, blue) out to
    0.4 scale, inside the inner ends of the move arrows, so the orientation reads at a glance
    and sticks out of the tool it sits in. Position-only: a sphere.
    """
    centre = Marker()
    centre.type = Marker.SPHERE
    centre.scale.x = centre.scale.y = centre.scale.z = scale * (0.25 if six_dof else 0.35)
    centre.pose.orientation.w = 1.0
    _coloured(centre, GREY if reached is None else (GREEN if reached else RED))
    if not six_dof:
        return [centre]
    out = [centre]
    for axis, rgba in zip(np.eye(3), AXES_RGBA):
        arrow = Marker()
        arrow.type = Marker.ARROW
        arrow.pose.orientation.w = 1.0
        arrow.points = [Point(), Point(x=float(0.4 * scale * axis[0]),
                                       y=float(0.4 * scale * axis[1]),
                                       z=float(0.4 * scale * axis[2]))]
        arrow.scale.x, arrow.scale.y, arrow.scale.z = 0.05 * scale, 0.1 * scale, 0.1 * scale
        out.append(_coloured(arrow, rgba))
    return out


def interactive_marker(name: str, frame_id: str, position: np.ndarray, quat_xyzw: np.ndarray,
                       six_dof: bool, reached: Optional[bool] = None,
                       scale: float = DEFAULT_SCALE_M,
                       plane_normal: Optional[np.ndarray] = None) -> InteractiveMarker:
    """The interactive marker of one tip target.

    Args:
        name: marker name (the tip link).
        frame_id: the chain's base frame; the header stamp stays zero (frame-locked).
        position: (3,) [m] and quat_xyzw (4,) unit: the marker pose in ``frame_id``.
        six_dof: move and rotate on x, y, z; else move only (axes fixed to ``frame_id``).
        reached: colour of the body: True green, False red, None grey.
        scale: size of the controls [m].
        plane_normal: a planar chain's plane normal (base frame; position-only markers): the
            marker moves in that plane only (its body and two arrows, ``move_u``, ``move_v``).
    """
    im = InteractiveMarker()
    im.header.frame_id = frame_id
    im.name = name
    im.description = f'{name} target' + ('' if six_dof else ' (position only)')
    im.scale = float(scale)
    im.pose = pose_msg(position, quat_xyzw)
    planar = plane_normal is not None and not six_dof
    body = InteractiveMarkerControl()
    body.name = 'body'
    body.always_visible = True
    if planar:
        body.interaction_mode = InteractiveMarkerControl.MOVE_PLANE
        body.orientation_mode = InteractiveMarkerControl.FIXED
        x, y, z, w = _quat_xyzw_x_onto(plane_normal)
        body.orientation = Quaternion(x=x, y=y, z=z, w=w)
    else:
        body.interaction_mode = InteractiveMarkerControl.MOVE_ROTATE_3D if six_dof else \
            InteractiveMarkerControl.MOVE_3D
        body.orientation.w = 1.0
    body.markers.extend(_body(six_dof, reached, scale))
    im.controls.append(body)
    if planar:
        u, v = plane_basis(plane_normal)
        axes = [('u', _quat_xyzw_x_onto(u)), ('v', _quat_xyzw_x_onto(v))]
    else:
        axes = list(_AXES)
    modes = [('move', InteractiveMarkerControl.MOVE_AXIS)]
    if six_dof:
        modes.append(('rotate', InteractiveMarkerControl.ROTATE_AXIS))
    for k, (axis, (x, y, z, w)) in enumerate(axes):
        rgba = AXES_RGBA[k] if not planar else AXES_RGBA[2 * k]  # u magenta, v blue
        for prefix, mode in modes:
            control = InteractiveMarkerControl()
            control.name = f'{prefix}_{axis}'
            control.orientation = Quaternion(x=x, y=y, z=z, w=w)
            control.orientation_mode = InteractiveMarkerControl.INHERIT if six_dof else \
                InteractiveMarkerControl.FIXED
            control.interaction_mode = mode
            control.markers.extend(_arrows(control.orientation, scale, rgba)
                                   if prefix == 'move' else
                                   [_ring(control.orientation, scale, rgba)])
            im.controls.append(control)
    return im


def idle_marker(marker: InteractiveMarker) -> InteractiveMarker:
    """``marker`` as an idle tip's mark: its body only (still dragged by it: moved in 3D, or in
    a planar chain's plane), without the move arrows and rotate rings, and without a
    description.
    A branched chain's idle tips get these, so only the active tip shows a full handle set."""
    marker.controls = [c for c in marker.controls if c.name == 'body']
    marker.description = ''  # RViz draws it above the mark: into the body above a foot
    return marker


def _arrows(orientation: Quaternion, scale: float, rgba) -> List[Marker]:
    """A move control's two arrows along its x axis, as interactive_markers draws them (from
    0.5 to 0.9 scales each way), in ``rgba`` instead of RViz's red, green, blue."""
    out = []
    for direction in (1.0, -1.0):
        arrow = Marker()
        arrow.type = Marker.ARROW
        arrow.pose.orientation = orientation
        arrow.scale.x, arrow.scale.y, arrow.scale.z = 0.15 * scale, 0.25 * scale, 0.2 * scale
        arrow.points = [Point(x=direction * 0.5 * scale), Point(x=direction * 0.9 * scale)]
        out.append(_coloured(arrow, rgba))
    return out


#: A rotate control's ring: radii [scales] and segments.
RING_RADII, RING_SEGMENTS = (0.5, 0.65), 36
#: Half the distance [scales] between the ring's two faces: each face lies on the side it
#: faces, so the face towards the camera is the nearer one and is drawn lit (two faces in one
#: plane fight, and the one turned away from the light draws the ring black).
RING_GAP = 0.01


def _ring(orientation: Quaternion, scale: float, rgba) -> Marker:
    """A rotate control's ring about its x axis (a flat annulus of triangles between
    :data:`RING_RADII`, wound both ways, :data:`RING_GAP` apart: RViz lights one side of a
    triangle), in ``rgba``."""
    ring = Marker()
    ring.type = Marker.TRIANGLE_LIST
    ring.pose.orientation = orientation
    ring.scale.x = ring.scale.y = ring.scale.z = 1.0
    inner, outer = (r * scale for r in RING_RADII)
    gap = RING_GAP * scale
    for i in range(RING_SEGMENTS):
        a0, a1 = (2.0 * math.pi * k / RING_SEGMENTS for k in (i, i + 1))
        corners = ((inner, a0), (outer, a0), (outer, a1), (inner, a1))
        p = [Point(x=gap, y=r * math.cos(a), z=r * math.sin(a)) for r, a in corners]
        n = [Point(x=-gap, y=r * math.cos(a), z=r * math.sin(a)) for r, a in corners]
        ring.points += [p[0], p[1], p[2], p[0], p[2], p[3],   # facing +x, on the +x side
                        n[0], n[2], n[1], n[0], n[3], n[2]]   # and -x on the -x side
    return _coloured(ring, rgba)
