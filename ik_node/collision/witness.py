"""Where two links are closest: the witness points and normal of each pair near contact.

A descent that keeps links apart needs more than a yes or no: for each checked pair within
reach, the signed distance of its closest pieces, a point on each and the direction along which
the distance grows. All of it comes from python-fcl's narrow phase on the same pieces the
check measures (convex hulls of meshes, boxes, cylinders, spheres): for pieces apart, the
nearest points of its distance query; for pieces in contact, the contact point, normal and
depth of its contact query (the normal taken from the second piece towards the first). The
pairs measured are those whose broad-phase lower bound (capsule gap, or the gap across a
plane of the kernel's GJK) is below the padding plus the reach, as in
:meth:`~ik_node.collision.check.CollisionChecker.is_free`. The ground plane and obstacles give
witnesses too: a link's lowest hull vertex above the plane, python-fcl against an obstacle.

Hull distances are lower bounds of the raw meshes' distances (a hull encloses its mesh), so a
pair held a padding apart by its witnesses is free by the check.
"""

from __future__ import annotations

from typing import List, NamedTuple, Optional

import numpy as np

from ik_node.collision.capsules import segment_distances

#: ``link_b`` of a witness against the world (the ground plane or an obstacle): nothing moves it.
WORLD = -1


class Witness(NamedTuple):
    """The closest points of a checked pair of links, or of a link and the world (base frame).

    Attributes:
        link_a: index of the first link (of ``model.links``).
        link_b: index of the second link, or :data:`WORLD`.
        distance_m: signed distance of their closest pieces [m] (negative: penetration depth).
        point_a, point_b: the closest point of each [m] (in contact: both the contact point).
        normal: unit vector from ``point_b`` towards ``point_a``: moving link a along it (or
            link b against it) increases the distance.
    """

    link_a: int
    link_b: int
    distance_m: float
    point_a: np.ndarray
    point_b: np.ndarray
    normal: np.ndarray


def piece_witness(checker, obj_a, obj_b) -> Optional[tuple]:
    """``(distance, point_a, point_b, normal)`` of two placed python-fcl objects (see
    :class:`Witness`), or None where python-fcl gives no direction (touching exactly)."""
    fcl = checker._fcl
    result = fcl.DistanceResult()
    d = fcl.distance(obj_a, obj_b, checker._request, result)
    if d > 0.0:
        point_a = np.array(result.nearest_points[0], dtype=float)
        point_b = np.array(result.nearest_points[1], dtype=float)
        n = point_a - point_b
        norm = float(np.linalg.norm(n))
        if norm > 1e-12:
            return d, point_a, point_b, n / norm
    contact = fcl.CollisionResult()
    fcl.collide(obj_a, obj_b, checker._contact_request, contact)
    if not contact.contacts:
        return None
    deepest = max(contact.contacts, key=lambda c: c.penetration_depth)
    n = -np.array(deepest.normal, dtype=float)  # python-fcl's normal: from a towards b
    norm = float(np.linalg.norm(n))
    if not norm > 1e-12:
        return None
    point = np.array(deepest.pos, dtype=float)
    return -float(deepest.penetration_depth), point, point, n / norm


def pair_witness(checker, T_links: np.ndarray, i: int, j: int,
                 quats: Optional[np.ndarray] = None) -> Optional[Witness]:
    """The witness of links ``i`` and ``j`` at link transforms ``T_links``: that of their
    closest pieces."""
    best = None
    objects_b = checker._placed(T_links, j, quats)
    for obj_a in checker._placed(T_links, i, quats):
        for obj_b in objects_b:
            found = piece_witness(checker, obj_a, obj_b)
            if found is not None and (best is None or found[0] < best[0]):
                best = found
    return None if best is None else Witness(i, j, float(best[0]), *best[1:])


def witnesses(checker, q, reach: float) -> List[Witness]:
    """The witnesses of every checked pair, and of every moving link against the world, closer
    than the checker's padding plus ``reach`` [m] at configuration ``q``."""
    T, gaps, quats = checker._screen(q)
    limit = checker.padding + reach
    out: List[Witness] = []
    for m in np.flatnonzero(gaps < limit).tolist():
        i, j = checker.pairs[m]
        found = pair_witness(checker, T, int(i), int(j), quats)
        if found is not None and found.distance_m < limit:
            out.append(found)
    if not checker.world.empty:
        out += world_witnesses(checker, np.array(T), limit)
    return out


def world_witnesses(checker, T_links: np.ndarray, limit: float) -> List[Witness]:
    """The witnesses of moving links closer than ``limit`` [m] to the ground plane (their
    lowest hull vertex, the normal straight up) or to an obstacle (python-fcl)."""
    model, world = checker.model, checker.world
    out: List[Witness] = []
    a, b = model.capsule_ends(T_links)
    objects = world._objects(checker._fcl) if world.obstacles else []
    up = np.array([0.0, 0.0, 1.0])
    for k in range(len(model.links)):
        if not model.moving_joints(k):
            continue
        caps = model.caps_of_link[k]
        if world.ground_z is not None:
            points = checker.link_points(k) @ T_links[k, :3, :3].T + T_links[k, :3, 3]
            lowest = int(np.argmin(points[:, 2]))
            d = float(points[lowest, 2] - world.ground_z)
            if d < limit:
                floor = points[lowest].copy()
                floor[2] = world.ground_z
                out.append(Witness(k, WORLD, d, points[lowest].copy(), floor, up))
        for ob, obj in zip(world.obstacles, objects):
            centre = ob.T_base_obstacle[:3, 3]
            gap = float(np.min(segment_distances(a[caps], b[caps], centre, centre) -
                               model.radius[caps])) - ob.bounding_radius
            if gap >= limit:
                continue
            best = None
            for piece_obj in checker._placed(T_links, k):
                found = piece_witness(checker, piece_obj, obj)
                if found is not None and (best is None or found[0] < best[0]):
                    best = found
            if best is not None and best[0] < limit:
                out.append(Witness(k, WORLD, float(best[0]), *best[1:]))
    return out

