"""The FABRIK passes over a kinematic tree (a serial chain is the one-tip case).

Why one file of this size: the forward and backward passes, the sub-base ordering and the
centroid rule of a tree are one algorithm over one precomputed geometry; splitting them would
scatter the indices they share.

Numpy only. :class:`FabrikTree` precomputes the geometry of a
:class:`~ik_node.model.chain.Chain` once; :meth:`FabrikTree.run` iterates forward and backward
passes for one set of targets.

Nodes are the chain's joints ``0 .. n-1`` (depth-first, parents first) followed by its tips
``n .. n+T-1``. A node's position is its joint frame origin (a tip: the tip frame origin); a
*bone* joins a node to its parent joint. Nodes whose parent is the base (``-1``) never move.

Forward pass (tips to root): every targeted tip is put on its target; each joint with targeted
tips below is pulled to the weighted mean of the points its children propose (each child keeps
its bone length), the weight of a child being the summed tip weights of its subtree. Backward pass
(root to tips): the joints are re-anchored in depth-first order; a revolute joint takes the angle
about its world axis that best turns its children's bones (at q = 0, in the already rebuilt parent
frame) onto the directions towards their forward-pass points, both projected on the plane normal
to the axis (a weighted least-squares fit; for one child it is the signed angle between the two
projections). The angle is clamped to the joint limits and the frames are rebuilt from the angles,
so positions and joint values always agree (the positions are exactly FK of ``q``).

Where the classic rule is blind, a joint fits points instead of bones ('points' fit): when the
joints below it do not all hinge parallel to it (a non-planar subtree, e.g. a UR5 shoulder pan or
a leg's hip yaw), or when a child bone is uninformative (zero length, along the joint's own axis,
or along the child's hinge axis: an offset link). It then turns its informative children and the
targeted tips below it, rigidly at their current places, onto their forward-pass points (targets
for tips, weighted ``_TIP_FIT_WEIGHT``). If every point lies on the axis, the joint fits all its
targeted descendants, and keeps its angle if those are on the axis too. On a UR5 the classic
rule alone does not converge; the 'points' fit does.

After the passes, optionally, a finishing step that is not FABRIK (:meth:`FabrikTree.polish`):
damped least squares on the stacked position Jacobian of the targeted tips, tried when a FABRIK
iteration crawls. When it crawls too, the run counts as stalled (a local minimum, usually at a
joint limit) and restarts at once instead of creeping on.

Joints that move no targeted tip keep their value (an untargeted tip keeps its configuration
relative to its branch). Chains with prismatic joints never get here: the solver refuses them.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import List, Optional, Sequence

import numpy as np

from ik_node.model.chain import Chain
from ik_node.solvers.budget import StepPace

TWO_PI = 2.0 * math.pi
#: Below this a projected bone [m] (or a squared fit moment [m^2]) counts as degenerate.
_EPS_M = 1e-9
#: A child bone within acos(0.9) ~ 26 deg of the child's own hinge axis is an offset, not a
#: direction to follow (the UR5 shoulder: its bone runs along the next axis).
_PARALLEL_COS = 0.9
#: In a 'points' fit, a targeted tip counts this many times a child joint (the tip is what
#: must arrive; chosen on UR5 and Panda among 0.3, 1, 3, 10).
_TIP_FIT_WEIGHT = 3.0
#: Extrapolation (see :meth:`FabrikTree.run`): tried when an iteration's error ratio is above
#: this (slow, linear convergence), with the step stretched at most this many times. Chosen on
#: planar4, leg3, UR5 and twin_arm among ratios 0, 0.3, 0.5 and caps 10, 30, 100.
_EXTRAPOLATE_MIN_RATIO = 0.3
_EXTRAPOLATE_MAX_FACTOR = 30.0
#: Polish (see :meth:`FabrikTree.polish`): initial and smallest Levenberg-Marquardt damping
#: [m^2]; tried when a FABRIK iteration cut the error by less than this ratio.
_POLISH_DAMPING = 1e-3
_POLISH_DAMPING_MIN = 1e-9
_POLISH_RATIO = 0.5
_POLISH_STUCK_RATIO = 0.9
#: The polish ends early after this many steps in a row that cut the (weighted) error by less
#: than 10 % (squared: ``_SLOW_STEP_RATIO2``) or were rejected: Gauss-Newton steps near a
#: reachable target cut it by far more; slow steps are a target out of reach (or a stall at
#: limits), where the caller's stall handling (restarts, the closest-pose search) takes over.
_SLOW_STEPS = 2
_SLOW_STEP_RATIO2 = 0.9 ** 2


@dataclass
class FabrikRun:
    """What :meth:`FabrikTree.run` returns: the best configuration seen and how it went."""

    q: np.ndarray
    tip_errors: np.ndarray    # [m] per targeted tip at ``q``, in the order of the targets
    iterations: int
    converged: bool
    stalled: bool
    history: Optional[List[float]]
    timed_out: bool = False


class _Plan:
    """Per-solve bookkeeping: which nodes are pulled, their children and weights."""

    def __init__(self, tree: 'FabrikTree', tip_indices: Sequence[int], weights: np.ndarray):
        n, N = tree.n, tree.n + tree.n_tips
        self.tip_nodes = np.array([n + k for k in tip_indices], dtype=int)
        W = np.zeros(N)
        for k, w in zip(tip_indices, weights, strict=True):
            v = n + k
            while v >= 0:                   # add the tip's weight to every ancestor
                W[v] += w
                v = tree.node_parent[v]
        self.W = W
        self.fit_weight = W * np.where(np.arange(N) >= n, _TIP_FIT_WEIGHT, 1.0)
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
        # Polish (see FabrikTree.polish): the joints moving targeted tips, and for each targeted
        # tip the columns (indices into polish_joints) of the joints on its path.
        self.polish_joints = np.array([i for i in range(n) if W[i] > 0 and tree.revolute[i]],
                                      dtype=int)
        column = {int(j): c for c, j in enumerate(self.polish_joints)}
        self.polish_paths = []
        for v in self.tip_nodes:
            joints = [u for u in tree.path_to_tip(int(v) - n)[:-1] if u in column]
            self.polish_paths.append((np.array(joints, dtype=int),
                                      np.array([column[u] for u in joints], dtype=int)))


class FabrikTree:
    """FABRIK on a :class:`Chain` (tree or serial), geometry precomputed in ``__init__``."""

    def __init__(self, chain: Chain):
        self.chain = chain
        n, T = chain.n, len(chain.tips)
        self.n, self.n_tips = n, T
        self.node_parent = [int(p) for p in chain.parents] + [t.parent for t in chain.tips]
        self.children: List[List[int]] = [[] for _ in range(n)]
        for v, p in enumerate(self.node_parent):
            if p >= 0:
                self.children[p].append(v)
        self.descendants: List[List[int]] = [[] for _ in range(n)]
        for v in range(n + T):
            p = self.node_parent[v]
            while p >= 0:
                self.descendants[p].append(v)
                p = self.node_parent[p]
        self.revolute = [not j.is_prismatic for j in chain.joints]
        self.axes = np.array([j.axis for j in chain.joints], dtype=float).reshape(n, 3)
        self.lower = [float(v) for v in chain.lower]
        self.upper = [float(v) for v in chain.upper]
        T_parent = np.array([j.T_parent_joint for j in chain.joints]).reshape(n, 4, 4)
        self.R_tp = T_parent[:, :3, :3].copy()
        self.t_tp = T_parent[:, :3, 3].copy()
        self.t_tip = np.array([t.T_joint_tip[:3, 3] for t in chain.tips]).reshape(T, 3)
        # Rodrigues: R(q) = aa^T + cos q (I - aa^T) + sin q [a]x.
        self.aaT = np.einsum('ni,nj->nij', self.axes, self.axes)
        self.I_aaT = np.eye(3) - self.aaT
        self.K = np.array([[[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]]
                           for a in self.axes]).reshape(n, 3, 3)
        # Each child's offset in its parent joint's frame, projected off the axis (r_perp), and
        # axis x offset (r_cross): with b the target direction in the joint's q = 0 frame, the
        # best angle is atan2(r_cross . b, r_perp . b).
        self.r_perp, self.r_cross, self.r_perp_norm = [], [], []
        for i in range(n):
            offsets = np.array([self._offset(c) for c in self.children[i]]).reshape(-1, 3)
            perp = offsets - np.outer(offsets @ self.axes[i], self.axes[i])
            self.r_perp.append(perp)
            self.r_cross.append(np.cross(self.axes[i], offsets).reshape(-1, 3))
            self.r_perp_norm.append(np.linalg.norm(perp, axis=1))
        # A child bone is informative for its parent joint when it is off the parent's axis
        # and, for a revolute child, not (nearly) along the child's own axis.
        # planar_below[i]: every joint below i hinges about an axis parallel to i's, so the
        # subtree moves in planes normal to that axis and its bones carry the whole story.
        x0, R0 = np.zeros((n + T, 3)), np.zeros((n, 3, 3))
        self.rebuild(np.zeros(n), x0, R0)
        world_axes = np.einsum('nij,nj->ni', R0, self.axes)
        self.planar_below = [
            all(abs(float(world_axes[d] @ world_axes[i])) > 1.0 - 1e-9
                for d in self.descendants[i] if d < n and self.revolute[d])
            for i in range(n)]
        self.informative: List[List[bool]] = []
        for i in range(n):
            flags = []
            for j, c in enumerate(self.children[i]):
                ok = self.r_perp_norm[i][j] > _EPS_M
                if ok and c < n and self.revolute[c]:
                    r = self.t_tp[c]
                    along = abs(float((self.R_tp[c] @ self.axes[c]) @ r))
                    ok = along <= _PARALLEL_COS * float(np.linalg.norm(r))
                flags.append(ok)
            self.informative.append(flags)

    def _offset(self, node: int) -> np.ndarray:
        return self.t_tp[node] if node < self.n else self.t_tip[node - self.n]

    # ----------------------------------------------------------------------------- geometry
    def rebuild(self, q: np.ndarray, x: np.ndarray, R: np.ndarray) -> None:
        """Fill node positions ``x`` (N, 3) and joint rotations ``R`` (n, 3, 3) = FK of ``q``."""
        for i in range(self.n):
            self._place(i, q, x, R)
        self._place_tips(x, R)

    def _place(self, i: int, q: np.ndarray, x: np.ndarray, R: np.ndarray) -> None:
        p = self.node_parent[i]
        if p < 0:
            R0, xi = self.R_tp[i], self.t_tp[i].copy()
        else:
            R0 = R[p] @ self.R_tp[i]
            xi = x[p] + R[p] @ self.t_tp[i]
        if self.revolute[i]:
            R[i] = R0 @ (self.aaT[i] + math.cos(q[i]) * self.I_aaT[i]
                         + math.sin(q[i]) * self.K[i])
        else:
            R[i] = R0
            xi += (R0 @ self.axes[i]) * q[i]
        x[i] = xi

    def _place_tips(self, x: np.ndarray, R: np.ndarray) -> None:
        n = self.n
        for k in range(self.n_tips):
            p = self.node_parent[n + k]
            x[n + k] = self.t_tip[k] if p < 0 else x[p] + R[p] @ self.t_tip[k]

    def bone_lengths(self, x: np.ndarray) -> np.ndarray:
        """Length [m] of every node's bone (0 for nodes hanging from the base)."""
        L = np.zeros(len(self.node_parent))
        for v, p in enumerate(self.node_parent):
            if p >= 0:
                L[v] = float(np.linalg.norm(x[v] - x[p]))
        return L

    def path_to_tip(self, k: int) -> List[int]:
        """Nodes from the tip's first joint to tip ``k`` (the tip node last)."""
        nodes, v = [], self.n + k
        while v >= 0:
            nodes.append(v)
            v = self.node_parent[v]
        return nodes[::-1]

    # ------------------------------------------------------------------------------- passes
    def forward_pass(self, plan: _Plan, x: np.ndarray, P: np.ndarray, L: np.ndarray,
                     targets: np.ndarray) -> None:
        """Targeted tips to their targets, then every pulled joint to its children's proposal."""
        P[plan.tip_nodes] = targets
        for u, ch, w in plan.forward:
            d = x[u] - P[ch]
            norm = np.sqrt(np.einsum('ij,ij->i', d, d))
            if norm.min() < _EPS_M:  # forward point on the joint: keep the old bone direction
                bad = norm < _EPS_M
                d[bad] = x[u] - x[ch[bad]]
                norm[bad] = np.maximum(L[ch[bad]], _EPS_M)
            proposals = P[ch] + d * (L[ch] / np.maximum(norm, _EPS_M))[:, None]
            P[u] = w @ proposals

    def backward_pass(self, plan: _Plan, q: np.ndarray, x: np.ndarray, R: np.ndarray,
                      P: np.ndarray) -> None:
        """Re-anchor from the base: fit each moving joint's angle, clamp it, rebuild frames."""
        for i in range(self.n):
            align = plan.align[i]
            if align is not None:
                p = self.node_parent[i]
                if p < 0:
                    R0, xi = self.R_tp[i], self.t_tp[i]
                else:
                    R0 = R[p] @ self.R_tp[i]
                    xi = x[p] + R[p] @ self.t_tp[i]
                if align[0] == 'bones':
                    _, ch, w_perp, w_cross = align
                    b = (P[ch] - xi) @ R0      # forward-pass directions in the q = 0 frame
                    s, c = float(np.vdot(w_cross, b)), float(np.vdot(w_perp, b))
                    fitted = s * s + c * c > _EPS_M * _EPS_M
                    if fitted:
                        q[i] = _angle_in_limits(math.atan2(s, c), q[i], self.lower[i],
                                                self.upper[i])
                else:
                    fitted = self._fit_points(plan, align[1], i, R0, xi, q, x, R, P)
                if not fitted:
                    self._fit_points(plan, plan.fallback[i], i, R0, xi, q, x, R, P)
            self._place(i, q, x, R)
        self._place_tips(x, R)

    def _fit_points(self, plan: _Plan, nodes: np.ndarray, i: int, R0: np.ndarray,
                    xi: np.ndarray, q: np.ndarray, x: np.ndarray, R: np.ndarray,
                    P: np.ndarray) -> bool:
        """Fit joint ``i``'s angle to move ``nodes`` (rigidly, at their old ``x``) onto ``P``.

        Must run before joint ``i`` is rebuilt (uses its old frame). Returns False when the
        nodes are all on the axis (nothing to fit; ``q[i]`` unchanged).
        """
        if len(nodes) == 0:
            return False
        axis = self.axes[i]
        r = (x[nodes] - x[i]) @ R[i]            # nodes in joint i's moved frame (old q)
        b = (P[nodes] - xi) @ R0                # their forward points in the q = 0 frame
        w = plan.fit_weight[nodes]
        # M = sum w r b^T gives both moments: sum w (r x b) from its skew part and
        # sum w (r_perp . b) = trace M - a^T M a.
        M = (r * w[:, None]).T @ b
        s = float(axis @ (M[1, 2] - M[2, 1], M[2, 0] - M[0, 2], M[0, 1] - M[1, 0]))
        c = float(M[0, 0] + M[1, 1] + M[2, 2] - axis @ M @ axis)
        if s * s + c * c <= _EPS_M * _EPS_M:
            return False
        q[i] = _angle_in_limits(math.atan2(s, c), q[i], self.lower[i], self.upper[i])
        return True

    def stretch_pass(self, plan: _Plan, k: int, q: np.ndarray, x: np.ndarray, R: np.ndarray,
                     P: np.ndarray, L: np.ndarray, target: np.ndarray) -> None:
        """Backward pass with tip ``k``'s path laid straight from its first joint to ``target``."""
        path = self.path_to_tip(k)
        origin = x[path[0]].copy()
        direction = target - origin
        direction /= max(float(np.linalg.norm(direction)), _EPS_M)
        reach = np.cumsum(L[path]) - L[path[0]]
        P[path] = origin + reach[:, None] * direction
        self.backward_pass(plan, q, x, R, P)

    # ------------------------------------------------------------------------------ polish
    def polish(self, plan: _Plan, q: np.ndarray, x: np.ndarray, R: np.ndarray,
               targets: np.ndarray, w_norm: np.ndarray, tolerance: float, steps: int,
               history: Optional[List[float]] = None, deadline: float = math.inf) -> int:
        """A finishing step that is not FABRIK: damped least squares on the tips' Jacobian.

        Up to ``steps`` Levenberg-Marquardt steps on the stacked position Jacobian of the
        targeted tips (columns: the revolute joints that move them), weighted by the tip
        weights. A step is clipped to the joint limits, joints pressed against a limit by the
        step are frozen for it, and it is kept only if it lowers the weighted tip error (else
        the damping grows tenfold); it ends early after ``_SLOW_STEPS`` slow or rejected steps
        in a row. ``q``, ``x`` and ``R`` are updated in place and stay equal
        to FK of ``q``. Returns the number of steps taken (each counts as an iteration); no step
        starts that would end after ``deadline`` (``time.perf_counter`` seconds), judged by
        the pace of the steps so far (:class:`~ik_node.solvers.budget.StepPace`: the
        second-slowest, so one stalled step does not end the polish).
        """
        cols = plan.polish_joints
        if steps <= 0 or len(cols) == 0:
            return 0
        tips = plan.tip_nodes
        sw = np.repeat(np.sqrt(w_norm), 3)
        lower, upper = np.array(self.lower)[cols], np.array(self.upper)[cols]
        e = (targets - x[tips]).reshape(-1) * sw
        obj = float(e @ e)
        J = np.zeros((3 * len(tips), len(cols)))
        x_try, R_try = np.zeros_like(x), np.zeros_like(R)
        damping, taken, pace, slow = _POLISH_DAMPING, 0, StepPace(), 0
        while taken < steps:
            started = time.perf_counter()
            if started + pace.expected > deadline:  # the step would end past the deadline
                break
            taken += 1
            world_axes = np.einsum('nij,nj->ni', R[cols], self.axes[cols])
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
            self.rebuild(q_try, x_try, R_try)
            d = targets - x_try[tips]
            e_try = d.reshape(-1) * sw
            obj_try = float(e_try @ e_try)
            if obj_try < obj:
                slow = slow + 1 if obj_try > _SLOW_STEP_RATIO2 * obj else 0
                q[:], x[:], R[:] = q_try, x_try, R_try
                e, obj = e_try, obj_try
                damping = max(damping * 0.1, _POLISH_DAMPING_MIN)
            else:
                slow += 1
                damping *= 10.0
            d = x[tips] - targets
            tip_err = np.sqrt(np.einsum('ij,ij->i', d, d))
            if history is not None:
                history.append(float(tip_err.max()))
            pace.add(time.perf_counter() - started)
            if np.all(tip_err <= tolerance) or slow >= _SLOW_STEPS:
                break
        return taken

    # ---------------------------------------------------------------------------------- run
    def run(self, q_seed: np.ndarray, tip_indices: Sequence[int], targets: np.ndarray,
            weights: np.ndarray, tolerance: float, max_iterations: int, min_improvement: float,
            stall_iterations: int, restarts: int = 0, extrapolate: bool = True,
            stretch_tip: Optional[int] = None, record_history: bool = False,
            polish: int = 0, deadline: float = math.inf,
            stop_when_stuck: bool = False) -> FabrikRun:
        """Iterate FABRIK from ``q_seed`` until every targeted tip is within ``tolerance`` [m].

        Args:
            q_seed: (n,) start configuration inside the limits.
            tip_indices: indices into ``chain.tips`` of the targeted tips.
            targets: (len(tip_indices), 3) target positions [m], base frame.
            weights: (len(tip_indices),) positive priorities.
            tolerance: tip position error counted as reached [m].
            max_iterations: cap on forward/backward iterations.
            min_improvement: the weighted RMS tip error [m] must improve by this much within
                ``stall_iterations`` iterations, or the run stops as stalled.
            stall_iterations: see ``min_improvement``.
            restarts: after a stall, start again this many times from a random configuration
                (of the joints that move targeted tips; a fixed-seed RNG, so a solve is
                reproducible), within the same ``max_iterations``; the best result is kept.
            extrapolate: after an iteration that cut the error by the ratio rho, also try the
                iteration's joint step stretched by rho / (1 - rho) (where a linearly converging
                sequence ends up) and keep it if it lowers the error. FABRIK crawls near full
                extension and along limits, where this saves iterations.
            stretch_tip: a tip (index into ``chain.tips``) provably out of reach: the first
                iteration lays its path straight towards its target.
            record_history: keep the largest tip error [m] of every iteration.
            polish: after a FABRIK iteration that cut the error by less than ``_POLISH_RATIO``,
                up to this many :meth:`polish` steps (each counted as an iteration); when they
                cut it by less than ``_POLISH_STUCK_RATIO`` and a restart is left, the run
                counts as stalled and restarts at once. 0: FABRIK passes only.
            deadline: no iteration starts that would end after this ``time.perf_counter()``
                [s], judged by the pace of the iterations so far (the second-slowest:
                :class:`~ik_node.solvers.budget.StepPace`); the run then ends with
                ``timed_out``.
            stop_when_stuck: when FABRIK and the polish both crawl, end the run as stalled
                even without a restart left (the caller finishes it another way).
        """
        n, N = self.n, self.n + self.n_tips
        plan = _Plan(self, tip_indices, weights)
        w_norm = np.asarray(weights, dtype=float) / float(np.sum(weights))
        q = np.array(q_seed, dtype=float)
        x, R, P = np.zeros((N, 3)), np.zeros((n, 3, 3)), np.zeros((N, 3))
        self.rebuild(q, x, R)
        L = self.bone_lengths(x)

        def errors() -> np.ndarray:
            d = x[plan.tip_nodes] - targets
            return np.sqrt(np.einsum('ij,ij->i', d, d))

        err = errors()
        history = [float(err.max())] if record_history else None
        best_q, best_err = q.copy(), err
        best_obj = start_best = math.sqrt(float(w_norm @ (err * err)))
        last_progress_obj, since_progress, iterations, stalled = best_obj, 0, 0, False
        converged = bool(np.all(err <= tolerance))
        if not any(self.revolute[i] and plan.W[i] > 0 for i in range(n)):
            max_iterations = 0                  # nothing can move a targeted tip
        rng, moving, polish_after = None, None, 0
        x_try, R_try = np.zeros_like(x), np.zeros_like(R)
        lower_all, upper_all = np.array(self.lower), np.array(self.upper)
        timed_out, pace = False, StepPace()  # of the FABRIK iterations
        while not converged and iterations < max_iterations:
            started = time.perf_counter()
            if started + pace.expected > deadline:  # it would end past the deadline
                timed_out = True
                break
            iterations += 1
            q_before, obj_before = q.copy(), math.sqrt(float(w_norm @ (err * err)))
            if stretch_tip is not None and iterations == 1:
                self.stretch_pass(plan, stretch_tip, q, x, R, P, L, targets[0])
            else:
                self.forward_pass(plan, x, P, L, targets)
                self.backward_pass(plan, q, x, R, P)
            err = errors()
            obj = math.sqrt(float(w_norm @ (err * err)))
            if extrapolate and 0.0 < obj < obj_before and iterations > 1:
                rho = obj / obj_before
                if rho > _EXTRAPOLATE_MIN_RATIO:  # remaining distance of a linear sequence
                    step = min(rho / (1.0 - rho), _EXTRAPOLATE_MAX_FACTOR) * (q - q_before)
                    q_try = np.minimum(np.maximum(q + step, lower_all), upper_all)
                    self.rebuild(q_try, x_try, R_try)
                    d = x_try[plan.tip_nodes] - targets
                    err_try = np.sqrt(np.einsum('ij,ij->i', d, d))
                    obj_try = math.sqrt(float(w_norm @ (err_try * err_try)))
                    if obj_try < obj:
                        q[:] = q_try
                        x[:], R[:] = x_try, R_try
                        err, obj = err_try, obj_try
            if history is not None:
                history.append(float(err.max()))
            pace.add(time.perf_counter() - started)
            if (polish > 0 and iterations >= polish_after and obj > 0.0 and
                    obj >= _POLISH_RATIO * obj_before and iterations < max_iterations):
                taken = self.polish(plan, q, x, R, targets, w_norm, tolerance,
                                    min(polish, max_iterations - iterations), history, deadline)
                iterations += taken
                err = errors()
                obj_polished = math.sqrt(float(w_norm @ (err * err)))
                stuck = obj_polished > _POLISH_STUCK_RATIO * obj
                if obj_polished > _POLISH_RATIO * obj:   # no help here: let FABRIK work a while
                    polish_after = iterations + stall_iterations
                obj = obj_polished
                # FABRIK and the polish both crawl: a local minimum, restart now (without a
                # restart left, crawling on can only lower the error).
                if stuck and min_improvement > 0.0 and (restarts > 0 or stop_when_stuck) and \
                        stretch_tip is None:
                    if obj < best_obj:
                        best_q, best_err, best_obj = q.copy(), err, obj
                    start_best = min(start_best, obj)
                    last_progress_obj = start_best + min_improvement
                    since_progress = stall_iterations - 1
            if obj < best_obj:
                best_q, best_err, best_obj = q.copy(), err, obj
            converged = bool(np.all(err <= tolerance))
            start_best = min(start_best, obj)
            if start_best < last_progress_obj - min_improvement:
                last_progress_obj, since_progress = start_best, 0
                continue
            since_progress += 1
            if since_progress < stall_iterations or converged:
                continue
            stalled = True
            if moving is None:
                moving = np.array([self.revolute[i] and plan.W[i] > 0 for i in range(n)],
                                  dtype=bool)
            if restarts <= 0 or stretch_tip is not None or not moving.any():
                break
            restarts -= 1                      # a local minimum (joint limits): start afresh
            if rng is None:
                rng = np.random.default_rng(0)
            lower = np.where(np.isfinite(self.lower), self.lower, -math.pi)
            upper = np.where(np.isfinite(self.upper), self.upper, math.pi)
            q[moving] = rng.uniform(lower, upper)[moving]
            self.rebuild(q, x, R)
            err = errors()
            start_best = last_progress_obj = math.sqrt(float(w_norm @ (err * err)))
            since_progress = 0
        if converged:
            best_q, best_err = q.copy(), err
        return FabrikRun(best_q, best_err, iterations, converged, stalled and not converged,
                         history, timed_out and not converged)


def _angle_in_limits(theta: float, q_old: float, lower: float, upper: float) -> float:
    """The joint value for angle ``theta`` [rad] nearest ``q_old`` within [lower, upper].

    Adds whole turns to ``theta``; if no turn lands inside the limits, returns the limit
    nearest to ``theta`` on the circle.
    """
    q = theta + TWO_PI * round((q_old - theta) / TWO_PI)
    if lower <= q <= upper:
        return q
    inside = [c for c in (q - TWO_PI, q + TWO_PI) if lower <= c <= upper]
    if inside:
        return min(inside, key=lambda c: abs(c - q_old))
    d_lower = abs(math.remainder(theta - lower, TWO_PI))
    d_upper = abs(math.remainder(theta - upper, TWO_PI))
    return lower if d_lower <= d_upper else upper
