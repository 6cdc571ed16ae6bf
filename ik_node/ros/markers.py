"""RViz markers of the node: targets, the reachable envelope, tip-to-target lines.

Imports ``visualization_msgs`` but never rclpy. Marker ids are stable so each update replaces
the previous one: envelope 0 (outer) and 1 (inner), then per tip ``k`` the target sphere
``10 + k`` and the tip-to-target line ``100 + k`` (deleted when the target is reached).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
from geometry_msgs.msg import Point
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker, MarkerArray

from ik_node.model.chain import Chain, chain_lengths

NAMESPACE = 'ik'
# Target spheres are translucent and larger than any packaged tip, so the tip shows inside them.
GREEN = (0.1, 0.8, 0.2, 0.55)
RED = (0.9, 0.1, 0.1, 0.55)
ENVELOPE_RGBA = (0.3, 0.6, 1.0, 0.15)
INNER_RGBA = (1.0, 0.5, 0.1, 0.5)
PLANAR_THICKNESS_M = 0.005


@dataclass(frozen=True)
class Envelope:
    """Where a tip can be: within ``r_max`` of ``center``, and beyond ``r_min`` [m].

    ``normal`` is set for a planar chain (all joint axes parallel): the envelope is then a
    disc (annulus) in the plane through ``center`` normal to it, else a spherical shell.
    """

    center: np.ndarray
    r_min: float
    r_max: float
    normal: Optional[np.ndarray] = None


def envelope_of(chain: Chain, solver=None, tip: Optional[str] = None) -> Optional[Envelope]:
    """The reachable envelope of a tip.

    A solver that knows its envelope exactly exposes ``reach_envelope(tip)`` returning
    ``(center, r_min, r_max)`` (or None); otherwise, for an all-revolute chain, the sphere of
    radius sum-of-link-lengths around the first joint (an outer bound). None with prismatic
    joints.
    """
    known = getattr(solver, 'reach_envelope', None)
    if callable(known):
        try:
            out = known(tip)
        except Exception:  # a helper for pictures must never break a solve
            out = None
        if out is not None:
            center, r_min, r_max = out
            return Envelope(np.asarray(center, dtype=float), float(r_min), float(r_max),
                            _planar_normal(chain, tip))
    if chain.n == 0 or any(j.is_prismatic for j in chain.joints):
        return None
    idx = chain.joints_of_tip(tip)
    if not idx:
        return None
    center = chain.joint_frames(np.zeros(chain.n))[idx[0], :3, 3]
    return Envelope(center, 0.0, float(sum(chain_lengths(chain, tip))),
                    _planar_normal(chain, tip))


def _planar_normal(chain: Chain, tip: Optional[str]) -> Optional[np.ndarray]:
    """The common axis (base frame) of a tip's joints if they are all parallel, else None."""
    idx = chain.joints_of_tip(tip)
    if len(idx) < 2:
        return None
    frames = chain.joint_frames(np.zeros(chain.n))
    axes = np.array([frames[i, :3, :3] @ chain.joints[i].axis for i in idx])
    if np.all(np.abs(np.abs(axes @ axes[0]) - 1.0) < 1e-9):
        return axes[0]
    return None


def _marker(frame_id: str, stamp, mid: int, mtype: int, rgba) -> Marker:
    m = Marker()
    m.header.frame_id = frame_id
    m.header.stamp = stamp
    m.ns = NAMESPACE
    m.id = mid
    m.type = mtype
    m.action = Marker.ADD
    m.pose.orientation.w = 1.0
    m.color.r, m.color.g, m.color.b, m.color.a = (float(c) for c in rgba)
    return m


def _deleted(frame_id: str, stamp, mid: int) -> Marker:
    m = Marker()
    m.header.frame_id = frame_id
    m.header.stamp = stamp
    m.ns = NAMESPACE
    m.id = mid
    m.action = Marker.DELETE
    return m


def _shell(frame_id: str, stamp, mid: int, env: Envelope, radius: float, rgba) -> Marker:
    if env.normal is None:
        m = _marker(frame_id, stamp, mid, Marker.SPHERE, rgba)
        m.scale.x = m.scale.y = m.scale.z = 2.0 * radius
    else:
        m = _marker(frame_id, stamp, mid, Marker.CYLINDER, rgba)
        m.scale.x = m.scale.y = 2.0 * radius
        m.scale.z = PLANAR_THICKNESS_M
        # A cylinder's axis is its local z: rotate z onto the plane's normal.
        z = np.array([0.0, 0.0, 1.0])
        axis = np.cross(z, env.normal)
        s, c = float(np.linalg.norm(axis)), float(z @ env.normal)
        if s > 1e-12:
            half = 0.5 * np.arctan2(s, c)
            x, y, zq = axis / s * np.sin(half)
            m.pose.orientation.x, m.pose.orientation.y, m.pose.orientation.z = \
                float(x), float(y), float(zq)
            m.pose.orientation.w = float(np.cos(half))
    m.pose.position.x, m.pose.position.y, m.pose.position.z = (float(v) for v in env.center)
    return m


def envelope_markers(frame_id: str, stamp, env: Optional[Envelope]) -> Sequence[Marker]:
    """The outer shell (id 0) and, when ``r_min > 0``, the inner one (id 1); deletes otherwise."""
    if env is None:
        return [_deleted(frame_id, stamp, 0), _deleted(frame_id, stamp, 1)]
    out = [_shell(frame_id, stamp, 0, env, env.r_max, ENVELOPE_RGBA)]
    out.append(_shell(frame_id, stamp, 1, env, env.r_min, INNER_RGBA) if env.r_min > 0.0
               else _deleted(frame_id, stamp, 1))
    return out


