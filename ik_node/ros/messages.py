"""ROS messages <-> numpy for the node: targets in, joint states and diagnostic statuses out.

Imports the ``*_msgs`` packages but never rclpy, so every helper here is tested without
``rclpy.init``. The node (:mod:`ik_node.ros.node`) only wires these to topics.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Dict, Mapping, Optional, Sequence, Tuple

import numpy as np
import transforms3d
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PointStamped, PoseArray, PoseStamped
from sensor_msgs.msg import JointState

from ik_node.model.chain import Chain
from ik_node.errors import ChainError, TargetError
from ik_node.solvers.base import IkResult, TipResult, rotation_from_input, target_from_input

OK, WARN, ERROR = DiagnosticStatus.OK, DiagnosticStatus.WARN, DiagnosticStatus.ERROR


# ----------------------------------------------------------------------------------- targets
@dataclass(frozen=True)
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
    if len(msg.poses) != len(tips):
        raise TargetError(f'target_poses holds {len(msg.poses)} poses; it must hold one per tip, '
                          f'{len(tips)} in this order: {", ".join(tips)}')
    stamp = _stamp_of(msg.header)
    out = []
    for k, (tip, pose) in enumerate(zip(tips, msg.poses)):
        p, o = pose.position, pose.orientation
        quat = None if (o.x, o.y, o.z, o.w) == (0.0, 0.0, 0.0, 0.0) else \
            np.array([o.x, o.y, o.z, o.w], dtype=float)
        out.append(Target(np.array([p.x, p.y, p.z], dtype=float), quat, msg.header.frame_id,
                          tip, stamp, k))
    return tuple(out)


def quat_xyzw_from_rotation(R: np.ndarray) -> np.ndarray:
    """ROS-order quaternion ``(x, y, z, w)`` of a 3x3 rotation matrix."""
    w, x, y, z = transforms3d.quaternions.mat2quat(R)
    return np.array([x, y, z, w], dtype=float)


#: ``lookup(frame_id, stamp) -> T_base_frame`` (4x4) for frames outside the URDF (TF).
FrameLookup = Callable[[str, Tuple[int, int]], np.ndarray]


def target_in_base(target: Target, chain: Chain, q: np.ndarray,
                   lookup: Optional[FrameLookup] = None
                   ) -> Tuple[np.ndarray, Optional[np.ndarray]]:
    """Check a target and express it in the chain's base frame.

    ``frame_id`` may be empty or the base link (no change), or any link of the URDF: it is then
    placed by forward kinematics at the current joint positions ``q``. Any other frame goes to
    ``lookup`` (the node's TF lookup) when one is given.

    Returns:
        (position in the base frame [m], quaternion (x, y, z, w) in the base frame or None).

    Raises:
        TargetError: NaN/inf or huge coordinates, a zero or non-finite quaternion, an unknown
            frame (the message lists the valid frames), or what ``lookup`` raises.
    """
    p = target_from_input(target.position)
    R = None if target.quat_xyzw is None else rotation_from_input(target.quat_xyzw)
    frame = target.frame_id
    if not frame or frame == chain.base_link:  # already in the base frame
        return p, None if R is None else _unit_quat_xyzw(target.quat_xyzw)
    try:
        T_base_frame = chain.link_transform(frame, q)
    except ChainError as exc:
        if lookup is None:
            raise TargetError(f'unknown target frame: {exc}. Frames outside the URDF are '
                              'looked up in TF, which needs tf2_ros (source a ROS 2 '
                              'install)') from None
        T_base_frame = lookup(frame, target.stamp)
    p = T_base_frame[:3, :3] @ p + T_base_frame[:3, 3]
    if R is not None:
        R = T_base_frame[:3, :3] @ R
    return p, None if R is None else quat_xyzw_from_rotation(R)


def _unit_quat_xyzw(quat_xyzw) -> np.ndarray:
    """A valid quaternion (checked by ``rotation_from_input``) normalised, ``w >= 0``: what
    :func:`quat_xyzw_from_rotation` of its rotation returns, without the round trip."""
    x, y, z, w = (float(v) for v in np.asarray(quat_xyzw, dtype=float).reshape(-1))
    norm = math.sqrt(x * x + y * y + z * z + w * w)
    if w < 0.0:
        norm = -norm
    return np.array([x / norm, y / norm, z / norm, w / norm])



# ------------------------------------------------------------------------------ joint states
def check_publishable(chain: Chain, q: np.ndarray) -> np.ndarray:
    """``q`` as a float array if it is finite and within the joint limits, else TargetError."""
    q = np.asarray(q, dtype=float).reshape(-1)
    if q.shape != (chain.n,):
        raise TargetError(f'joint vector has {q.size} values; the chain has {chain.n} joints')
    values = q.tolist()  # plain floats: for a handful of joints numpy's per-call cost dominates
    if not all(math.isfinite(v) for v in values):
        raise TargetError(f'solution contains NaN or inf: {values}')
    if not chain.within_limits(q):
        bad = [f'{n}={v:.6g} not in [{lo:.6g}, {hi:.6g}]' for n, v, lo, hi in
               zip(chain.joint_names, q, chain.lower, chain.upper) if not lo - 1e-9 <= v <=
               hi + 1e-9]
        raise TargetError(f'solution outside the joint limits: {", ".join(bad)}')
    return q


def joint_state_msg(names: Sequence[str], q: Sequence[float], stamp) -> JointState:
    """A ``sensor_msgs/JointState`` with names and positions [rad or m] (no velocity/effort)."""
    msg = JointState()
    msg.header.stamp = stamp
    msg.name = list(names)
    msg.position = [float(v) for v in q]
    return msg


# ------------------------------------------------------------------------------- diagnostics
def _fmt(value: Optional[float]) -> str:
    if value is None:
        return ''
    return f'{value:.6g}' if math.isfinite(value) else str(value)


def result_level(result: IkResult) -> bytes:
    """OK when the target is reached (every targeted tip for a branched chain), else WARN."""
    return OK if result.reachable else WARN


def result_values(result: IkResult, solver: str, target_frame: str, skipped: int,
                  solve_count: int, target_stamp: str = '',
                  extra: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """The key-values of a solve's diagnostic status (units in the key names).

    ``target_stamp`` names the target answered (its header stamp, :func:`stamp_text`; several
    comma-separated for a branched solve); ``extra`` adds node-side keys (seed, output stamp).
    """
    values = {
        'solver': solver,
        'reachable': str(result.reachable).lower(),
        'status': result.status.value,
        'position_error_m': _fmt(result.position_error),
        'orientation_error_rad': _fmt(result.orientation_error),
        'min_residual_m': _fmt(result.min_residual),
        'best_found': str(result.best_found).lower(),
        'iterations': str(result.iterations),
        'solve_time_ms': _fmt(result.solve_time * 1e3),
        'target_frame': target_frame,
        'skipped_targets': str(skipped),
        'orientation_ignored': str(result.orientation_ignored).lower(),
        'solve_count': str(solve_count),
        'target_stamp': target_stamp,
        'message': result.message,
    }
    values.update(extra or {})
    for tip, tip_result in (result.tips or {}).items():
        values[f'{tip}.reachable'] = str(tip_result.reachable).lower()
        values[f'{tip}.status'] = '' if tip_result.status is None else tip_result.status.value
        values[f'{tip}.position_error_m'] = _fmt(tip_result.position_error)
        values[f'{tip}.min_residual_m'] = _fmt(tip_result.min_residual)
    return values


def tip_level(tip_result: TipResult) -> bytes:
    """OK when the tip reached its target, else WARN."""
    return OK if tip_result.reachable else WARN


def tip_summary(tip: str, tip_result: TipResult) -> str:
    """One line on one tip of a solve of several tips."""
    status = '' if tip_result.status is None else tip_result.status.value
    if tip_result.reachable:
        return f'{tip}: target reached (error {tip_result.position_error:.3g} m)'
    text = f'{tip}: target not reached ({status}), error {tip_result.position_error:.3g} m'
    if tip_result.min_residual is not None and tip_result.min_residual > 0.0:
        text += f', at least {tip_result.min_residual:.3g} m out of reach'
    return text


def tip_values(tip: str, tip_result: TipResult, target_frame: str,
               target_stamp: str) -> Dict[str, str]:
    """The key-values of one tip's own status in a solve of several tips (``tip`` names it;
    ``target_stamp`` the target answered, as in the solve's status)."""
    return {
        'tip': tip,
        'reachable': str(tip_result.reachable).lower(),
        'status': '' if tip_result.status is None else tip_result.status.value,
        'position_error_m': _fmt(tip_result.position_error),
        'orientation_error_rad': _fmt(tip_result.orientation_error),
        'min_residual_m': _fmt(tip_result.min_residual),
        'target_frame': target_frame,
        'target_stamp': target_stamp,
        'message': tip_result.message,
    }


def result_summary(result: IkResult, solver: str) -> str:
    """One line saying what happened, for the status message and the log."""
    if result.reachable:
        text = f'target reached ({solver}, error {result.position_error:.3g} m)'
    else:
        text = (f'target not reached ({solver}, {result.status.value}): best effort published, '
                f'error {result.position_error:.3g} m')
        if result.min_residual is not None:
            text += f', at least {result.min_residual:.3g} m out of reach'
        if result.best_found:
            excess = result.excess_bound
            text += ('; the best pose found, not shown to be the closest' +
                     (f' (at most {excess:.3g} m farther)' if excess is not None else ''))
    if result.tips:
        missed = [tip for tip, r in result.tips.items() if not r.reachable]
        if missed:
            text += f'; tips not reached: {", ".join(missed)}'
    if result.orientation_ignored:
        text += f'; orientation ignored ({solver} solves position only)'
    return text


def error_values(solver: str, target_frame: str, skipped: int, solve_count: int,
                 message: str, target_stamp: str = '') -> Dict[str, str]:
    """The key-values of an ERROR status: same keys as a result, measured ones empty.

    ``target_stamp`` names the target refused ('' for an error that answers no target).
    """
    values = {k: '' for k in ('reachable', 'status', 'position_error_m', 'orientation_error_rad',
                              'min_residual_m', 'best_found', 'iterations', 'solve_time_ms',
                              'orientation_ignored')}
    values.update({'solver': solver, 'status': 'error', 'target_frame': target_frame,
                   'skipped_targets': str(skipped), 'solve_count': str(solve_count),
                   'target_stamp': target_stamp, 'message': message})
    return values


def diagnostic_status(name: str, hardware_id: str, level: bytes, message: str,
                      values: Mapping[str, str]) -> DiagnosticStatus:
    """A ``diagnostic_msgs/DiagnosticStatus``."""
    status = DiagnosticStatus()
    status.level = level
    status.name = name
    status.message = message
    status.hardware_id = hardware_id
    status.values = [KeyValue(key=k, value=v) for k, v in values.items()]
    return status


def diagnostic_array(status, stamp) -> DiagnosticArray:
    """A ``diagnostic_msgs/DiagnosticArray`` holding one status, or a list of them (a solve of
    several tips: its own status, then one per tip)."""
    msg = DiagnosticArray()
    msg.header.stamp = stamp
    msg.status = list(status) if isinstance(status, (list, tuple)) else [status]
    return msg


def values_of(status: DiagnosticStatus) -> Dict[str, str]:
    """The key-values of a status as a dict."""
    return {kv.key: kv.value for kv in status.values}

