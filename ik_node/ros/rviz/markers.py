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
500 + j        joint ``j``'s label when it is near a limit
700            the colliding links' convex hulls, red (deleted when none collides)
800 + k        tip ``k``'s arrow towards a target too far out for the robot's view
=============  ==================================================================

A target too far out for the robot's RViz view (:func:`ik_node.ros.rviz.views.chain_view`) is
drawn where the line from its tip towards it leaves the view, with an arrow pointing on and its
miss label saying how much further it is; every label is kept inside that view.

The reachability map is drawn by :mod:`ik_node.ros.rviz.map_markers`, in its own namespaces
(``reachability/<tip>``); the building blocks are in :mod:`ik_node.ros.rviz.marker_shapes`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, NamedTuple, Optional, Sequence, Set

import numpy as np
from visualization_msgs.msg import Marker

from ik_node.model.chain import Chain, chain_lengths
from ik_node.ros.rviz.camera import FILL, OrbitView, shifted_into_view, text_width
from ik_node.ros.rviz.marker_shapes import (CIRCLE_SEGMENTS, NAMESPACE, circle_points,  # noqa: F401
                                       delete_all, deleted, marker_array, new_marker, place,
                                       plane_basis, point_msg, points_msg, quat_xyzw_z_onto,
                                       ramp)

GREEN = (0.1, 0.8, 0.2, 0.55)
RED = (0.9, 0.1, 0.1, 0.55)
#: Labels: a miss, and a warning on a reached target.
MISS_RGBA = (1.0, 0.3, 0.25, 1.0)
WARN_RGBA = (1.0, 0.78, 0.1, 1.0)
ENVELOPE_RGBA = (0.3, 0.6, 1.0, 0.5)
INNER_RGBA = (1.0, 0.5, 0.1, 0.6)
#: A planar chain's envelope is a disc this thick [m], centred on the chain's plane, so a
#: clicked point on it (RViz's Publish Point) lands on the plane within half of it.
PLANAR_THICKNESS_M = 0.0005
PLANAR_RGBA = (0.3, 0.6, 1.0, 0.12)
#: Ids (see the module docstring).
TARGET_ID, LINE_ID, RING_ID, AXES_ID, MISS_LABEL_ID, JOINT_LABEL_ID, WARN_LABEL_ID = \
    10, 100, 200, 300, 400, 500, 600
COLLISION_ID, BEYOND_ID = 700, 800
#: The line from a missing tip to its target, and the arrow towards a target beyond the view.
MISS_LINE_RGBA = (1.0, 0.55, 0.0, 1.0)
COLLISION_RGBA = (1.0, 0.0, 1.0, 0.55)
#: The outline of the colliding links' hulls: yellow, over the magenta fill.
COLLISION_EDGE_RGBA = (1.0, 0.9, 0.0, 1.0)


@dataclass(frozen=True)
class Sizes:
    """Marker sizes [m] for a robot of reach ``reach_m`` (the sum of its link lengths).

    Each is a share of the reach bounded on both sides, so a leg and an arm both read well.
    """

    reach_m: float = 1.0

    def _share(self, share: float, low: float, high: float) -> float:
        return float(min(max(share * self.reach_m, low), high))

    @property
    def target_radius(self) -> float:
        return self._share(0.025, 0.012, 0.03)

    @property
    def line_width(self) -> float:
        return self._share(0.008, 0.004, 0.01)

    @property
    def ring_radius(self) -> float:
        """Wider than the packaged robots' joint housings, so a ring shows around them."""
        return self._share(0.075, 0.04, 0.075)

    @property
    def text_height(self) -> float:
        """At least 0.04 m: legible (about 30 px) in the robot's shipped RViz view."""
        return self._share(0.06, 0.04, 0.06)

    @property
    def axes_length(self) -> float:
        """Shorter than the inner end of the interactive marker's move arrows."""
        return self._share(0.1, 0.06, 0.1)

    @property
    def handle_scale(self) -> float:
        """The interactive target's scale (its arrows reach about this far from it)."""
        return self._share(0.3, 0.18, 0.3)


def sizes_of(chain: Chain) -> Sizes:
    """The :class:`Sizes` of a chain: its longest tip's sum of link lengths (1 m without)."""
    reach = max((sum(chain_lengths(chain, tip)) for tip in chain.tip_links), default=0.0)
    return Sizes(reach if reach > 0.0 else 1.0)


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
                   p_tip: np.ndarray, sizes: Sizes = Sizes()) -> Sequence[Marker]:
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
                        quat_xyzw: Optional[Sequence[float]], sizes: Sizes = Sizes()
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


def length_text(metres: float) -> str:
    """A length for a label: ``5.7 mm`` below a metre, ``1.25 m`` from one."""
    return f'{metres * 1000.0:.3g} mm' if abs(metres) < 1.0 else f'{metres:.3g} m'


