"""The broad phase: one capsule per link, enclosing every point of the link's collision hulls.

A capsule is a segment ``[a, b]`` and a radius ``r`` [m]; the gap between two capsules is the
distance between their segments minus both radii, a lower bound of the distance between the
hulls they enclose. So a pair whose capsule gap exceeds the padding is free without a narrow
phase; only the others go to GJK (:mod:`ik_node.collision.check`).

Kinematics and gaps of one configuration run in one numba kernel where numba is installed
(``IK_NODE_NO_NUMBA=1`` turns it off), else in numpy; the same numpy code serves batches of
configurations (the pair table's sampling). The kernel takes arrays and scalars (numba compiles
no objects of ours), so its parameter list is long.
"""

from __future__ import annotations

import importlib.util
import math
import os
from typing import Tuple

import numpy as np

#: Added to every fitted radius [m]: rounding in the fit never leaves a hull point outside.
RADIUS_MARGIN_M = 1e-7
#: Plane normals tried per link pair whose capsules are within the padding (the kernel).
PLANE_ROUNDS = 4


def fit_capsule(points: np.ndarray) -> Tuple[np.ndarray, np.ndarray, float]:
    """``(a, b, r)``: a capsule enclosing ``points`` (k, 3) [m], of small volume.

    Tries the points' principal axes and the frame's axes; for each, the radius is the largest
    distance from an axis line through the centre of the points' projection, and the segment
    is the shortest that keeps every point within the radius (a sphere when the points are
    round). The smallest capsule wins.
    """
    P = np.asarray(points, dtype=float).reshape(-1, 3)
    centre = P.mean(axis=0)
    X = P - centre
    _, vectors = np.linalg.eigh(X.T @ X)
    best = None
    for axis in list(vectors.T) + list(np.eye(3)):
        axis = axis / np.linalg.norm(axis)
        u = np.cross(axis, [1.0, 0.0, 0.0] if abs(axis[0]) < 0.9 else [0.0, 1.0, 0.0])
        u /= np.linalg.norm(u)
        v = np.cross(axis, u)
        flat = np.stack([X @ u, X @ v], axis=1)
        c2 = _enclosing_circle_centre(flat)
        radial = np.linalg.norm(flat - c2, axis=1)
        r = float(radial.max()) + RADIUS_MARGIN_M
        t = X @ axis
        h = np.sqrt(np.maximum(r * r - radial * radial, 0.0))
        s1 = float(np.max(t - h))
        s0 = float(np.min(t + h))
        if s0 > s1:  # every point within r of one point: a sphere
            s0 = s1 = 0.5 * (s0 + s1)
        volume = math.pi * r * r * (s1 - s0) + 4.0 / 3.0 * math.pi * r ** 3
        if best is None or volume < best[0]:
            line = centre + c2[0] * u + c2[1] * v
            best = (volume, line + s0 * axis, line + s1 * axis, r)
    return best[1], best[2], best[3]


def capsule_volume(a, b, r: float) -> float:
    """Volume of a capsule [m^3]."""
    return math.pi * r * r * float(np.linalg.norm(np.asarray(b) - np.asarray(a))) + \
        4.0 / 3.0 * math.pi * r ** 3


