"""The node's RViz labels: what a tip's labels say and where they hang (no rclpy).

A tip's labels (its miss in red, its warnings and the limits of its joints in amber) hang
below the tip and its target on the screen, beyond the ends of the target's handles, so they
never run under a handle or into the robot above a foot; every label is kept inside the robot's
view (:mod:`ik_node.ros.rviz.camera`).

Marker ids (namespace ``ik``): ``400 + k`` tip ``k``'s miss, ``600 + k`` its warnings,
``500 + j`` joint ``j``'s limit line (under its tip's warnings).
"""

from __future__ import annotations

import math
from typing import List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
from visualization_msgs.msg import Marker

from ik_node.ros.rviz.camera import (FIELD_OF_VIEW, FILL, RENDER_PX, OrbitView, on_screen,
                                     shifted_into_view, text_width)
from ik_node.ros.rviz.marker_shapes import deleted, new_marker, place
from ik_node.ros.rviz.sizes import DEFAULT_SIZES, Sizes

#: Labels: a miss, and a warning on a reached target or a joint near its limit.
MISS_RGBA = (1.0, 0.3, 0.25, 1.0)
WARN_RGBA = (1.0, 0.78, 0.1, 1.0)
MISS_LABEL_ID, JOINT_LABEL_ID, WARN_LABEL_ID = 400, 500, 600
#: The least height of any label [m]: legible in the packaged robots' views.
MIN_TEXT_HEIGHT = 0.04
#: A label too wide for the view near the camera is made smaller down to this height [m] (near
#: the camera it still reads); where that is not enough, it stands in a corner of the view.
LEAST_TEXT_HEIGHT = 0.03


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


class TipLabel(NamedTuple):
    """What a tip's labels say: the miss (lines joined by newlines; '' when reached), the
    warnings, and ``(joint index, text)`` of each of its joints near a limit; ``body``: points
    [m] along the robot's links the labels keep clear of on the screen where they stand above
    the tip (None: not known)."""

    miss: str
    warnings: Sequence[str]
    limits: Sequence[Tuple[int, str]] = ()
    body: Optional[np.ndarray] = None


def tip_label_markers(frame_id: str, stamp, index: int, p_tip: np.ndarray, label: TipLabel,
                      sizes: Sizes = DEFAULT_SIZES, p_target: Optional[np.ndarray] = None,
                      view: Optional[OrbitView] = None) -> Sequence[Marker]:
    """Tip ``index``'s labels: the miss in red (id ``400 + index``), under it the warnings in
    amber (id ``600 + index``), each a delete when there is nothing to say, and under those a
    line per joint near a limit (id ``500 + j``, amber, smaller).

    They hang :data:`LABEL_DROP_SCALES` below the lower of the tip and its target
    (``p_target``, where the target is drawn), beyond the ends of the target's handles (which
    reach 0.9 scales out): above the target RViz draws its description, above a foot is the
    robot. With the robot's ``view`` "below" is down the screen (the camera's up vector), so a
    view from high above keeps them clear of the handles too; without it, down in z. Where the
    view ends above their bottom, they stand beside the tip and its target instead (towards
    the middle of the view or else the other way, as far out as they hang down otherwise), or,
    where neither side has room, above the tip and its target (where none of ``label.body``,
    points along the robot's links, is behind them on the screen), or, where the view has no
    room there either, in the bottom corner of the view away from the tip, at the depth of the
    view's focal point (beside the robot, so a camera near the view RViz opened still shows
    it); a label that would still run over the view's edge is moved across the screen until all
    of its text is inside.
    """
    anchor, down = _anchor(p_tip, p_target, view)
    limit_height = max(MIN_TEXT_HEIGHT, 0.85 * sizes.text_height)
    blocks = [(wrapped(label.miss.split('\n') if label.miss else []), MISS_LABEL_ID + index,
               MISS_RGBA, sizes.text_height),
              (wrapped(label.warnings), WARN_LABEL_ID + index, WARN_RGBA, sizes.text_height)]
    blocks += [([text], JOINT_LABEL_ID + j, WARN_RGBA, limit_height) for j, text in label.limits]
    blocks = [(text, mid, rgba, height, len(text) * LINE_PITCH * height)
              for text, mid, rgba, height in blocks]
    drop = LABEL_DROP_SCALES * sizes.handle_scale
    total = sum(block for *_, block in blocks)
    # From the tip down: the miss, then the warnings and limits; beside the tip and its target
    # instead, towards the middle of the view, when the view ends above their bottom.
    offset, shift = drop, np.zeros(3)
    width = max(text_width('\n'.join(text), height) for text, _, _, height, _ in blocks)
    if view is not None and total > 0.0 and _fits_across(view, anchor, width) < 1.0:
        share = _fits_across(view, anchor, width)  # too wide near the camera: smaller, or
        if share * min(height for *_, height, _ in blocks) < LEAST_TEXT_HEIGHT:
            side = -1.0 if view.project(anchor)[0, 0] > 0.0 else 1.0  # in a corner
            return _in_corner(frame_id, stamp, blocks, view, side,
                              IN_FRONT_SHARE * sizes.reach_m)
        blocks = [(text, mid, rgba, share * height, share * block)
                  for text, mid, rgba, height, block in blocks]
        width, total = share * width, share * total
    if view is not None and total > 0.0 and \
            view.project(anchor + (drop + total) * down)[0, 1] < -FILL:
        rise = max(float((np.asarray(p, dtype=float) - anchor) @ -down)
                   for p in (p_tip, p_target if p_target is not None else p_tip))
        offset, shift = _beside(view, anchor, drop + rise, width, total)
        if shift is None:  # no room beside: above the tip and its target
            anchor, offset, shift = _above(view, (p_tip, p_target), drop, (width, total),
                                           label.body)
            share = _fits_across(view, anchor, width)  # that one may be nearer the camera
            if shift is not None and share < 1.0:
                blocks = [(text, mid, rgba, share * height, share * block)
                          for text, mid, rgba, height, block in blocks]
        if shift is None:  # no room near the tip: in a bottom corner of the view
            side = -1.0 if view.project(anchor)[0, 0] > 0.0 else 1.0  # away from the tip
            return _in_corner(frame_id, stamp, blocks, view, side,
                              IN_FRONT_SHARE * sizes.reach_m)
    out = []
    for text, mid, rgba, height, block in blocks:
        if not text:
            out.append(deleted(frame_id, stamp, mid))
            continue
        m = new_marker(frame_id, stamp, mid, Marker.TEXT_VIEW_FACING, rgba)
        m.text = '\n'.join(text)
        m.scale.x = m.scale.y = m.scale.z = height  # RViz reads z only
        centre, offset = offset + 0.5 * block, offset + block
        at = anchor + shift + centre * down
        if view is not None:
            at = _in_front(view, m, shifted_into_view(view, at, text_width(m.text, height),
                                                      block), IN_FRONT_SHARE * sizes.reach_m)
        place(m, at)
        out.append(m)
    return out


