"""Is a configuration free of collisions? Capsules first, GJK on the convex hulls where they
cannot decide, the raw meshes where the hulls call a pair colliding.

:class:`CollisionChecker` checks the pairs of links that the pair table keeps
(:mod:`ik_node.collision.pairs`) and each link against the world (:mod:`ik_node.collision.world`).
A pair is free when a lower bound of its hulls' distance exceeds the padding: its capsule gap, or
the gap across a plane that separates the links' hull vertices (found by GJK; both in the
compiled kernel of :mod:`ik_node.collision.kernel`); it collides when the kernel's GJK finds the
hulls within the padding and they decide for the pair (links of one mesh hull or box each);
otherwise python-fcl measures the signed distance between the pieces (convex hulls of meshes,
boxes, cylinders, spheres as they are). Where two pieces' hulls are closer than the padding and
one is the hull of a closed concave mesh, python-fcl measures the distance between the raw
triangle meshes (BVH) instead (``mesh_confirm``, on by default: a hull is larger than its mesh
where the mesh is concave). The pair collides when that distance is below the padding, or when
one piece lies wholly inside a closed mesh (a point of one tested against the other by ray
parity). So a configuration the check calls free has every checked pair at least ``padding``
apart by its meshes (by its hulls where a mesh is not closed).
"""

from __future__ import annotations

import functools
import math
import threading
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ik_node.collision.dependencies import require
from ik_node.collision.kernel import compiled_kernel
from ik_node.collision.model import CollisionModel
from ik_node.collision.packing import link_hull, pack
from ik_node.collision.report import CollisionReport, Contact
from ik_node.collision.witness import Witness, witnesses
from ik_node.collision.world import World

_IDENTITY = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
#: Default padding [m]: a pair closer than this counts as colliding.
DEFAULT_PADDING_M = 0.005


def _one_at_a_time(method):
    """``method`` under the checker's lock: its queries share buffers and python-fcl objects
    (two threads, a node's solve and its status, take turns)."""
    @functools.wraps(method)
    def locked(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)
    return locked


