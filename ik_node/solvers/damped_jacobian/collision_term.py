"""The collision term of the damped least squares: the descent goes on from an answer in
collision with the checked pairs held apart.

When a descent ends within tolerance with two links closer than the padding (or a link within
the padding of the ground or an obstacle), :class:`CollisionTerm` continues it from there, the
pairs as constraints of first priority and the target as the second:

- Each step, the checker's narrow phase gives every pair within ``REACH_M`` beyond the padding
  its signed distance ``d`` and witness points (:mod:`ik_node.collision.witness`); the gradient
  of ``d`` in joint space is ``g = n^T (J_a(p_a) - J_b(p_b))``, with ``n`` the unit normal from
  link b to link a and ``J_x(p)`` the Jacobian of the point ``p`` fixed on link x.
- The step is the damped least-squares step of the target, ``dq = J^T (J J^T + lambda I)^-1
  e`` (``lambda = |e|^2 + TARGET_DAMPING``: nearly Gauss-Newton near the target). Every pair
  that this step would bring closer than the clearance (``padding + CLEARANCE_M``; in contact
  already, or at the first order) becomes an equality constraint ``g dq = clearance - d`` (at
  most ``MAX_PUSH_M`` per step), solved first; the target is solved within their null space:
  ``dq = A+ b + N (J N)+ (e - J A+ b)``, ``N = I - A+ A`` (task priority, as a damped
  inequality constraint whose active set is the pairs the step would violate, found in up to
  three passes).
- The step is scaled to at most ``MAX_STEP_RAD`` per joint and clipped into the limits.

It stops when the target is within tolerance and the checker finds the configuration free
(the answer), after ``collision_repair_steps`` steps, when the time runs out, or when neither
the clearance shortfall nor the target error has fallen by a tenth over ``STALL_STEPS`` steps;
then the collision guard's restarts take over (:mod:`ik_node.solvers.collision_guard`).

The pushes need room beside the target: the target's error has as many dimensions as it has
(3 for a position, 6 for a pose) and the rest of the joints' motion is free. On a chain with no
more joints than that (a 6D target on a 6-joint arm) the answers are isolated points, no
continuous path keeps the target reached while the links part, and the term does not run.

numpy on small arrays: it runs only for answers in collision, never on the compiled descent's
path of an answer that is free.
"""

from __future__ import annotations

import math
import time
from typing import List, Optional, Sequence, Tuple

import numpy as np

from ik_node.solvers.damped_jacobian.residuals import rotation_vector_from_matrix
from ik_node.solvers.damped_jacobian.settings import TOLERANCE_MARGIN

#: Pairs this far [m] beyond the padding are measured each step (may become constraints).
REACH_M = 0.03
#: The constraints hold pairs this far [m] beyond the padding (a margin for the first-order
#: step: the answer must be free by the check, which counts the padding as collision).
CLEARANCE_M = 0.002
#: The most one step pushes a pair apart [m] (a deep penetration takes several steps).
MAX_PUSH_M = 0.02
#: A step moves no joint more than this [rad or m].
MAX_STEP_RAD = 0.2
#: Added to the target step's damping ``|e|^2`` [m^2]: where the constraints leave the target
#: little room, a nearly singular direction takes no large step.
TARGET_DAMPING = 1e-6
#: Damping [m^2] of the constraints' pseudo-inverse.
CONSTRAINT_DAMPING = 1e-6
#: The term gives up when neither the clearance shortfall nor the target's error has fallen
#: below 0.9 times its best over this many steps.
STALL_STEPS = 8


