"""moveit_msgs fields to the checked values of :mod:`ik_node.services.requests`, and back.

Only this package imports ``moveit_msgs`` (through :mod:`ik_node.ros.services`, which imports
these modules only where it imports).
"""

from __future__ import annotations

from typing import Dict, List, Mapping, Sequence, Tuple

import numpy as np
from sensor_msgs.msg import JointState
from shape_msgs.msg import SolidPrimitive

from ik_node.services.error_codes import MoveItCode, ServiceError
from ik_node.services.requests import (Constraints, OrientationGoal, PoseGoal, PositionGoal,
                                       Region, checked_bound, checked_pose, checked_state)

_KINDS = {SolidPrimitive.BOX: ('box', 3), SolidPrimitive.SPHERE: ('sphere', 1),
          SolidPrimitive.CYLINDER: ('cylinder', 2)}


def state_of(robot_state, robot=None) -> Dict[str, float]:
    """A ``moveit_msgs/RobotState``'s joint positions by name (ServiceError for bad ones).

    With ``robot`` (the parsed URDF), ``multi_dof_joint_state`` is checked: a joint it names
    that is a joint of the URDF (floating, planar) is refused (INVALID_ROBOT_STATE: its state
    would move the URDF's frames, and the services do not use it); others (an SRDF's virtual
    joint above the URDF's root) are kept as given and not used."""
    if robot is not None and robot_state.multi_dof_joint_state.joint_names:
        urdf_joints = {joint.name for joint in robot.joints}
        used = [n for n in robot_state.multi_dof_joint_state.joint_names if n in urdf_joints]
        if used:
            raise ServiceError(MoveItCode.INVALID_ROBOT_STATE,
                               f'multi_dof_joint_state gives {", ".join(used)}, multi-DOF '
                               'joints of the URDF: their states are not used; give a state '
                               'without them (frames above the URDF come from TF)')
    js = robot_state.joint_state
    return checked_state(list(js.name), list(js.position))


def stamp_of(header) -> Tuple[int, int]:
    return (int(header.stamp.sec), int(header.stamp.nanosec))


def pose_goal(pose_stamped, link: str, what: str) -> PoseGoal:
    """A ``geometry_msgs/PoseStamped`` for tip ``link``, checked."""
    pose = pose_stamped.pose
    p, q = checked_pose((pose.position.x, pose.position.y, pose.position.z),
                        (pose.orientation.x, pose.orientation.y, pose.orientation.z,
                         pose.orientation.w), what)
    return PoseGoal(link, pose_stamped.header.frame_id, stamp_of(pose_stamped.header), p, q)


def transform_of(pose, what: str) -> np.ndarray:
    """A ``geometry_msgs/Pose`` as a 4x4 transform, checked."""
    from ik_node.model.chain import rotation_from_quat_xyzw
    p, q = checked_pose((pose.position.x, pose.position.y, pose.position.z),
                        (pose.orientation.x, pose.orientation.y, pose.orientation.z,
                         pose.orientation.w), what)
    T = np.eye(4)
    T[:3, :3] = rotation_from_quat_xyzw(q)
    T[:3, 3] = p
    return T


def constraints_of(msg) -> Constraints:
    """``moveit_msgs/Constraints`` as checked values. Visibility constraints, mesh regions and
    primitives other than box, sphere and cylinder are refused (INVALID_GOAL_CONSTRAINTS)."""
    if msg.visibility_constraints:
        raise ServiceError(MoveItCode.INVALID_GOAL_CONSTRAINTS,
                           'visibility constraints are not supported')
    joints = tuple(checked_bound(c.joint_name, c.position, c.tolerance_above, c.tolerance_below)
                   for c in msg.joint_constraints)
    positions = tuple(_position_goal(c) for c in msg.position_constraints)
    orientations = []
    for c in msg.orientation_constraints:
        o = c.orientation
        _, quat = checked_pose((0.0, 0.0, 0.0), (o.x, o.y, o.z, o.w),
                               f'orientation constraint on {c.link_name!r}')
        tolerances = (c.absolute_x_axis_tolerance, c.absolute_y_axis_tolerance,
                      c.absolute_z_axis_tolerance)
        if not all(np.isfinite(tolerances)) or min(tolerances) < 0:
            raise ServiceError(MoveItCode.INVALID_GOAL_CONSTRAINTS,
                               f'orientation constraint on {c.link_name!r}: tolerances '
                               f'{list(tolerances)} must be finite and >= 0')
        orientations.append(OrientationGoal(c.link_name, c.header.frame_id, quat, tolerances,
                                            rotation_vector=c.parameterization == 1))
    return Constraints(joints, positions, tuple(orientations))


