"""The exact closest pose of a leg, for the iterative solvers.

A chain that fits the analytic leg geometry (:mod:`ik_node.solvers.hip_knee.geometry`: a
first joint, then hip pitch and knee about parallel axes; or a planar 2-link chain) has its
closest pose within the limits in closed form (:class:`~ik_node.solvers.hip_knee.solver.
HipKneeSolver`: the nearest point of the foot's reach, or the exact nearest pose over the limit
boundary). ``damped_jacobian`` and ``fabrik`` hand such a chain's closest-pose search to it, so
a leg gets that pose whatever solver is configured, load or not: it costs tens of microseconds
and no restart. :meth:`ExactLeg.out_of_reach` tells, in a few float operations, a target
outside the set the foot reaches (joint limits aside): ``damped_jacobian`` sends it to the
closed form before any descent.
"""

from __future__ import annotations

import math
from typing import List, Optional

from ik_node.errors import ChainError
from ik_node.model.chain import Chain
from ik_node.solvers.geometry.planar_core import DEGENERATE_DISTANCE_M, TIE_M, annulus_distance
from ik_node.solvers.geometry.reach_set import nearest_reach_point, reach_lower_bound
from ik_node.solvers.hip_knee.solver import HipKneeSolver
from ik_node.solvers.results import IkStatus, RawSolution

_REACHED = (IkStatus.CONVERGED, IkStatus.DEGENERATE)


class ExactLeg:
    """The closed-form closest pose of one leg chain (see the module docstring)."""

    def __init__(self, chain: Chain):
        self._solver = solver = HipKneeSolver(chain, {'branch': 'closest'})
        g = solver._geometry
        core = g.core
        self._rows = solver._rows
        self._planar = g.n == 2
        self._h, self._d = g.lateral, g.axis_offset
        self._r_inner, self._r_outer = core.r_inner, core.r_outer

    @classmethod
    def of(cls, chain: Chain) -> Optional['ExactLeg']:
        """The chain's :class:`ExactLeg`, or None when it does not fit the leg geometry."""
        if len(chain.tip_links) != 1 or chain.n not in (2, 3):
            return None
        try:
            return cls(chain)
        except ChainError:
            return None

    def reach_gap(self, p_target: List[float]) -> float:
        """The target's distance [m] from the set the foot reaches, joint limits aside: exact
        for a planar chain and a leg with at most one of the offsets ``h``, ``D``, a proven lower
        bound with both (:mod:`ik_node.solvers.geometry.reach_set`); 0.0 within the set."""
        px, py, pz = p_target
        ax, ay, az, ak, bx, by, bz, bk, cx, cy, cz, ck = self._rows
        x = px * ax + py * ay + pz * az - ak
        e1 = px * bx + py * by + pz * bz - bk
        e2 = px * cx + py * cy + pz * cz - ck
        r_inner, r_outer = self._r_inner, self._r_outer
        if self._planar:  # (x, e1) in the plane, e2 off it
            return math.hypot(annulus_distance(math.hypot(x, e1), r_inner, r_outer), e2)
        rho = math.hypot(e1, e2)
        h, d = self._h, self._d
        if not h and not d:
            return annulus_distance(math.hypot(x, rho), r_inner, r_outer)
        nearest = nearest_reach_point(x, rho, h, d, r_inner, r_outer)
        if nearest is not None:
            return nearest[0]
        if rho > abs(h):  # both offsets: in reach where a plane's core target is
            m = math.sqrt((rho - abs(h)) * (rho + abs(h)))
            if min(annulus_distance(math.hypot(x, m - d), r_inner, r_outer),
                   annulus_distance(math.hypot(x, -m - d), r_inner, r_outer)) <= TIE_M:
                return 0.0
        return reach_lower_bound(x, rho, h, d, r_inner, r_outer)

    def out_of_reach(self, p_target: List[float]) -> bool:
        """Whether no pose reaches ``p_target`` [m], joint limits aside (beyond round-off):
        :meth:`reach_gap` above ``TIE_M``, and the target off the first axis (where the closed
        form keeps the seed's first joint)."""
        return self.reach_gap(p_target) > TIE_M and not self._on_axis(p_target)

    def _on_axis(self, p_target: List[float]) -> bool:
        px, py, pz = p_target
        _, _, _, _, bx, by, bz, bk, cx, cy, cz, ck = self._rows
        return not self._planar and math.hypot(px * bx + py * by + pz * bz - bk,
                                               px * cx + py * cy + pz * cz - ck) <= \
            DEGENERATE_DISTANCE_M

    def closest(self, p_target: List[float], q_seed: List[float]) -> RawSolution:
        """The closest pose to the position ``p_target`` [m] within the limits, the knee branch
        and first-joint solution nearest ``q_seed`` where several are as close: the analytic
        solver's answer, status, proven bound and message (a target within reach converges),
        before the calling solver's measurement (:meth:`Solver._measured
        <ik_node.solvers.base.Solver._measured>`, the same clip into the limits and forward
        kinematics of the same chain). ``vouched`` unless the geometry leaves the pose unproven
        (a leg with both offsets)."""
        solver = self._solver
        raw = solver._solve_floats(p_target, None, solver._seed_values(q_seed))
        raw.message = f'the leg\'s closed form: {raw.message}' if raw.message else \
            'the leg\'s closed form'
        raw.vouched = raw.vouched or raw.status in _REACHED
        return raw
