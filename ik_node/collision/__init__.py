"""Self-collision and world checks from the URDF's own ``<collision>`` geometry.

Layer: between the model and the solvers (imports :mod:`ik_node.model` only; the solvers import
it). Design, and why:

- **Geometry** (:mod:`.geometry`): every ``<collision>`` element of every link, meshes loaded by
  trimesh, ``package://`` resolved through the ament index as on a ROS 2 install. Meshes are
  checked by their convex hulls: a hull encloses its mesh, so a hull found free proves the mesh
  free (the check never calls free what the meshes find colliding), and hull-vs-hull GJK costs
  microseconds where mesh-vs-mesh BVH costs a hundred or more.
- **Broad phase** (:mod:`.capsules`, :mod:`.kernel`, :mod:`.gjk`): capsules enclosing each link
  and its pieces, and where those are within the padding, GJK on the links' hulls (every
  support a separating plane: a lower bound), for all checked pairs in one numba kernel
  (capsules only in numpy without numba). A free configuration of an arm is cleared here, in a
  few microseconds; a pair whose hulls GJK finds within the padding collides.
- **Narrow phase** (:mod:`.check`): python-fcl's GJK/EPA signed distance between the hulls (and
  boxes, cylinders, spheres as they are) of the pairs the kernel cannot decide; where two hulls
  are within the padding, python-fcl's distance between the raw triangle meshes decides (a hull
  is larger than a concave mesh). A library, not hand-written geometry: FCL is what MoveIt uses.
- **Witnesses** (:mod:`.witness`): for pairs near contact, python-fcl's closest points (or
  contact point, normal and depth): the directions in which ``damped_jacobian``'s collision
  term pushes them apart.
- **Pairs** (:mod:`.pairs`): an SRDF's ``<disable_collisions>``, or MoveIt Setup Assistant's rule
  (adjacent, default, always and never over random configurations), cached per description.
- **World** (:mod:`.world`): a ground plane and box, sphere, cylinder obstacles in the base frame.
- **Padding** (``collision_padding``, default 5 mm): pairs closer than it count as colliding.

Everything here needs trimesh, scipy and python-fcl (the ``collision`` extra); without them
:func:`checker_for` raises :class:`CollisionUnavailable` saying what to install.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Optional, Tuple

from ik_node.collision.check import DEFAULT_PADDING_M, CollisionChecker  # noqa: F401
from ik_node.collision.report import CollisionReport, Contact  # noqa: F401
from ik_node.collision.dependencies import (CollisionUnavailable, available,  # noqa: F401
                                            missing)
from ik_node.collision.geometry import CollisionModelError  # noqa: F401
from ik_node.collision.witness import Witness  # noqa: F401
from ik_node.collision.world import Obstacle, World  # noqa: F401

__all__ = ['CollisionChecker', 'CollisionReport', 'Contact', 'CollisionSettings',
           'CollisionModelError', 'CollisionUnavailable', 'Obstacle', 'Witness', 'World',
           'available',
           'checker_for', 'has_collision_geometry', 'warm', 'DEFAULT_PADDING_M']


@dataclass(frozen=True)
class CollisionSettings:
    """How a chain's configurations are checked.

    Attributes:
        padding: pairs closer than this collide [m].
        srdf: an SRDF's text whose ``<disable_collisions>`` picks the pairs (None: computed).
        ground_z: the ground plane's height in the base frame [m] (None: no plane).
        obstacles: boxes, spheres, cylinders in the base frame.
        skip_missing_meshes: leave out a ``<collision>`` whose mesh file is missing (the user
            asked for it) instead of refusing the description.
        samples: random configurations of the computed pair table.
        mesh_confirm: pairs whose hulls are closer than the padding are measured by their raw
            meshes (False: the hulls decide; see :mod:`ik_node.collision.check`).
    """

    padding: float = DEFAULT_PADDING_M
    srdf: Optional[str] = None
    ground_z: Optional[float] = None
    obstacles: Tuple[Obstacle, ...] = ()
    skip_missing_meshes: bool = False
    samples: int = 10000
    mesh_confirm: bool = True


_models = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def has_collision_geometry(chain) -> bool:
    """True when ``chain``'s URDF has at least one ``<collision>`` element."""
    robot = getattr(chain, 'robot', None)
    return robot is not None and any(getattr(link, 'collisions', None)
                                     for link in robot.links)


def checker_for(chain, settings: CollisionSettings = CollisionSettings()) -> CollisionChecker:
    """A :class:`CollisionChecker` of ``chain`` with ``settings``. The geometry and the computed
    pair table are made once per chain (and the table cached on disk per description).

    Raises:
        CollisionUnavailable: trimesh, scipy or python-fcl is not installed.
        CollisionModelError: a missing or unreadable mesh, a package not found, an SRDF naming
            links the URDF does not have.
    """
    from ik_node.collision.model import CollisionModel
    from ik_node.collision.pairs import cached_table, checked_pairs, table_from_srdf
    key = (settings.skip_missing_meshes, settings.samples, settings.srdf)
    with _lock:
        per_chain = _models.setdefault(chain, {})
        if key not in per_chain:
            model = CollisionModel.from_chain(chain, settings.skip_missing_meshes)
            if settings.srdf is not None:
                table = table_from_srdf(settings.srdf, model)
            else:
                table = cached_table(model, settings.samples)
            per_chain[key] = (model, checked_pairs(model, table), table)
        model, pairs, _ = per_chain[key]
    world = World(settings.ground_z, settings.obstacles)
    return CollisionChecker(model, pairs, settings.padding, world, settings.mesh_confirm)


def pair_table_for(chain, settings: CollisionSettings = CollisionSettings()):
    """``(model, disabled {pair: reason}, checked pairs)`` of ``chain`` as :func:`checker_for`
    uses them."""
    checker_for(chain, settings)
    key = (settings.skip_missing_meshes, settings.samples, settings.srdf)
    model, pairs, table = _models[chain][key]
    return model, table, pairs


#: Three boxes on two hinges: the robot :func:`warm` checks once.
_WARM_URDF = """<robot name="warm">
  <link name="a"><collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision></link>
  <link name="b"><collision><origin xyz="0 0 0.2"/><geometry><box size="0.05 0.05 0.4"/>
    </geometry></collision></link>
  <link name="c"><collision><origin xyz="0 0 0.2"/><geometry><box size="0.05 0.05 0.4"/>
    </geometry></collision></link>
  <joint name="j1" type="revolute"><parent link="a"/><child link="b"/><origin xyz="0 0 0.05"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="j2" type="revolute"><parent link="b"/><child link="c"/><origin xyz="0 0 0.4"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
</robot>"""


def warm() -> bool:
    """Compile the check's kernel into numba's cache (or load it from there) by checking a small
    robot of boxes once, for ``python -m ik_node.kernels warm``. Returns False when the
    check cannot run here (a library missing)."""
    if not available():
        return False
    from ik_node.model.chain import Chain
    chain = Chain.from_urdf_string(_WARM_URDF, 'a', 'c')
    checker_for(chain, CollisionSettings(srdf='<robot name="warm"/>'))
    return True
