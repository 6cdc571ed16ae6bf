"""Convex hulls of point sets (scipy's qhull through trimesh)."""

from __future__ import annotations

from typing import Tuple

import numpy as np

from ik_node.collision.dependencies import require


def convex_hull(points: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """``(vertices (n, 3), faces (m, 3))`` of the convex hull of ``points`` (k, 3) [m].

    Degenerate (flat) point sets are hulled with qhull's joggle, which keeps them enclosed to
    within about 1e-10 m.
    """
    require('scipy')
    trimesh = require('trimesh')
    hull = trimesh.convex.convex_hull(np.asarray(points, dtype=float))
    return np.asarray(hull.vertices, dtype=float), np.asarray(hull.faces, dtype=np.int64)


def hull_faces(points: np.ndarray) -> np.ndarray:
    """The triangles of the convex hull of ``points``, as indices into ``points`` itself
    (every point of a primitive's corner set is a hull vertex)."""
    vertices, faces = convex_hull(points)
    index = [int(np.argmin(np.linalg.norm(points - v, axis=1))) for v in vertices]
    return np.asarray(index, dtype=np.int64)[faces]
