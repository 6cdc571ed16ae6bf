"""The world around the robot: a ground plane (the mounting table) and simple obstacles.

Both are in the chain's base frame. Only links some chain joint moves are checked against them:
a link fixed to the base (the base itself on its table) is where it is whatever the solver does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

import numpy as np

from ik_node.collision.capsules import segment_distances
from ik_node.collision.geometry import CollisionModelError
from ik_node.collision.report import Contact

OBSTACLE_KINDS = ('box', 'sphere', 'cylinder')


@dataclass(frozen=True)
class Obstacle:
    """A box, sphere or cylinder in the base frame.

    Attributes:
        name: shown in messages and diagnostics.
        kind: ``'box'`` (size: x, y, z [m]), ``'sphere'`` (radius) or ``'cylinder'`` (radius,
            length along its z).
        size: as for ``kind`` [m].
        T_base_obstacle: its pose (4x4).
    """

    name: str
    kind: str
    size: Tuple[float, ...]
    T_base_obstacle: np.ndarray = field(default_factory=lambda: np.eye(4))

    def __post_init__(self):
        counts = {'box': 3, 'sphere': 1, 'cylinder': 2}
        if self.kind not in counts:
            raise CollisionModelError(f'obstacle {self.name!r}: kind {self.kind!r} is not one '
                                      f'of {", ".join(OBSTACLE_KINDS)}')
        size = tuple(float(s) for s in self.size)
        if len(size) != counts[self.kind] or not all(math.isfinite(s) and s > 0 for s in size):
            raise CollisionModelError(
                f'obstacle {self.name!r}: a {self.kind} takes {counts[self.kind]} finite '
                f'sizes > 0 [m], got {list(self.size)}')
        T = np.asarray(self.T_base_obstacle, dtype=float)
        if T.shape != (4, 4) or not np.all(np.isfinite(T)):
            raise CollisionModelError(f'obstacle {self.name!r}: its pose must be a finite 4x4 '
                                      'transform')
        object.__setattr__(self, 'size', size)
        object.__setattr__(self, 'T_base_obstacle', T)

    @property
    def bounding_radius(self) -> float:
        """Radius of a sphere about its origin that encloses it [m]."""
        if self.kind == 'box':
            return 0.5 * math.sqrt(sum(s * s for s in self.size))
        if self.kind == 'sphere':
            return self.size[0]
        return math.hypot(self.size[0], 0.5 * self.size[1])


class World:
    """The ground plane (``ground_z`` [m] in the base frame, None: none) and obstacles."""

    def __init__(self, ground_z: Optional[float] = None, obstacles: Sequence[Obstacle] = ()):
        if ground_z is not None and not math.isfinite(ground_z):
            raise CollisionModelError(f'ground_z must be finite [m], got {ground_z!r}')
        self.ground_z = None if ground_z is None else float(ground_z)
        self.obstacles: Tuple[Obstacle, ...] = tuple(obstacles)
        self._fcl_objects: Optional[list] = None

    @property
    def empty(self) -> bool:
        """No ground plane and no obstacle."""
        return self.ground_z is None and not self.obstacles

    def _objects(self, fcl) -> list:
        if self._fcl_objects is None:
            objects = []
            for ob in self.obstacles:
                shape = {'box': fcl.Box, 'sphere': fcl.Sphere, 'cylinder': fcl.Cylinder}[
                    ob.kind](*ob.size)
                T = ob.T_base_obstacle
                objects.append(fcl.CollisionObject(shape, fcl.Transform(T[:3, :3], T[:3, 3])))
            self._fcl_objects = objects
        return self._fcl_objects

    def contacts(self, checker, T_links: np.ndarray, first_only: bool,
                 all_distances: bool = False) -> List:
        """Links within the checker's padding of the ground or an obstacle at ``T_links``
        (with ``all_distances``: every moving link's distance to each, closest first)."""
        model, pad = checker.model, checker.padding
        out: List[Contact] = []
        a, b = model.capsule_ends(T_links)
        for k, link in enumerate(model.links):
            if not model.moving_joints(k):
                continue
            caps = model.caps_of_link[k]
            if self.ground_z is not None:
                low = float(np.min(np.minimum(a[caps, 2], b[caps, 2]) - model.radius[caps])) - \
                    self.ground_z
                if low <= pad or all_distances:
                    points = checker.link_points(k) @ T_links[k, :3, :3].T + T_links[k, :3, 3]
                    d = float(points[:, 2].min() - self.ground_z)
                    if d < pad or all_distances:
                        out.append(Contact(link, 'ground', d, 'ground'))
                        if first_only and d < pad:
                            return out
            if not self.obstacles:
                continue
            fcl = checker._fcl
            for ob, obj in zip(self.obstacles, self._objects(fcl)):
                centre = ob.T_base_obstacle[:3, 3]
                gap = float(np.min(segment_distances(a[caps], b[caps], centre, centre) -
                                   model.radius[caps])) - ob.bounding_radius
                if gap > pad and not all_distances:
                    continue
                best = math.inf
                for piece_obj in checker._placed(T_links, k):
                    best = min(best, checker.signed_distance(piece_obj, obj))
                if best < pad or all_distances:
                    out.append(Contact(link, ob.name, float(best), 'obstacle'))
                    if first_only and best < pad:
                        return out
        if first_only:
            return [c for c in out if c.distance_m < pad]
        return out