def _position_goal(c) -> PositionGoal:
    volume = c.constraint_region
    if volume.meshes:
        raise ServiceError(MoveItCode.INVALID_GOAL_CONSTRAINTS,
                           f'position constraint on {c.link_name!r}: mesh regions are not '
                           'supported (boxes, spheres and cylinders are)')
    if not volume.primitives or len(volume.primitives) != len(volume.primitive_poses):
        raise ServiceError(MoveItCode.INVALID_GOAL_CONSTRAINTS,
                           f'position constraint on {c.link_name!r}: '
                           f'{len(volume.primitives)} primitives and '
                           f'{len(volume.primitive_poses)} poses (one pose per primitive)')
    regions = []
    for k, (shape, pose) in enumerate(zip(volume.primitives, volume.primitive_poses)):
        kind = _KINDS.get(shape.type)
        dims = [float(v) for v in shape.dimensions]
        if kind is None or len(dims) < kind[1] or not all(np.isfinite(dims)) or min(dims) < 0:
            raise ServiceError(MoveItCode.INVALID_GOAL_CONSTRAINTS,
                               f'position constraint on {c.link_name!r}: primitive {k} (type '
                               f'{shape.type}, dimensions {dims}) is not a box, sphere or '
                               'cylinder with sizes >= 0')
        if kind[0] == 'cylinder':  # SolidPrimitive: [height, radius]
            dims = [dims[SolidPrimitive.CYLINDER_HEIGHT], dims[SolidPrimitive.CYLINDER_RADIUS]]
        regions.append(Region(kind[0], tuple(dims[:max(kind[1], 2)]),
                              transform_of(pose, f'position constraint region {k}')))
    t = c.target_point_offset
    offset = np.array([t.x, t.y, t.z], dtype=float)
    if not np.all(np.isfinite(offset)):
        raise ServiceError(MoveItCode.INVALID_GOAL_CONSTRAINTS,
                           f'position constraint on {c.link_name!r}: offset not finite')
    return PositionGoal(c.link_name, c.header.frame_id, offset, tuple(regions))


def joint_state_of(state: Mapping[str, float], request_names: Sequence[str],
                   group_names: Sequence[str]) -> JointState:
    """The answer's ``JointState``: the request's joints in its order, then the group's joints
    the request did not name."""
    names: List[str] = list(request_names)
    names += [n for n in group_names if n not in set(request_names)]
    msg = JointState()
    msg.name = names
    msg.position = [float(state[n]) for n in names]
    return msg


def error_code(code: int, message: str = ''):
    """A ``moveit_msgs/MoveItErrorCodes`` with ``message`` and ``source`` ``ik_node``."""
    from moveit_msgs.msg import MoveItErrorCodes
    msg = MoveItErrorCodes()
    msg.val = int(code)
    msg.message = message
    msg.source = 'ik_node'
    return msg


def refused(services, service: str, response, exc: Exception):
    """``response`` with the error code of ``exc`` (a :class:`ServiceError`'s own, else
    ``FAILURE`` for a bug: the services go on), the refusal reported as ``service``'s status."""
    if isinstance(exc, ServiceError):
        code, text = exc.code, str(exc)
    else:
        code, text = MoveItCode.FAILURE, f'internal error: {type(exc).__name__}: {exc}'
    response.error_code = error_code(code, text)
    services.report(service, code, text)
    return response