class CollisionChecker:
    """Self-collision (and world) checks of a chain's configurations.

    Args:
        model: the links' geometry and capsules.
        pairs: the link pairs to check, as ``(link_a, link_b)`` names.
        padding: pairs closer than this are colliding [m] (>= 0).
        world: the ground plane and obstacles (None: none).
        mesh_confirm: measure the raw meshes where two hulls are within the padding (the
            module docstring); False: the hulls decide.
    """

    def __init__(self, model: CollisionModel, pairs: Sequence[Tuple[str, str]],
                 padding: float = DEFAULT_PADDING_M, world: Optional[World] = None,
                 mesh_confirm: bool = True):
        if not (math.isfinite(padding) and padding >= 0.0):
            raise ValueError(f'padding must be a finite number >= 0 [m], got {padding!r}')
        self._lock = threading.RLock()
        self.model = model
        self.padding = float(padding)
        self.world = world if world is not None else World()
        self.pair_names = tuple(tuple(p) for p in pairs)
        self.pairs = np.array([[model.index[a], model.index[b]] for a, b in self.pair_names],
                              dtype=np.int64).reshape(-1, 2)
        chain = model.chain
        self._kernel = compiled_kernel()
        self._hull_points = [np.vstack([p.hull_vertices for p in model.pieces[link]])
                             for link in model.links]
        #: Per checked pair, the joint in whose frame its witness normal is kept (-1: the base
        #: frame): the first joint that moves one link of the pair against the other. Past
        #: it, the normal that parted the pair turns with the pair (a shoulder link turning
        #: above a fixed base keeps its normal in the frame of the turning joint).
        self._witness_joint = np.array(
            [min(model.moving_joints(int(i)) ^ model.moving_joints(int(j)), default=-1)
             for i, j in self.pairs.tolist()], dtype=np.int64)
        packed = pack(chain, model, np.column_stack([self.pairs, self._witness_joint]),
                      [link_hull(points) for points in self._hull_points])
        self._kernel_args = (packed.floats, packed.ints, packed.work, self.padding)
        views = packed.views
        self._frames, self._links = views['frames'], views['links']
        self._gaps, self._quats = views['gaps'], views['quats']
        #: Per checked pair, the unit normal (in the frame of its witness joint) that held the
        #: pair's hulls apart last: the kernel's GJK starts from it (zero: none yet).
        self._witness = views['witness']
        #: Per checked pair, the kernel's upper bound of its hulls' distance (inf: not measured).
        self._upper = views['upper']
        self._fcl = require('fcl')
        self._objects = [[_fcl_object(self._fcl, piece) for piece in model.pieces[link]]
                         for link in model.links]
        # Unsigned distance (FCL's signed-distance query can loop forever on concentric
        # spheres); a penetration depth comes from a contact query (see signed_distance).
        self._request = self._fcl.DistanceRequest(enable_nearest_points=True)
        self._nearest = None  # the closest points of the last distance measured, or None
        self._contact_request = self._fcl.CollisionRequest(num_max_contacts=1,
                                                           enable_contact=True)
        self.mesh_confirm = bool(mesh_confirm)
        self._exact = [[exact_piece(self._fcl, piece) if mesh_confirm else None
                        for piece in model.pieces[link]] for link in model.links]
        #: Per link, whether python-fcl measures it as the kernel does: one piece, a mesh's
        #: hull or a box, no raw mesh measured instead.
        self._hulls_decide = [len(pieces) == 1 and pieces[0].kind in ('mesh', 'box') and
                              (exact[0] is None or exact[0].bvh is None)
                              for pieces, exact in zip(model.pieces.values(), self._exact)]
        self._warm()

    def _warm(self) -> None:
        """Run every query once (mid configuration), so nothing is built inside a solve's
        budget (the kernel loaded, python-fcl's world objects made); the kernel's witness
        normals cleared after, so the answers do not depend on the warm-up."""
        q = self.model.chain.mid_configuration()
        self.is_free(q)
        self.report(q)
        self.witnesses(q, 0.03)
        self._witness[:] = 0.0

    # ------------------------------------------------------------------------ broad phase
    def _screen(self, q) -> Tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]:
        """Link transforms (L, 4, 4), capsule gaps (P,) and the links' quaternions (L, 4) (None
        without the compiled kernel) of one configuration."""
        q = np.asarray(q, dtype=float)
        if self._kernel is not None:
            self._kernel(q, *self._kernel_args)
            return self._links, self._gaps, self._quats
        T = self.model.link_transforms(q)
        return T, self.model.pair_gaps(T, self.pairs), None

    # ---------------------------------------------------------------------- narrow phase
    def pair_distance(self, T_links: np.ndarray, i: int, j: int,
                      quats: Optional[np.ndarray] = None, exact: Optional[bool] = None,
                      depth: bool = True) -> float:
        """Signed distance [m] between links ``i`` and ``j`` (indices of ``model.links``) at
        link transforms ``T_links`` (with their quaternions ``quats``, when known): the
        smallest over their pieces (negative: penetration; without ``depth``, any value <= 0
        for pieces in contact, their depth not measured). ``exact`` (default
        ``mesh_confirm``): pieces whose hulls are closer than the padding are measured by their
        meshes (:meth:`_mesh_distance`)."""
        exact = self.mesh_confirm if exact is None else exact
        pad = self.padding
        best = math.inf
        objects_b = self._placed(T_links, j, quats)
        for a, obj_a in enumerate(self._placed(T_links, i, quats)):
            for b, obj_b in enumerate(objects_b):
                d = self.signed_distance(obj_a, obj_b, depth)
                if exact and d < pad and d < best:
                    d = self._mesh_distance(T_links, i, a, j, b, obj_a, obj_b, d)
                if d < best:
                    best = d
        return best

    def _keep_witness(self, m: int) -> None:
        """Keep the direction of the closest points of pair ``m``'s last measure (when its
        closest piece pair was measured last and apart) in the frame of its witness joint, for
        the kernel (the joint frames of the configuration checked last, ``_frames``)."""
        nearest = self._nearest
        if nearest is None:
            return
        (ax, ay, az), (bx, by, bz) = nearest[0].tolist(), nearest[1].tolist()
        nx, ny, nz = ax - bx, ay - by, az - bz
        norm = math.sqrt(nx * nx + ny * ny + nz * nz)  # floats: numpy costs more at this size
        if norm > 1e-9:
            f = int(self._witness_joint[m])  # the normal in that joint's frame: R^T n / |n|
            R = self._frames[f, :3, :3].tolist() if f >= 0 else _IDENTITY
            w = self._witness[m]
            for r in range(3):
                w[r] = (R[0][r] * nx + R[1][r] * ny + R[2][r] * nz) / norm

    def _mesh_distance(self, T_links, i: int, a: int, j: int, b: int, obj_a, obj_b,
                       d_hull: float) -> float:
        """The distance [m] between piece ``a`` of link ``i`` and piece ``b`` of link ``j`` by
        their meshes (a primitive as it is), given their hulls' ``d_hull`` (placed as ``obj_a``,
        ``obj_b``): at least ``d_hull``; ``d_hull`` itself when the meshes touch or one lies
        inside the other, or when a mesh is not closed (the hull decides)."""
        ea, eb = self._exact[i][a], self._exact[j][b]
        if ea is None or eb is None or (ea.bvh is None and eb.bvh is None):
            return d_hull  # not closed, or both measured exactly by their hulls already
        fcl = self._fcl
        placed = []
        for e, obj, k in ((ea, obj_a, i), (eb, obj_b, j)):
            if e.bvh is None:
                placed.append(obj)
            else:
                T = T_links[k]
                e.bvh.setRotation(T[:3, :3])
                e.bvh.setTranslation(T[:3, 3])
                placed.append(e.bvh)
        d = fcl.distance(placed[0], placed[1], self._request, fcl.DistanceResult())
        if d <= 0.0:
            return min(d_hull, 0.0)
        if d_hull <= 0.0:  # the hulls overlap, the surfaces do not meet: one inside the other?
            T_a, T_b = T_links[i], T_links[j]
            p_a = T_a[:3, :3] @ ea.point + T_a[:3, 3]  # base frame
            p_b = T_b[:3, :3] @ eb.point + T_b[:3, 3]
            if eb.contains(T_b[:3, :3].T @ (p_a - T_b[:3, 3])) or \
                    ea.contains(T_a[:3, :3].T @ (p_b - T_a[:3, 3])):
                return d_hull
        return max(d, d_hull)

    def signed_distance(self, obj_a, obj_b, depth: bool = True) -> float:
        """Distance [m] between two placed python-fcl objects; in collision, minus the
        penetration depth of their deepest contact (0.0 when FCL reports none; without
        ``depth``, FCL's distance query alone: a value <= 0)."""
        fcl = self._fcl
        result = fcl.DistanceResult()
        d = fcl.distance(obj_a, obj_b, self._request, result)
        self._nearest = result.nearest_points if d > 0.0 else None
        if d >= 0.0 or not depth:
            return d
        result = fcl.CollisionResult()
        fcl.collide(obj_a, obj_b, self._contact_request, result)
        return -max((c.penetration_depth for c in result.contacts), default=0.0)

    def _placed(self, T_links: np.ndarray, k: int, quats: Optional[np.ndarray] = None) -> list:
        """The python-fcl objects of link ``k``'s pieces, moved to ``T_links[k]``."""
        T_link = T_links[k]
        out = []
        for (obj, T_piece) in self._objects[k]:
            if T_piece is None and quats is not None:
                obj.setQuatRotation(quats[k])
                obj.setTranslation(T_link[:3, 3])
            else:
                T = T_link if T_piece is None else T_link @ T_piece
                obj.setRotation(T[:3, :3])
                obj.setTranslation(T[:3, 3])
            out.append(obj)
        return out

    # --------------------------------------------------------------------------- queries
    @_one_at_a_time
    def is_free(self, q) -> bool:
        """True when every checked pair is at least ``padding`` apart (by the hulls, or by the
        meshes where the hulls are closer: ``mesh_confirm``) and no link is within ``padding``
        of the world. Stops at the first collision."""
        q = np.asarray(q, dtype=float)
        pad = self.padding
        upper = None  # the kernel's GJK upper bounds of the hulls' distances
        if self._kernel is not None:
            smallest = self._kernel(q, *self._kernel_args)
            T, gaps, quats, upper = self._links, self._gaps, self._quats, self._upper
        else:  # the Python screen: capsule gaps only, no upper bounds
            T, gaps, quats = self._screen(q)
            smallest = gaps.min() if len(gaps) else math.inf
        if smallest <= pad:
            close = np.flatnonzero(gaps <= pad)
            if len(close) > 1:  # the deepest capsule overlap first: the likeliest contact
                close = close[np.argsort(gaps[close])]
            for m in close.tolist():
                i, j = self.pairs[m]
                if upper is not None and upper[m] < pad and self._hulls_decide[i] and \
                        self._hulls_decide[j]:
                    return False  # the kernel's GJK found the hulls within the padding
                if self.pair_distance(T, int(i), int(j), quats, depth=False) < pad:
                    return False
                self._keep_witness(m)
        if self.world.empty:
            return True
        return not self.world.contacts(self, T, first_only=True)

    def answer_is_free(self, q: np.ndarray) -> bool:
        """:meth:`is_free` of a solver's answer ``q``, in one compiled call where ``q`` is a
        float64 vector, there is no world and the kernel finds every pair apart."""
        kernel = self._kernel
        if kernel is not None and self.world.empty and type(q) is np.ndarray and \
                q.dtype == np.float64 and q.ndim == 1 and q.flags.c_contiguous:
            with self._lock:
                if kernel(q, *self._kernel_args) > self.padding:
                    return True
        return self.is_free(q)

    @_one_at_a_time
    def report(self, q) -> CollisionReport:
        """Every checked pair closer than the padding, and the closest pair, by GJK: pairs
        measured in the order of their capsule gaps (lower bounds of their distances), no
        further once a gap exceeds the padding and the closest distance measured."""
        T, gaps, _ = self._screen(q)
        T = np.array(T)
        gaps = np.array(gaps)
        contacts: List[Contact] = []
        closest: Optional[Contact] = None
        for m in np.argsort(gaps, kind='stable').tolist():
            if gaps[m] >= self.padding and closest is not None and \
                    gaps[m] >= closest.distance_m:
                break
            i, j = self.pairs[m]
            d = self.pair_distance(T, int(i), int(j))
            contact = Contact(*self.pair_names[m], float(d))
            if d < self.padding:
                contacts.append(contact)
            if closest is None or d < closest.distance_m:
                closest = contact
        if not self.world.empty:
            for contact in self.world.contacts(self, T, first_only=False, all_distances=True):
                if contact.distance_m < self.padding:
                    contacts.append(contact)
                if closest is None or contact.distance_m < closest.distance_m:
                    closest = contact
        contacts.sort(key=lambda c: c.distance_m)
        return CollisionReport(not contacts, tuple(contacts), closest)

    @_one_at_a_time
    def free_mask(self, Q: np.ndarray, world: bool = True) -> np.ndarray:
        """``is_free`` of every row of ``Q`` (k, n): capsules for all rows at once (numpy), GJK
        only where they cannot decide; ``world`` False: self-collision only."""
        Q = np.asarray(Q, dtype=float).reshape(-1, self.model.chain.n)
        T = self.model.link_transforms(Q)
        gaps = self.model.pair_gaps(T, self.pairs)
        i, j = self.pairs[:, 0], self.pairs[:, 1]
        free = np.ones(len(Q), dtype=bool)
        for row, m in zip(*np.nonzero(gaps <= self.padding)):
            if free[row] and self.pair_distance(T[row], int(i[m]), int(j[m]),
                                                depth=False) < self.padding:
                free[row] = False
        if world and not self.world.empty:
            for row in np.flatnonzero(free).tolist():
                if self.world.contacts(self, T[row], first_only=True):
                    free[row] = False
        return free

    @_one_at_a_time
    def witnesses(self, q, reach: float) -> List[Witness]:
        """The closest points and normals of every checked pair (and moving link against the
        world) closer than ``padding + reach`` [m] at ``q`` (:mod:`ik_node.collision.witness`):
        what a descent needs to push them apart."""
        return witnesses(self, q, reach)

    def link_points(self, k: int) -> np.ndarray:
        """Every hull vertex of link ``k`` in its own frame, (m, 3) [m]."""
        return self._hull_points[k]