def fit_capsules(vertices: np.ndarray, faces: np.ndarray, most: int = 3):
    """Up to ``most`` capsules whose union encloses the convex hull ``(vertices, faces)``.

    The hull is cut into slabs across its longest capsule's axis; each slab of a convex hull is
    convex, and its vertices are the hull's vertices within it plus the points where the hull's
    edges cross the cutting planes, so a capsule enclosing those encloses the slab. The split
    (1 to ``most`` slabs) of least total volume wins.

    Returns:
        A list of ``(a, b, r)``.
    """
    V = np.asarray(vertices, dtype=float)
    a, b, r = fit_capsule(V)
    best = ([(a, b, r)], capsule_volume(a, b, r))
    length = float(np.linalg.norm(b - a))
    if length < 1e-9 or most < 2 or faces is None or len(faces) == 0:
        return best[0]
    axis = (b - a) / length
    t = V @ axis
    F = np.asarray(faces, dtype=np.int64)
    edges = np.unique(np.sort(np.concatenate([F[:, [0, 1]], F[:, [1, 2]], F[:, [2, 0]]]),
                              axis=1), axis=0)
    t0, t1 = float(t.min()), float(t.max())
    for k in range(2, most + 1):
        cuts = [t0 + (t1 - t0) * m / k for m in range(1, k)]
        crossings = []
        for c in cuts:
            ta, tb = t[edges[:, 0]], t[edges[:, 1]]
            cross = (ta - c) * (tb - c) < 0.0
            u = (c - ta[cross]) / (tb[cross] - ta[cross])
            crossings.append(V[edges[cross, 0]] + u[:, None] *
                             (V[edges[cross, 1]] - V[edges[cross, 0]]))
        bounds = [-math.inf] + cuts + [math.inf]
        capsules, volume = [], 0.0
        for m in range(k):
            inside = V[(t >= bounds[m]) & (t <= bounds[m + 1])]
            points = [inside] + [crossings[c] for c in (m - 1, m) if 0 <= c < len(cuts)]
            points = np.vstack([p for p in points if len(p)])
            cap = fit_capsule(points)
            capsules.append(cap)
            volume += capsule_volume(*cap)
        if volume < 0.97 * best[1]:
            best = (capsules, volume)
    return best[0]


def _enclosing_circle_centre(flat: np.ndarray, rounds: int = 200) -> np.ndarray:
    """Approximately the centre of the smallest circle enclosing 2D points (Badoiu-Clarkson:
    step towards the farthest point by 1/(k+1)); any centre is valid, a better one is smaller."""
    c = 0.5 * (flat.min(axis=0) + flat.max(axis=0))
    best_c, best_r = c, float(np.max(np.linalg.norm(flat - c, axis=1)))
    for k in range(1, rounds):
        far = flat[np.argmax(np.linalg.norm(flat - c, axis=1))]
        c = c + (far - c) / (k + 1)
        r = float(np.max(np.linalg.norm(flat - c, axis=1)))
        if r < best_r:
            best_c, best_r = c, r
    return best_c


def segment_distances(p1: np.ndarray, q1: np.ndarray, p2: np.ndarray,
                      q2: np.ndarray) -> np.ndarray:
    """Distances between segments ``[p1, q1]`` and ``[p2, q2]`` (arrays (..., 3)) [m].

    The closest points of two segments (Ericson, Real-Time Collision Detection, 5.1.9), clamped
    for degenerate (point) segments.
    """
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a = np.einsum('...i,...i->...', d1, d1)
    e = np.einsum('...i,...i->...', d2, d2)
    f = np.einsum('...i,...i->...', d2, r)
    c = np.einsum('...i,...i->...', d1, r)
    b = np.einsum('...i,...i->...', d1, d2)
    tiny = 1e-18
    denom = a * e - b * b
    s = np.where(denom > tiny, np.clip((b * f - c * e) / np.where(denom > tiny, denom, 1.0),
                                       0.0, 1.0), 0.0)
    s = np.where(a > tiny, s, 0.0)
    # the second segment a point: the first's point nearest it
    s = np.where((e <= tiny) & (a > tiny), np.clip(-c / np.where(a > tiny, a, 1.0), 0.0, 1.0),
                 s)
    t = np.where(e > tiny, (b * s + f) / np.where(e > tiny, e, 1.0), 0.0)
    # t outside [0, 1]: clamp it and recompute s for it
    t_clamped = np.clip(t, 0.0, 1.0)
    s = np.where((t != t_clamped) & (a > tiny),
                 np.clip((b * t_clamped - c) / np.where(a > tiny, a, 1.0), 0.0, 1.0), s)
    t = np.where(e > tiny, t_clamped, 0.0)
    diff = (p1 + d1 * s[..., None]) - (p2 + d2 * t[..., None])
    return np.sqrt(np.einsum('...i,...i->...', diff, diff))


