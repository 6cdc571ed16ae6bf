"""Damped least squares (Levenberg-Marquardt) IK, and the Jacobian-transpose teaching baseline.

``method: dls`` minimises the weighted squared error ``|p_t - p|^2 + w^2 |omega|^2`` (``omega``
is the rotation vector taking the tip orientation to the target's, in the base frame; ``w`` the
``orientation_weight``) or ``|p_t - p|^2`` for a position-only target. Each iteration solves the
damped normal equations ``(J^T J + lambda I) dq = J^T e`` and tries ``q + dq`` clipped into the
joint limits: a step that lowers the error is accepted and ``lambda`` shrinks, a step that does not
is rejected and ``lambda`` grows (adaptive damping as in KDL's ``ChainIkSolverPos_LMA``). So the
error never rises within a descent (no jitter at unreachable targets) and a singular start still
moves, because the damped system is always solvable and the full Gauss-Newton step is tried first.
A descent that stops making progress restarts from a random configuration, within ``timeout``
and ``restarts``; the best configuration over all descents is returned.

``method: transpose`` is plain gradient descent ``q <- clip(q + step_size * J^T e)``: no line
search, no restarts, stopping only at the tolerance or ``max_iterations``.
"""

from __future__ import annotations

import math
import random
import time
from typing import List, Optional, Tuple

import numpy as np

from ik_node.chain import Chain, chain_lengths
from ik_node.solvers import register
from ik_node.solvers.base import IkStatus, ParamSpec, RawSolution, Solver

# Damping never drops below this [m^2], nor grows past _LAMBDA_MAX before a descent counts as
# stuck at a local minimum (no step of any damping lowers the error).
_LAMBDA_MIN = 1e-12
_LAMBDA_MAX = 1e8
_LAMBDA_DOWN = 0.2
_LAMBDA_UP = 8.0
# A descent is stuck when its error has not halved within this many iterations.
_STALL_ITERATIONS = 12
_STALL_FACTOR = 0.5
# Converged when the errors are below this fraction of the tolerances (margin for round-off in
# the FK that base.py measures independently).
_TOLERANCE_MARGIN = 0.5


def rotation_vector_from_matrix(R: np.ndarray) -> np.ndarray:
    """Rotation vector (axis * angle [rad]) of a 3x3 rotation matrix, robust near 0 and pi."""
    s = 0.5 * np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    c = 0.5 * (R[0, 0] + R[1, 1] + R[2, 2] - 1.0)
    sin_angle = float(np.linalg.norm(s))
    angle = math.atan2(sin_angle, c)
    if sin_angle > 1e-6:
        return s * (angle / sin_angle)
    if c > 0.0:  # angle ~ 0: first-order term
        return s
    # angle ~ pi: the axis is the dominant column of (R + I) / 2 = a a^T (up to sign).
    B = 0.5 * (R + np.eye(3))
    k = int(np.argmax(np.diag(B)))
    axis = B[:, k] / math.sqrt(max(B[k, k], 1e-300))
    if float(axis @ s) < 0.0:
        axis = -axis
    return axis * angle