def _fcl_object(fcl, piece) -> Tuple[object, Optional[np.ndarray]]:
    """A python-fcl collision object for a piece and the transform from its link to it (None
    for a hull, whose vertices are in the link frame already)."""
    if piece.kind == 'mesh':
        faces = np.hstack([np.full((len(piece.hull_faces), 1), 3),
                           piece.hull_faces]).ravel()
        shape = fcl.Convex(piece.hull_vertices, len(piece.hull_faces), faces)
        return fcl.CollisionObject(shape, fcl.Transform()), None
    if piece.kind == 'box':
        shape = fcl.Box(*piece.size)
    elif piece.kind == 'cylinder':
        shape = fcl.Cylinder(*piece.size)
    else:
        shape = fcl.Sphere(*piece.size)
    return fcl.CollisionObject(shape, fcl.Transform()), piece.T_link_piece


class ExactPiece:
    """A piece as :meth:`CollisionChecker._mesh_distance` measures it: its raw mesh as a
    python-fcl BVH (None where its hull object serves: a primitive, a convex mesh), and a
    closed triangle set
    (``soup`` (m, 3, 3), in its link's frame) with a point of the piece (``point``) for the
    test of one piece lying wholly inside another."""

    #: Ray directions of the parity test (not along any axis or diagonal): a point is inside
    #: when any ray crosses the triangles an odd number of times.
    RAYS = np.array([[0.5774, 0.5771, 0.5777], [-0.6123, 0.3527, 0.7075],
                     [0.2381, -0.8454, 0.4781]])

    def __init__(self, bvh, soup: np.ndarray, point: np.ndarray):
        self.bvh = bvh
        self.soup = soup
        self.point = point
        self._v0 = soup[:, 0]
        self._e1 = soup[:, 1] - soup[:, 0]
        self._e2 = soup[:, 2] - soup[:, 0]
        self._low = soup.reshape(-1, 3).min(axis=0)
        self._high = soup.reshape(-1, 3).max(axis=0)

    def contains(self, p: np.ndarray) -> bool:
        """Whether point ``p`` (in the soup's frame) may lie inside the closed triangles (ray
        parity, Moller-Trumbore; any of three rays odd: inside, the cautious answer where a ray
        grazes an edge)."""
        if np.any(p < self._low) or np.any(p > self._high):
            return False
        s = p - self._v0
        for ray in self.RAYS:
            h = np.cross(ray, self._e2)
            det = np.einsum('ij,ij->i', self._e1, h)
            ok = np.abs(det) > 1e-15
            inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
            u = np.einsum('ij,ij->i', s, h) * inv
            qv = np.cross(s, self._e1)
            v = (qv @ ray) * inv
            t = np.einsum('ij,ij->i', self._e2, qv) * inv
            hits = ok & (u >= 0.0) & (v >= 0.0) & (u + v <= 1.0) & (t > 0.0)
            if int(np.count_nonzero(hits)) % 2 == 1:
                return True
        return False


