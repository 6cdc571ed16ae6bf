"""The FABRIK passes over a kinematic tree (a serial chain is the one-tip case).

:class:`FabrikTree` precomputes the geometry of a :class:`~ik_node.model.chain.Chain` once;
:meth:`FabrikTree.run` iterates forward and backward passes for one set of targets (the passes,
in numpy: :mod:`~ik_node.solvers.fabrik.tree_passes`; the loop and its stall rule, shared with
the serial passes: :mod:`~ik_node.solvers.fabrik.iteration`). A joint's frame and the tips are
placed by the kernel library's FABRIK forward kinematics in plain Python
(:data:`ik_node.kernels.fk.plain`, on each joint's row as a tuple of floats), the functions the
compiled tree passes run; the passes keep their numpy arrays and convert at that boundary.

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
for tips, weighted ``TIP_FIT_WEIGHT``). If every point lies on the axis, the joint fits all its
targeted descendants, and keeps its angle if those are on the axis too. On a UR5 the classic
rule alone does not converge; the 'points' fit does.

After the passes, optionally, a finishing step that is not FABRIK
(:meth:`~ik_node.solvers.fabrik.tree_passes.TreePasses.polish`): damped least squares on the stacked
position Jacobian of the targeted tips, tried when a FABRIK iteration crawls. When it crawls too,
the run counts as stalled (a local minimum, usually at a joint limit) and restarts at once instead
of creeping on.

Joints that move no targeted tip keep their value (an untargeted tip keeps its configuration
relative to its branch). Chains with prismatic joints never get here: the solver refuses them.
"""

from __future__ import annotations

from typing import List, Tuple

import numpy as np

from ik_node.kernels import fk
from ik_node.kernels.small_matrix import Mat, Vec
from ik_node.model.chain import Chain
from ik_node.solvers.fabrik.iteration import (EPS_M, PARALLEL_COS, FabrikProblem, FabrikRun,
                                              FabrikSettings, iterate)
from ik_node.solvers.fabrik.tree_passes import TreePasses

_base_frame, _zero_frame, _turned, _slid, _point_in = (
    fk.plain.base_frame, fk.plain.zero_frame, fk.plain.turned, fk.plain.slid, fk.plain.point_in)


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
        #: Each joint's FABRIK model row (:func:`~ik_node.kernels.fk.fabrik_row`: its frame,
        #: axis and Rodrigues' terms), each tip's offset: tuples of floats for the FK.
        self.rows = [fk.fabrik_row(self.R_tp[i], self.t_tp[i], self.axes[i]) for i in range(n)]
        self.tip_offsets = [tuple(float(v) for v in t) for t in self.t_tip]
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
                ok = self.r_perp_norm[i][j] > EPS_M
                if ok and c < n and self.revolute[c]:
                    r = self.t_tp[c]
                    along = abs(float((self.R_tp[c] @ self.axes[c]) @ r))
                    ok = along <= PARALLEL_COS * float(np.linalg.norm(r))
                flags.append(ok)
            self.informative.append(flags)

    def _offset(self, node: int) -> np.ndarray:
        return self.t_tp[node] if node < self.n else self.t_tip[node - self.n]

    # ----------------------------------------------------------------------------- geometry
    def rebuild(self, q: np.ndarray, x: np.ndarray, R: np.ndarray) -> None:
        """Fill node positions ``x`` (N, 3) and joint rotations ``R`` (n, 3, 3) = FK of ``q``."""
        for i in range(self.n):
            self.place(i, q, x, R)
        self.place_tips(x, R)

    def frame(self, i: int, x: np.ndarray, R: np.ndarray) -> Tuple[Mat, Vec]:
        """``(R0, x_i)``: joint i's q = 0 rotation (row-major 9-tuple) and origin (3-tuple) in
        the frame of its parent joint as placed in ``x`` and ``R``
        (:func:`~ik_node.kernels.fk.zero_frame`)."""
        p = self.node_parent[i]
        if p < 0:
            return _base_frame(self.rows[i])
        return _zero_frame(self.rows[i], R[p].ravel().tolist(), x[p].tolist())

    def place(self, i: int, q: np.ndarray, x: np.ndarray, R: np.ndarray) -> None:
        """Joint i's rotation and origin at ``q[i]`` into ``R`` and ``x``, its parent placed."""
        R0, xi = self.frame(i, x, R)
        self.place_from(i, float(q[i]), R0, xi, x, R)

    def place_from(self, i: int, q_i: float, R0: Mat, xi: Vec, x: np.ndarray, R: np.ndarray
                   ) -> None:
        """Joint i's rotation and origin at ``q_i`` from its :meth:`frame` ``(R0, xi)``."""
        row = self.rows[i]
        if self.revolute[i]:
            R[i].flat = _turned(row, R0, q_i)
        else:
            R[i].flat = R0
            xi = _slid(row, R0, xi, q_i)
        x[i] = xi

    def place_tips(self, x: np.ndarray, R: np.ndarray) -> None:
        """Every tip's position from its joint's placed frame."""
        n = self.n
        for k, t in enumerate(self.tip_offsets):
            p = self.node_parent[n + k]
            x[n + k] = t if p < 0 else _point_in(R[p].ravel().tolist(), x[p].tolist(), t)

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

    # ---------------------------------------------------------------------------------- run
    def run(self, problem: FabrikProblem, settings: FabrikSettings) -> FabrikRun:
        """Iterate FABRIK for ``problem`` until every targeted tip is within the tolerance
        (:func:`~ik_node.solvers.fabrik.iteration.iterate` over
        :class:`~ik_node.solvers.fabrik.tree_passes.TreePasses`)."""
        return iterate(TreePasses(self, problem, settings), problem, settings)
