"""Whether an answer meets a request's constraints, and the frames of the whole robot.

An answer is a full robot state (joint name -> position): the group's joints solved, every
other joint as the request gave it. Links are placed by forward kinematics of the URDF at that
state, so a constraint may name any link and any frame of the URDF.
"""

from __future__ import annotations

import math
from typing import Callable, Mapping, Optional

import numpy as np
from transforms3d.euler import mat2euler
from transforms3d.quaternions import mat2quat

from ik_node.model.chain import rotation_from_quat_xyzw
from ik_node.model.urdf_reading import T_root_link
from ik_node.services.error_codes import MoveItCode, ServiceError
from ik_node.services.requests import Constraints, OrientationGoal, PositionGoal, Region

#: A joint constraint holds within this much beyond its bounds [rad or m] (rounding).
BOUND_TOLERANCE = 1e-9

#: ``lookup(frame) -> T_base_frame`` for frames outside the URDF (TF), raising ServiceError.
FrameLookup = Callable[[str], np.ndarray]


class RobotFrames:
    """Transforms of the URDF's links in a base link's frame at one robot state.

    Args:
        robot: the parsed URDF (urdf_parser_py ``Robot``).
        base_link: the frame the transforms are expressed in.
        state: joint name -> position (missing joints at 0).
        lookup: frames outside the URDF (TF); None: such a frame is refused.
    """

    def __init__(self, robot, base_link: str, state: Mapping[str, float],
                 lookup: Optional[FrameLookup] = None) -> None:
        self._robot, self._base, self._state, self._lookup = robot, base_link, state, lookup
        self._links: Optional[set] = None  # made when first asked (most requests never ask)
        self._T_root_base: Optional[np.ndarray] = None

    def has_link(self, link: str) -> bool:
        """True when ``link`` is a link of the URDF."""
        if self._links is None:
            self._links = {link.name for link in self._robot.links}
        return link in self._links

    def T_base(self, frame: str) -> np.ndarray:
        """``T_base_frame`` (4x4) of a link of the URDF ('' : the base) or a TF frame.

        Raises:
            ServiceError: FRAME_TRANSFORM_FAILURE for a frame neither knows.
        """
        if not frame or frame == self._base:
            return np.eye(4)
        if self.has_link(frame):
            if self._T_root_base is None:
                self._T_root_base = T_root_link(self._robot, self._base, dict(self._state))
            return np.linalg.solve(self._T_root_base, T_root_link(self._robot, frame,
                                                                  dict(self._state)))
        if self._lookup is None:
            raise ServiceError(MoveItCode.FRAME_TRANSFORM_FAILURE,
                               f'frame {frame!r} is not a link of the URDF and no TF is '
                               'available to look it up')
        return self._lookup(frame)


def unmet(constraints: Constraints, state: Mapping[str, float], frames: RobotFrames) -> str:
    """'' when ``state`` meets every constraint, else what it misses first.

    Args:
        constraints: the request's constraints (checked by :func:`check_supported`).
        state: the full robot state of the answer.
        frames: the URDF's frames at that state.
    """
    for bound in constraints.joints:
        value = state.get(bound.name)
        if value is None:
            return f'joint {bound.name!r} of a joint constraint has no position'
        if value < bound.lower - BOUND_TOLERANCE or value > bound.upper + BOUND_TOLERANCE:
            return (f'joint {bound.name} at {value:.6g} is outside its constraint '
                    f'[{bound.lower:.6g}, {bound.upper:.6g}]')
    for goal in constraints.positions:
        missed = _position_missed(goal, frames)
        if missed:
            return missed
    for goal in constraints.orientations:
        missed = _orientation_missed(goal, frames)
        if missed:
            return missed
    return ''


def check_supported(constraints: Constraints, frames: RobotFrames) -> None:
    """Refuse (INVALID_GOAL_CONSTRAINTS / INVALID_LINK_NAME) constraints naming links the URDF
    does not have or frames that cannot be placed."""
    for goal in (*constraints.positions, *constraints.orientations):
        if not frames.has_link(goal.link):
            raise ServiceError(MoveItCode.INVALID_LINK_NAME,
                               f'constraint on link {goal.link!r}: not a link of the URDF')
        frames.T_base(goal.frame)  # raises FRAME_TRANSFORM_FAILURE


def _position_missed(goal: PositionGoal, frames: RobotFrames) -> str:
    T_frame_link = np.linalg.solve(frames.T_base(goal.frame), frames.T_base(goal.link))
    point = T_frame_link[:3, :3] @ goal.offset + T_frame_link[:3, 3]
    if any(_inside(region, point) for region in goal.regions):
        return ''
    return (f'position constraint: point of {goal.link} at {np.round(point, 6).tolist()} '
            f'(frame {goal.frame or "base"}) is outside its region')


def _inside(region: Region, point: np.ndarray) -> bool:
    T = region.T_frame_region
    local = T[:3, :3].T @ (point - T[:3, 3])
    eps = 1e-9
    if region.kind == 'box':
        return bool(np.all(np.abs(local) <= 0.5 * np.asarray(region.dims[:3]) + eps))
    if region.kind == 'sphere':
        return float(np.linalg.norm(local)) <= region.dims[0] + eps
    height, radius = region.dims[:2]
    return abs(local[2]) <= 0.5 * height + eps and \
        math.hypot(local[0], local[1]) <= radius + eps


def _orientation_missed(goal: OrientationGoal, frames: RobotFrames) -> str:
    R_frame_link = frames.T_base(goal.frame)[:3, :3].T @ frames.T_base(goal.link)[:3, :3]
    R_diff = rotation_from_quat_xyzw(goal.quat_xyzw).T @ R_frame_link
    if goal.rotation_vector:
        angles = _rotation_vector(R_diff)
    else:
        angles = np.array(mat2euler(R_diff, 'rxyz'))
        # MoveIt takes the smaller of the two Euler triples of one rotation about each axis
        alt = np.array([angles[0] + math.pi, math.pi - angles[1], angles[2] + math.pi])
        alt = (alt + math.pi) % (2 * math.pi) - math.pi
        if np.sum(np.abs(alt)) < np.sum(np.abs(angles)):
            angles = alt
    if np.all(np.abs(angles) <= np.asarray(goal.tolerances) + 1e-9):
        return ''
    return (f'orientation constraint on {goal.link}: off by {np.round(angles, 6).tolist()} rad '
            f'(tolerances {list(goal.tolerances)})')


def _rotation_vector(R: np.ndarray) -> np.ndarray:
    cos = max(-1.0, min(1.0, (np.trace(R) - 1.0) / 2.0))
    angle = math.acos(cos)
    if angle < 1e-12:
        return np.zeros(3)
    axis = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    norm = np.linalg.norm(axis)
    if norm < 1e-9:  # a half turn: the axis from the symmetric part
        axis = np.sqrt(np.maximum(np.diag(R) + 1.0, 0.0) / 2.0)
        norm = np.linalg.norm(axis)
    return axis / norm * angle


def quat_xyzw_of(R: np.ndarray) -> np.ndarray:
    """The unit quaternion (x, y, z, w) of a rotation matrix."""
    w, x, y, z = mat2quat(R)  # transforms3d's order is (w, x, y, z)
    return np.array([x, y, z, w])
