"""GJK (Gilbert-Johnson-Keerthi) on two links' convex hulls, for the check's kernel
(:mod:`ik_node.collision.kernel`, which compiles these functions into itself: numba's cache
checks the kernel's file only, so after editing this one remove
``ik_node/collision/__pycache__/kernel.*.nb*``).

The hulls are vertex sets in their links' frames (:class:`ik_node.collision.kernel.Geometry`,
flat rows of 3), each vertex with its neighbours along the hull's edges. GJK runs on the
difference of the two hulls: each support (the farthest vertex along a direction) is found by
hill climbing from the best of a few seed vertices, and gives a plane whose gap bounds the
distance from below; the simplex's point nearest the origin bounds it from above.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

#: The most GJK iterations per pair.
GJK_ROUNDS = 32
#: GJK has converged when the plane bound is within this share of the simplex's distance.
GJK_TOLERANCE = 1e-6
#: Taken off every plane bound [m]: the rounding of the hulls and of the sums.
ROUNDING_M = 1e-9
#: The faces of a tetrahedron ``0 1 2 3`` with the point opposite each (last).
_TETRA_FACES = np.array([[0, 1, 2, 3], [0, 2, 3, 1], [0, 3, 1, 2], [1, 3, 2, 0]],
                        dtype=np.int64)


class Hulls(NamedTuple):
    """Every link's hull: ``points`` (V, 3) its vertices (link frame, flat), vertex v's
    neighbours ``adj[adj_start[v]:adj_start[v + 1]]``, and ``seeds`` (L, S) the vertices hill
    climbing starts from."""

    points: np.ndarray
    adj_start: np.ndarray
    adj: np.ndarray
    seeds: np.ndarray


def _unit(x, y, z):
    """``(x, y, z)`` made unit length; ``(0, 0, 1)`` for a zero vector."""
    norm = math.sqrt(x * x + y * y + z * z)
    if norm < 1e-12:
        return 0.0, 0.0, 1.0
    return x / norm, y / norm, z / norm


def _turn(R, t, v, back):
    """The vector ``v`` turned by the rotation of the 4x4 ``R[t:t + 16]`` (``back``: by its
    inverse)."""
    x, y, z = v
    if back:
        return (R[t] * x + R[t + 4] * y + R[t + 8] * z, R[t + 1] * x + R[t + 5] * y +
                R[t + 9] * z, R[t + 2] * x + R[t + 6] * y + R[t + 10] * z)
    return (R[t] * x + R[t + 1] * y + R[t + 2] * z, R[t + 4] * x + R[t + 5] * y +
            R[t + 6] * z, R[t + 8] * x + R[t + 9] * y + R[t + 10] * z)


def _support(g, links, k, d):
    """The vertex of link ``k``'s hull (``g``: the :class:`Hulls`; placed by ``links``)
    farthest along ``d`` (base frame), in the base frame: hill climbing from the best of the
    link's seeds."""
    lx, ly, lz = _turn(links, 16 * k, d, True)  # d in the link's frame
    P = g.points
    S = g.seeds.shape[0] // (links.shape[0] // 16)
    best, v = -np.inf, g.seeds[S * k]
    for s in range(S * k, S * k + S):
        u = g.seeds[s]
        h = P[3 * u] * lx + P[3 * u + 1] * ly + P[3 * u + 2] * lz
        if h > best:
            best, v = h, u
    moved = True
    while moved:
        moved = False
        for e in range(g.adj_start[v], g.adj_start[v + 1]):
            u = g.adj[e]
            h = P[3 * u] * lx + P[3 * u + 1] * ly + P[3 * u + 2] * lz
            if h > best:
                best, v, moved = h, u, True
    x, y, z = _turn(links, 16 * k, (P[3 * v], P[3 * v + 1], P[3 * v + 2]), False)
    t = 16 * k
    return x + links[t + 3], y + links[t + 7], z + links[t + 11]


def _gjk(g, links, S, pair, d, pad):
    """``(lower, upper, n)``: bounds [m] of the distance between the hulls (``g``:
    :class:`Hulls`, placed by ``links``) of the links ``pair``, GJK on their difference from
    direction ``d`` (the module docstring; ``S`` (12,) its simplex), and the unit normal (from
    the second link towards the first) of the plane that gives ``lower``."""
    i, j = pair
    vx, vy, vz = d
    k = 0
    lower, upper = -np.inf, np.inf
    n = _unit(vx, vy, vz)
    for it in range(GJK_ROUNDS):
        norm = math.sqrt(vx * vx + vy * vy + vz * vz)
        if norm < 1e-15:
            break
        ax, ay, az = _support(g, links, i, (-vx, -vy, -vz))
        bx, by, bz = _support(g, links, j, (vx, vy, vz))
        px, py, pz = ax - bx, ay - by, az - bz  # the difference's point farthest along -v
        vp = vx * px + vy * py + vz * pz
        if vp / norm > lower:  # min over the difference of n.x: the plane's gap
            lower = vp / norm
            n = (vx / norm, vy / norm, vz / norm)
        if lower - ROUNDING_M > pad or (it > 0 and norm * norm - vp <= GJK_TOLERANCE * norm *
                                        norm):
            break
        S[3 * k], S[3 * k + 1], S[3 * k + 2] = px, py, pz
        k, vx, vy, vz = _closest(S, k + 1)
        upper = min(upper, math.sqrt(vx * vx + vy * vy + vz * vz))
        if k == 4 or upper <= pad:  # the origin inside: the hulls meet; or within the padding
            break
    return lower - ROUNDING_M, upper, n


