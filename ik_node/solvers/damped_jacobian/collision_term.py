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
from typing import List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from ik_node.solvers.geometry.residuals import rotation_vector_from_matrix
from ik_node.solvers.numerics.dls_settings import TOLERANCE_MARGIN

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
STALL_STEPS = 3


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
        n = chain.n
        # per link, 1.0 for the joints that move it; per joint, whether it is prismatic, and
        # 1.0 for the joints that move the (first) tip
        self._link_masks = []
        for k in range(len(model.links)):
            mask = np.zeros(n)
            mask[sorted(model.moving_joints(k))] = 1.0
            self._link_masks.append(mask)
        self._prismatic = np.asarray(chain._prismatic, dtype=bool)
        self._tip_mask = np.zeros(n)
        self._tip_mask[chain._tip_joints[0]] = 1.0
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
            axes = self._axes(frames)
            e, J, position_error, angle = self._target(frames, axes, p_target, R_target,
                                                       weight)
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
            G, d = self._distance_rows(axes, found)
            dq = prioritised_step(J, e, G, d, clearance)
            largest = float(np.max(np.abs(dq)))
            if largest > MAX_STEP_RAD:
                dq *= MAX_STEP_RAD / largest
            q = np.minimum(np.maximum(q + dq, self._low), self._high)
            step += 1

    def _axes(self, frames: np.ndarray) -> "_Axes":
        """The joint axes of ``frames`` in the base frame."""
        Z = np.einsum('nij,nj->ni', frames[:, :3, :3], self.chain._axes)
        P = frames[:, :3, 3]
        return _Axes(Z, P, _cross_rows(Z, P))

    def _target(self, frames: np.ndarray, axes: "_Axes", p_target: np.ndarray,
                R_target: Optional[np.ndarray], weight: float):
        """``(e, J, position error [m], angle [rad])``: the target's error (the position, then
        ``weight`` times the rotation vector to the target orientation) and its Jacobian."""
        T_tip = self.chain._tip_from_frames(frames, 0)
        p = T_tip[:3, 3]
        px, py, pz = p.tolist()
        skew = np.array([[0.0, -pz, py], [pz, 0.0, -px], [-py, px, 0.0]])
        linear = axes.Z @ skew - axes.ZxP  # z x (p - o), one row per joint
        prismatic = self._prismatic
        if prismatic.any():
            linear[prismatic] = axes.Z[prismatic]
        J_p = (linear * self._tip_mask[:, None]).T
        e_p = p_target - p
        position_error = float(np.linalg.norm(e_p))
        if R_target is None:
            return e_p, J_p, position_error, 0.0
        J_w = (axes.Z * (self._tip_mask * ~prismatic)[:, None]).T
        omega = rotation_vector_from_matrix(R_target @ T_tip[:3, :3].T)
        e = np.concatenate([e_p, weight * omega])
        return e, np.vstack([J_p, weight * J_w]), position_error, float(np.linalg.norm(omega))

    def _distance_rows(self, axes: "_Axes", found: List) -> Tuple[np.ndarray, np.ndarray]:
        """``(G, d)``: each witness's distance gradient in joint space (k, n) and its signed
        distance (k,) [m]."""
        G = np.zeros((len(found), self.chain.n))
        d = np.empty(len(found))
        for r, w in enumerate(found):
            d[r] = w.distance_m
            G[r] = self._normal_row(axes, w.link_a, w.point_a, w.normal)
            if w.link_b >= 0:
                G[r] -= self._normal_row(axes, w.link_b, w.point_b, w.normal)
        return G, d

    def _normal_row(self, axes: "_Axes", k: int, point: np.ndarray,
                    normal: np.ndarray) -> np.ndarray:
        """``normal . J(point)``: how fast ``point`` [m, base frame], fixed on link ``k``,
        moves along ``normal`` per unit of each joint (0 for joints that do not move the
        link). For a revolute joint ``normal . (z x (p - o)) = z . (p x n) - (z x o) . n``."""
        px, py, pz = point.tolist()
        nx, ny, nz = normal.tolist()
        p_cross_n = np.array([py * nz - pz * ny, pz * nx - px * nz, px * ny - py * nx])
        row = axes.Z @ p_cross_n - axes.ZxP @ normal
        prismatic = self._prismatic
        if prismatic.any():
            row[prismatic] = axes.Z[prismatic] @ normal
        return row * self._link_masks[k]


class _Axes(NamedTuple):
    """Joint axes in the base frame: unit directions ``Z`` (n, 3), points on them ``P`` (n, 3)
    [m] and their cross products ``ZxP`` (n, 3)."""

    Z: np.ndarray
    P: np.ndarray
    ZxP: np.ndarray


def _cross_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cross products of two (n, 3) arrays (np.cross costs several times more at
    this size)."""
    out = np.empty_like(a)
    out[:, 0] = a[:, 1] * b[:, 2] - a[:, 2] * b[:, 1]
    out[:, 1] = a[:, 2] * b[:, 0] - a[:, 0] * b[:, 2]
    out[:, 2] = a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]
    return out


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