@register
class DampedJacobianSolver(Solver):
    """Damped least squares with adaptive damping and random restarts; or Jacobian transpose."""

    name = 'damped_jacobian'
    supports_orientation = True
    PARAMS = {
        'method': ParamSpec(str, 'dls', 'dls: damped least squares with adaptive damping and '
                            'restarts; transpose: plain gradient descent (teaching baseline)',
                            choices=('dls', 'transpose')),
        'damping': ParamSpec(float, 1e-3, 'initial damping lambda added to the diagonal of the '
                             'normal equations (dls); adapted every iteration', 'm^2',
                             min=0.0, max=1e6, min_inclusive=False),
        'step_size': ParamSpec(float, 0.5, 'gradient step eta of method transpose: '
                               'q <- q + eta * J^T e', '1/m^2', min=0.0, max=1e6,
                               min_inclusive=False),
        'timeout': ParamSpec(float, 0.005, 'wall-time budget of one dls solve, restarts '
                             'included (transpose stops only at tolerance or max_iterations)',
                             's', min=0.0, max=3600.0, min_inclusive=False),
        'restarts': ParamSpec(int, 1000, 'most random restarts of one dls solve when a descent '
                              'is stuck', '', min=0, max=1_000_000),
        'restart_seed': ParamSpec(int, 0, 'seed of the random restart configurations: the same '
                                  'seed gives the same sequence of restarts', '',
                                  min=0, max=2**32 - 1),
        'orientation_weight': ParamSpec(float, 0.5, 'weight of the orientation error against '
                                        'the position error in the dls cost', 'm/rad',
                                        min=0.0, max=1e3, min_inclusive=False),
    }

    def __init__(self, chain: Chain, params=None):
        super().__init__(chain, params)
        self._reach_bound = _reach_bound(chain)
        self._restart_low = np.where(np.isfinite(chain.lower), chain.lower, -math.pi)
        self._restart_high = np.where(np.isfinite(chain.upper), chain.upper, math.pi)

    # ------------------------------------------------------------------------------ solving
    def _solve(self, p_target: np.ndarray, R_target: Optional[np.ndarray],
               q_seed: np.ndarray) -> RawSolution:
        min_residual = self._min_residual(p_target)
        if self.params['method'] == 'transpose':
            raw = self._solve_transpose(p_target, R_target, q_seed)
        else:
            raw = self._solve_dls(p_target, R_target, q_seed, min_residual)
        raw.min_residual = min_residual
        return raw

    def _errors(self, q: np.ndarray, p_target: np.ndarray, R_target: Optional[np.ndarray]
                ) -> Tuple[np.ndarray, float, float, np.ndarray]:
        """Error vector e (3 or 6), position error [m], angle error [rad], Jacobian (rows of e)."""
        frames = self.chain.joint_frames(q)
        T = self.chain._tip_from_frames(frames, 0)
        J = self.chain.jacobian_from_frames(frames, T[:3, 3], 0)
        dp = p_target - T[:3, 3]
        pos_err = float(np.linalg.norm(dp))
        if R_target is None:
            return dp, pos_err, 0.0, J[:3]
        omega = rotation_vector_from_matrix(R_target @ T[:3, :3].T)
        return np.concatenate([dp, omega]), pos_err, float(np.linalg.norm(omega)), J

    def _reached(self, pos_err: float, rot_err: float) -> bool:
        return (pos_err <= _TOLERANCE_MARGIN * self.params['position_tolerance'] and
                rot_err <= _TOLERANCE_MARGIN * self.params['orientation_tolerance'])

    def _solve_transpose(self, p_target, R_target, q_seed) -> RawSolution:
        eta = self.params['step_size']
        history: Optional[List[float]] = [] if self.params['record_history'] else None
        q = q_seed.copy()
        iterations = 0
        while True:
            e, pos_err, rot_err, J = self._errors(q, p_target, R_target)
            if history is not None:
                history.append(pos_err)
            if self._reached(pos_err, rot_err):
                return RawSolution(q, IkStatus.CONVERGED, iterations, history=history)
            if iterations >= self.params['max_iterations']:
                return RawSolution(q, IkStatus.MAX_ITERATIONS, iterations, history=history,
                                   message=f'transpose: {iterations} iterations with step size '
                                           f'{eta:g}')
            q = self.chain.clip(q + eta * (J.T @ e))
            iterations += 1

    def _solve_dls(self, p_target, R_target, q_seed, min_residual) -> RawSolution:
        params = self.params
        deadline = time.perf_counter() + params['timeout']
        max_iterations = params['max_iterations']
        history: Optional[List[float]] = [] if params['record_history'] else None
        weights = None
        if R_target is not None:
            weights = np.array([1.0] * 3 + [params['orientation_weight']] * 3)
        # Position-only: no configuration can beat the proven residual bound, so a descent within
        # tolerance of it is as good as it gets.
        good_enough = None
        if min_residual is not None and R_target is None:
            good_enough = min_residual + params['position_tolerance']
        rng: Optional[random.Random] = None
        restarts = 0
        iterations = 0
        best_q, best_cost, best_pos = q_seed, math.inf, math.inf
        q = q_seed
        status, message = IkStatus.MAX_ITERATIONS, ''
        while True:
            # One descent from q.
            lam = params['damping']
            e, pos_err, rot_err, J = self._errors(q, p_target, R_target)
            if history is not None:
                history.append(pos_err)
            we = e if weights is None else e * weights
            cost = float(we @ we)
            ref_cost, ref_iteration = cost, iterations
            stuck = False
            while True:
                if cost < best_cost:
                    best_q, best_cost, best_pos = q, cost, pos_err
                if self._reached(pos_err, rot_err):
                    return RawSolution(q, IkStatus.CONVERGED, iterations, history=history,
                                       message=f'converged after {restarts} restarts')
                if good_enough is not None and pos_err <= good_enough:
                    return RawSolution(q, IkStatus.UNREACHABLE, iterations, history=history,
                                       message='out of reach: closest configuration found')
                if iterations >= max_iterations:
                    status, message = IkStatus.MAX_ITERATIONS, \
                        f'{iterations} iterations, {restarts} restarts'
                    break
                if time.perf_counter() > deadline:
                    status, message = IkStatus.TIMEOUT, \
                        f'timeout {params["timeout"]:g} s after {restarts} restarts'
                    break
                iterations += 1
                Jw = J if weights is None else J * weights[:, None]
                step = _damped_step(Jw, we, lam)
                q_new = self.chain.clip(q + step)
                e_new, pos_new, rot_new, J_new = self._errors(q_new, p_target, R_target)
                we_new = e_new if weights is None else e_new * weights
                cost_new = float(we_new @ we_new)
                if cost_new < cost:
                    q, e, pos_err, rot_err, J, we, cost = \
                        q_new, e_new, pos_new, rot_new, J_new, we_new, cost_new
                    lam = max(lam * _LAMBDA_DOWN, _LAMBDA_MIN)
                else:
                    lam *= _LAMBDA_UP
                if history is not None:
                    history.append(pos_err)
                if lam > _LAMBDA_MAX:
                    stuck = True
                    break
                if iterations - ref_iteration >= _STALL_ITERATIONS:
                    if cost > _STALL_FACTOR * ref_cost:
                        stuck = True
                        break
                    ref_cost, ref_iteration = cost, iterations
            if not stuck:
                break
            if restarts >= params['restarts']:
                status, message = IkStatus.MAX_ITERATIONS, \
                    f'stuck after {restarts} restarts (the restarts limit)'
                break
            restarts += 1
            if rng is None:
                rng = random.Random(params['restart_seed'])
            q = np.array([rng.uniform(lo, hi) for lo, hi in
                          zip(self._restart_low, self._restart_high, strict=True)])
        del best_pos
        return RawSolution(best_q, status, iterations, history=history, message=message)

    def _min_residual(self, p_target: np.ndarray) -> Optional[float]:
        """A proven lower bound on the position error [m] when positive, else None."""
        if self._reach_bound is None:
            return None
        origin, reach = self._reach_bound
        gap = float(np.linalg.norm(p_target - origin)) - reach
        return gap if gap > 0.0 else None


def _damped_step(J: np.ndarray, e: np.ndarray, lam: float) -> np.ndarray:
    """``(J^T J + lam I)^-1 J^T e``, solved in the smaller of the two equivalent systems."""
    m, n = J.shape
    if n <= m:
        A = J.T @ J
        A[np.diag_indices(n)] += lam
        return np.linalg.solve(A, J.T @ e)
    A = J @ J.T
    A[np.diag_indices(m)] += lam
    return J.T @ np.linalg.solve(A, e)


def _reach_bound(chain: Chain) -> Optional[Tuple[np.ndarray, float]]:
    """(origin of the first joint, reach) for all-revolute chains, whose tip stays within
    ``reach`` of the first joint's origin; None when joints are prismatic."""
    if chain.n == 0 or any(j.is_prismatic for j in chain.joints):
        return None
    idx = chain.joints_of_tip()
    if not idx:
        return None
    origin = chain.joint_frames(np.zeros(chain.n))[idx[0], :3, 3]
    return origin, float(sum(chain_lengths(chain)))
