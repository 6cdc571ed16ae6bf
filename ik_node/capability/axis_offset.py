"""A second proof that a pose is out of reach, for arms whose joints after the first turn about
parallel axes up to the wrist (a UR's shoulder, elbow and first wrist joint).

The wrist point (the origin of the second-last joint's child link, fixed in the tip frame where
the last joint turns about an axis through it: :class:`~ik_node.capability.decide.WristSphere`
with ``circle`` 0) is placed by the joints before the second-last. When joints 2 to n-2 turn
about parallel axes ``b``, perpendicular to the first joint's axis, no rotation about ``b``
changes a point's component along ``b`` and the links between them add fixed components: the
wrist point's component along ``b``, measured from the first joint's axis, is a constant ``c``
(the arm's lateral offset). As ``b`` is perpendicular to the first joint's axis, the wrist
point never comes nearer that axis than ``|c|``: a pose whose wrist point would is out of reach
(beyond the solver's tolerances). Checked on the chain's frames at several configurations
before it is used; None where the chain is not of this kind.
"""

from __future__ import annotations

import threading
from typing import Dict, NamedTuple, Optional, Sequence

import numpy as np

from ik_node.capability.tool import tip_targets

#: Axes closer than this to parallel (or perpendicular) count as such [rad, as a sine].
_ANGLE_EPS = 1e-9
#: The lateral offset must agree within this at every configuration checked [m].
_OFFSET_EPS = 1e-9

_cache: Dict[int, Optional['AxisOffset']] = {}
_lock = threading.Lock()


class AxisOffset(NamedTuple):
    """The first joint's axis (a point ``origin`` [m] on it and its unit ``axis``, base frame),
    the wrist point ``point`` [m] in the tip frame and the least distance ``offset`` [m] of the
    wrist point from that axis."""

    origin: np.ndarray
    axis: np.ndarray
    point: np.ndarray
    offset: float


def axis_offset(chain, wrist) -> Optional[AxisOffset]:
    """The :class:`AxisOffset` of a serial chain with its :class:`~ik_node.capability.decide.
    WristSphere` ``wrist``, or None (not of that kind: the module docstring)."""
    n = chain.n
    if wrist is None or n < 4 or wrist.circle > 1e-12 or \
            list(chain.parents) != list(range(-1, n - 1)) or \
            any(j.type not in ('revolute', 'continuous') for j in chain.joints[:n - 2]):
        return None
    low = np.where(np.isfinite(chain.lower), chain.lower, -np.pi)
    high = np.where(np.isfinite(chain.upper), chain.upper, np.pi)
    configurations = np.vstack([chain.mid_configuration()[None, :],
                                np.random.default_rng(0).uniform(low, high, size=(4, n))])
    offsets = []
    for q in configurations:
        frames = chain.joint_frames(q)
        first = frames[0, :3, :3] @ np.asarray(chain.joints[0].axis, float)
        origin = frames[0, :3, 3]
        b = frames[1, :3, :3] @ np.asarray(chain.joints[1].axis, float)
        if abs(float(first @ b)) > _ANGLE_EPS:
            return None
        for k in range(2, n - 2):
            other = frames[k, :3, :3] @ np.asarray(chain.joints[k].axis, float)
            if np.linalg.norm(np.cross(b, other)) > _ANGLE_EPS:
                return None
        offsets.append(float(b @ (frames[n - 2, :3, 3] - origin)))
    if max(offsets) - min(offsets) > _OFFSET_EPS or abs(offsets[0]) <= _OFFSET_EPS:
        return None
    return AxisOffset(origin, first / np.linalg.norm(first), np.asarray(wrist.point, float),
                      abs(offsets[0]))


def offset_of(solver) -> Optional[AxisOffset]:
    """The :class:`AxisOffset` of a solver made by :func:`ik_node.capability.decide.solver_for`
    (found once per solver), or None."""
    key = id(solver)
    with _lock:
        if key in _cache:
            return _cache[key]
    from ik_node.capability.decide import wrist_of
    bound = axis_offset(solver.chain, wrist_of(solver))
    with _lock:
        _cache[key] = bound
    return bound


def inside_axis_offset(solver, positions: np.ndarray, quats: np.ndarray,
                       tool: Sequence[float] = ()) -> np.ndarray:
    """(N,) bool: the pose targets (the tool's, with ``tool``) proven out of reach: their wrist
    point lies nearer the first joint's axis than the arm's lateral offset allows, by more than
    the solver's tolerances allow."""
    bound = offset_of(solver)
    if bound is None or not len(positions):
        return np.zeros(len(positions), bool)
    from ik_node.capability.orientations import rotations_from_quats
    p_tip, q_tip = tip_targets(positions, quats, tool)
    w = p_tip + rotations_from_quats(q_tip) @ bound.point - bound.origin
    across = w - (w @ bound.axis)[:, None] * bound.axis
    margin = solver.params['position_tolerance'] + \
        solver.params['orientation_tolerance'] * float(np.linalg.norm(bound.point)) + 1e-9
    return np.linalg.norm(across, axis=1) < bound.offset - margin