class CollisionTerm:
    """The repair descent of one solver's chain (see the module docstring).

    Args:
        chain: the serial chain (its first tip).
        checker: its :class:`ik_node.collision.CollisionChecker`.
        params: the solver's parameters (``collision_repair_steps``, ``orientation_weight``,
            tolerances).

    Attributes:
        runs: how many answers the term has started from.
        freed: how many of them it brought to a collision-free answer within tolerance.
    """

    def __init__(self, chain, checker, params):
        self.chain = chain
        self.checker = checker
        self.params = params
        model = checker.model
        self._link_joints = [np.array(sorted(model.moving_joints(k)), dtype=np.int64)
                             for k in range(len(model.links))]
        self._low = np.asarray(chain.lower, dtype=float)
        self._high = np.asarray(chain.upper, dtype=float)
        self.runs = 0
        self.freed = 0

    def repair(self, p_target: Sequence[float], R_target: Optional[np.ndarray],
               q_start: Sequence[float], deadline: float) -> Optional[Tuple[np.ndarray, int]]:
        """``(q, steps)``: a configuration within tolerance of the target that the checker
        finds free, reached from ``q_start`` in ``steps`` steps; None when the term does not
        run (no room beside the target, ``collision_repair_steps`` 0) or finds none before
        ``deadline`` (``time.perf_counter()`` [s])."""
        chain, checker, params = self.chain, self.checker, self.params
        most = params['collision_repair_steps']
        if most <= 0 or chain.n <= (3 if R_target is None else 6):
            return None
        self.runs += 1
        p_target = np.asarray(p_target, dtype=float)
        tol_p = TOLERANCE_MARGIN * params['position_tolerance']
        tol_r = TOLERANCE_MARGIN * params['orientation_tolerance']
        weight = params['orientation_weight']
        clearance = checker.padding + CLEARANCE_M
        q = np.minimum(np.maximum(np.asarray(q_start, dtype=float), self._low), self._high)
        best = (math.inf, math.inf)
        best_step = 0
        step = 0
        while True:
            frames = chain.joint_frames(q)
            e, J, position_error, angle = self._target(frames, p_target, R_target, weight)
            found = checker.witnesses(q, REACH_M)
            shortfall = sum(max(clearance - w.distance_m, 0.0) for w in found)
            if position_error <= tol_p and angle <= tol_r and checker.is_free(q):
                self.freed += 1
                return q, step
            if step >= most or time.perf_counter() >= deadline:
                return None
            error = float(np.linalg.norm(e))
            if shortfall < 0.9 * best[0] or error < 0.9 * best[1]:
                best = (min(shortfall, best[0]), min(error, best[1]))
                best_step = step
            elif step - best_step >= STALL_STEPS:
                return None
            G, d = self._distance_rows(frames, found)
            dq = prioritised_step(J, e, G, d, clearance)
            largest = float(np.max(np.abs(dq)))
            if largest > MAX_STEP_RAD:
                dq *= MAX_STEP_RAD / largest
            q = np.minimum(np.maximum(q + dq, self._low), self._high)
            step += 1

    def _target(self, frames: np.ndarray, p_target: np.ndarray, R_target: Optional[np.ndarray],
                weight: float):
        """``(e, J, position error [m], angle [rad])``: the target's error (the position, then
        ``weight`` times the rotation vector to the target orientation) and its Jacobian."""
        chain = self.chain
        T_tip = chain._tip_from_frames(frames, 0)
        J6 = chain.jacobian_from_frames(frames, T_tip[:3, 3], 0)
        e_p = p_target - T_tip[:3, 3]
        position_error = float(np.linalg.norm(e_p))
        if R_target is None:
            return e_p, J6[:3], position_error, 0.0
        omega = rotation_vector_from_matrix(R_target @ T_tip[:3, :3].T)
        e = np.concatenate([e_p, weight * omega])
        J = np.vstack([J6[:3], weight * J6[3:]])
        return e, J, position_error, float(np.linalg.norm(omega))

    def _distance_rows(self, frames: np.ndarray, found: List) -> Tuple[np.ndarray, np.ndarray]:
        """``(G, d)``: each witness's distance gradient in joint space (k, n) and its signed
        distance (k,) [m]."""
        n = self.chain.n
        G = np.zeros((len(found), n))
        d = np.empty(len(found))
        for r, w in enumerate(found):
            d[r] = w.distance_m
            G[r] = w.normal @ self._point_jacobian(frames, w.link_a, w.point_a)
            if w.link_b >= 0:
                G[r] -= w.normal @ self._point_jacobian(frames, w.link_b, w.point_b)
        return G, d

    def _point_jacobian(self, frames: np.ndarray, k: int, point: np.ndarray) -> np.ndarray:
        """The (3, n) Jacobian of ``point`` [m, base frame] fixed on link ``k``."""
        chain = self.chain
        J = np.zeros((3, chain.n))
        idx = self._link_joints[k]
        if idx.size == 0:
            return J
        z = np.einsum('nij,nj->ni', frames[idx, :3, :3], chain._axes[idx])
        origins = frames[idx, :3, 3]
        prismatic = chain._prismatic[idx]
        J[:, idx] = np.where(prismatic[:, None], z, np.cross(z, point - origins)).T
        return J


def prioritised_step(J: np.ndarray, e: np.ndarray, G: np.ndarray, d: np.ndarray,
                     clearance: float) -> np.ndarray:
    """The joint step: the target's damped least-squares step, with the pairs it would bring
    closer than ``clearance`` [m] held at it first (see the module docstring).

    Args:
        J, e: the target's Jacobian (m, n) and error (m,).
        G, d: the pairs' distance gradients (k, n) and signed distances (k,) [m].
        clearance: the distance [m] the constraints hold.
    """
    n = J.shape[1]
    lam = float(e @ e) + TARGET_DAMPING
    dq = J.T @ np.linalg.solve(J @ J.T + lam * np.eye(len(e)), e)
    if not len(d):
        return dq
    active = np.zeros(len(d), dtype=bool)
    for _ in range(3):
        newly = (d + G @ dq < clearance) & ~active
        if not newly.any():
            break
        active |= newly
        A = G[active]
        b = np.minimum(clearance - d[active], MAX_PUSH_M)
        A_pinv = A.T @ np.linalg.inv(A @ A.T + CONSTRAINT_DAMPING * np.eye(len(b)))
        dq_c = A_pinv @ b
        N = np.eye(n) - A_pinv @ A
        JN = J @ N
        dq = dq_c + N @ (JN.T @ np.linalg.solve(JN @ JN.T + lam * np.eye(len(e)),
                                                 e - J @ dq_c))
    return dq
