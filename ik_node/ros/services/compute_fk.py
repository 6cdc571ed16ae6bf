"""``~/compute_fk``: ``moveit_msgs/srv/GetPositionFK``.

Each link of ``fk_link_names`` is placed by forward kinematics of the URDF at the request's
``robot_state`` (joints it does not give: the measured state of the configured chain, else 0)
in ``header.frame_id`` (any link of the URDF or a TF frame; empty: the configured base link).
"""

from __future__ import annotations

import numpy as np
from geometry_msgs.msg import PoseStamped

from ik_node.ros.services.messages import refused, error_code, state_of
from ik_node.services.constraints import RobotFrames, quat_xyzw_of
from ik_node.services.error_codes import MoveItCode, ServiceError

SERVICE = 'compute_fk'


class ComputeFk:
    """The handler of ``~/compute_fk`` (called on the services' thread)."""

    def __init__(self, services) -> None:
        self._services = services

    def __call__(self, request, response):
        try:
            response.pose_stamped = self._poses(request)
        except Exception as exc:  # a ServiceError's code, or FAILURE for a bug
            return refused(self._services, SERVICE, response, exc)
        response.fk_link_names = list(request.fk_link_names)
        response.error_code = error_code(MoveItCode.SUCCESS)
        self._services.report(SERVICE, MoveItCode.SUCCESS, '')
        return response

    def _poses(self, request):
        solvers = self._services.solvers()
        group = solvers.group('')
        q, _ = solvers.seed(group, {}, self._services.measured)
        state = dict(zip(solvers.chain(group).joint_names, q.tolist()))
        state.update(state_of(request.robot_state, solvers.robot))
        base = group.base_link
        frames = RobotFrames(solvers.robot, base, state, self._services.lookup(base))
        unknown = [link for link in request.fk_link_names if not frames.has_link(link)]
        if unknown or not request.fk_link_names:
            raise ServiceError(MoveItCode.INVALID_LINK_NAME,
                               f'fk_link_names {list(request.fk_link_names)}: '
                               f'{", ".join(map(repr, unknown)) or "none given"} not a link '
                               'of the URDF')
        frame = request.header.frame_id or base
        T_base_frame = frames.T_base(frame)
        out = []
        for link in request.fk_link_names:
            T = np.linalg.solve(T_base_frame, frames.T_base(link))
            pose = PoseStamped()
            pose.header.frame_id = frame
            pose.header.stamp = request.header.stamp
            pose.pose.position.x, pose.pose.position.y, pose.pose.position.z = \
                (float(v) for v in T[:3, 3])
            x, y, z, w = (float(v) for v in quat_xyzw_of(T[:3, :3]))
            o = pose.pose.orientation
            o.x, o.y, o.z, o.w = x, y, z, w
            out.append(pose)
        return out
