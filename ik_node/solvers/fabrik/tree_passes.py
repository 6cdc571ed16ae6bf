"""One FABRIK run over a tree: the per-run plan and the passes :func:`iterate` drives.

:class:`TreePlan` is the per-run bookkeeping (which nodes are pulled, their children and
weights, how each joint fits its angle); :class:`TreePasses` holds the run's configuration and
node positions and implements the forward and backward passes, the stretching pass, the
extrapolation, the polish and the restarts over a
:class:`~ik_node.solvers.fabrik.tree.FabrikTree`'s geometry. The algorithm is described in
:mod:`ik_node.solvers.fabrik.tree`.
"""

from __future__ import annotations

import math
import time
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from ik_node.solvers.fabrik.iteration import (EPS_M, POLISH_DAMPING, POLISH_DAMPING_MIN,
                                              SLOW_STEP_RATIO2, SLOW_STEPS, TIP_FIT_WEIGHT,
                                              FabrikProblem, FabrikRun, FabrikSettings, Passes,
                                              angle_in_limits, weighted_rms)
from ik_node.solvers.numerics.budget import StepPace


class TreePlan:
    """Per-solve bookkeeping: which nodes are pulled, their children and weights."""

    def __init__(self, tree, tip_indices: Sequence[int], weights: np.ndarray):
        n, N = tree.n, tree.n + tree.n_tips
        self.tip_nodes = np.array([n + k for k in tip_indices], dtype=int)
        W = np.zeros(N)
        for k, w in zip(tip_indices, weights, strict=True):
            v = n + k
            while v >= 0:                   # add the tip's weight to every ancestor
                W[v] += w
                v = tree.node_parent[v]
        self.W = W
        self.fit_weight = W * np.where(np.arange(N) >= n, TIP_FIT_WEIGHT, 1.0)
        # Forward pass: non-root joints with targets below, children first.
        self.forward = []
        for u in range(n - 1, -1, -1):
            if W[u] > 0 and tree.node_parent[u] >= 0:
                ch = np.array([c for c in tree.children[u] if W[c] > 0], dtype=int)
                self.forward.append((u, ch, W[ch] / W[ch].sum()))
        # Backward pass: how each moving revolute joint picks its angle. 'bones': from its
        # children's bones (classic FABRIK); 'points': a fit to the informative children plus
        # the targeted tips below it, used when some child bone is uninformative.
        self.align: List[Optional[tuple]] = [None] * n
        self.fallback: List[np.ndarray] = [np.zeros(0, dtype=int) for _ in range(n)]
        for i in range(n):
            if W[i] <= 0 or not tree.revolute[i]:
                continue
            active = [j for j, c in enumerate(tree.children[i]) if W[c] > 0]
            good = [j for j in active if tree.informative[i][j]]
            ch = np.array([tree.children[i][j] for j in good], dtype=int)
            if len(good) == len(active) and tree.planar_below[i]:
                self.align[i] = ('bones', ch, W[ch][:, None] * tree.r_perp[i][good],
                                 W[ch][:, None] * tree.r_cross[i][good])
            else:
                tips = [d for d in tree.descendants[i] if d >= n and W[d] > 0]
                nodes = np.array(sorted(set(ch.tolist()) | set(tips)), dtype=int)
                self.align[i] = ('points', nodes)
            self.fallback[i] = np.array([d for d in tree.descendants[i] if W[d] > 0], dtype=int)
        # Polish (see TreePasses.polish): the joints moving targeted tips, and for each targeted
        # tip the columns (indices into polish_joints) of the joints on its path.
        self.polish_joints = np.array([i for i in range(n) if W[i] > 0 and tree.revolute[i]],
                                      dtype=int)
        column = {int(j): c for c, j in enumerate(self.polish_joints)}
        self.polish_paths = []
        for v in self.tip_nodes:
            joints = [u for u in tree.path_to_tip(int(v) - n)[:-1] if u in column]
            self.polish_paths.append((np.array(joints, dtype=int),
                                      np.array([column[u] for u in joints], dtype=int)))


