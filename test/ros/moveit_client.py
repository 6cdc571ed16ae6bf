"""The test side of the node's MoveIt services: ``moveit_msgs`` from ../shared, and requests
built exactly as MoveIt's ``srv_kinematics_plugin`` builds them.

``moveit_msgs`` has no PyPI wheel: tests take it from ``../shared/ros_prefix/moveit_msgs`` (next
to the checkout; beside the folder ``IK_NODE_ROBOTS_DIR`` names, where set), its Python
packages on ``sys.path`` for this process and on ``PYTHONPATH`` (with the prefix on
``AMENT_PREFIX_PATH``) for node processes (:func:`moveit_env`). Without the prefix (or with an
rclpy that cannot load it) :func:`moveit_msgs_on_path` skips, saying why.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import threading
from pathlib import Path
from typing import Dict, Optional, Sequence

import numpy as np
import pytest

from reference_robots import SHARED_ROBOTS

REPO = Path(__file__).resolve().parents[2]
#: The prefix beside the reference robots' folder (``IK_NODE_ROBOTS_DIR``, by default
#: ../shared/robots): ../shared/ros_prefix/moveit_msgs.
MOVEIT_PREFIX = SHARED_ROBOTS.parent / 'ros_prefix' / 'moveit_msgs'
MOVEIT_SITE = MOVEIT_PREFIX / 'lib' / f'python{sys.version_info[0]}.{sys.version_info[1]}' / \
    'site-packages'
COLLISION_PREFIX = SHARED_ROBOTS / 'collision_prefix'
CALL_TIMEOUT_S = 30.0
#: The packages of the prefix.
PREFIX_PACKAGES = ('moveit_msgs', 'octomap_msgs', 'object_recognition_msgs')


@contextlib.contextmanager
def moveit_msgs_on_path():
    """``moveit_msgs.srv``, imported with the prefix in ../shared on ``sys.path`` for the
    block (or skip, saying why); afterwards the path and the prefix's modules are gone again,
    so nodes of later tests in this process run without the services, as without the
    prefix."""
    added = MOVEIT_SITE.is_dir() and str(MOVEIT_SITE) not in sys.path
    if added:
        sys.path.insert(0, str(MOVEIT_SITE))
    try:
        try:
            import moveit_msgs.srv as srv
        except ImportError as exc:
            pytest.skip(f'moveit_msgs is not importable ({exc}): it is taken from '
                        f'{MOVEIT_PREFIX} (see its README), which is absent or does not fit '
                        'this Python')
        yield srv
    finally:
        if added:
            sys.path.remove(str(MOVEIT_SITE))
            for name in [m for m in sys.modules if m.split('.')[0] in PREFIX_PACKAGES]:
                del sys.modules[name]


def moveit_env(*prefixes: Path) -> Dict[str, str]:
    """Environment for a node process that finds ``moveit_msgs`` (and ``prefixes`` on
    ``AMENT_PREFIX_PATH``, e.g. the collision meshes')."""
    env = {'PYTHONPATH': os.pathsep.join(
        [str(MOVEIT_SITE)] + [p for p in [os.environ.get('PYTHONPATH')] if p])}
    env['AMENT_PREFIX_PATH'] = os.pathsep.join(
        [str(MOVEIT_PREFIX), *map(str, prefixes)] +
        [p for p in [os.environ.get('AMENT_PREFIX_PATH')] if p])
    return env


def call(node, client, request, timeout: float = CALL_TIMEOUT_S):
    """Call a service from ``node`` (spun elsewhere) and wait for the response."""
    if not client.wait_for_service(timeout_sec=timeout):
        raise AssertionError(f'service {client.srv_name} not available within {timeout} s')
    done = threading.Event()
    future = client.call_async(request)
    future.add_done_callback(lambda _: done.set())
    if not done.wait(timeout):
        raise AssertionError(f'no answer from {client.srv_name} within {timeout} s')
    return future.result()


def quat_xyzw(R: np.ndarray) -> np.ndarray:
    from transforms3d.quaternions import mat2quat
    w, x, y, z = mat2quat(R)
    return np.array([x, y, z, w])


def plugin_request(srv, group: str, joint_names: Sequence[str], seed: Sequence[float],
                   base_frame: str, tips: Sequence[str], poses: Sequence[np.ndarray]):
    """A ``GetPositionIK`` request as ``srv_kinematics_plugin`` sends it: ``avoid_collisions``
    true, the group's name, the whole robot state with the seed, each pose (4x4) in the base
    frame, one tip in ``pose_stamped`` + ``ik_link_name`` or several in
    ``pose_stamped_vector`` + ``ik_link_names``, and a zero timeout."""
    from geometry_msgs.msg import PoseStamped
    request = srv.GetPositionIK.Request()
    ik = request.ik_request
    ik.avoid_collisions = True
    ik.group_name = group
    ik.robot_state.joint_state.name = list(joint_names)
    ik.robot_state.joint_state.position = [float(v) for v in seed]
    stamped = []
    for T in poses:
        ps = PoseStamped()
        ps.header.frame_id = base_frame
        set_pose(ps.pose, T)
        stamped.append(ps)
    if len(tips) > 1:
        ik.pose_stamped_vector = stamped
        ik.ik_link_names = list(tips)
    else:
        ik.pose_stamped = stamped[0]
        ik.ik_link_name = tips[0]
    return request


def set_pose(pose, T: np.ndarray) -> None:
    """Fill a ``geometry_msgs/Pose`` from a 4x4 transform."""
    pose.position.x, pose.position.y, pose.position.z = (float(v) for v in T[:3, 3])
    x, y, z, w = (float(v) for v in quat_xyzw(T[:3, :3]))
    pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w = x, y, z, w


def solution_of(response, names: Sequence[str]) -> Optional[np.ndarray]:
    """The positions of ``names`` in a response's ``solution.joint_state``."""
    js = response.solution.joint_state
    index = {n: i for i, n in enumerate(js.name)}
    if not all(n in index for n in names):
        return None
    return np.array([js.position[index[n]] for n in names])


def pose_error(T_reached: np.ndarray, T_target: np.ndarray):
    """(position error [m], orientation error [rad])."""
    dp = float(np.linalg.norm(T_reached[:3, 3] - T_target[:3, 3]))
    R = T_reached[:3, :3].T @ T_target[:3, :3]
    angle = math.acos(max(-1.0, min(1.0, (np.trace(R) - 1.0) / 2.0)))
    return dp, angle
