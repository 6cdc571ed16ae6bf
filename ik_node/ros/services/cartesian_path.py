"""``~/compute_cartesian_path``: ``moveit_msgs/srv/GetCartesianPath``.

The path's meaning (steps, thresholds, ``fraction``, timing) is
:mod:`ik_node.services.cartesian`'s. As move_group does, a computed path answers ``SUCCESS``
with the ``fraction`` achieved (check it); a request refused before any point is solved answers
the code of its cause and an empty trajectory.
"""

from __future__ import annotations

import math

from builtin_interfaces.msg import Duration
from trajectory_msgs.msg import JointTrajectoryPoint

from ik_node.model.chain import rotation_from_quat_xyzw
from ik_node.model.urdf_joints import moving_joints
from ik_node.ros.services.messages import refused, constraints_of, error_code, state_of
from ik_node.services.cartesian import (CartesianPath, PathSettings, compute_path, timed,
                                        velocities)
from ik_node.services.constraints import RobotFrames, quat_xyzw_of
from ik_node.services.error_codes import MoveItCode, ServiceError
from ik_node.services.requests import IkRequest, PoseGoal, checked_pose

SERVICE = 'compute_cartesian_path'
#: Each point's solve budget [s]: a point seeded by its neighbour converges in a few
#: iterations; the budget is spent only by the point that ends the path.
POINT_BUDGET_S = 0.05


def settings_of(request) -> PathSettings:
    """The path settings of a request, checked (FAILURE for a max_step that is not > 0)."""
    values = (request.max_step, request.jump_threshold, request.revolute_jump_threshold,
              request.prismatic_jump_threshold, request.max_velocity_scaling_factor,
              request.max_cartesian_speed)
    if not all(math.isfinite(v) for v in values) or min(values) < 0.0:
        raise ServiceError(MoveItCode.FAILURE, f'max_step, the thresholds, the scaling and the '
                           f'speed must be finite and >= 0, got {list(values)}')
    if request.max_step <= 0.0:
        raise ServiceError(MoveItCode.FAILURE, 'max_step must be > 0 [m]')
    return PathSettings(*values)


class ComputeCartesianPath:
    """The handler of ``~/compute_cartesian_path`` (called on the services' thread)."""

    def __init__(self, services) -> None:
        self._services = services

    def __call__(self, request, response):
        response.start_state = request.start_state
        try:
            path, chain, stopped = self._path(request)
        except Exception as exc:  # a ServiceError's code, or FAILURE for a bug
            return refused(self._services, SERVICE, response, exc)
        trajectory = response.solution.joint_trajectory
        trajectory.header.frame_id = chain.base_link
        trajectory.joint_names = list(chain.joint_names)
        for q, t, v in zip(path.points, path.times, velocities(path.points, path.times)):
            point = JointTrajectoryPoint()
            point.positions = [float(x) for x in q]
            point.velocities = [float(x) for x in v]
            sec = int(math.floor(t))
            point.time_from_start = Duration(sec=sec, nanosec=int(round((t - sec) * 1e9)))
            trajectory.points.append(point)
        response.fraction = float(path.fraction)
        response.error_code = error_code(MoveItCode.SUCCESS, stopped)
        self._services.report(SERVICE, MoveItCode.SUCCESS,
                              f'fraction {path.fraction:.4f}' + (f'; {stopped}' if stopped else ''),
                              values={'fraction': f'{path.fraction:.6g}',
                                      'points': str(len(path.points))})
        return response

    def _path(self, request):
        services = self._services
        solvers = services.solvers()
        settings = settings_of(request)
        group = solvers.group(request.group_name)
        chain = solvers.chain(group)
        link = request.link_name or (group.tip_links[0] if len(group.tip_links) == 1 else '')
        if link not in group.tip_links:
            raise ServiceError(MoveItCode.INVALID_LINK_NAME,
                               f'link_name {request.link_name!r} is not a tip of group '
                               f'{group.name!r}; its tips: {", ".join(group.tip_links)}')
        state = state_of(request.start_state, solvers.robot)
        q_start, _ = solvers.seed(group, state, services.measured)
        state.update(zip(chain.joint_names, q_start.tolist()))
        lookup = services.lookup(group.base_link)
        T = RobotFrames(solvers.robot, group.base_link, state, lookup).T_base(
            request.header.frame_id)
        waypoints = []
        for k, pose in enumerate(request.waypoints):
            p, quat = checked_pose(
                (pose.position.x, pose.position.y, pose.position.z),
                (pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w),
                f'waypoint {k}')
            waypoints.append((T[:3, :3] @ p + T[:3, 3],
                              quat_xyzw_of(T[:3, :3] @ rotation_from_quat_xyzw(quat))))
        constraints = constraints_of(request.path_constraints)
        T_start = chain.fk(q_start, link)
        start = (T_start[:3, 3], quat_xyzw_of(T_start[:3, :3]))

        def solve(position, quat, q_seed):
            seeded = dict(state)
            seeded.update(zip(chain.joint_names, q_seed.tolist()))
            answer = solvers.solve(IkRequest(group.name, seeded,
                                             (PoseGoal(link, '', (0, 0), position, quat),),
                                             POINT_BUDGET_S, bool(request.avoid_collisions),
                                             constraints),
                                   None, lookup)
            if answer.code != MoveItCode.SUCCESS:
                return None, f'{answer.code.name}: {answer.message}'
            return answer.q, ''

        if not waypoints:
            return CartesianPath([q_start], [0.0], 0.0, 'no waypoints'), chain, 'no waypoints'
        points, fraction, stopped = compute_path(
            solve, q_start, start, waypoints, settings,
            [joint.is_prismatic for joint in chain.joints])
        velocity = {j.name: j.velocity for j in moving_joints(chain.robot)}
        tips = [chain.fk(q, link)[:3, 3] for q in points] if settings.max_cartesian_speed \
            else None
        times = timed(points, [velocity.get(n, math.inf) for n in chain.joint_names], settings,
                      tips)
        return CartesianPath(points, times, fraction, stopped), chain, stopped