def miss_text(tip: str, position_error_m: float, why: str,
              orientation_error_rad: Optional[float] = None) -> str:
    """What a tip's label says when it misses: how far, and why (the solver's status, or what
    is proven of this tip)."""
    text = f'{tip} missed by {length_text(position_error_m)}'
    if orientation_error_rad is not None:
        text += f', {math.degrees(orientation_error_rad):.3g} deg'
    return f'{text} ({why})'


#: A label line longer than this [characters] is broken before its bracket: a label is centred
#: on its tip, and a long line runs off the screen beside a tip near its edge.
LABEL_LINE_CHARS = 32


#: RViz's lines of text are this many text heights apart (measured in the rviz1 shots: 1.3).
LINE_PITCH = 1.35
#: A tip's labels start this many interactive-marker scales below the tip and its target: the
#: target's move arrows end 0.9 scales from it, so the labels stay clear of their ends also
#: in a view looking down (up to about 0.6 rad: an arrow towards the camera then reaches 0.5
#: scales down the screen, the labels' top 1.0).
LABEL_DROP_SCALES = 1.25


def wrapped(lines: Sequence[str]) -> List[str]:
    """``lines`` with each one longer than ``LABEL_LINE_CHARS`` broken before its first ``(``
    (``tool0 missed by 387 mm, 9.21 deg`` / ``(unreachable)``)."""
    out = []
    for line in lines:
        head, bracket, rest = line.partition(' (')
        out += [head, f'({rest}'] if len(line) > LABEL_LINE_CHARS and bracket and head else [line]
    return out


#: What a tip's labels say: the miss (lines joined by newlines; '' when reached), the warnings.
TipLabel = NamedTuple('TipLabel', [('miss', str), ('warnings', Sequence[str])])


def tip_label_markers(frame_id: str, stamp, index: int, p_tip: np.ndarray, label: TipLabel,
                      sizes: Sizes = Sizes(), p_target: Optional[np.ndarray] = None,
                      view: Optional[OrbitView] = None) -> Sequence[Marker]:
    """Tip ``index``'s labels: the miss in red (id ``400 + index``) and under it the warnings
    in amber (id ``600 + index``), each a delete when there is nothing to say.

    They hang below both the tip and its target (``p_target``, where the target is drawn),
    :data:`LABEL_DROP_SCALES` below, beyond the ends of the target's move arrows: above the
    target RViz draws its description (1.4 scales up), above a foot is the robot, and in the
    usual view from above the space under a tool reaching out stays in sight. With the robot's
    ``view``: where the view ends above their bottom, they stand beside the tip and its target
    instead (towards the middle of the view, as far out as they hang down otherwise), and a
    label that would still run over the view's edge is moved across the screen until all of
    its text is inside.
    """
    heights = [float(p_tip[2])] + ([] if p_target is None else [float(p_target[2])])
    anchor = np.array([p_tip[0], p_tip[1], min(heights)], dtype=float)
    blocks = [(wrapped(label.miss.split('\n') if label.miss else []), MISS_LABEL_ID, MISS_RGBA),
              (wrapped(label.warnings), WARN_LABEL_ID, WARN_RGBA)]
    blocks = [(text, mid, rgba, len(text) * LINE_PITCH * sizes.text_height)
              for text, mid, rgba in blocks]
    drop = LABEL_DROP_SCALES * sizes.handle_scale
    total = sum(block for *_, block in blocks)
    # From the tip down: the miss, then the warnings; beside the tip and its target instead,
    # towards the middle of the view, when the view ends above their bottom.
    offset, shift = drop, np.zeros(3)
    if view is not None and total > 0.0 and \
            view.project(anchor - [0.0, 0.0, drop + total])[0, 1] < -FILL:
        width = max(text_width('\n'.join(text), sizes.text_height) for text, *_ in blocks)
        _, right, _ = view.basis()
        side = 1.0 if view.project(anchor)[0, 0] < 0.0 else -1.0
        offset, shift = -0.5 * total, side * (drop + 0.5 * width) * right
    out = []
    for text, mid, rgba, block in blocks:
        if not text:
            out.append(deleted(frame_id, stamp, mid + index))
            continue
        m = new_marker(frame_id, stamp, mid + index, Marker.TEXT_VIEW_FACING, rgba)
        m.text = '\n'.join(text)
        m.scale.x = m.scale.y = m.scale.z = sizes.text_height  # RViz reads z only
        centre, offset = offset + 0.5 * block, offset + block
        at = anchor + shift - np.array([0.0, 0.0, centre])
        if view is not None:
            at = shifted_into_view(view, at, text_width(m.text, sizes.text_height), block)
        place(m, at)
        out.append(m)
    return out


def beyond_text(metres: float) -> str:
    """The line a miss label gets when its target is drawn at the view's edge, short of it."""
    return f'target {length_text(metres)} further on'


