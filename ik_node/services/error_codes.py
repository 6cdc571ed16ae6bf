"""``moveit_msgs/MoveItErrorCodes`` values, and the exception that carries one.

The values are MoveIt's (``moveit_msgs`` 2.x): the ROS side copies them into the message as
they are.
"""

from __future__ import annotations

import enum

from ik_node.errors import IkError


class MoveItCode(enum.IntEnum):
    """The ``MoveItErrorCodes.val`` values the services answer with."""

    SUCCESS = 1
    FAILURE = 99999
    TIMED_OUT = -6
    GOAL_IN_COLLISION = -12
    GOAL_CONSTRAINTS_VIOLATED = -14
    INVALID_GROUP_NAME = -15
    INVALID_GOAL_CONSTRAINTS = -16
    INVALID_ROBOT_STATE = -17
    INVALID_LINK_NAME = -18
    FRAME_TRANSFORM_FAILURE = -21
    COLLISION_CHECKING_UNAVAILABLE = -22
    NO_IK_SOLUTION = -31


class ServiceError(IkError):
    """A request refused before any solve: ``code`` names the cause, the message the value.

    Args:
        code: the :class:`MoveItCode` of the answer.
        message: what was wrong, naming the value (and the valid ones where there is a list).
    """

    def __init__(self, code: MoveItCode, message: str) -> None:
        super().__init__(message)
        self.code = MoveItCode(code)
