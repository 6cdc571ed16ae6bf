"""Straight-line Cartesian paths through waypoints, as MoveIt's ``GetCartesianPath`` means them.

From the start state's tip pose the tip moves in straight lines (position linear, orientation
by slerp) through each waypoint, in steps of at most ``max_step`` [m] of translation (at least
:data:`MIN_STEPS` per segment while a relative jump threshold is set, as MoveIt does). Each
point is solved seeded by the previous point's answer; the path stops before the first point
that has no ``SUCCESS`` answer (out of reach, in collision with ``avoid_collisions``,
violating the path constraints) or whose step moves a joint more than the thresholds allow:

* ``revolute_jump_threshold`` / ``prismatic_jump_threshold`` [rad / m]: the most any revolute /
  prismatic joint may move between two points (0: not checked);
* ``jump_threshold`` (relative): the path is cut at the first step whose joint-space distance
  (sum of the joints' moves) exceeds ``jump_threshold`` times the mean step (0: not checked).

``fraction`` is MoveIt's: each waypoint's segment counts ``1 / len(waypoints)``, a segment cut
short counts the share of its steps kept. Points are timed by the URDF's velocity limits: a step
takes as long as its slowest joint needs at ``velocity_scaling`` of its limit (and at least what
``max_cartesian_speed`` allows the tip); each point's velocities are the central differences of
its two steps (0 at the ends).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np

#: Fewest steps per segment while the relative jump threshold is set (MoveIt's value).
MIN_STEPS = 10
#: Most points of one path (a tiny max_step over a long path is refused beyond this).
MAX_POINTS = 100_000


@dataclass(frozen=True)
class PathSettings:
    """How a path is cut into points, checked and timed.

    Attributes:
        max_step: most translation between two points [m] (> 0).
        jump_threshold: relative jump threshold (0: off).
        revolute_jump_threshold: most move of a revolute joint per step [rad] (0: off).
        prismatic_jump_threshold: most move of a prismatic joint per step [m] (0: off).
        velocity_scaling: share of the URDF velocity limits the points are timed with, (0, 1].
        max_cartesian_speed: most tip speed [m/s] (0: not limited).
    """

    max_step: float
    jump_threshold: float = 0.0
    revolute_jump_threshold: float = 0.0
    prismatic_jump_threshold: float = 0.0
    velocity_scaling: float = 1.0
    max_cartesian_speed: float = 0.0


@dataclass(frozen=True)
class CartesianPath:
    """A computed path: ``points`` (joint positions, the start first), ``times`` [s] from the
    start, ``fraction`` of the requested path achieved, and why it stopped ('' : complete)."""

    points: List[np.ndarray]
    times: List[float]
    fraction: float
    stopped: str


#: ``solve(position, quat_xyzw, q_seed) -> (q or None, why)``: one point's answer.
PointSolve = Callable[[np.ndarray, np.ndarray, np.ndarray], Tuple[Optional[np.ndarray], str]]


def segment_poses(start: Tuple[np.ndarray, np.ndarray], goal: Tuple[np.ndarray, np.ndarray],
                  settings: PathSettings) -> List[Tuple[np.ndarray, np.ndarray]]:
    """The poses (position, quat_xyzw) of one straight segment after ``start``, ``goal`` last."""
    p0, q0 = start
    p1, q1 = goal
    distance = float(np.linalg.norm(p1 - p0))
    steps = int(math.floor(distance / settings.max_step)) + 1
    if settings.jump_threshold > 0.0:
        steps = max(steps, MIN_STEPS)
    return [(p0 + (p1 - p0) * (k / steps), slerp_xyzw(q0, q1, k / steps))
            for k in range(1, steps + 1)]


def slerp_xyzw(q0: np.ndarray, q1: np.ndarray, t: float) -> np.ndarray:
    """Spherical interpolation of unit quaternions (x, y, z, w) along the shorter arc."""
    q0, q1 = np.asarray(q0, dtype=float), np.asarray(q1, dtype=float)
    dot = float(np.dot(q0, q1))
    if dot < 0.0:
        q1, dot = -q1, -dot
    if dot > 0.9995:
        q = q0 + t * (q1 - q0)
        return q / np.linalg.norm(q)
    theta = math.acos(min(1.0, dot))
    return (math.sin((1 - t) * theta) * q0 + math.sin(t * theta) * q1) / math.sin(theta)


def compute_path(solve: PointSolve, q_start: np.ndarray, start: Tuple[np.ndarray, np.ndarray],
                 waypoints: Sequence[Tuple[np.ndarray, np.ndarray]], settings: PathSettings,
                 prismatic: Sequence[bool]) -> Tuple[List[np.ndarray], float, str]:
    """The points of the path and its fraction (before timing).

    Args:
        solve: one point's IK answer (SUCCESS only), seeded by the previous point.
        q_start: the start state's joint positions.
        start: the tip's pose at ``q_start`` (position, quat_xyzw) in the base frame.
        waypoints: the poses to pass through, in the base frame.
        settings: steps and thresholds.
        prismatic: per joint, True for a prismatic joint.
    """
    points = [np.asarray(q_start, dtype=float)]
    fraction, stopped = 0.0, ''
    previous = start
    n_waypoints = len(waypoints)
    for index, waypoint in enumerate(waypoints):
        poses = segment_poses(previous, waypoint, settings)
        if len(points) + len(poses) > MAX_POINTS:
            stopped = f'more than {MAX_POINTS} points: max_step {settings.max_step:g} m is too ' \
                      'small for this path'
            break
        done = 0
        for position, quat in poses:
            q, why = solve(position, quat, points[-1])
            if q is None:
                stopped = f'waypoint {index}, step {done + 1}/{len(poses)}: {why}'
                break
            jump = _absolute_jump(points[-1], q, settings, prismatic)
            if jump:
                stopped = f'waypoint {index}, step {done + 1}/{len(poses)}: {jump}'
                break
            points.append(q)
            done += 1
        fraction += done / len(poses) / n_waypoints
        if stopped:
            break
        previous = waypoint
    if settings.jump_threshold > 0.0 and len(points) > 2:
        kept = _relative_cut(points, settings.jump_threshold)
        if kept < len(points):
            fraction *= (kept - 1) / (len(points) - 1)
            stopped = stopped or (f'step {kept} moves the joints more than jump_threshold '
                                  f'{settings.jump_threshold:g} x the mean step')
            points = points[:kept]
    return points, (1.0 if not stopped else min(fraction, 1.0)), stopped


def _absolute_jump(q0: np.ndarray, q1: np.ndarray, settings: PathSettings,
                   prismatic: Sequence[bool]) -> str:
    for k, (a, b) in enumerate(zip(q0, q1)):
        limit = settings.prismatic_jump_threshold if prismatic[k] else \
            settings.revolute_jump_threshold
        if limit > 0.0 and abs(b - a) > limit:
            return f'joint {k} moves {abs(b - a):.4g} in one step (threshold {limit:g})'
    return ''


def _relative_cut(points: List[np.ndarray], factor: float) -> int:
    """How many points are kept: up to the first step over ``factor`` x the mean step."""
    steps = [float(np.sum(np.abs(b - a))) for a, b in zip(points[:-1], points[1:])]
    threshold = factor * (sum(steps) / len(steps))
    for k, step in enumerate(steps):
        if step > threshold:
            return k + 1
    return len(points)


def timed(points: Sequence[np.ndarray], velocity: Sequence[float], settings: PathSettings,
          tip_positions: Optional[Sequence[np.ndarray]] = None) -> List[float]:
    """``time_from_start`` [s] of each point: every step as long as its slowest joint needs at
    ``velocity_scaling`` x its velocity limit (``velocity``, inf: none), and as the tip's
    ``max_cartesian_speed`` needs; the start at 0."""
    scaling = settings.velocity_scaling if 0.0 < settings.velocity_scaling <= 1.0 else 1.0
    limits = np.asarray(velocity, dtype=float) * scaling
    times = [0.0]
    for k in range(1, len(points)):
        moves = np.abs(np.asarray(points[k]) - np.asarray(points[k - 1]))
        with np.errstate(divide='ignore', invalid='ignore'):
            needs = np.where(np.isfinite(limits) & (limits > 0), moves / limits, 0.0)
        dt = float(np.max(needs)) if needs.size else 0.0
        if settings.max_cartesian_speed > 0.0 and tip_positions is not None:
            dt = max(dt, float(np.linalg.norm(tip_positions[k] - tip_positions[k - 1])) /
                     settings.max_cartesian_speed)
        times.append(times[-1] + max(dt, 1e-6))
    return times



def velocities(points: Sequence[np.ndarray], times: Sequence[float]) -> List[np.ndarray]:
    """Each point's joint velocities [rad/s, m/s]: 0 at the start and the end, between them
    the mean of the two steps' velocities weighted by their durations (the central difference
    over the two steps), so none is faster than the faster of the two steps (within the
    limits the points were :func:`timed` by)."""
    q = [np.asarray(p, dtype=float) for p in points]
    out = [np.zeros_like(q[0])] if q else []
    for k in range(1, len(q) - 1):
        out.append((q[k + 1] - q[k - 1]) / (times[k + 1] - times[k - 1]))
    if len(q) > 1:
        out.append(np.zeros_like(q[-1]))
    return out
