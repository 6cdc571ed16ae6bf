"""The honest measure of a solver's answer: what :meth:`Solver.solve
<ik_node.solvers.base.Solver.solve>` does to the joints a solver returns before it reports them.

The joints are clipped into the limits (a NaN resets them to the mid configuration, said in the
status and message), every joint that can take an angle at two values within its limits is
turned nearest the seed, the errors are measured by forward kinematics on exactly those joints
(or taken from a compiled kernel's FK at exactly those joints, ``RawSolution.measured``), and
``reachable`` and the status follow from those measured errors, never from the solver's own
belief; a chain whose joints all turn about parallel axes adds the bound its plane proves.
:class:`MeasuredAnswer` is a base of :class:`~ik_node.solvers.base.Solver`, whose construction
sets what it reads (the limits, the full-turn joints, the generated kinematics, the plane, the
tolerances).
"""

from __future__ import annotations

import math
from typing import List, Optional, Tuple

import numpy as np

from ik_node.model.chain import nearest_turns
from ik_node.solvers.input_checks import FLOAT64, clip_values, rotation_error
from ik_node.solvers.results import IkResult, IkStatus, RawSolution, honest_status, new_result

# The statuses _measured reads on every solve, once: an Enum class attribute costs about ten
# times a module global.
_CONVERGED, _DEGENERATE, _MAX_ITERATIONS = (IkStatus.CONVERGED, IkStatus.DEGENERATE,
                                            IkStatus.MAX_ITERATIONS)
_PI = math.pi


class MeasuredAnswer:
    """The measure of an answer (a base of :class:`~ik_node.solvers.base.Solver`)."""

    def _plane_bound(self, p_target, min_residual: Optional[float], reach=None
                     ) -> Optional[float]:
        """``min_residual`` raised, on a chain whose joints all turn about parallel axes, to
        what the plane proves: the tip never leaves its plane, so the error's square is the
        target's squared distance off the plane plus the squared distance in the plane, and the
        latter is at least ``reach``'s bound (a
        :class:`~ik_node.solvers.geometry.reach_bound.ReachBound`; None: 0) of the target's
        foot point in the plane."""
        (nx, ny, nz), offset = self._plane
        tx, ty, tz = (float(v) for v in p_target)
        off = nx * tx + ny * ty + nz * tz - offset
        in_plane = 0.0
        if reach is not None:
            in_plane = max(0.0, reach.lower_bound((tx - off * nx, ty - off * ny,
                                                   tz - off * nz)))
        bound = math.hypot(off, in_plane)
        if bound > 0.0 and (min_residual is None or bound > min_residual):
            return bound
        return min_residual

    def _finish(self, raw: RawSolution, p_target: List[float], R_target: Optional[np.ndarray],
                elapsed: float, orientation_ignored: bool, q_seed: List[float]) -> IkResult:
        """The result of ``raw``: joints clipped into the limits and turned nearest the seed,
        then every error measured by FK on exactly those joints (:meth:`_measured`)."""
        q_list, reached, status, pos_err, rot_err, min_residual = self._measured(
            raw, p_target, R_target, q_seed)
        history = raw.history
        return new_result(
            joint_positions=np.array(q_list, FLOAT64), joint_names=self._joint_names,
            reachable=reached, status=status, position_error=pos_err, orientation_error=rot_err,
            min_residual=min_residual, iterations=int(raw.iterations), solve_time=elapsed,
            message=raw.message, orientation_ignored=orientation_ignored,
            history=None if history is None else tuple(float(e) for e in history), tips=None,
            best_found=not reached and not raw.vouched)

    def _measured(self, raw: RawSolution, p_target: List[float], R_target: Optional[np.ndarray],
                  q_seed: List[float]) -> Tuple[List[float], bool, IkStatus, float,
                                                Optional[float], Optional[float]]:
        """``(q_list, reached, status, position_error, orientation_error, min_residual)`` of
        ``raw``: its joints clipped into the limits and turned nearest ``q_seed`` (a list), then
        the errors measured by FK on exactly those joints, and the status they allow. A NaN
        from the solver resets the joints to the mid configuration and says so in
        ``raw.status`` and ``raw.message``.

        Plain floats throughout: for 2-7 joints each small numpy operation would cost about as
        much as the whole float computation (this runs after every solve, and after every leg of
        :class:`~ik_node.solvers.trees.legs.Legs`).
        """
        tol_p = self._tol_p
        q_raw = raw.q
        if type(q_raw) is not list:
            if type(q_raw) is np.ndarray and q_raw.dtype is FLOAT64:
                q_raw = q_raw.tolist()
            else:
                q_raw = np.asarray(q_raw, dtype=float).reshape(-1).tolist()
        q_list = clip_values(q_raw, self._lower_list, self._upper_list)
        # A solver bug never gets out (a NaN, or an inf within an infinite limit).
        if q_list is None or (not self._bounded and not math.isfinite(sum(q_list))):
            q_list = self._q_mid.tolist()
            raw.status, raw.message = IkStatus.MAX_ITERATIONS, 'solver produced NaN; reset'
        for i in self._turn_joints:  # nearest_turns where a joint is not nearest its seed
            if not -_PI <= q_seed[i] - q_list[i] <= _PI:
                q_list = nearest_turns(q_list, q_seed, self._lower_list, self._upper_list,
                                       self._turn_joints)
                break
        fast = self._fast_kinematics
        R = None
        measured = raw.measured
        if measured is not None and q_list is q_raw and (measured[1] is None) == (
                R_target is None):  # the solver's FK at exactly these joints
            pos_err, rot_err = measured
            p = None
        elif fast is None:
            T = self.chain.fk(np.array(q_list, FLOAT64))
            p = T[:3, 3].tolist()
            R = T[:3, :3].tolist()
        elif R_target is None:  # serial chain, position only: the tip position in floats
            p = fast.position(q_list)
        else:  # serial chain: FK in floats, no 4x4 array
            p, R_flat = fast.pose(q_list)
            R = [R_flat[0:3], R_flat[3:6], R_flat[6:9]]
        tx, ty, tz = p_target
        if p is not None:
            px, py, pz = p
            dx, dy, dz = px - tx, py - ty, pz - tz
            pos_err = math.sqrt(dx * dx + dy * dy + dz * dz)
            rot_err = None if R_target is None else rotation_error(R, R_target)
        if R_target is None:
            reached = pos_err <= tol_p
        else:
            reached = pos_err <= tol_p and rot_err <= self._tol_r
        status = raw.status
        if reached and status is not _DEGENERATE:
            status = _CONVERGED
        elif not reached and (status is _CONVERGED or status is _DEGENERATE):
            status = _MAX_ITERATIONS
        min_residual = raw.min_residual
        if not reached and self._plane is not None:
            # Every joint turns about parallel axes: the tip never leaves its plane, so the
            # target's distance from that plane is a proven bound.
            min_residual = self._plane_bound(p_target, min_residual)
        if not reached:
            status = honest_status(status, min_residual, tol_p)
        return q_list, reached, status, pos_err, rot_err, min_residual
