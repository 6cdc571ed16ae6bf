"""The moving joints of a URDF as the node's outputs need them: limits, velocity, mimic; and how
long a move takes within those velocity limits.

Plain Python over a parsed URDF (urdf_parser_py ``Robot``); no ROS package.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional, Sequence


@dataclass(frozen=True)
class UrdfJoint:
    """A moving joint of a URDF as the output needs it.

    Attributes:
        name: joint name.
        type: 'revolute', 'continuous' or 'prismatic'.
        lower, upper: position limits [rad or m] (+-inf for continuous joints).
        velocity: velocity limit [rad/s or m/s] (inf when the URDF gives none or 0).
        mimic: name of the joint it mimics, or None.
    """

    name: str
    type: str
    lower: float
    upper: float
    velocity: float
    mimic: Optional[str] = None


def moving_joints(robot) -> List[UrdfJoint]:
    """The revolute, continuous and prismatic joints of a parsed URDF (urdf_parser_py Robot)."""
    out = []
    for uj in robot.joints:
        if uj.type not in ('revolute', 'continuous', 'prismatic'):
            continue
        limit = uj.limit
        lower = getattr(limit, 'lower', None) if limit is not None else None
        upper = getattr(limit, 'upper', None) if limit is not None else None
        if uj.type == 'continuous' or lower is None or upper is None:
            lower, upper = -math.inf, math.inf
        velocity = getattr(limit, 'velocity', None) if limit is not None else None
        velocity = float(velocity) if velocity and math.isfinite(float(velocity)) and \
            float(velocity) > 0 else math.inf
        mimic = uj.mimic.joint if getattr(uj, 'mimic', None) is not None else None
        out.append(UrdfJoint(uj.name, uj.type, float(lower), float(upper), velocity, mimic))
    return out


def trajectory_duration(q_from: Sequence[float], q_to: Sequence[float],
                        velocities: Sequence[float], scaling: float,
                        min_duration: float) -> float:
    """Time [s] for the slowest joint to move from ``q_from`` to ``q_to`` at ``scaling`` times
    its velocity limit, at least ``min_duration``."""
    t = min_duration
    for a, b, v in zip(q_from, q_to, velocities, strict=True):
        if math.isfinite(v) and v > 0:
            t = max(t, abs(b - a) / (v * scaling))
    return t