def target_markers(frame_id: str, stamp, index: int, p_target: np.ndarray, reached: bool,
                   p_tip: np.ndarray, radius_m: float = 0.04) -> Sequence[Marker]:
    """Target sphere (green reached, red not) and, when not reached, a line tip -> target."""
    sphere = _marker(frame_id, stamp, 10 + index, Marker.SPHERE, GREEN if reached else RED)
    sphere.scale.x = sphere.scale.y = sphere.scale.z = 2.0 * radius_m
    sphere.pose.position.x, sphere.pose.position.y, sphere.pose.position.z = \
        (float(v) for v in p_target)
    if reached:
        return [sphere, _deleted(frame_id, stamp, 100 + index)]
    # Orange, not red: a pose target draws its x axis red from the same point.
    line = _marker(frame_id, stamp, 100 + index, Marker.LINE_LIST, (1.0, 0.55, 0.0, 1.0))
    line.scale.x = 0.008
    line.points = [Point(x=float(a), y=float(b), z=float(c)) for a, b, c in (p_tip, p_target)]
    return [sphere, line]


#: Length [m] of the target orientation's axes (x red, y green, z blue, as RViz draws frames).
AXES_LENGTH_M = 0.12


def orientation_markers(frame_id: str, stamp, index: int, p_target: np.ndarray,
                        quat_xyzw: Optional[Sequence[float]]) -> Sequence[Marker]:
    """The target orientation of a 6D target as three axes from the target point (one
    LINE_LIST, id 300 + index, drawn through the robot so a target inside the flange still shows);
    a delete when the target has no orientation."""
    if quat_xyzw is None:
        return [_deleted(frame_id, stamp, 300 + index)]
    from transforms3d.quaternions import quat2mat
    x, y, z, w = (float(v) for v in quat_xyzw)
    R = quat2mat([w, x, y, z])
    m = _marker(frame_id, stamp, 300 + index, Marker.LINE_LIST, (1.0, 1.0, 1.0, 1.0))
    m.scale.x = 0.01
    origin = Point(x=float(p_target[0]), y=float(p_target[1]), z=float(p_target[2]))
    for axis, rgb in zip(R.T, ((1.0, 0.0, 0.0), (0.0, 0.8, 0.0), (0.0, 0.3, 1.0)), strict=True):
        end = np.asarray(p_target, dtype=float) + AXES_LENGTH_M * axis
        m.points += [origin, Point(x=float(end[0]), y=float(end[1]), z=float(end[2]))]
        m.colors += [ColorRGBA(r=rgb[0], g=rgb[1], b=rgb[2], a=1.0)] * 2
    return [m]


def marker_array(markers: Sequence[Marker]) -> MarkerArray:
    """A ``visualization_msgs/MarkerArray`` of ``markers``."""
    msg = MarkerArray()
    msg.markers = list(markers)
    return msg


def delete_all(frame_id: str, stamp) -> Sequence[Marker]:
    """One DELETEALL marker: RViz drops every marker of this publisher (e.g. a chain change)."""
    m = Marker()
    m.header.frame_id = frame_id
    m.header.stamp = stamp
    m.ns = NAMESPACE
    m.action = Marker.DELETEALL
    return [m]


#: Reachability voxels: colour ramp of the index, red (low) -> yellow -> green (1).
REACH_ALPHA = 0.35


def _ramp(x: float):
    """Red (0) -> yellow (0.5) -> green (1)."""
    x = min(max(float(x), 0.0), 1.0)
    return (min(1.0, 2.0 * (1.0 - x)), min(1.0, 2.0 * x), 0.1)


def reachability_markers(frame_id: str, stamp, maps) -> Sequence[Marker]:
    """DELETEALL, then one CUBE_LIST per tip map (namespace ``reachability/<tip>``, id 0).

    Each cube is a voxel a sampled configuration reached, coloured by its reachability index
    (the share of approach directions reached; 1 for position-only chains).
    """
    out = list(delete_all(frame_id, stamp))
    out[0].ns = ''
    for reach_map in maps:
        m = _marker(frame_id, stamp, 0, Marker.CUBE_LIST, (1.0, 1.0, 1.0, REACH_ALPHA))
        m.ns = f'reachability/{reach_map.tip_link}'
        m.scale.x = m.scale.y = m.scale.z = 0.9 * reach_map.voxel_size
        m.points = [Point(x=float(a), y=float(b), z=float(c)) for a, b, c in reach_map.centres]
        m.colors = []
        for value in reach_map.index:
            r, g, b = _ramp(value)
            m.colors.append(ColorRGBA(r=r, g=g, b=b, a=REACH_ALPHA))
        out.append(m)
    return out


def joint_margin_markers(frame_id: str, stamp, chain: Chain, q: np.ndarray,
                         radius_m: float = 0.07) -> Sequence[Marker]:
    """A translucent sphere at every joint (ids ``200 + j``), larger than the packaged robots'
    joint housings so it shows around them: green with room to move, red at a limit.

    The colour is the distance to the nearest limit over half the joint's range (continuous
    joints: green).
    """
    frames = chain.joint_frames(np.asarray(q, dtype=float))
    out = []
    for j in range(chain.n):
        lo, hi = chain.lower[j], chain.upper[j]
        if np.isfinite(lo) and np.isfinite(hi) and hi > lo:
            margin = min(q[j] - lo, hi - q[j]) / (0.5 * (hi - lo))
        else:
            margin = 1.0
        r, g, b = _ramp(margin)
        m = _marker(frame_id, stamp, 200 + j, Marker.SPHERE, (r, g, b, 0.45))
        m.scale.x = m.scale.y = m.scale.z = 2.0 * radius_m
        m.pose.position.x, m.pose.position.y, m.pose.position.z = \
            (float(v) for v in frames[j, :3, 3])
        out.append(m)
    return out
