"""Cartesian lines through ``~/compute_cartesian_path`` against an independent dense walk."""

import math

import numpy as np
from geometry_msgs.msg import Pose

from benchmarks.services import graph

LENGTH_M, MAX_STEP_M, DENSE_STEP_M, JUMP_RAD = 0.3, 0.01, 0.0025, 0.5
#: Links closer than this count as colliding, in the walk as in the node (collision_padding's
#: default): the walk judges the same path.
PADDING_M = 0.005


def rotation_vector(R):
    cos = max(-1.0, min(1.0, (np.trace(R) - 1.0) / 2.0))
    angle = math.acos(cos)
    if angle < 1e-12:
        return np.zeros(3)
    axis = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    n = np.linalg.norm(axis)
    return axis / n * angle if n > 1e-12 else np.zeros(3)


def lm_pose(chain, T, q, iterations=200):
    """Damped least squares on the 6D pose error within the limits, from ``q``: (q, ok)."""
    q = np.clip(q, chain.lower, chain.upper)
    for _ in range(iterations):
        T_q = chain.fk(q)
        e = np.concatenate([T[:3, 3] - T_q[:3, 3], rotation_vector(T[:3, :3] @ T_q[:3, :3].T)])
        if np.linalg.norm(e[:3]) < 1e-6 and np.linalg.norm(e[3:]) < 1e-5:
            return q, True
        J = chain.jacobian(q)
        dq = J.T @ np.linalg.solve(J @ J.T + 1e-6 * np.eye(6), e)
        q = np.clip(q + dq, chain.lower, chain.upper)
    T_q = chain.fk(q)
    ok = np.linalg.norm(T[:3, 3] - T_q[:3, 3]) < 1e-5 and \
        np.linalg.norm(rotation_vector(T[:3, :3] @ T_q[:3, :3].T)) < 1e-4
    return q, ok


def dense_fraction(chain, check, q0, T0, direction):
    """How far along the line a walk of DENSE_STEP_M steps gets (share of LENGTH_M): each step
    within the limits, on the pose, no raw meshes closer than PADDING_M, moving no joint more than
    the jump threshold's share of its step."""
    q, steps = q0, int(round(LENGTH_M / DENSE_STEP_M))
    for k in range(1, steps + 1):
        T = T0.copy()
        T[:3, 3] = T0[:3, 3] + direction * LENGTH_M * k / steps
        q_next, ok = lm_pose(chain, T, q)
        # the threshold per MAX_STEP_M, shared by the steps that make one
        if not ok or np.max(np.abs(q_next - q)) > JUMP_RAD * DENSE_STEP_M / MAX_STEP_M or \
                check.closer_than(q_next, PADDING_M):
            return (k - 1) / steps
        q = q_next
    return 1.0


def cartesian_lines(client, name, chain, check, rng, count):
    """``count`` lines from random free configurations: |fraction - dense| and the largest joint
    step of the service's answers."""
    path = client.service(graph.srv.GetCartesianPath, f'/{name}/compute_cartesian_path')
    lower, upper = np.maximum(chain.lower, -math.pi), np.minimum(chain.upper, math.pi)
    diffs, largest = [], 0.0
    while len(diffs) < count:
        q0 = rng.uniform(lower, upper)
        if check.closer_than(q0, PADDING_M):
            continue
        T0 = chain.fk(q0)
        d = rng.normal(size=3)
        d /= np.linalg.norm(d)
        T1 = T0.copy()
        T1[:3, 3] += d * LENGTH_M
        request = graph.srv.GetCartesianPath.Request()
        request.header.frame_id = chain.base_link
        request.start_state.joint_state.name = chain.joint_names
        request.start_state.joint_state.position = q0.tolist()
        pose = Pose()
        graph.set_pose(pose, T1)
        request.waypoints = [pose]
        request.max_step = MAX_STEP_M
        request.revolute_jump_threshold = JUMP_RAD
        request.avoid_collisions = True
        response, _ = client.call(path, request)
        qs = np.array([p.positions for p in response.solution.joint_trajectory.points])
        if len(qs) > 1:
            largest = max(largest, float(np.max(np.abs(np.diff(qs, axis=0)))))
        diffs.append(abs(response.fraction - dense_fraction(chain, check, q0, T0, d)))
    return {'diff': diffs, 'max_step_rad': largest}
