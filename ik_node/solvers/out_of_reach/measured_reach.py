"""The measured reach of a chain's tip, which lets the closest-pose search stop after one descent.

Measured once when damped_jacobian or fabrik is built: the least and the largest
distance of the tip from a centre on the first joint's axis, its least distance from that axis,
and its largest distance from the second joint's origin (which turns about the first axis). A
target farther out than the largest (nearer than the least, nearer the axis, farther from every
place of the second joint's origin) cannot come nearer than that gap, so a descent that ends at
the gap has found the closest pose (:meth:`MeasuredReach.gap`; the search's ``'reach'`` stop).

The bone lengths prove such gaps only for chains without offsets (:mod:`reach_bound`, which
computes the last one with the summed lengths); measured, they hold for most targets beyond
the reach of an arm (the arm stretched toward the target), inside an inner hole (iiwa14) and near
a UR arm's base axis (the wrist offsets keep the tool off it). A measurement, not a proof: a pose
beyond it that no ascent or descent found would let the search accept an answer up to that much
above the closest, so ``min_residual`` never uses it. Against 100 000 random configurations
refined by a quasi-Newton method it agreed to 4e-9 m on the nine benchmark robots.

Plain floats and the math module, on the search's own Newton steps.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any, List, Optional, Protocol, Sequence, Tuple

from ik_node.solvers.numerics.budget import Budget
from ik_node.solvers.geometry.reach_bound import ReachBound


#: Random configurations sampled (fixed RNG seed: the same values every time); the extremes
#: refined; the iterations of one refinement (and the rounds toward the axis).
SAMPLES = 400
REFINED = 6
ITERATIONS = 60

Vec = Tuple[float, float, float]


class ReachSearch(Protocol):
    """What measuring the reach needs of the closest-pose search
    (:class:`~ik_node.solvers.out_of_reach.closest_pose.ClosestPose` provides it)."""

    def tip_position(self, q: Sequence[float]) -> Vec: ...

    def random_configuration(self, rng: random.Random) -> List[float]: ...

    def ascend(self, centre: Sequence[float], q: Sequence[float], max_iterations: int,
               held: Sequence[int] = ()) -> float: ...

    def descend(self, target: Sequence[float], q: Sequence[float], budget: Budget,
                max_iterations: int, tolerance: float,
                history: Optional[List[float]] = None) -> Any: ...


@dataclass(frozen=True)
class MeasuredReach:
    """The tip's measured distances [m] from a centre on the first joint's axis (unit, base
    frame): the least and the largest, and the least from the axis itself; and the bound of
    the second joint's circle with the tip's measured largest distance from that joint's origin
    (None when not measured)."""

    centre: Vec
    axis: Vec
    least: float
    largest: float
    clearance: float
    second: Optional[ReachBound] = None

    def gap(self, target: Sequence[float]) -> float:
        """How far [m] the target lies outside the measured reach: beyond the largest distance
        from the centre or from every place of the second joint's origin, inside the least, or
        nearer the axis than the tip comes. Where positive, the least error of any pose as far
        as the measurement goes."""
        distance = math.dist(target, self.centre)
        gap = max(distance - self.largest, self.least - distance,
                  self.clearance - from_axis(target, self.centre, self.axis)[0])
        if self.second is not None:
            gap = max(gap, self.second.lower_bound(target))
        return gap


def from_axis(point: Sequence[float], centre: Vec, axis: Vec) -> Tuple[float, float]:
    """A point's distance [m] from the line through ``centre`` along ``axis``, and its height
    [m] along it from the centre."""
    (cx, cy, cz), (ax, ay, az) = centre, axis
    dx, dy, dz = point[0] - cx, point[1] - cy, point[2] - cz
    height = dx * ax + dy * ay + dz * az
    return math.sqrt(max(dx * dx + dy * dy + dz * dz - height * height, 0.0)), height


def measure_reach(search: 'ReachSearch', bound: ReachBound) -> MeasuredReach:
    """The chain's :class:`MeasuredReach` about the centre and axis of its proven ``bound``, by
    the Newton steps of ``search`` (the chain's closest-pose search).

    The largest distance: ascents from the farthest of ``SAMPLES`` random configurations; the
    least: descents toward the centre from the nearest; the least from the axis: descents
    toward the axis point level with the tip, round by round until a round gains nothing, from
    the configurations nearest the axis; the largest from the second joint's origin: ascents
    with the first joint held at 0 (where that origin is ``bound.second``; skipped when 0 is
    outside the first joint's limits).
    """
    centre, axis = bound.centre, bound.axis
    rng = random.Random(0)
    by_distance: List[Tuple[float, List[float]]] = []
    by_clearance: List[Tuple[float, List[float]]] = []
    for _ in range(SAMPLES):
        q = search.random_configuration(rng)
        tip = search.tip_position(q)
        by_distance.append((math.dist(tip, centre), q))
        by_clearance.append((from_axis(tip, centre, axis)[0], q))
    by_distance.sort(key=lambda c: c[0])
    by_clearance.sort(key=lambda c: c[0])
    least, largest, clearance = by_distance[0][0], by_distance[-1][0], by_clearance[0][0]
    unlimited = Budget(math.inf)
    for k in range(min(REFINED, SAMPLES)):
        largest = max(largest, search.ascend(centre, by_distance[-1 - k][1], ITERATIONS))
        least = min(least, search.descend(centre, by_distance[k][1], unlimited, ITERATIONS,
                                          0.0).error)
        clearance = min(clearance, _nearest_axis(search, centre, axis, by_clearance[k][1],
                                                 unlimited))
    second = None
    low, high = bound.limits
    if low <= 0.0 <= high:
        origin = bound.second
        samples = []
        for _ in range(SAMPLES):
            q = search.random_configuration(rng)
            q[0] = 0.0
            samples.append((math.dist(search.tip_position(q), origin), q))
        samples.sort(key=lambda c: c[0])
        farthest = samples[-1][0]
        for k in range(min(REFINED, SAMPLES)):
            farthest = max(farthest, search.ascend(origin, samples[-1 - k][1], ITERATIONS,
                                                   held=(0,)))
        second = bound.with_second_reach(farthest)
    return MeasuredReach(centre, axis, least, largest, clearance, second)


def _nearest_axis(search: 'ReachSearch', centre: Vec, axis: Vec, q: List[float],
                  budget: Budget) -> float:
    """The tip's least distance [m] from the axis found from ``q``: descents toward the axis
    point level with the tip, until a round gains nothing (each round's start is nearer the
    axis than its end, so the distance never rises)."""
    best, height = from_axis(search.tip_position(q), centre, axis)
    for _ in range(ITERATIONS):
        level = tuple(c + height * a for c, a in zip(centre, axis))
        q = search.descend(level, q, budget, ITERATIONS, 0.0).q
        now, height = from_axis(search.tip_position(q), centre, axis)
        if now >= best - 1e-12:
            return min(best, now)
        best = now
    return best