#: A closed mesh filling at least this share of its hull's volume is measured by its hull.
CONVEX_SHARE = 0.995


def exact_piece(fcl, piece) -> Optional[ExactPiece]:
    """The :class:`ExactPiece` of a piece (without a BVH where its hull measures it exactly: a
    primitive, or a mesh that fills its hull, ``CONVEX_SHARE``), or None for a mesh that is
    not closed (watertight: its hull decides for it)."""
    if piece.kind != 'mesh':
        # its hull's triangles enclose it; its origin is inside it
        soup = piece.hull_vertices[piece.hull_faces]
        return ExactPiece(None, soup, piece.T_link_piece[:3, 3].copy())
    trimesh = require('trimesh')
    mesh = trimesh.Trimesh(piece.mesh_vertices, piece.mesh_faces, process=True)
    if not mesh.is_watertight:
        return None
    hull = trimesh.Trimesh(piece.hull_vertices, piece.hull_faces, process=False)
    if abs(mesh.volume) >= CONVEX_SHARE * abs(hull.volume):
        # convex: its hull is the mesh and measures it
        return ExactPiece(None, piece.hull_vertices[piece.hull_faces],
                          piece.hull_vertices[0].copy())
    bvh = fcl.BVHModel()
    bvh.beginModel(len(piece.mesh_vertices), len(piece.mesh_faces))
    bvh.addSubModel(piece.mesh_vertices, piece.mesh_faces)
    bvh.endModel()
    soup = piece.mesh_vertices[piece.mesh_faces]
    return ExactPiece(fcl.CollisionObject(bvh, fcl.Transform()), soup,
                      piece.mesh_vertices[piece.mesh_faces[0, 0]].copy())


def exact_mesh_objects(model: CollisionModel) -> Dict[str, list]:
    """Per link, python-fcl objects of its raw triangle meshes (BVH) and primitives, with their
    transforms from the link: the independent exact check of tests and benchmarks."""
    fcl = require('fcl')
    out = {}
    for link in model.links:
        items = []
        for piece in model.pieces[link]:
            if piece.kind == 'mesh':
                bvh = fcl.BVHModel()
                bvh.beginModel(len(piece.mesh_vertices), len(piece.mesh_faces))
                bvh.addSubModel(piece.mesh_vertices, piece.mesh_faces)
                bvh.endModel()
                items.append((fcl.CollisionObject(bvh, fcl.Transform()), None))
            else:
                items.append(_fcl_object(fcl, piece))
        out[link] = items
    return out