def _fits_across(view: OrbitView, at: np.ndarray, width: float) -> float:
    """The share of its size at which text ``width`` [m] wide at the depth of ``at`` takes 0.95
    of :data:`FILL` of the view on either side of its middle (room to move it inside), at most
    1 (text near the camera may need less); 0 behind the camera."""
    forward, _, _ = view.basis()
    depth = float((np.asarray(at, dtype=float) - view.eye()) @ forward)
    t = math.tan(FIELD_OF_VIEW / 2)
    if depth <= 0.0:
        return 0.0
    return min(1.0, 1.9 * FILL / max(width / (depth * t * RENDER_PX[0] / RENDER_PX[1]), 1e-12))


def _above(view: OrbitView, tip_and_target, drop: float, size: Tuple[float, float],
           body: Optional[np.ndarray]) -> Tuple[np.ndarray, float, Optional[np.ndarray]]:
    """``(anchor, offset, shift)`` of labels ``size`` = (width, height) [m] that fit neither
    below nor beside the tip: stacked upwards from ``drop`` above the one of the tip and its
    target (``tip_and_target``, the target None when there is none) higher on the screen
    (beyond the ends of the target's handles), when their top is in the view and no point of
    ``body`` is behind them on the screen; ``(that point, 0, None)`` when not."""
    points = [np.asarray(p, dtype=float) for p in tip_and_target if p is not None]
    top = points[int(np.argmax(view.project(np.array(points))[:, 1]))].copy()
    _, right, up = view.basis()
    width, height = size
    if view.project(top + (drop + height) * up)[0, 1] > FILL:
        return top, 0.0, None
    if body is not None and len(body):
        corners = view.project(np.array([top + sx * 0.5 * width * right + sy * up
                                         for sx in (-1.0, 1.0) for sy in (drop, drop + height)]))
        low, high = corners.min(axis=0), corners.max(axis=0)
        if np.any(np.all((view.project(body) >= low) & (view.project(body) <= high), axis=1)):
            return top, 0.0, None
    return top, -(drop + height), np.zeros(3)


