"""The interactive target markers as messages: one ``InteractiveMarker`` per tip (no rclpy).

:class:`ik_node.ros.interactive.InteractiveTargets` serves these; RViz's InteractiveMarkers
display draws them. A 6-DOF marker moves and rotates on all three axes; a position-only one
only moves (its axes fixed to the base frame). The body is coloured by the last solve: green
reached, red not, grey before any.
"""

from __future__ import annotations

import math
from typing import Optional, Tuple

import numpy as np
from geometry_msgs.msg import Pose, Quaternion
from visualization_msgs.msg import InteractiveMarker, InteractiveMarkerControl, Marker

from ik_node.ros.markers import GREEN, RED
from ik_node.ros.messages import quat_xyzw_from_rotation

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


def _body(six_dof: bool, reached: Optional[bool], scale: float) -> Marker:
    """The always-visible body: a cube (its rotation shows) for 6-DOF, else a sphere."""
    body = Marker()
    body.type = Marker.CUBE if six_dof else Marker.SPHERE
    size = scale * (0.3 if six_dof else 0.35)
    body.scale.x = body.scale.y = body.scale.z = size
    body.pose.orientation.w = 1.0
    r, g, b, a = GREY if reached is None else (GREEN if reached else RED)
    body.color.r, body.color.g, body.color.b, body.color.a = r, g, b, a
    return body


def interactive_marker(name: str, frame_id: str, position: np.ndarray, quat_xyzw: np.ndarray,
                       six_dof: bool, reached: Optional[bool] = None,
                       scale: float = DEFAULT_SCALE_M) -> InteractiveMarker:
    """The interactive marker of one tip target.

    Args:
        name: marker name (the tip link).
        frame_id: the chain's base frame; the header stamp stays zero (frame-locked).
        position: (3,) [m] and quat_xyzw (4,) unit: the marker pose in ``frame_id``.
        six_dof: move and rotate on x, y, z; else move only (axes fixed to ``frame_id``).
        reached: colour of the body: True green, False red, None grey.
        scale: size of the controls [m].
    """
    im = InteractiveMarker()
    im.header.frame_id = frame_id
    im.name = name
    im.description = f'{name} target' + ('' if six_dof else ' (position only)')
    im.scale = float(scale)
    im.pose = pose_msg(position, quat_xyzw)
    body = InteractiveMarkerControl()
    body.name = 'body'
    body.always_visible = True
    body.interaction_mode = InteractiveMarkerControl.MOVE_ROTATE_3D if six_dof else \
        InteractiveMarkerControl.MOVE_3D
    body.orientation.w = 1.0
    body.markers.append(_body(six_dof, reached, scale))
    im.controls.append(body)
    modes = [('move', InteractiveMarkerControl.MOVE_AXIS)]
    if six_dof:
        modes.append(('rotate', InteractiveMarkerControl.ROTATE_AXIS))
    for axis, (x, y, z, w) in _AXES:
        for prefix, mode in modes:
            control = InteractiveMarkerControl()
            control.name = f'{prefix}_{axis}'
            control.orientation = Quaternion(x=x, y=y, z=z, w=w)
            control.orientation_mode = InteractiveMarkerControl.INHERIT if six_dof else \
                InteractiveMarkerControl.FIXED
            control.interaction_mode = mode
            im.controls.append(control)
    return im