# --------------------------------------------------------------------- one configuration
def _segment_closest(p1x, p1y, p1z, q1x, q1y, q1z, p2x, p2y, p2z, q2x, q2y, q2z):
    """:func:`segment_distances` of one pair, in scalars (the kernel's inner step), and the
    vector from the second segment's closest point to the first's: ``(distance, dx, dy, dz)``."""
    d1x, d1y, d1z = q1x - p1x, q1y - p1y, q1z - p1z
    d2x, d2y, d2z = q2x - p2x, q2y - p2y, q2z - p2z
    rx, ry, rz = p1x - p2x, p1y - p2y, p1z - p2z
    a = d1x * d1x + d1y * d1y + d1z * d1z
    e = d2x * d2x + d2y * d2y + d2z * d2z
    f = d2x * rx + d2y * ry + d2z * rz
    c = d1x * rx + d1y * ry + d1z * rz
    b = d1x * d2x + d1y * d2y + d1z * d2z
    tiny = 1e-18
    s = 0.0
    t = 0.0
    if a <= tiny and e <= tiny:
        pass
    elif a <= tiny:
        t = min(max(f / e, 0.0), 1.0)
    elif e <= tiny:
        s = min(max(-c / a, 0.0), 1.0)
    else:
        denom = a * e - b * b
        if denom > tiny:
            s = min(max((b * f - c * e) / denom, 0.0), 1.0)
        t = (b * s + f) / e
        if t < 0.0:
            t = 0.0
            s = min(max(-c / a, 0.0), 1.0)
        elif t > 1.0:
            t = 1.0
            s = min(max((b - c) / a, 0.0), 1.0)
    dx = p1x + d1x * s - p2x - d2x * t
    dy = p1y + d1y * s - p2y - d2y * t
    dz = p1z + d1z * s - p2z - d2z * t
    return math.sqrt(dx * dx + dy * dy + dz * dz), dx, dy, dz


def _plane_gap(links, points, start, i, j, nx, ny, nz):
    """How far apart a plane of unit normal ``n`` (from link ``j`` towards link ``i``, base
    frame) holds the hull vertices of links ``i`` and ``j`` (``points[start[k]:start[k + 1]]``,
    in link frame ``links[k]``): ``(min n.x over i - max n.x over j, vi, vj)`` with the two
    vertices that set it. A positive gap is a lower bound of the hulls' distance (they are the
    convex hulls of these vertices, on either side of the plane)."""
    # n in each link's own frame
    ax = links[i, 0, 0] * nx + links[i, 1, 0] * ny + links[i, 2, 0] * nz
    ay = links[i, 0, 1] * nx + links[i, 1, 1] * ny + links[i, 2, 1] * nz
    az = links[i, 0, 2] * nx + links[i, 1, 2] * ny + links[i, 2, 2] * nz
    bx = links[j, 0, 0] * nx + links[j, 1, 0] * ny + links[j, 2, 0] * nz
    by = links[j, 0, 1] * nx + links[j, 1, 1] * ny + links[j, 2, 1] * nz
    bz = links[j, 0, 2] * nx + links[j, 1, 2] * ny + links[j, 2, 2] * nz
    low, vi = np.inf, start[i]
    for v in range(start[i], start[i + 1]):
        d = ax * points[v, 0] + ay * points[v, 1] + az * points[v, 2]
        if d < low:
            low, vi = d, v
    high, vj = -np.inf, start[j]
    for v in range(start[j], start[j + 1]):
        d = bx * points[v, 0] + by * points[v, 1] + bz * points[v, 2]
        if d > high:
            high, vj = d, v
    gap = (low + links[i, 0, 3] * nx + links[i, 1, 3] * ny + links[i, 2, 3] * nz) - \
        (high + links[j, 0, 3] * nx + links[j, 1, 3] * ny + links[j, 2, 3] * nz)
    return gap, vi, vj


