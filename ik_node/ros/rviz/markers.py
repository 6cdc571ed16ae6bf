"""RViz markers of the node: targets, misses, warnings, joints, the reachable envelope.

Imports ``visualization_msgs`` but never rclpy: every builder is a plain function from values
to messages. The passive markers are drawn light (lines, rings, small spheres, text) because
RViz's Interact tool grabs the first object under the cursor: a marker drawn over the
interactive target's handles would take the drag. Sizes follow the robot (:class:`Sizes`).

Marker ids (namespace ``ik``) are stable, so each update replaces the previous one:

=============  ==================================================================
0, 1           the envelope: outer and inner bound (a deleted 1 without an inner one)
10 + k         tip ``k``'s target: a small sphere, green reached, red not
100 + k        the line from tip ``k`` to its target when missed
300 + 3k + a   a 6D target's orientation: arrows along its x, y, z (a = 0, 1, 2)
400 + k        tip ``k``'s miss label: how far it missed and why the solver stopped
600 + k        tip ``k``'s warning label: every fragility warning of its solution
200 + j        joint ``j``'s ring about its axis, coloured by its limit margin
500 + j        joint ``j``'s line when it is near a limit (under its tip's labels)
700, 701       the colliding links' convex hulls, magenta, and their outline, yellow
800 + k        tip ``k``'s arrow towards a target too far out for the robot's view
=============  ==================================================================

A target too far out for the robot's RViz view (:func:`ik_node.ros.rviz.views.chain_view`) is
drawn where the line from its tip towards it leaves the view, with an arrow pointing on and its
miss label saying how much further it is; every label is kept inside that view. The labels'
words and places are in :mod:`ik_node.ros.rviz.labels`, the sizes in
:mod:`ik_node.ros.rviz.sizes`.

The reachability map is drawn by :mod:`ik_node.ros.rviz.map_markers`, in its own namespaces
(``reachability/<tip>``); the building blocks are in :mod:`ik_node.ros.rviz.marker_shapes`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Optional, Sequence, Set

import numpy as np
from visualization_msgs.msg import Marker

from ik_node.model.chain import Chain, chain_lengths
from ik_node.ros.rviz.labels import (JOINT_LABEL_ID, MISS_LABEL_ID, MISS_RGBA,  # noqa: F401
                                     WARN_LABEL_ID, WARN_RGBA)
from ik_node.ros.rviz.marker_shapes import (CIRCLE_SEGMENTS, NAMESPACE, circle_points,  # noqa: F401
                                       delete_all, deleted, marker_array, new_marker, place,
                                       plane_basis, point_msg, points_msg, quat_xyzw_z_onto,
                                       ramp)
from ik_node.ros.rviz.sizes import DEFAULT_SIZES, Sizes, sizes_of  # noqa: F401

GREEN = (0.1, 0.8, 0.2, 0.55)
RED = (0.9, 0.1, 0.1, 0.55)
ENVELOPE_RGBA = (0.3, 0.6, 1.0, 0.5)
INNER_RGBA = (1.0, 0.5, 0.1, 0.6)
#: A planar chain's envelope is a disc this thick [m], centred on the chain's plane, so a
#: clicked point on it (RViz's Publish Point) lands on the plane within half of it.
PLANAR_THICKNESS_M = 0.0005
PLANAR_RGBA = (0.3, 0.6, 1.0, 0.12)
#: Ids (see the module docstring).
TARGET_ID, LINE_ID, RING_ID, AXES_ID = 10, 100, 200, 300
COLLISION_ID, BEYOND_ID = 700, 800
#: The line from a missing tip to its target, and the arrow towards a target beyond the view.
MISS_LINE_RGBA = (1.0, 0.55, 0.0, 1.0)
COLLISION_RGBA = (1.0, 0.0, 1.0, 0.55)
#: The outline of the colliding links' hulls: yellow, over the magenta fill.
COLLISION_EDGE_RGBA = (1.0, 0.9, 0.0, 1.0)


# ---------------------------------------------------------------------------------- envelope
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
                            chain.planar_normal(tip))
    if chain.n == 0 or any(j.is_prismatic for j in chain.joints):
        return None
    idx = chain.joints_of_tip(tip)
    if not idx:
        return None
    center = chain.joint_frames(np.zeros(chain.n))[idx[0], :3, 3]
    return Envelope(center, 0.0, float(sum(chain_lengths(chain, tip))),
                    chain.planar_normal(tip))


# ---------------------------------------------------------------------------------- envelope
def _shell(frame_id: str, stamp, mid: int, env: Envelope, radius: float, rgba) -> Marker:
    """A planar chain's disc (thin, in its plane: clicks land there); else three great
    circles of the sphere (lines: they cover neither the robot nor the target's handles)."""
    if env.normal is not None:
        m = new_marker(frame_id, stamp, mid, Marker.CYLINDER, PLANAR_RGBA if mid == 0 else rgba)
        m.scale.x = m.scale.y = 2.0 * radius
        m.scale.z = PLANAR_THICKNESS_M * (1.0 if mid == 0 else 1.2)
        o = m.pose.orientation
        o.x, o.y, o.z, o.w = quat_xyzw_z_onto(env.normal)  # a cylinder's axis is its z
        place(m, env.center)
        return m
    m = new_marker(frame_id, stamp, mid, Marker.LINE_LIST, rgba)
    m.scale.x = 0.004
    for normal in np.eye(3):
        ring = circle_points(env.center, normal, radius)
        for a, b in zip(ring[:-1], ring[1:], strict=True):
            m.points += [point_msg(a), point_msg(b)]
    return m


def envelope_markers(frame_id: str, stamp, env: Optional[Envelope]) -> Sequence[Marker]:
    """The outer bound (id 0) and, when ``r_min > 0``, the inner one (id 1); deletes otherwise.

    A planar chain's is a thin disc in its plane, a spatial chain's three great circles."""
    if env is None:
        return [deleted(frame_id, stamp, 0), deleted(frame_id, stamp, 1)]
    out = [_shell(frame_id, stamp, 0, env, env.r_max, ENVELOPE_RGBA)]
    out.append(_shell(frame_id, stamp, 1, env, env.r_min, INNER_RGBA) if env.r_min > 0.0
               else deleted(frame_id, stamp, 1))
    return out


# ----------------------------------------------------------------------------------- targets
def target_markers(frame_id: str, stamp, index: int, p_target: np.ndarray, reached: bool,
                   p_tip: np.ndarray, sizes: Sizes = DEFAULT_SIZES) -> Sequence[Marker]:
    """Target sphere (green reached, red not) and, when not reached, a line tip -> target.

    The sphere is small: the interactive target's body around it stays in front, so the
    Interact tool grabs the handle, not the sphere."""
    rgba = GREEN if reached else (RED[0], RED[1], RED[2], 0.9)
    sphere = new_marker(frame_id, stamp, TARGET_ID + index, Marker.SPHERE, rgba)
    sphere.scale.x = sphere.scale.y = sphere.scale.z = 2.0 * sizes.target_radius
    place(sphere, p_target)
    if reached:
        return [sphere, deleted(frame_id, stamp, LINE_ID + index)]
    # Orange, not red: red is the miss.
    line = new_marker(frame_id, stamp, LINE_ID + index, Marker.LINE_LIST, MISS_LINE_RGBA)
    line.scale.x = sizes.line_width
    line.points = [point_msg(p_tip), point_msg(p_target)]
    return [sphere, line]


#: The arrows of a target orientation and the interactive target's handles: x magenta, y cyan,
#: z blue. Not RViz's red and green for x and y: those mean missed and reached here.
AXES_RGBA = ((0.85, 0.3, 0.85, 1.0), (0.15, 0.8, 0.9, 1.0), (0.3, 0.45, 1.0, 1.0))


def orientation_markers(frame_id: str, stamp, index: int, p_target: np.ndarray,
                        quat_xyzw: Optional[Sequence[float]], sizes: Sizes = DEFAULT_SIZES
                        ) -> Sequence[Marker]:
    """The target orientation of a 6D target as three arrows from the target point along its
    x, y and z axes (ids ``300 + 3 index + a``), the z (approach) arrow the longest; deletes
    when the target has no orientation."""
    ids = [AXES_ID + 3 * index + a for a in range(3)]
    if quat_xyzw is None:
        return [deleted(frame_id, stamp, mid) for mid in ids]
    from transforms3d.quaternions import quat2mat
    x, y, z, w = (float(v) for v in quat_xyzw)
    R = quat2mat([w, x, y, z])
    start = np.asarray(p_target, dtype=float)
    out = []
    for a, (mid, rgba) in enumerate(zip(ids, AXES_RGBA, strict=True)):
        length = sizes.axes_length * (1.0 if a == 2 else 0.7)
        m = new_marker(frame_id, stamp, mid, Marker.ARROW, rgba)
        m.points = [point_msg(start), point_msg(start + length * R[:, a])]
        m.scale.x = 0.12 * sizes.axes_length  # shaft diameter
        m.scale.y = 0.25 * sizes.axes_length  # head diameter
        m.scale.z = 0.3 * sizes.axes_length   # head length
        out.append(m)
    return out


def beyond_length(sizes: Sizes = DEFAULT_SIZES) -> float:
    """Length [m] of the arrow towards a target beyond the view."""
    return 1.5 * sizes.axes_length


def beyond_marker(frame_id: str, stamp, index: int, p_shown: np.ndarray,
                  p_target: np.ndarray, sizes: Sizes = DEFAULT_SIZES) -> Marker:
    """An orange arrow (id ``800 + index``) from where a target too far out for the view is
    drawn (``p_shown``) towards where it is (``p_target``); a delete when they are the same
    point (the target is drawn where it is)."""
    step = np.asarray(p_target, dtype=float) - np.asarray(p_shown, dtype=float)
    norm = float(np.linalg.norm(step))
    if norm < 1e-9:
        return deleted(frame_id, stamp, BEYOND_ID + index)
    length = beyond_length(sizes)
    m = new_marker(frame_id, stamp, BEYOND_ID + index, Marker.ARROW, MISS_LINE_RGBA)
    m.points = [point_msg(p_shown), point_msg(np.asarray(p_shown) + length * step / norm)]
    m.scale.x = 0.12 * length  # shaft diameter
    m.scale.y = 0.3 * length   # head diameter
    m.scale.z = 0.35 * length  # head length
    return m


# ------------------------------------------------------------------------------------ joints
#: A joint this near a limit [rad or m] is called at it.
AT_LIMIT = 1e-3
#: A joint near its limit gets a ring this many times wider, out of the housing it may sit in.
NEAR_LIMIT_GROWTH = 2.0


def _limit_gap(chain: Chain, q: np.ndarray, j: int):
    """``(gap, side, margin)`` of joint ``j`` at ``q``: how far [rad or m] from its nearer
    limit, which one (``'lower'``, ``'upper'``; '' unlimited) and the gap as a share of half
    its range (1.0 unlimited)."""
    lo, hi = float(chain.lower[j]), float(chain.upper[j])
    if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
        return math.inf, '', 1.0
    gap, side = min((q[j] - lo, 'lower'), (hi - q[j], 'upper'))
    return gap, side, gap / (0.5 * (hi - lo))


def limit_lines(chain: Chain, q: np.ndarray, limit_threshold: float,
                joints: Sequence[int]) -> Dict[int, str]:
    """Joint index -> ``hip_yaw near its upper limit`` (``at`` within :data:`AT_LIMIT`) for
    each of ``joints`` within ``limit_threshold`` [rad or m] of a limit at ``q``: the lines
    its tip's labels carry (:class:`ik_node.ros.rviz.labels.TipLabel`)."""
    q = np.asarray(q, dtype=float)
    out = {}
    for j in joints:
        gap, side, _ = _limit_gap(chain, q, j)
        if gap < limit_threshold:
            out[j] = (f'{chain.joints[j].name} {"at" if gap < AT_LIMIT else "near"} '
                      f'its {side} limit')
    return out


def joint_markers(frame_id: str, stamp, chain: Chain, q: np.ndarray,
                  limit_threshold: float = 0.05, sizes: Sizes = DEFAULT_SIZES,
                  flagged: Optional[Set[int]] = None,
                  labelled: Optional[Set[int]] = None) -> Sequence[Marker]:
    """A ring about every joint's axis at its origin (ids ``200 + j``), coloured by its limit
    margin (green with room to move, red at a limit; continuous joints green; twice as wide and
    thick near a limit, out of a housing it may sit in), and the delete of the limit line
    (id ``500 + j``) of every joint not in ``labelled`` (the joints whose lines the tips'
    labels carry: :func:`limit_lines`, under the tip, where no body hides them).

    Rings cover neither the tool nor the target; joints whose origins coincide (a hip's yaw
    and pitch) get rings of growing radius, and each ring lies in its own axis's plane.

    ``flagged``: the joints that may be called near a limit (those moving a targeted tip; None:
    all). The others (an idle leg resting where it is) keep a plain ring by their margin.
    """
    q = np.asarray(q, dtype=float)
    frames = chain.joint_frames(q)
    radius0 = sizes.ring_radius
    labelled = labelled or set()
    out, origins = [], []
    for j, joint in enumerate(chain.joints):
        origin = frames[j, :3, 3]
        axis = frames[j, :3, :3] @ joint.axis
        xyz = origin.tolist()  # plain floats: numpy's per-call cost dominates a 3-vector
        nested = sum(1 for o in origins if math.dist(o, xyz) < radius0)
        origins.append(xyz)
        gap, _, margin = _limit_gap(chain, q, j)
        near = gap < limit_threshold and (flagged is None or j in flagged)
        r, g, b = ramp(0.0 if near else margin)
        ring = new_marker(frame_id, stamp, RING_ID + j, Marker.LINE_STRIP, (r, g, b, 1.0))
        ring.scale.x = sizes.line_width * (1.6 if near else 0.8)
        radius = radius0 * (1.0 + 0.45 * nested) * (NEAR_LIMIT_GROWTH if near else 1.0)
        ring.points = points_msg(circle_points(origin, axis, radius))
        out.append(ring)
        if j not in labelled:
            out.append(deleted(frame_id, stamp, JOINT_LABEL_ID + j))
    return out


def collision_marker(frame_id: str, stamp, triangles: Optional[np.ndarray]) -> Marker:
    """The colliding links' convex hulls as one magenta TRIANGLE_LIST (``triangles``: (m, 3, 3)
    in the base frame [m]), or the deletion of the previous one when ``triangles`` is None.
    Magenta, not red: RViz draws the links of a URDF without materials red."""
    if triangles is None or len(triangles) == 0:
        return deleted(frame_id, stamp, COLLISION_ID)
    m = new_marker(frame_id, stamp, COLLISION_ID, Marker.TRIANGLE_LIST, COLLISION_RGBA)
    m.scale.x = m.scale.y = m.scale.z = 1.0
    m.points = [point_msg(p) for p in np.asarray(triangles, dtype=float).reshape(-1, 3)]
    return m


def collision_outline_marker(frame_id: str, stamp, triangles: Optional[np.ndarray],
                             sizes: Sizes = DEFAULT_SIZES) -> Marker:
    """The edges of the colliding links' hulls as a yellow LINE_LIST (id ``COLLISION_ID + 1``)
    over the magenta fill: an outline that shows on a robot of any colour, or the deletion of
    the previous one when ``triangles`` is None."""
    if triangles is None or len(triangles) == 0:
        return deleted(frame_id, stamp, COLLISION_ID + 1)
    T = np.asarray(triangles, dtype=float).reshape(-1, 3, 3)
    edges = np.concatenate([T[:, [0, 1]], T[:, [1, 2]], T[:, [2, 0]]])  # (3m, 2, 3)
    seen, kept = set(), []
    for k, (a, b) in enumerate(np.round(edges, 6).tolist()):
        key = (tuple(a), tuple(b)) if a <= b else (tuple(b), tuple(a))  # either way round
        if key not in seen:
            seen.add(key)
            kept.append(k)
    m = new_marker(frame_id, stamp, COLLISION_ID + 1, Marker.LINE_LIST, COLLISION_EDGE_RGBA)
    m.scale.x = 0.5 * sizes.line_width
    m.points = [point_msg(p) for p in edges[kept].reshape(-1, 3)]
    return m
