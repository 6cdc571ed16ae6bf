"""The broad phase: one capsule per link, enclosing every point of the link's collision hulls.

A capsule is a segment ``[a, b]`` and a radius ``r`` [m]; the gap between two capsules is the
distance between their segments minus both radii, a lower bound of the distance between the
hulls they enclose. So a pair whose capsule gap exceeds the padding is free without a narrow
phase; only the others go to GJK (:mod:`ik_node.collision.check`).

The gaps of one configuration are computed by the check's compiled kernel
(:mod:`ik_node.collision.kernel`) where numba is installed; :func:`segment_distances` computes
them in numpy (batches of configurations: the pair table's sampling; and without numba).
"""

from __future__ import annotations

import math
from typing import Tuple

import numpy as np

#: Added to every fitted radius [m]: rounding in the fit never leaves a hull point outside.
RADIUS_MARGIN_M = 1e-7


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
    d2 = ((flat - c) ** 2).sum(axis=1)
    best_c, best_r2 = c, float(d2.max())
    for k in range(1, rounds):
        c = c + (flat[int(np.argmax(d2))] - c) / (k + 1)
        d2 = ((flat - c) ** 2).sum(axis=1)
        r2 = float(d2.max())
        if r2 < best_r2:
            best_c, best_r2 = c, r2
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