def _closest(S, k):
    """``(k', vx, vy, vz)``: the point of the simplex of the first ``k`` points of ``S``
    (rows of 3) nearest the origin, and the simplex cut to the ``k'`` points whose hull holds
    it (``k'`` 4, the point 0: the origin is inside)."""
    if k == 1:
        return 1, S[0], S[1], S[2]
    if k == 2:
        v, mask = _on_segment(S, 0, 1)
        return _keep(S, mask), v[0], v[1], v[2]
    if k == 3:
        v, mask = _on_triangle(S, (0, 1, 2))
        return _keep(S, mask), v[0], v[1], v[2]
    best, best_mask = np.inf, 0
    bx, by, bz = 0.0, 0.0, 0.0
    for f in range(4):
        a, b, c, o = _TETRA_FACES[f, 0], _TETRA_FACES[f, 1], _TETRA_FACES[f, 2], \
            _TETRA_FACES[f, 3]
        if _origin_beyond(S, (a, b, c), o):
            v, mask = _on_triangle(S, (a, b, c))
            dd = v[0] * v[0] + v[1] * v[1] + v[2] * v[2]
            if dd < best:
                best, bx, by, bz = dd, v[0], v[1], v[2]
                best_mask = ((mask & 1) << a) | (((mask >> 1) & 1) << b) | \
                    (((mask >> 2) & 1) << c)
    if best == np.inf:
        return 4, 0.0, 0.0, 0.0
    return _keep(S, best_mask), bx, by, bz


def _keep(S, mask):
    """Move the points of ``S`` whose bit is set in ``mask`` first, in order; their count."""
    k = 0
    for r in range(4):
        if mask & (1 << r):
            S[3 * k], S[3 * k + 1], S[3 * k + 2] = S[3 * r], S[3 * r + 1], S[3 * r + 2]
            k += 1
    return k


def _point(S, r):
    """Point ``r`` of ``S`` (rows of 3)."""
    return S[3 * r], S[3 * r + 1], S[3 * r + 2]


def _origin_beyond(S, face, o):
    """Whether the origin lies outside the face ``face`` (three points of ``S``) of the
    tetrahedron, on the side away from its point ``o`` (or the tetrahedron is flat)."""
    ax, ay, az = _point(S, face[0])
    bx, by, bz = _point(S, face[1])
    cx, cy, cz = _point(S, face[2])
    ox, oy, oz = _point(S, o)
    ux, uy, uz = bx - ax, by - ay, bz - az
    vx, vy, vz = cx - ax, cy - ay, cz - az
    nx, ny, nz = uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx
    side_origin = -(ax * nx + ay * ny + az * nz)
    side_o = (ox - ax) * nx + (oy - ay) * ny + (oz - az) * nz
    return side_origin * side_o < 0.0 or side_o == 0.0


def _on_segment(S, a, b):
    """The point of segment ``a b`` (points of ``S``) nearest the origin and the mask of the
    ends it needs (bit 0: a, bit 1: b)."""
    ax, ay, az = _point(S, a)
    bx, by, bz = _point(S, b)
    ux, uy, uz = bx - ax, by - ay, bz - az
    uu = ux * ux + uy * uy + uz * uz
    t = -(ax * ux + ay * uy + az * uz) / uu if uu > 0.0 else 0.0
    if t <= 0.0:
        return (ax, ay, az), 1
    if t >= 1.0:
        return (bx, by, bz), 2
    return (ax + t * ux, ay + t * uy, az + t * uz), 3


def _on_triangle(S, face):
    """The point of triangle ``face`` (three points of ``S``) nearest the origin and the mask
    of the points it needs (bits 0, 1, 2 in ``face``'s order): Ericson's Voronoi regions
    (Real-Time Collision Detection, 5.1.5)."""
    ax, ay, az = _point(S, face[0])
    bx, by, bz = _point(S, face[1])
    cx, cy, cz = _point(S, face[2])
    abx, aby, abz = bx - ax, by - ay, bz - az
    acx, acy, acz = cx - ax, cy - ay, cz - az
    d1 = -(abx * ax + aby * ay + abz * az)
    d2 = -(acx * ax + acy * ay + acz * az)
    if d1 <= 0.0 and d2 <= 0.0:
        return (ax, ay, az), 1
    d3 = -(abx * bx + aby * by + abz * bz)
    d4 = -(acx * bx + acy * by + acz * bz)
    if d3 >= 0.0 and d4 <= d3:
        return (bx, by, bz), 2
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        t = d1 / (d1 - d3)
        return (ax + t * abx, ay + t * aby, az + t * abz), 3
    d5 = -(abx * cx + aby * cy + abz * cz)
    d6 = -(acx * cx + acy * cy + acz * cz)
    if d6 >= 0.0 and d5 <= d6:
        return (cx, cy, cz), 4
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        t = d2 / (d2 - d6)
        return (ax + t * acx, ay + t * acy, az + t * acz), 5
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and d4 - d3 >= 0.0 and d5 - d6 >= 0.0:
        t = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        return (bx + t * (cx - bx), by + t * (cy - by), bz + t * (cz - bz)), 6
    denom = 1.0 / (va + vb + vc)
    v, t = vb * denom, vc * denom
    return (ax + abx * v + acx * t, ay + aby * v + acy * t, az + abz * v + acz * t), 7
