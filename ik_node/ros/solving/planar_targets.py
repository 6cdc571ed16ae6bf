"""Point targets of a planar chain are solved on its plane when they are near it.

A chain whose joints are all revolute about parallel axes moves its tip in one plane. RViz's
Publish Point puts a clicked point on the surface under the cursor: the envelope disc, a link
or a joint housing, millimetres to centimetres off that plane, where the tip can never be. A
point target within ``target_point.planar_projection`` [m] of the plane is therefore solved at
its projection onto the plane, and the status says so (``planar_projection_m``, the distance
moved); a target farther off is solved as given. Pose targets are never moved.

No rclpy: plain functions over the chain.
"""

from __future__ import annotations

from typing import Dict, NamedTuple, Tuple

import numpy as np

from ik_node.model.chain import Chain
from ik_node.solvers.base import ParamSpec

PARAM = 'target_point.planar_projection'
#: The node parameter (declared with the interactive target's, read where used).
PLANAR_PARAMS: Dict[str, ParamSpec] = {
    PARAM: ParamSpec(
        float, 0.05, "a point target this close to a planar chain's plane is solved at its "
        "projection onto the plane (RViz's clicks land on the link surfaces above it); the "
        "status says so (planar_projection_m). 0: never", 'm', min=0.0, max=1.0),
}


class Plane(NamedTuple):
    """The plane a tip moves in: through ``point`` [m], normal to unit ``normal`` (base frame)."""

    point: np.ndarray
    normal: np.ndarray


def tip_planes(chain: Chain) -> Dict[str, Plane]:
    """The plane of every tip moved by revolute joints about parallel axes (two or more)."""
    planes = {}
    q = chain.clip(np.zeros(chain.n))
    for tip in chain.tip_links:
        normal = chain.planar_normal(tip)
        if normal is not None:
            planes[tip] = Plane(chain.fk(q, tip)[:3, 3], normal / np.linalg.norm(normal))
    return planes


def onto_plane(p: np.ndarray, plane: Plane, max_distance_m: float) -> Tuple[np.ndarray, float]:
    """``(position, distance moved [m])``: ``p`` projected onto ``plane`` when it is off it by
    at most ``max_distance_m``, else ``(p, 0.0)`` unchanged."""
    offset = float(np.dot(np.asarray(p, dtype=float) - plane.point, plane.normal))
    if offset == 0.0 or abs(offset) > max_distance_m:
        return p, 0.0
    return np.asarray(p, dtype=float) - offset * plane.normal, abs(offset)