def _beside(view: OrbitView, anchor: np.ndarray, drop: float, width: float,
            total: float) -> Tuple[float, Optional[np.ndarray]]:
    """``(offset, shift)`` of labels ``width`` x ``total`` [m] that do not fit below the tip:
    beside it, ``drop`` to the side of ``anchor``, towards the middle of the view or else the
    other way, on the first side where all of their width is in the view (centred on the
    anchor's height); ``(0, None)`` where neither side has room."""
    _, right, _ = view.basis()
    for side in ((1.0, -1.0) if view.project(anchor)[0, 0] < 0.0 else (-1.0, 1.0)):
        shift = side * (drop + 0.5 * width) * right
        if abs(view.project(anchor + shift + side * 0.5 * width * right)[0, 0]) <= FILL:
            return -0.5 * total, shift
    return 0.0, None


#: Labels in a corner of the view stand this share of the way from the camera to its focal
#: point: at the robot's depth, where a camera moved a little from the view shows them near
#: the same place on the screen (near the camera they would swing out of it)...
CORNER_DEPTH_SHARE = 1.0
#: and this much smaller than beside the tip (about 17 px high in quad12's view: legible).
CORNER_SCALE = 0.8


def _in_front(view: OrbitView, m: Marker, at: np.ndarray, pull: float) -> np.ndarray:
    """``at`` moved ``pull`` [m] towards the camera along its line of sight (at most half of
    the way), ``m``'s text made smaller by the same ratio: the same place and size on the
    screen, in front of the links near it (RViz hides text behind a mesh)."""
    eye = view.eye()
    forward, _, _ = view.basis()
    depth = float((np.asarray(at, dtype=float) - eye) @ forward)
    if depth <= 0.0:
        return at
    ratio = max(0.5, (depth - pull) / depth)
    m.scale.x = m.scale.y = m.scale.z = m.scale.z * ratio
    return eye + ratio * (np.asarray(at, dtype=float) - eye)


#: Labels stand this share of the robot's reach nearer the camera than where they are drawn
#: on the screen (:func:`_in_front`): in front of the links around the tip.
IN_FRONT_SHARE = 0.3


def _in_corner(frame_id: str, stamp, blocks, view: OrbitView, side: float,
               pull: float) -> List[Marker]:
    """The label ``blocks`` as a column in the bottom left (``side`` -1) or right (+1) corner
    of ``view``, the last block at the bottom, each line :data:`CORNER_SCALE` as large on the
    screen as at the focal distance (where the view has no room for them near the tip),
    ``pull`` [m] in front of the focal point's depth (:func:`_in_front`)."""
    depth = CORNER_DEPTH_SHARE * view.distance
    shrink = CORNER_SCALE * depth / view.distance
    t = math.tan(FIELD_OF_VIEW / 2)
    to_x, to_y = 1.0 / (depth * t * RENDER_PX[0] / RENDER_PX[1]), 1.0 / (depth * t)
    bottom, out = -FILL, []
    for text, mid, rgba, height, block in reversed(blocks):
        if not text:
            out.append(deleted(frame_id, stamp, mid))
            continue
        m = new_marker(frame_id, stamp, mid, Marker.TEXT_VIEW_FACING, rgba)
        m.text = '\n'.join(text)
        m.scale.x = m.scale.y = m.scale.z = height * shrink
        half_x = 0.5 * text_width(m.text, height * shrink) * to_x
        y = bottom + 0.5 * block * shrink * to_y
        bottom += block * shrink * to_y
        place(m, _in_front(view, m, on_screen(view, side * (FILL - half_x), y, depth), pull))
        out.append(m)
    return out[::-1]


def _anchor(p_tip: np.ndarray, p_target: Optional[np.ndarray],
            view: Optional[OrbitView]) -> Tuple[np.ndarray, np.ndarray]:
    """Where a tip's labels hang from and the unit vector "down" [m]: with a view, the one of
    the tip and its target lower on the screen and the camera's down; without, the tip's x, y
    at the lower of the two heights and -z."""
    points = [np.asarray(p_tip, dtype=float)] + \
        ([] if p_target is None else [np.asarray(p_target, dtype=float)])
    if view is None:
        low = min(float(p[2]) for p in points)
        return np.array([points[0][0], points[0][1], low]), np.array([0.0, 0.0, -1.0])
    screen_y = view.project(np.array(points))[:, 1]
    _, _, up = view.basis()
    return points[int(np.argmin(screen_y))].copy(), -up


def beyond_text(metres: float) -> str:
    """The line a miss label gets when its target is drawn at the view's edge, short of it."""
    return f'target {length_text(metres)} further on'