class TreePasses(Passes):
    """The state of one run over a tree (``tree``: a :class:`FabrikTree`): ``q``, the node
    positions ``x`` and joint rotations ``R`` (always FK of ``q``), the forward-pass points
    ``P`` and the bone lengths ``L``."""

    def __init__(self, tree, problem: FabrikProblem, settings: FabrikSettings):
        n, N = tree.n, tree.n + tree.n_tips
        self.tree = tree
        self.plan = TreePlan(tree, problem.tip_indices, problem.weights)
        self.w_norm = np.asarray(problem.weights, dtype=float) / float(np.sum(problem.weights))
        self.targets = problem.targets
        self.stretch_tip = problem.stretch_tip
        self.tolerance = settings.tolerance
        self.q = np.array(problem.q_seed, dtype=float)
        self.x, self.R, self.P = np.zeros((N, 3)), np.zeros((n, 3, 3)), np.zeros((N, 3))
        tree.rebuild(self.q, self.x, self.R)
        self.L = tree.bone_lengths(self.x)
        self._x_try, self._R_try = np.zeros_like(self.x), np.zeros_like(self.R)
        self._lower, self._upper = np.array(tree.lower), np.array(tree.upper)
        self._rng = self._moving = None

    # ------------------------------------------------------------------- what iterate reads
    def measure(self) -> Tuple[np.ndarray, float]:
        d = self.x[self.plan.tip_nodes] - self.targets
        err = np.sqrt(np.einsum('ij,ij->i', d, d))
        return err, weighted_rms(self.w_norm, err)

    def largest(self, err: np.ndarray) -> float:
        return float(err.max())

    def reached(self, err: np.ndarray, tolerance: float) -> bool:
        return bool(np.all(err <= tolerance))

    def copy_q(self) -> np.ndarray:
        return self.q.copy()

    def step(self, stretch: bool) -> None:
        if stretch:
            self.stretch(self.stretch_tip, self.targets[0])
        else:
            self.forward()
            self.backward()

    def extrapolate(self, q_before: np.ndarray, factor: float, obj: float
                    ) -> Optional[Tuple[Any, float]]:
        q, x_try, R_try = self.q, self._x_try, self._R_try
        step = factor * (q - q_before)
        q_try = np.minimum(np.maximum(q + step, self._lower), self._upper)
        self.tree.rebuild(q_try, x_try, R_try)
        d = x_try[self.plan.tip_nodes] - self.targets
        err_try = np.sqrt(np.einsum('ij,ij->i', d, d))
        obj_try = weighted_rms(self.w_norm, err_try)
        if obj_try < obj:
            q[:] = q_try
            self.x[:], self.R[:] = x_try, R_try
            return err_try, obj_try
        return None

    def can_move(self) -> bool:
        tree, W = self.tree, self.plan.W
        return any(tree.revolute[i] and W[i] > 0 for i in range(tree.n))

    def restart(self) -> bool:
        tree = self.tree
        if self._moving is None:
            self._moving = np.array([tree.revolute[i] and self.plan.W[i] > 0
                                     for i in range(tree.n)], dtype=bool)
        moving = self._moving
        if not moving.any():
            return False
        if self._rng is None:
            self._rng = np.random.default_rng(0)
        lower = np.where(np.isfinite(tree.lower), tree.lower, -math.pi)
        upper = np.where(np.isfinite(tree.upper), tree.upper, math.pi)
        self.q[moving] = self._rng.uniform(lower, upper)[moving]
        tree.rebuild(self.q, self.x, self.R)
        return True

    def run_of(self, best_q, best_err, iterations, converged, stalled, history, timed_out
               ) -> FabrikRun:
        return FabrikRun(best_q, best_err, iterations, converged, stalled, history, timed_out)

    # ------------------------------------------------------------------------------- passes
    def forward(self) -> None:
        """Targeted tips to their targets, then every pulled joint to its children's proposal."""
        plan, x, P, L, targets = self.plan, self.x, self.P, self.L, self.targets
        P[plan.tip_nodes] = targets
        for u, ch, w in plan.forward:
            d = x[u] - P[ch]
            norm = np.sqrt(np.einsum('ij,ij->i', d, d))
            if norm.min() < EPS_M:  # forward point on the joint: keep the old bone direction
                bad = norm < EPS_M
                d[bad] = x[u] - x[ch[bad]]
                norm[bad] = np.maximum(L[ch[bad]], EPS_M)
            proposals = P[ch] + d * (L[ch] / np.maximum(norm, EPS_M))[:, None]
            P[u] = w @ proposals

    def backward(self) -> None:
        """Re-anchor from the base: fit each moving joint's angle, clamp it, rebuild frames."""
        tree, plan, q, x, R, P = self.tree, self.plan, self.q, self.x, self.R, self.P
        for i in range(tree.n):
            align = plan.align[i]
            frame = tree.frame(i, x, R)
            if align is not None:
                R0, xi = np.array(frame[0]).reshape(3, 3), np.array(frame[1])
                if align[0] == 'bones':
                    _, ch, w_perp, w_cross = align
                    b = (P[ch] - xi) @ R0      # forward-pass directions in the q = 0 frame
                    s, c = float(np.vdot(w_cross, b)), float(np.vdot(w_perp, b))
                    fitted = s * s + c * c > EPS_M * EPS_M
                    if fitted:
                        q[i] = angle_in_limits(math.atan2(s, c), q[i], tree.lower[i],
                                               tree.upper[i])
                else:
                    fitted = self.fit_points(align[1], i, R0, xi)
                if not fitted:
                    self.fit_points(plan.fallback[i], i, R0, xi)
            tree.place_from(i, float(q[i]), frame[0], frame[1], x, R)
        tree.place_tips(x, R)

    def fit_points(self, nodes: np.ndarray, i: int, R0: np.ndarray, xi: np.ndarray) -> bool:
        """Fit joint ``i``'s angle to move ``nodes`` (rigidly, at their old ``x``) onto ``P``.

        Must run before joint ``i`` is rebuilt (uses its old frame). Returns False when the
        nodes are all on the axis (nothing to fit; ``q[i]`` unchanged).
        """
        if len(nodes) == 0:
            return False
        tree, q, x, R, P = self.tree, self.q, self.x, self.R, self.P
        axis = tree.axes[i]
        r = (x[nodes] - x[i]) @ R[i]            # nodes in joint i's moved frame (old q)
        b = (P[nodes] - xi) @ R0                # their forward points in the q = 0 frame
        w = self.plan.fit_weight[nodes]
        # M = sum w r b^T gives both moments: sum w (r x b) from its skew part and
        # sum w (r_perp . b) = trace M - a^T M a.
        M = (r * w[:, None]).T @ b
        s = float(axis @ (M[1, 2] - M[2, 1], M[2, 0] - M[0, 2], M[0, 1] - M[1, 0]))
        c = float(M[0, 0] + M[1, 1] + M[2, 2] - axis @ M @ axis)
        if s * s + c * c <= EPS_M * EPS_M:
            return False
        q[i] = angle_in_limits(math.atan2(s, c), q[i], tree.lower[i], tree.upper[i])
        return True

    def stretch(self, k: int, target: np.ndarray) -> None:
        """Backward pass with tip ``k``'s path laid straight from its first joint to ``target``."""
        x, P, L = self.x, self.P, self.L
        path = self.tree.path_to_tip(k)
        origin = x[path[0]].copy()
        direction = target - origin
        direction /= max(float(np.linalg.norm(direction)), EPS_M)
        reach = np.cumsum(L[path]) - L[path[0]]
        P[path] = origin + reach[:, None] * direction
        self.backward()

    # ------------------------------------------------------------------------------ polish
    def polish(self, steps: int, history: Optional[List[float]] = None,
               deadline: float = math.inf) -> int:
        """A finishing step that is not FABRIK: damped least squares on the tips' Jacobian.

        Up to ``steps`` Levenberg-Marquardt steps on the stacked position Jacobian of the
        targeted tips (columns: the revolute joints that move them), weighted by the tip
        weights. A step is clipped to the joint limits, joints pressed against a limit by the
        step are frozen for it, and it is kept only if it lowers the weighted tip error (else
        the damping grows tenfold); it ends early after ``SLOW_STEPS`` slow or rejected steps
        in a row. ``q``, ``x`` and ``R`` are updated in place and stay equal
        to FK of ``q``. Returns the number of steps taken (each counts as an iteration); no step
        starts that would end after ``deadline`` (``time.perf_counter`` seconds), judged by
        the pace of the steps so far (:class:`~ik_node.solvers.numerics.budget.StepPace`: the
        second-slowest, so one stalled step does not end the polish).
        """
        tree, plan, q, x, R = self.tree, self.plan, self.q, self.x, self.R
        targets, w_norm, tolerance = self.targets, self.w_norm, self.tolerance
        cols = plan.polish_joints
        if steps <= 0 or len(cols) == 0:
            return 0
        tips = plan.tip_nodes
        sw = np.repeat(np.sqrt(w_norm), 3)
        lower, upper = np.array(tree.lower)[cols], np.array(tree.upper)[cols]
        e = (targets - x[tips]).reshape(-1) * sw
        obj = float(e @ e)
        J = np.zeros((3 * len(tips), len(cols)))
        x_try, R_try = np.zeros_like(x), np.zeros_like(R)
        damping, taken, pace, slow = POLISH_DAMPING, 0, StepPace(), 0
        while taken < steps:
            started = time.perf_counter()
            if started + pace.expected > deadline:  # the step would end past the deadline
                break
            taken += 1
            world_axes = np.einsum('nij,nj->ni', R[cols], tree.axes[cols])
            for k, (joints, c) in enumerate(plan.polish_paths):
                J[3 * k:3 * k + 3, c] = np.cross(world_axes[c], x[tips[k]] - x[joints]).T
            Jw = J * sw[:, None]
            q_cols = q[cols]
            free = np.ones(len(cols), dtype=bool)
            dq = np.zeros(len(cols))
            for _ in range(3):                 # freeze joints the step pushes past a limit
                A = Jw[:, free]
                dq[:] = 0.0
                dq[free] = np.linalg.solve(A.T @ A + damping * np.eye(A.shape[1]), A.T @ e)
                pressed = free & (((q_cols <= lower) & (dq < 0.0)) |
                                  ((q_cols >= upper) & (dq > 0.0)))
                if not pressed.any():
                    break
                free &= ~pressed
                if not free.any():
                    dq[:] = 0.0
                    break
            q_try = q.copy()
            q_try[cols] = np.minimum(np.maximum(q_cols + dq, lower), upper)
            tree.rebuild(q_try, x_try, R_try)
            d = targets - x_try[tips]
            e_try = d.reshape(-1) * sw
            obj_try = float(e_try @ e_try)
            if obj_try < obj:
                slow = slow + 1 if obj_try > SLOW_STEP_RATIO2 * obj else 0
                q[:], x[:], R[:] = q_try, x_try, R_try
                e, obj = e_try, obj_try
                damping = max(damping * 0.1, POLISH_DAMPING_MIN)
            else:
                slow += 1
                damping *= 10.0
            d = x[tips] - targets
            tip_err = np.sqrt(np.einsum('ij,ij->i', d, d))
            if history is not None:
                history.append(float(tip_err.max()))
            pace.add(time.perf_counter() - started)
            if np.all(tip_err <= tolerance) or slow >= SLOW_STEPS:
                break
        return taken
