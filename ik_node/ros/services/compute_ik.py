"""``~/compute_ik``: ``moveit_msgs/srv/GetPositionIK``, answered as move_group answers it.

``solution`` holds the group's joints solved and every other joint of the request's
``robot_state`` as given; when ``error_code`` is not ``SUCCESS`` the group's joints are the
closest pose found (see docs/services.md).
"""

from __future__ import annotations

from ik_node.ros.services.messages import (refused, constraints_of, error_code, joint_state_of,
                                           pose_goal, state_of)
from ik_node.services.error_codes import MoveItCode, ServiceError
from ik_node.services.requests import IkRequest, timeout_seconds

SERVICE = 'compute_ik'


def ik_request_of(ik, robot=None) -> IkRequest:
    """A ``moveit_msgs/PositionIKRequest`` as a checked :class:`IkRequest` (``robot``: the
    parsed URDF its multi-DOF joint states are checked against, see
    :func:`~ik_node.ros.services.messages.state_of`)."""
    if ik.pose_stamped_vector or ik.ik_link_names:
        if len(ik.pose_stamped_vector) != len(ik.ik_link_names):
            raise ServiceError(MoveItCode.INVALID_LINK_NAME,
                               f'{len(ik.pose_stamped_vector)} poses in pose_stamped_vector but '
                               f'{len(ik.ik_link_names)} ik_link_names')
        goals = tuple(pose_goal(pose, link, f'pose_stamped_vector[{k}]')
                      for k, (pose, link) in enumerate(zip(ik.pose_stamped_vector,
                                                           ik.ik_link_names)))
    else:
        goals = (pose_goal(ik.pose_stamped, ik.ik_link_name, 'pose_stamped'),)
    return IkRequest(group=ik.group_name, state=state_of(ik.robot_state, robot), goals=goals,
                     timeout_s=timeout_seconds(ik.timeout.sec, ik.timeout.nanosec),
                     avoid_collisions=bool(ik.avoid_collisions),
                     constraints=constraints_of(ik.constraints))


class ComputeIk:
    """The handler of ``~/compute_ik`` (called on the services' thread)."""

    def __init__(self, services) -> None:
        self._services = services

    def __call__(self, request, response):
        ik = request.ik_request
        response.solution = ik.robot_state
        try:
            solvers = self._services.solvers()
            query = ik_request_of(ik, solvers.robot)
            group = solvers.group(query.group)
            answer = solvers.solve(query, self._services.measured,
                                   self._services.lookup(group.base_link))
        except Exception as exc:  # a ServiceError's code, or FAILURE for a bug
            return refused(self._services, SERVICE, response, exc)
        joint_state = joint_state_of(answer.state, list(ik.robot_state.joint_state.name),
                                              answer.joint_names)
        joint_state.header = ik.robot_state.joint_state.header
        response.solution.joint_state = joint_state
        response.error_code = error_code(answer.code, answer.message)
        if answer.message.startswith('seed outside'):
            self._services.warn(f'{SERVICE}: {answer.message.split(";")[0]}')
        self._services.report(SERVICE, answer.code, answer.message, answer.result,
                              {'group': query.group or solvers.default})
        return response
