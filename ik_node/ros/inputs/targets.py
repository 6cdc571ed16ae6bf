"""Targets as the node receives them: ROS target messages -> :class:`Target`, checked and placed
in the chain's base frame.

Imports the ``*_msgs`` packages but never rclpy, so every helper here is tested without
``rclpy.init``. A :class:`Target` keeps its name from the subscription to the solve: the target
pipeline (:mod:`ik_node.ros.solving.target_pipeline`) places it with :func:`target_in_base`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable, Optional, Sequence, Tuple, Union

import numpy as np
import transforms3d
from geometry_msgs.msg import PointStamped, PoseArray, PoseStamped

from ik_node.errors import ChainError, TargetError
from ik_node.model.chain import Chain
from ik_node.solvers.base import rotation_from_input
from ik_node.solvers.input_checks import FLOAT64, target_values


@dataclass  # made for every target: not frozen, which costs more to build; nothing changes it
class Target:
    """A target as received: position [m] and optional orientation in frame ``frame_id``.

    Attributes:
        position: (3,) as in the message, not yet checked.
        quat_xyzw: (4,) ROS order, or None for a point target.
        frame_id: the message's ``header.frame_id``.
        tip: the tip link it is for (None: the chain's only tip).
        stamp: the message's ``header.stamp`` as (sec, nanosec); it names the target in the
            diagnostics that answer it (``target_stamp``).
        index: its place in a message holding every tip's target (``~/target_poses``), whose
            targets are solved or refused together; None for a target of its own.
    """

    position: np.ndarray
    quat_xyzw: Optional[np.ndarray]
    frame_id: str
    tip: Optional[str] = None
    stamp: Tuple[int, int] = (0, 0)
    index: Optional[int] = None

    @property
    def stamp_text(self) -> str:
        """The stamp as ``'sec.nanosec'`` (nanoseconds zero-padded to 9 digits)."""
        return stamp_text(self.stamp)


def stamp_text(stamp: Tuple[int, int]) -> str:
    """``(sec, nanosec)`` as ``'sec.nanosec'`` with 9 nanosecond digits: ``'12.000000345'``."""
    return f'{int(stamp[0])}.{int(stamp[1]):09d}'


def _stamp_of(header) -> Tuple[int, int]:
    return int(header.stamp.sec), int(header.stamp.nanosec)


def target_from_pose(msg: PoseStamped, tip: Optional[str] = None) -> Target:
    """Target of a ``geometry_msgs/PoseStamped`` (position and orientation)."""
    p, o = msg.pose.position, msg.pose.orientation
    return Target(np.array([p.x, p.y, p.z], dtype=float),
                  np.array([o.x, o.y, o.z, o.w], dtype=float), msg.header.frame_id, tip,
                  _stamp_of(msg.header))


def target_from_point(msg: PointStamped, tip: Optional[str] = None) -> Target:
    """Target of a ``geometry_msgs/PointStamped`` (position only)."""
    p = msg.point
    return Target(np.array([p.x, p.y, p.z], dtype=float), None, msg.header.frame_id, tip,
                  _stamp_of(msg.header))


def targets_from_pose_array(msg: PoseArray, tips: Sequence[str]) -> Tuple[Target, ...]:
    """One target per tip of a ``geometry_msgs/PoseArray`` (``~/target_poses``): pose ``k`` is
    for ``tips[k]``, all in the message's frame, named by its stamp.

    An orientation of all zeros (no rotation is that) makes that tip's target a position; any
    other is the tip's orientation, checked with the position by :func:`target_in_base`.

    Raises:
        TargetError: the message does not hold exactly one pose per tip (it names the tips in
            their order).
    """
    poses = [(p.x, p.y, p.z, o.x, o.y, o.z, o.w)
             for p, o in ((pose.position, pose.orientation) for pose in msg.poses)]
    return targets_from_poses(poses, msg.header.frame_id, _stamp_of(msg.header), tips)


def targets_from_poses(poses: Sequence[Sequence[float]], frame_id: str,
                       stamp: Tuple[int, int], tips: Sequence[str],
                       slots: Optional[Sequence[Optional[str]]] = None) -> Tuple[Target, ...]:
    """:func:`targets_from_pose_array` of a PoseArray's values: its poses as ``(x, y, z, qx,
    qy, qz, qw)``, its frame and its stamp (``(sec, nanosec)``); ``slots``: the targets' ``tip``
    in the order of ``tips`` (default ``tips``; ``[None]`` for a serial chain's one tip)."""
    if len(poses) != len(tips):
        raise TargetError(f'target_poses holds {len(poses)} poses; it must hold one per tip, '
                          f'{len(tips)} in this order: {", ".join(tips)}')
    stamp = (int(stamp[0]), int(stamp[1]))
    out = []
    for k, (tip, pose) in enumerate(zip(tips if slots is None else slots, poses)):
        x, y, z, qx, qy, qz, qw = pose
        quat = None if (qx, qy, qz, qw) == (0.0, 0.0, 0.0, 0.0) else \
            np.array([qx, qy, qz, qw], dtype=float)
        out.append(Target(np.array([x, y, z], dtype=float), quat, frame_id, tip, stamp, k))
    return tuple(out)


def quat_xyzw_from_rotation(R: np.ndarray) -> np.ndarray:
    """ROS-order quaternion ``(x, y, z, w)`` of a 3x3 rotation matrix."""
    w, x, y, z = transforms3d.quaternions.mat2quat(R)
    return np.array([x, y, z, w], dtype=float)


@dataclass(frozen=True)
class TfWarmingUp:
    """A target's frame has no TF transform yet while the TF listener is new: the transform is
    most likely being published and not yet delivered, so the target is kept and tried again,
    not refused.

    Attributes:
        message: what the lookup said (the frames, the stamp, tf2's error).
    """

    message: str


#: ``lookup(frame_id, stamp) -> T_base_frame`` (4x4) for frames outside the URDF (TF), or
#: :class:`TfWarmingUp` while the listener is new and has no transform yet.
FrameLookup = Callable[[str, Tuple[int, int]], Union[np.ndarray, TfWarmingUp]]


@dataclass  # made for every target: not frozen, which costs more to build; nothing changes it
class TargetInBase:
    """A target placed in the chain's base frame, ready for the solver.

    Attributes:
        target: the target as received.
        position: (3,) [m] in the base frame (on the chain's plane when it was moved there).
        quat_xyzw: (4,) unit quaternion in the base frame, or None for a point target.
        projected_m: how far a point target was moved onto a planar chain's plane [m] (0: not).
    """

    target: Target
    position: np.ndarray
    quat_xyzw: Optional[np.ndarray]
    projected_m: float = 0.0

    @property
    def solver_target(self):
        """What the solver takes for one tip: the position, or ``(position, quat_xyzw)``."""
        return self.position if self.quat_xyzw is None else (self.position, self.quat_xyzw)


def stamps_of(targets: Iterable[Target]) -> str:
    """The stamps naming ``targets`` in a status, comma-separated, each once (the targets of
    one ``~/target_poses`` message share theirs)."""
    return ','.join(stamp_text(stamp) for stamp in dict.fromkeys(t.stamp for t in targets))


def target_in_base(target: Target, chain: Chain, q: np.ndarray,
                   lookup: Optional[FrameLookup] = None
                   ) -> Union[Tuple[np.ndarray, Optional[np.ndarray]], TfWarmingUp]:
    """Check a target and express it in the chain's base frame.

    ``frame_id`` may be empty or the base link (no change), or any link of the URDF: it is then
    placed by forward kinematics at the current joint positions ``q``. Any other frame goes to
    ``lookup`` (the node's TF lookup) when one is given.

    Returns:
        (position in the base frame [m], quaternion (x, y, z, w) in the base frame or None), or
        the :class:`TfWarmingUp` that ``lookup`` returned.

    Raises:
        TargetError: NaN/inf or huge coordinates, a zero or non-finite quaternion, an unknown
            frame (the message lists the valid frames), or what ``lookup`` raises.
    """
    position = target.position
    values = target_values(position)  # finite, not huge: else TargetError
    p = position if type(position) is np.ndarray and position.dtype is FLOAT64 and \
        position.shape == (3,) else np.array(values)
    frame = target.frame_id
    if not frame or frame == chain.base_link:  # already in the base frame
        return p, None if target.quat_xyzw is None else _unit_quat_xyzw(target.quat_xyzw)
    R = None if target.quat_xyzw is None else rotation_from_input(target.quat_xyzw)
    try:
        T_base_frame = chain.link_transform(frame, q)
    except ChainError as exc:
        if lookup is None:
            raise TargetError(f'unknown target frame: {exc}. Frames outside the URDF are '
                              'looked up in TF, which needs tf2_ros (source a ROS 2 '
                              'install)') from None
        T_base_frame = lookup(frame, target.stamp)
        if isinstance(T_base_frame, TfWarmingUp):
            return T_base_frame
    p = T_base_frame[:3, :3] @ p + T_base_frame[:3, 3]
    if R is not None:
        R = T_base_frame[:3, :3] @ R
    return p, None if R is None else quat_xyzw_from_rotation(R)


def _unit_quat_xyzw(quat_xyzw) -> np.ndarray:
    """A quaternion checked (as ``rotation_from_input`` does: :class:`TargetError` naming a
    NaN, inf or zero one), normalised, ``w >= 0``: what :func:`quat_xyzw_from_rotation` of
    its rotation returns, without the round trip."""
    if type(quat_xyzw) is np.ndarray and quat_xyzw.shape == (4,):
        x, y, z, w = quat_xyzw.tolist()
    else:
        rotation_from_input(quat_xyzw)  # four numbers, or TargetError
        x, y, z, w = (float(v) for v in np.asarray(quat_xyzw, dtype=float).reshape(-1))
    norm = math.sqrt(x * x + y * y + z * z + w * w)
    if not 1e-6 <= norm <= 1e150:  # zero, not finite or huge: the full check says which
        rotation_from_input(quat_xyzw)
    if w < 0.0:
        norm = -norm
    return np.array([x / norm, y / norm, z / norm, w / norm])