def beyond_length(sizes: Sizes = Sizes()) -> float:
    """Length [m] of the arrow towards a target beyond the view."""
    return 1.5 * sizes.axes_length


def beyond_marker(frame_id: str, stamp, index: int, p_shown: np.ndarray,
                  p_target: np.ndarray, sizes: Sizes = Sizes()) -> Marker:
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
def joint_markers(frame_id: str, stamp, chain: Chain, q: np.ndarray,
                  limit_threshold: float = 0.05, sizes: Sizes = Sizes(),
                  flagged: Optional[Set[int]] = None,
                  view: Optional[OrbitView] = None) -> Sequence[Marker]:
    """A ring about every joint's axis at its origin (ids ``200 + j``), coloured by its limit
    margin (green with room to move, red at a limit; continuous joints green; twice as wide and
    thick near a limit, out of a housing it may sit in), and a label
    (ids ``500 + j``) beside the ring of a joint within ``limit_threshold`` [rad or m] of a
    limit (the tip's warning label says how near): above it, on the side away from the rest of
    the chain, where a joint hidden in a housing still shows its name.

    Rings cover neither the tool nor the target; joints whose origins coincide (a hip's yaw
    and pitch) get rings of growing radius, and each ring lies in its own axis's plane.

    ``flagged``: the joints that may be called near a limit (those moving a targeted tip; None:
    all). The others (an idle leg resting where it is) keep a plain ring by their margin.
    ``view``: the robot's view; a joint's label that would run over its edge is moved across
    the screen until all of its text is inside.
    """
    q = np.asarray(q, dtype=float)
    frames = chain.joint_frames(q)
    radius0 = sizes.ring_radius
    centroid = np.vstack([frames[:, :3, 3], [T[:3, 3] for T in chain.fk_tips(q).values()]]
                         ).mean(axis=0)
    out, origins = [], []
    for j, joint in enumerate(chain.joints):
        origin = frames[j, :3, 3]
        axis = frames[j, :3, :3] @ joint.axis
        xyz = origin.tolist()  # plain floats: numpy's per-call cost dominates a 3-vector
        nested = sum(1 for o in origins if math.dist(o, xyz) < radius0)
        origins.append(xyz)
        lo, hi = float(chain.lower[j]), float(chain.upper[j])
        limited = math.isfinite(lo) and math.isfinite(hi) and hi > lo
        gap, side = (min((q[j] - lo, 'lower'), (hi - q[j], 'upper')) if limited
                     else (math.inf, ''))
        margin = gap / (0.5 * (hi - lo)) if limited else 1.0
        near = gap < limit_threshold and (flagged is None or j in flagged)
        r, g, b = ramp(0.0 if near else margin)
        ring = new_marker(frame_id, stamp, RING_ID + j, Marker.LINE_STRIP, (r, g, b, 1.0))
        ring.scale.x = sizes.line_width * (1.6 if near else 0.8)
        radius = radius0 * (1.0 + 0.45 * nested) * (NEAR_LIMIT_GROWTH if near else 1.0)
        ring.points = points_msg(circle_points(origin, axis, radius))
        out.append(ring)
        if near:
            label = new_marker(frame_id, stamp, JOINT_LABEL_ID + j, Marker.TEXT_VIEW_FACING,
                            WARN_RGBA)
            label.text = f'{joint.name} {"at" if gap < AT_LIMIT else "near"} its {side} limit'
            height = label.scale.x = label.scale.y = label.scale.z = \
                max(MIN_TEXT_HEIGHT, 0.7 * sizes.text_height)
            at = _beside(origin, centroid, radius, height)
            if view is not None:
                at = shifted_into_view(view, at, text_width(label.text, height),
                                       LINE_PITCH * height)
            place(label, at)
            out.append(label)
        else:
            out.append(deleted(frame_id, stamp, JOINT_LABEL_ID + j))
    return out


#: The least height of any label [m]: legible in the packaged robots' views.
MIN_TEXT_HEIGHT = 0.04
#: A joint this near a limit [rad or m] is called at it.
AT_LIMIT = 1e-3
#: A joint near its limit gets a ring this many times wider, out of the housing it may sit in.
NEAR_LIMIT_GROWTH = 2.0


def _beside(origin: np.ndarray, centroid: np.ndarray, radius: float,
            height: float) -> np.ndarray:
    """Where a label ``height`` [m] high, centred, stands just clear of a ring of
    ``radius`` about ``origin``: above it, its middle out from the joint by the ring's radius,
    horizontally away from ``centroid`` (pushed out further, a long label runs off the view
    beside an arm reaching out)."""
    away = np.asarray(origin, dtype=float) - centroid
    away[2] = 0.0
    norm = float(np.linalg.norm(away))
    away = away / norm if norm > 1e-9 else np.array([-1.0, 0.0, 0.0])
    return origin + away * radius + np.array([0.0, 0.0, radius + height])


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
                             sizes: Sizes = Sizes()) -> Marker:
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