def _next_normal(links, points, i, j, vi, vj, nx, ny, nz):
    """The next normal to try after :func:`_plane_gap` gave vertices ``vi`` (of link ``i``)
    and ``vj`` (of ``j``): halfway between ``n`` and the direction from ``vj`` to ``vi`` (the
    normal that would hold those two apart), unit length; ``n`` itself when undefined."""
    u = np.empty(3)
    for d in range(3):
        u[d] = (links[i, d, 0] * points[vi, 0] + links[i, d, 1] * points[vi, 1] +
                links[i, d, 2] * points[vi, 2] + links[i, d, 3]) - \
            (links[j, d, 0] * points[vj, 0] + links[j, d, 1] * points[vj, 1] +
             links[j, d, 2] * points[vj, 2] + links[j, d, 3])
    norm = math.sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2])
    if norm < 1e-12:
        return nx, ny, nz
    mx, my, mz = nx + u[0] / norm, ny + u[1] / norm, nz + u[2] / norm
    norm = math.sqrt(mx * mx + my * my + mz * mz)
    if norm < 1e-12:
        return nx, ny, nz
    return mx / norm, my / norm, mz / norm


def _gaps_kernel(q, T_parent, axes, prismatic, parents, link_frame, T_frame_link, cap_link,
                 seg_a, seg_b, radius, cap_pairs, cap_owner, link_pairs, points, start, witness,
                 pad, frames, links, gaps, quats):
    """Joint frames, link transforms and a lower bound of the hulls' distance of every link
    pair ``link_pairs`` (P, 3: the two links, and the joint in whose frame the pair's witness
    normal is kept, -1: the base frame) of one configuration: the capsule gap (the smallest over the
    capsule pairs ``cap_pairs``, each owned by link pair ``cap_owner``), and where that is not
    above ``pad``, the larger gap of a separating plane when one is found (:func:`_plane_gap`
    on the links' hull vertices ``points``, link k's from ``start[k]`` to ``start[k + 1]``;
    normals: ``witness[m]`` in that joint's frame when not zero (the caller keeps there the
    direction of the hulls' closest points from its last narrow-phase measure of the pair),
    the direction between the capsules' closest points, then between the vertices that bound
    the gap, a few times).

    Writes ``frames`` (n, 4, 4), ``links`` (L, 4, 4) base-frame link transforms, ``gaps``
    (P,) [m] and ``quats`` (L, 4): each link's rotation as a quaternion (w, x, y, z), which
    python-fcl takes several times faster than a matrix. Returns the smallest gap. Plain
    loops: compiled by numba, or run as Python only by the tests that compare it with
    :func:`segment_distances` and python-fcl.
    """
    n = q.shape[0]
    M = np.eye(4)
    local = np.empty((4, 4))
    for i in range(n):
        ax, ay, az = axes[i, 0], axes[i, 1], axes[i, 2]
        if prismatic[i]:
            for r in range(3):
                for col in range(3):
                    M[r, col] = 1.0 if r == col else 0.0
            M[0, 3] = ax * q[i]
            M[1, 3] = ay * q[i]
            M[2, 3] = az * q[i]
        else:
            c, s = math.cos(q[i]), math.sin(q[i])
            v = 1.0 - c
            M[0, 0] = c + ax * ax * v
            M[0, 1] = ax * ay * v - az * s
            M[0, 2] = ax * az * v + ay * s
            M[1, 0] = ay * ax * v + az * s
            M[1, 1] = c + ay * ay * v
            M[1, 2] = ay * az * v - ax * s
            M[2, 0] = az * ax * v - ay * s
            M[2, 1] = az * ay * v + ax * s
            M[2, 2] = c + az * az * v
            M[0, 3] = M[1, 3] = M[2, 3] = 0.0
        p = parents[i]
        if p < 0:
            _rigid_product(T_parent[i], M, frames[i])
        else:
            _rigid_product(T_parent[i], M, local)
            _rigid_product(frames[p], local, frames[i])
    L = link_frame.shape[0]
    for k in range(L):
        j = link_frame[k]
        if j < 0:
            links[k] = T_frame_link[k]
        else:
            _rigid_product(frames[j], T_frame_link[k], links[k])
    for k in range(L):
        _quaternion(links[k], quats[k])
    C = cap_link.shape[0]
    ends = np.empty((C, 6))
    for c in range(C):
        k = cap_link[c]
        for d in range(3):
            ends[c, d] = (links[k, d, 0] * seg_a[c, 0] + links[k, d, 1] * seg_a[c, 1] +
                          links[k, d, 2] * seg_a[c, 2] + links[k, d, 3])
            ends[c, 3 + d] = (links[k, d, 0] * seg_b[c, 0] + links[k, d, 1] * seg_b[c, 1] +
                              links[k, d, 2] * seg_b[c, 2] + links[k, d, 3])
    P = gaps.shape[0]
    normals = np.zeros((P, 3))
    for m in range(P):
        gaps[m] = np.inf
    for m in range(cap_pairs.shape[0]):
        i, j = cap_pairs[m, 0], cap_pairs[m, 1]
        dist, dx, dy, dz = _segment_closest(ends[i, 0], ends[i, 1], ends[i, 2], ends[i, 3],
                                            ends[i, 4], ends[i, 5], ends[j, 0], ends[j, 1],
                                            ends[j, 2], ends[j, 3], ends[j, 4], ends[j, 5])
        gap = dist - radius[i] - radius[j]
        owner = cap_owner[m]
        if gap < gaps[owner]:
            gaps[owner] = gap
            scale = 1.0 / dist if dist > 1e-12 else 0.0  # 0: the segments cross
            normals[owner, 0] = dx * scale
            normals[owner, 1] = dy * scale
            normals[owner, 2] = dz * scale
    smallest = np.inf
    for m in range(P):
        if gaps[m] <= pad:
            i, j = link_pairs[m, 0], link_pairs[m, 1]
            nx, ny, nz = normals[m, 0], normals[m, 1], normals[m, 2]
            if nx == 0.0 and ny == 0.0 and nz == 0.0:  # the segments cross: centre to centre
                nx = links[i, 0, 3] - links[j, 0, 3]
                ny = links[i, 1, 3] - links[j, 1, 3]
                nz = links[i, 2, 3] - links[j, 2, 3]
                norm = math.sqrt(nx * nx + ny * ny + nz * nz)
                if norm > 1e-12:
                    nx, ny, nz = nx / norm, ny / norm, nz / norm
                else:
                    nx, ny, nz = 0.0, 0.0, 1.0
            wx, wy, wz = witness[m, 0], witness[m, 1], witness[m, 2]
            norm = math.sqrt(wx * wx + wy * wy + wz * wz)
            if norm > 1e-9:  # the normal that held them apart last (made unit here: the
                # bound holds for unit normals only, whatever another thread wrote), kept in
                # the frame of joint link_pairs[m, 2] (-1: the base frame)
                wx, wy, wz = wx / norm, wy / norm, wz / norm
                f = link_pairs[m, 2]
                if f >= 0:
                    wx, wy, wz = (frames[f, 0, 0] * wx + frames[f, 0, 1] * wy +
                                  frames[f, 0, 2] * wz,
                                  frames[f, 1, 0] * wx + frames[f, 1, 1] * wy +
                                  frames[f, 1, 2] * wz,
                                  frames[f, 2, 0] * wx + frames[f, 2, 1] * wy +
                                  frames[f, 2, 2] * wz)
                sep, vi, vj = _plane_gap(links, points, start, i, j, wx, wy, wz)
                if sep > gaps[m] and sep > 0.0:
                    gaps[m] = sep
            for _ in range(PLANE_ROUNDS):
                if gaps[m] > pad:
                    break
                sep, vi, vj = _plane_gap(links, points, start, i, j, nx, ny, nz)
                if sep > gaps[m] and sep > 0.0:
                    gaps[m] = sep
                if gaps[m] > pad:
                    break
                nx, ny, nz = _next_normal(links, points, i, j, vi, vj, nx, ny, nz)
        if gaps[m] < smallest:
            smallest = gaps[m]
    return smallest


