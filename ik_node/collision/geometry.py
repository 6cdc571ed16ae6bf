"""Every link's ``<collision>`` geometry read from a URDF: meshes (STL, Collada ``.dae``, OBJ,
through trimesh), boxes, cylinders and spheres, with their origins and mesh scales.

One :class:`Piece` per ``<collision>`` element, in its link's frame [m]. A mesh piece keeps both
its raw triangles (for an exact mesh check) and its convex hull (what the checker tests: it
encloses the mesh, so a hull found free proves the mesh free). A primitive keeps its own shape
(checked exactly by the narrow phase) and a set of points whose hull encloses it (for the
capsule fit of the broad phase).

``package://pkg/path`` and ``file://`` URIs resolve the way a ROS 2 install resolves them:
``pkg``'s share directory from the ament index (``AMENT_PREFIX_PATH``).
"""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np

from ik_node.collision.dependencies import require
from ik_node.errors import ConfigError
from ik_node.model.urdf_reading import transform_from_xyz_rpy

#: Sides of the polygon standing in for a cylinder's circle (circumscribed: it encloses it).
CYLINDER_SIDES = 24


class CollisionModelError(ConfigError):
    """The collision geometry of a description cannot be used: a mesh file missing or
    unreadable, a package not found, an SRDF naming unknown links, a bad obstacle."""


@dataclass(frozen=True)
class Piece:
    """One ``<collision>`` element of a link, in the link's frame [m].

    Attributes:
        link: the URDF link.
        kind: ``'mesh'``, ``'box'``, ``'cylinder'`` or ``'sphere'``.
        source: what it was read from (the mesh URI, or the primitive and its size), for messages.
        T_link_piece: the element's ``<origin>`` (4x4).
        size: box (x, y, z) sizes, cylinder (radius, length), sphere (radius,); () for a mesh.
        hull_vertices: (n, 3) points in the link frame whose convex hull encloses the piece.
        hull_faces: (m, 3) triangles of that hull (indices into ``hull_vertices``).
        mesh_vertices: (k, 3) the raw mesh's vertices in the link frame (meshes only, else None).
        mesh_faces: (l, 3) the raw mesh's triangles (meshes only, else None).
    """

    link: str
    kind: str
    source: str
    T_link_piece: np.ndarray
    size: Tuple[float, ...]
    hull_vertices: np.ndarray
    hull_faces: np.ndarray
    mesh_vertices: Optional[np.ndarray] = None
    mesh_faces: Optional[np.ndarray] = None


def pieces_from_robot(robot, links: Optional[List[str]] = None,
                      skip_missing: bool = False) -> Tuple[Dict[str, List[Piece]], str]:
    """Every link's collision pieces, and a digest of the geometry read (hex text).

    Args:
        robot: a parsed URDF (urdf_parser_py ``Robot``).
        links: only these links (None: every link of the URDF).
        skip_missing: leave out a ``<collision>`` whose mesh file is missing, instead of raising.

    Returns:
        ``({link: [Piece, ...]}, digest)``: links without collision geometry are left out; the
        digest covers the shapes and the mesh files' bytes (it keys the pair cache).

    Raises:
        CollisionModelError: a mesh file that is missing (unless ``skip_missing``), unreadable or
            empty; a package that is not on the ament index; a bad primitive size.
    """
    digest = hashlib.sha256()
    out: Dict[str, List[Piece]] = {}
    for link in robot.links:
        if links is not None and link.name not in links:
            continue
        pieces = []
        for element in getattr(link, 'collisions', None) or []:
            geometry = element.geometry
            origin = element.origin
            T = transform_from_xyz_rpy(origin.xyz if origin is not None and origin.xyz else
                                       (0.0, 0.0, 0.0),
                                       origin.rpy if origin is not None and origin.rpy else
                                       (0.0, 0.0, 0.0))
            digest.update(f'{link.name}|{np.round(T, 12).tolist()}'.encode())
            try:
                piece = _piece(link.name, geometry, T, digest)
            except _MissingMesh as missing:
                if skip_missing:
                    continue
                raise CollisionModelError(str(missing)) from None
            if piece is not None:
                pieces.append(piece)
        if pieces:
            out[link.name] = pieces
    return out, digest.hexdigest()


class _MissingMesh(Exception):
    pass


