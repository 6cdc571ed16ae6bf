"""The collision model of a chain: each link's collision pieces, where the link hangs in the chain
and the capsule that encloses it.

A link with collision geometry moves with the last joint of the chain between the base and it
(every joint of the URDF that is not in the chain stays at 0, as for
:meth:`~ik_node.model.chain.Chain.link_transform`): ``T_base_link(q) = frames(q)[j] @
T_frame_link``, or a constant for links no chain joint moves (the base, a table, the other arm).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import numpy as np

from ik_node.collision.capsules import fit_capsules
from ik_node.collision.geometry import Piece, pieces_from_robot
from ik_node.errors import ChainError
from ik_node.model.chain import Chain
from ik_node.model.urdf_reading import T_root_link, motion_transform, origin_transform


class CollisionModel:
    """Collision pieces, placement and capsules of every link with ``<collision>`` geometry.

    Attributes:
        chain: the chain whose joints move the links.
        links: names of the links with geometry (L), in URDF order.
        pieces: ``{link: [Piece, ...]}``.
        link_frame: (L,) index of the chain joint each link moves with, -1 for none.
        T_frame_link: (L, 4, 4) constant offset from that joint's frame (or the base frame).
        cap_link: (C,) the link of each capsule (a link has one or more, enclosing its hulls).
        seg_a, seg_b: (C, 3) capsule segment ends in their link's frame [m].
        radius: (C,) capsule radii [m].
        digest: hex digest of the description's geometry and the chain (keys the pair cache).
    """

    def __init__(self, chain: Chain, pieces: Dict[str, List[Piece]], digest: str):
        self.chain = chain
        self.pieces = pieces
        self.links: Tuple[str, ...] = tuple(pieces)
        self.index = {link: k for k, link in enumerate(self.links)}
        placement = [link_placement(chain, link) for link in self.links]
        self.link_frame = np.array([j for j, _ in placement], dtype=np.int64)
        self.T_frame_link = np.array([T for _, T in placement], dtype=float).reshape(-1, 4, 4)
        capsules = [(k, cap) for k, link in enumerate(self.links) for piece in pieces[link]
                    for cap in fit_capsules(piece.hull_vertices, piece.hull_faces)]
        self.cap_link = np.array([k for k, _ in capsules], dtype=np.int64)
        self.seg_a = np.array([c[0] for _, c in capsules], dtype=float).reshape(-1, 3)
        self.seg_b = np.array([c[1] for _, c in capsules], dtype=float).reshape(-1, 3)
        self.radius = np.array([c[2] for _, c in capsules], dtype=float)
        self.caps_of_link = [np.flatnonzero(self.cap_link == k) for k in range(len(self.links))]
        self.digest = f'{digest}|{chain.base_link}|{",".join(chain.tip_links)}|' \
                      f'{",".join(chain.joint_names)}'

    @classmethod
    def from_chain(cls, chain: Chain, skip_missing: bool = False) -> 'CollisionModel':
        """The collision model of every link of ``chain``'s URDF.

        Raises:
            ChainError: the chain was not built from a URDF.
            CollisionModelError: a missing (unless ``skip_missing``) or unreadable mesh, a
                package not on the ament index, a bad primitive.
            CollisionUnavailable: trimesh, scipy or python-fcl is not installed.
        """
        if chain.robot is None:
            raise ChainError('collision checking needs the URDF the chain was read from')
        pieces, digest = pieces_from_robot(chain.robot, skip_missing=skip_missing)
        return cls(chain, pieces, digest)

    def moving_joints(self, k: int) -> frozenset:
        """The chain joints that move link ``k`` (empty for a link fixed to the base)."""
        j = int(self.link_frame[k])
        out = set()
        while j >= 0:
            out.add(j)
            j = int(self.chain.parents[j])
        return frozenset(out)

    def capsule_pairs(self, pairs: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """``(cap_pairs (P', 2), starts (P,))``: every pair of capsules of each link pair of
        ``pairs`` (P, 2), grouped by link pair; group m starts at ``starts[m]``."""
        rows, starts = [], []
        for i, j in np.asarray(pairs, dtype=np.int64).reshape(-1, 2).tolist():
            starts.append(len(rows))
            rows += [(ci, cj) for ci in self.caps_of_link[i].tolist()
                     for cj in self.caps_of_link[j].tolist()]
        return (np.array(rows, dtype=np.int64).reshape(-1, 2),
                np.array(starts, dtype=np.int64))

    def pair_gaps(self, T_links: np.ndarray, pairs: np.ndarray) -> np.ndarray:
        """Capsule gaps [m] of link pairs ``pairs`` (P, 2) at ``T_links`` (..., L, 4, 4): the
        smallest over their capsules, ``(..., P)``."""
        from ik_node.collision.capsules import segment_distances
        cap_pairs, starts = self.capsule_pairs(pairs)
        if len(starts) == 0:
            return np.zeros(T_links.shape[:-3] + (0,))
        a, b = self.capsule_ends(T_links)
        i, j = cap_pairs[:, 0], cap_pairs[:, 1]
        gaps = segment_distances(a[..., i, :], b[..., i, :], a[..., j, :], b[..., j, :]) - \
            self.radius[i] - self.radius[j]
        return np.minimum.reduceat(gaps, starts, axis=-1)

    def link_transforms(self, q: np.ndarray) -> np.ndarray:
        """``T_base_link`` of every link with geometry, ``(..., L, 4, 4)``, for ``q`` (..., n)."""
        q = np.asarray(q, dtype=float)
        frames = self.chain.joint_frames(q) if self.chain.n else \
            np.zeros(q.shape[:-1] + (0, 4, 4))
        batch = q.shape[:-1]
        out = np.empty(batch + (len(self.links), 4, 4))
        for k, j in enumerate(self.link_frame.tolist()):
            out[..., k, :, :] = self.T_frame_link[k] if j < 0 else \
                frames[..., j, :, :] @ self.T_frame_link[k]
        return out

    def capsule_ends(self, T_links: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """Base-frame capsule ends ``(a, b)``, each ``(..., C, 3)``, of link transforms."""
        T_caps = T_links[..., self.cap_link, :, :]
        R, p = T_caps[..., :3, :3], T_caps[..., :3, 3]
        a = np.einsum('...ij,...j->...i', R, self.seg_a) + p
        b = np.einsum('...ij,...j->...i', R, self.seg_b) + p
        return a, b


def link_placement(chain: Chain, link: str) -> Tuple[int, np.ndarray]:
    """``(j, T_frame_link)``: the chain joint ``link`` moves with (-1: none) and the constant
    transform from that joint's frame (or the base frame) to the link, other joints at 0."""
    robot = chain.robot
    joint_of_child = {joint.child_link: j for j, joint in enumerate(chain.joints)}
    parent_joint = {uj.child: uj for uj in robot.joints}
    T = np.eye(4)
    current = link
    while True:
        if current in joint_of_child:
            return joint_of_child[current], T
        if current == chain.base_link:
            return -1, T
        uj: Optional[object] = parent_joint.get(current)
        if uj is None:  # the root, and the link is not below the base
            T_root_base = T_root_link(robot, chain.base_link, {})
            return -1, np.linalg.inv(T_root_base) @ T_root_link(robot, link, {})
        T = origin_transform(uj) @ motion_transform(uj, 0.0) @ T
        current = uj.parent
