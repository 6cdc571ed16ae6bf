"""A joint's motion as a 4 x 4 transform, written once for the Python path's numpy kinematics.

A revolute joint turns about its unit axis ``a`` by ``q`` [rad] (Rodrigues' formula,
``R(q) = I cos q + [a]x sin q + a a^T (1 - cos q)``); a prismatic joint slides along it by ``q``
[m]. :meth:`ik_node.model.chain.Chain.local_transforms` takes every joint's motion from here,
batched, and :func:`ik_node.model.urdf_reading.motion_transform` any URDF joint's. (A serial
chain's generated plain-float kinematics, :mod:`ik_node.model.fast_kinematics`, and the
compiled kernels, :mod:`ik_node.kernels.fk`, are the other paths.)
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


def skew(v: Sequence[float]) -> np.ndarray:
    """``[v]x``, the 3 x 3 matrix of the cross product ``v x .``."""
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


class JointMotions:
    """The motions of ``n`` joints, Rodrigues' terms precomputed.

    Args:
        axes: each joint's unit axis in its own frame, ``(n, 3)``.
        prismatic: whether each joint slides (else it turns), ``(n,)``.
    """

    def __init__(self, axes, prismatic):
        self.axes = np.asarray(axes, dtype=float).reshape(-1, 3)
        n = len(self.axes)
        self.prismatic = np.asarray(prismatic, dtype=bool).reshape(n)
        self._K = np.array([skew(a) for a in self.axes]).reshape(n, 3, 3)
        self._aaT = np.einsum('ni,nj->nij', self.axes, self.axes)

    def __call__(self, q) -> np.ndarray:
        """Each joint's motion at ``q`` [rad or m], shape ``(..., n)``: ``(..., n, 4, 4)``."""
        q = np.asarray(q, dtype=float)
        c, s = np.cos(q)[..., None, None], np.sin(q)[..., None, None]
        R = c * np.eye(3) + s * self._K + (1.0 - c) * self._aaT
        pris = self.prismatic
        if pris.any():
            R = np.where(pris[:, None, None], np.eye(3), R)
        M = np.zeros(q.shape + (4, 4))
        M[..., :3, :3] = R
        M[..., 3, 3] = 1.0
        if pris.any():
            M[..., :3, 3] = np.where(pris[:, None], self.axes * q[..., None], 0.0)
        return M
