"""A proven lower bound of a position target's distance from what a chain's tip can reach.

Used by the iterative solvers as ``min_residual`` (proven, never above the true closest
distance) and by the closest-pose search to stop once its best error meets the bound.
"""

from __future__ import annotations

import math
import sys
from typing import Optional, Sequence, Tuple

from ik_node.solvers.geometry.planar_core import clamp_on_circle

_TWO_PI = 2.0 * math.pi


class ReachBound:
    """A proven lower bound of the tip's distance to a target, for a chain of revolute joints.

    Bone lengths (between consecutive joint origins, and from the last to the tip) do not change
    with ``q``, so the tip stays within ``R_k`` (the summed lengths from joint ``k`` on) of joint
    ``k``'s origin ``o_k``. With ``k = 1`` (``o_1`` fixed): ``error >= |t - o_1| - R_1``. With
    ``k = 2``: ``o_2`` turns about the first joint's axis, on an arc that the first joint's limits
    cut; ``error >= min over the arc |t - o_2| - R_2``, which is never below the first bound (the
    triangle inequality) and is exact for a leg whose hip pitch lies on its yaw axis.
    """

    def __init__(self, origin: Sequence[float], reach: float, axis: Sequence[float],
                 second: Sequence[float], reach_second: float, limits: Tuple[float, float],
                 full_turn: bool):
        self.origin, self.reach = tuple(origin), reach
        ax, ay, az = axis
        ox, oy, oz = origin
        vx, vy, vz = second[0] - ox, second[1] - oy, second[2] - oz
        self._axis = (ax, ay, az)
        self._height = h = vx * ax + vy * ay + vz * az
        self._perp = (vx - h * ax, vy - h * ay, vz - h * az)
        self._radius = math.sqrt(sum(c * c for c in self._perp))
        self._second, self._reach_second = tuple(second), reach_second
        self._limits, self._full_turn = limits, full_turn

    @property
    def centre(self) -> Tuple[float, float, float]:
        """The point of the first joint's axis level with the second joint's origin: the
        centre of the circle that origin turns on [m]."""
        (ox, oy, oz), (ax, ay, az), h = self.origin, self._axis, self._height
        return (ox + h * ax, oy + h * ay, oz + h * az)

    @property
    def axis(self) -> Tuple[float, float, float]:
        """The first joint's axis (unit, base frame)."""
        return self._axis

    @property
    def limits(self) -> Tuple[float, float]:
        """The first joint's limits [rad]."""
        return self._limits

    @property
    def second(self) -> Tuple[float, float, float]:
        """The second joint's origin at q = 0 (base frame) [m]."""
        return self._second

    def with_second_reach(self, reach_second: float) -> 'ReachBound':
        """The second bound alone (the first never binds), with ``reach_second`` [m] in place of
        the summed bone lengths from the second joint (a measured reach: see
        :mod:`ik_node.solvers.out_of_reach.measured_reach`)."""
        return ReachBound(self.origin, math.inf, self._axis, self._second, reach_second,
                          self._limits, self._full_turn)

    def lower_bound(self, target: Sequence[float]) -> float:
        """The bound [m] (may be negative: nothing proven)."""
        ox, oy, oz = self.origin
        dx, dy, dz = target[0] - ox, target[1] - oy, target[2] - oz
        first = math.sqrt(dx * dx + dy * dy + dz * dz) - self.reach
        ax, ay, az = self._axis
        along = dx * ax + dy * ay + dz * az
        px, py, pz = dx - along * ax, dy - along * ay, dz - along * az
        distance_perp = math.sqrt(px * px + py * py + pz * pz)
        rho = self._radius
        if rho <= 1e-12 or distance_perp <= 1e-12:  # o_2 on the axis, or the target is
            cos_gap = 1.0 if rho <= 1e-12 else 0.0  # (every point of the arc equally far)
        else:
            vx, vy, vz = self._perp
            phi = math.atan2(ax * (vy * pz - vz * py) + ay * (vz * px - vx * pz) +
                             az * (vx * py - vy * px), vx * px + vy * py + vz * pz)
            if self._full_turn:
                cos_gap = 1.0
            else:
                lo, hi = self._limits
                cos_gap = math.cos(clamp_on_circle(phi, phi, lo, hi) - phi)
        terms = ((along - self._height) ** 2 + rho * rho + distance_perp * distance_perp,
                 2.0 * rho * distance_perp * cos_gap)
        # The law of cosines cancels: a target on the reach's boundary leaves round-off of
        # about eps * terms in ``square`` and its square root in the bound, 1e-8 m. The bound
        # stays proven by taking a generous round-off off before the root.
        square = terms[0] - terms[1] - 64.0 * sys.float_info.epsilon * (terms[0] + abs(terms[1]))
        second = math.sqrt(max(square, 0.0)) - self._reach_second
        return max(first, second)


def reach_bound(chain, tip: Optional[str] = None) -> Optional[ReachBound]:
    """The :class:`ReachBound` of a chain's tip, or None when a joint on its path is prismatic
    (bones then change length) or it has no moving joint."""
    import numpy as np  # set-up only

    from ik_node.model.chain import chain_lengths
    idx = chain.joints_of_tip(tip) if chain.n else []
    if not idx or any(chain.joints[i].is_prismatic for i in idx):
        return None
    frames = chain.joint_frames(np.zeros(chain.n))
    lengths = list(chain_lengths(chain, tip))
    first = idx[0]
    origin = frames[first, :3, 3].tolist()
    axis = (frames[first, :3, :3] @ chain.joints[first].axis).tolist()
    if len(idx) > 1:
        second = frames[idx[1], :3, 3].tolist()
    else:  # one joint: the "second origin" is the tip itself
        second = chain.fk(np.zeros(chain.n), tip)[:3, 3].tolist()
    lo, hi = float(chain.lower[first]), float(chain.upper[first])
    full_turn = not (math.isfinite(lo) and math.isfinite(hi)) or hi - lo >= _TWO_PI
    return ReachBound(origin, float(sum(lengths)), axis, second, float(sum(lengths[1:])),
                      (lo, hi), full_turn)
