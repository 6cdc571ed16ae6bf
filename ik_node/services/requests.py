"""A request's parts, checked once at the boundary: poses, the seed state, the timeout.

The ROS side copies a message into these values; every check that refuses a request raises
:class:`~ik_node.services.error_codes.ServiceError` with the code of its cause and a message
that names the value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, Mapping, Sequence, Tuple

import numpy as np

from ik_node.services.error_codes import MoveItCode, ServiceError
from ik_node.solvers.input_checks import MAX_COORDINATE_M

#: The longest timeout a request may ask for [s]; a longer one is cut to it.
MAX_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class PoseGoal:
    """One tip's target pose as the request gives it.

    Attributes:
        link: the tip link ('' : the group's only tip).
        frame: the frame the pose is in ('' : the group's base link).
        stamp: ``(sec, nanosec)`` of the pose (for a TF lookup).
        position: (3,) [m].
        quat_xyzw: (4,) unit quaternion (x, y, z, w).
    """

    link: str
    frame: str
    stamp: Tuple[int, int]
    position: np.ndarray
    quat_xyzw: np.ndarray


@dataclass(frozen=True)
class JointBound:
    """A joint constraint: ``name`` within ``[lower, upper]`` [rad or m]."""

    name: str
    lower: float
    upper: float


@dataclass(frozen=True)
class Region:
    """A primitive of a position constraint's region, in the constraint's frame.

    Attributes:
        kind: 'box' (``dims`` full sizes x, y, z), 'sphere' (radius), 'cylinder' (height,
            radius; along the z axis).
        dims: the sizes [m].
        T_frame_region: (4, 4) the primitive's pose in the constraint's frame.
    """

    kind: str
    dims: Tuple[float, ...]
    T_frame_region: np.ndarray


@dataclass(frozen=True)
class PositionGoal:
    """A position constraint: the point ``offset`` [m] of ``link`` inside one of ``regions``."""

    link: str
    frame: str
    offset: np.ndarray
    regions: Tuple[Region, ...]


@dataclass(frozen=True)
class OrientationGoal:
    """An orientation constraint: ``link``'s orientation within ``tolerances`` [rad] about x,
    y, z of ``quat_xyzw`` (in ``frame``), as XYZ Euler angles (``rotation_vector`` False) or
    the rotation vector's components."""

    link: str
    frame: str
    quat_xyzw: np.ndarray
    tolerances: Tuple[float, float, float]
    rotation_vector: bool = False


@dataclass(frozen=True)
class Constraints:
    """The constraints an answer must meet."""

    joints: Tuple[JointBound, ...] = ()
    positions: Tuple[PositionGoal, ...] = ()
    orientations: Tuple[OrientationGoal, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.joints or self.positions or self.orientations)


@dataclass(frozen=True)
class IkRequest:
    """One IK request (``GetPositionIK``'s ``ik_request``), checked.

    Attributes:
        group: the group name ('' : the node's configured chain).
        state: the request's robot state, joint name -> position (others keep the measured
            state or the node's rest pose).
        goals: one pose per tip solved.
        timeout_s: the solve's budget [s] (0: the group's configured budget).
        avoid_collisions: the answer must be free of collisions.
        constraints: what the answer must meet besides the poses.
    """

    group: str
    state: Mapping[str, float]
    goals: Tuple[PoseGoal, ...]
    timeout_s: float = 0.0
    avoid_collisions: bool = False
    constraints: Constraints = field(default_factory=Constraints)


def checked_pose(position: Sequence[float], quat_xyzw: Sequence[float], what: str
                 ) -> Tuple[np.ndarray, np.ndarray]:
    """A pose's position [m] and unit quaternion (x, y, z, w), or ServiceError naming the bad
    value (NaN, infinite, beyond :data:`MAX_COORDINATE_M`, a zero quaternion).

    Args:
        position: x, y, z [m].
        quat_xyzw: x, y, z, w.
        what: how the message names the pose ("pose_stamped", "waypoint 3").
    """
    p_values = [float(v) for v in position]
    q_values = [float(v) for v in quat_xyzw]
    if not all(math.isfinite(v) for v in p_values):
        raise ServiceError(MoveItCode.INVALID_GOAL_CONSTRAINTS,
                           f'{what}: position {p_values} is not finite')
    if any(abs(v) > MAX_COORDINATE_M for v in p_values):
        raise ServiceError(MoveItCode.INVALID_GOAL_CONSTRAINTS,
                           f'{what}: position {p_values} is beyond {MAX_COORDINATE_M:g} m')
    if not all(math.isfinite(v) for v in q_values):
        raise ServiceError(MoveItCode.INVALID_GOAL_CONSTRAINTS,
                           f'{what}: orientation {q_values} is not finite')
    norm = math.sqrt(sum(v * v for v in q_values))
    if norm < 1e-6:
        raise ServiceError(MoveItCode.INVALID_GOAL_CONSTRAINTS,
                           f'{what}: orientation {q_values} is a zero quaternion')
    return np.array(p_values), np.array([v / norm for v in q_values])


def checked_state(names: Sequence[str], positions: Sequence[float]) -> Dict[str, float]:
    """A robot state's joint positions by name, or ServiceError (INVALID_ROBOT_STATE) for a
    count that differs from the names' or a position that is not finite."""
    names, positions = list(names), list(positions)
    if positions and len(positions) != len(names):
        raise ServiceError(MoveItCode.INVALID_ROBOT_STATE,
                           f'robot_state: {len(names)} joint names but {len(positions)} '
                           'positions')
    if not positions:
        return {}
    bad = [n for n, v in zip(names, positions) if not math.isfinite(v)]
    if bad:
        raise ServiceError(MoveItCode.INVALID_ROBOT_STATE,
                           f'robot_state: position of {", ".join(bad)} is not finite')
    return dict(zip(names, (float(v) for v in positions)))


def timeout_seconds(sec: int, nanosec: int) -> float:
    """A request's timeout [s] from its Duration; 0 (the configured budget) for zero or a
    negative one, at most :data:`MAX_TIMEOUT_S`."""
    seconds = float(sec) + float(nanosec) * 1e-9
    if not math.isfinite(seconds) or seconds <= 0.0:
        return 0.0
    return min(seconds, MAX_TIMEOUT_S)


def checked_bound(name: str, position: float, above: float, below: float) -> JointBound:
    """A joint constraint as bounds, or ServiceError (INVALID_GOAL_CONSTRAINTS) for a value
    that is not finite or a negative tolerance."""
    if not all(math.isfinite(v) for v in (position, above, below)) or above < 0 or below < 0:
        raise ServiceError(MoveItCode.INVALID_GOAL_CONSTRAINTS,
                           f'joint constraint on {name!r}: position {position}, tolerances '
                           f'+{above} / -{below} must be finite, the tolerances >= 0')
    return JointBound(name, position - below, position + above)