def _piece(link: str, geometry, T: np.ndarray, digest) -> Optional[Piece]:
    kind = type(geometry).__name__.lower()
    if kind == 'mesh':
        return _mesh_piece(link, geometry, T, digest)
    if kind == 'box':
        size = _positive(link, 'box size', geometry.size, 3)
        corners = np.array([[sx, sy, sz] for sx in (-0.5, 0.5) for sy in (-0.5, 0.5)
                            for sz in (-0.5, 0.5)]) * size
        digest.update(f'box{size}'.encode())
        return _primitive(link, 'box', tuple(size), T, corners)
    if kind == 'cylinder':
        radius, length = _positive(link, 'cylinder radius, length',
                                   [geometry.radius, geometry.length], 2)
        angles = np.arange(CYLINDER_SIDES) * (2.0 * math.pi / CYLINDER_SIDES)
        r_out = radius / math.cos(math.pi / CYLINDER_SIDES)  # the polygon's edges touch the circle
        ring = np.stack([r_out * np.cos(angles), r_out * np.sin(angles)], axis=1)
        points = np.vstack([np.column_stack([ring, np.full(CYLINDER_SIDES, z)])
                            for z in (-0.5 * length, 0.5 * length)])
        digest.update(f'cylinder{radius},{length}'.encode())
        return _primitive(link, 'cylinder', (radius, length), T, points)
    if kind == 'sphere':
        (radius,) = _positive(link, 'sphere radius', [geometry.radius], 1)
        # A cube's corners enclose the sphere: conservative for the capsule fit, and the
        # narrow phase tests the sphere itself.
        corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1)
                            for sz in (-1, 1)], dtype=float) * radius
        digest.update(f'sphere{radius}'.encode())
        return _primitive(link, 'sphere', (radius,), T, corners)
    return None  # a geometry urdf_parser_py reads but no checker knows (none in URDF 1.0)


def _positive(link: str, what: str, values, count: int) -> List[float]:
    try:
        out = [float(v) for v in values]
    except (TypeError, ValueError):
        out = []
    if len(out) != count or not all(math.isfinite(v) and v > 0.0 for v in out):
        raise CollisionModelError(f'link {link!r}: {what} must be {count} finite numbers > 0, '
                                  f'got {values!r}')
    return out


def _primitive(link: str, kind: str, size, T: np.ndarray, points: np.ndarray) -> Piece:
    from ik_node.collision.hulls import hull_faces
    placed = points @ T[:3, :3].T + T[:3, 3]
    return Piece(link, kind, f'{kind} {list(size)}', T, tuple(size), placed, hull_faces(placed))


def _mesh_piece(link: str, geometry, T: np.ndarray, digest) -> Piece:
    trimesh = require('trimesh')
    uri = geometry.filename
    path = path_from_uri(uri, link)
    if not path.is_file():
        raise _MissingMesh(f'link {link!r}: collision mesh {uri!r} not found (looked for '
                           f'{path})')
    try:
        data = path.read_bytes()
        mesh = trimesh.load(str(path), force='mesh', process=False)
        vertices = np.asarray(mesh.vertices, dtype=float)
        faces = np.asarray(mesh.faces, dtype=np.int64)
    except Exception as exc:  # trimesh raises many kinds for a bad file
        raise CollisionModelError(f'link {link!r}: cannot read collision mesh {uri!r} ({path}): '
                                  f'{type(exc).__name__}: {exc}') from None
    if vertices.ndim != 2 or len(vertices) < 4 or len(faces) == 0 or \
            not np.all(np.isfinite(vertices)):
        raise CollisionModelError(f'link {link!r}: collision mesh {uri!r} ({path}) holds no '
                                  'usable triangles (fewer than 4 finite vertices or no faces)')
    scale = np.ones(3)
    if getattr(geometry, 'scale', None):
        scale = np.broadcast_to(np.asarray(_positive(link, 'mesh scale', geometry.scale,
                                                     len(geometry.scale)), float), 3)
    digest.update(f'mesh{uri}|{scale.tolist()}|'.encode())
    digest.update(hashlib.sha256(data).digest())
    placed = (vertices * scale) @ T[:3, :3].T + T[:3, 3]
    from ik_node.collision.hulls import convex_hull
    hull_vertices, hull_faces_ = convex_hull(placed)
    return Piece(link, 'mesh', uri, T, (), hull_vertices, hull_faces_, placed, faces)


def path_from_uri(uri: str, link: str = '') -> Path:
    """The file a URDF mesh ``filename`` names: ``package://pkg/rel`` in ``pkg``'s share
    directory (ament index), ``file:///abs``, or a plain path.

    Raises:
        CollisionModelError: ``package://`` of a package not on the ament index.
    """
    where = f'link {link!r}: ' if link else ''
    if uri.startswith('package://'):
        rest = uri[len('package://'):]
        package, _, relative = rest.partition('/')
        share = package_share(package)
        if share is None:
            prefixes = os.environ.get('AMENT_PREFIX_PATH', '')
            raise CollisionModelError(
                f'{where}mesh {uri!r}: package {package!r} is not on the ament index '
                f'(AMENT_PREFIX_PATH={prefixes or "unset"}); add the install prefix whose '
                f'share/{package} holds it to AMENT_PREFIX_PATH')
        return share / relative
    if uri.startswith('file://'):
        return Path(uri[len('file://'):]).expanduser()
    return Path(uri).expanduser()


def package_share(package: str) -> Optional[Path]:
    """``package``'s share directory from the ament index, or None."""
    try:
        from ament_index_python.packages import get_package_share_directory
    except ImportError:
        get_package_share_directory = None
    if get_package_share_directory is not None:
        try:
            return Path(get_package_share_directory(package))
        except Exception:  # PackageNotFoundError, a broken AMENT_PREFIX_PATH
            pass
    for prefix in os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep):
        marker = Path(prefix) / 'share' / 'ament_index' / 'resource_index' / 'packages' / package
        if prefix and marker.exists():
            return Path(prefix) / 'share' / package
    return None