def _rigid_product(A, B, out):
    """``out = A @ B`` for rigid transforms (4x4, last row 0 0 0 1), in loops (a compiled
    matrix product of 4x4 arrays goes through BLAS, several times slower at this size)."""
    for r in range(3):
        a0, a1, a2 = A[r, 0], A[r, 1], A[r, 2]
        for col in range(4):
            out[r, col] = a0 * B[0, col] + a1 * B[1, col] + a2 * B[2, col]
        out[r, 3] += A[r, 3]
    out[3, 0] = 0.0
    out[3, 1] = 0.0
    out[3, 2] = 0.0
    out[3, 3] = 1.0


def _quaternion(T, out):
    """The rotation of ``T`` (4x4) as a unit quaternion (w, x, y, z) into ``out`` (Shepperd's
    method: the largest of the four candidates keeps it accurate)."""
    m00, m11, m22 = T[0, 0], T[1, 1], T[2, 2]
    trace = m00 + m11 + m22
    if trace >= m00 and trace >= m11 and trace >= m22:
        s = 2.0 * math.sqrt(max(1.0 + trace, 1e-300))
        out[0] = 0.25 * s
        out[1] = (T[2, 1] - T[1, 2]) / s
        out[2] = (T[0, 2] - T[2, 0]) / s
        out[3] = (T[1, 0] - T[0, 1]) / s
    elif m00 >= m11 and m00 >= m22:
        s = 2.0 * math.sqrt(max(1.0 + m00 - m11 - m22, 1e-300))
        out[0] = (T[2, 1] - T[1, 2]) / s
        out[1] = 0.25 * s
        out[2] = (T[0, 1] + T[1, 0]) / s
        out[3] = (T[0, 2] + T[2, 0]) / s
    elif m11 >= m22:
        s = 2.0 * math.sqrt(max(1.0 + m11 - m00 - m22, 1e-300))
        out[0] = (T[0, 2] - T[2, 0]) / s
        out[1] = (T[0, 1] + T[1, 0]) / s
        out[2] = 0.25 * s
        out[3] = (T[1, 2] + T[2, 1]) / s
    else:
        s = 2.0 * math.sqrt(max(1.0 + m22 - m00 - m11, 1e-300))
        out[0] = (T[1, 0] - T[0, 1]) / s
        out[1] = (T[0, 2] + T[2, 0]) / s
        out[2] = (T[1, 2] + T[2, 1]) / s
        out[3] = 0.25 * s


_COMPILED = None


def compiled_kernel():
    """The numba-compiled :func:`_gaps_kernel`, or None without numba (or with
    ``IK_NODE_NO_NUMBA`` set). Compiled once per process (cached on disk by numba)."""
    global _COMPILED
    if _COMPILED is None:
        _COMPILED = False
        if os.environ.get('IK_NODE_NO_NUMBA', '') in ('', '0') and \
                importlib.util.find_spec('numba') is not None:
            try:
                import numba
                jit = numba.njit(cache=True, nogil=True)
                namespace = dict(_gaps_kernel.__globals__,
                                 _segment_closest=jit(_segment_closest),
                                 _plane_gap=jit(_plane_gap), _next_normal=jit(_next_normal),
                                 _rigid_product=jit(_rigid_product),
                                 _quaternion=jit(_quaternion))
                kernel = type(_gaps_kernel)(_gaps_kernel.__code__, namespace)
                _COMPILED = jit(kernel)
            except Exception:  # an unsupported numba: the numpy path serves
                _COMPILED = False
    return _COMPILED or None
