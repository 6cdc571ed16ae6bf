"""The solver of a map for a robot given by its description: the map's chain (base, tip),
collision world and tool offset on that description, when it is the description the map was
built from (the sha256 of its text is in the map)."""

from __future__ import annotations

import hashlib
from typing import Tuple


def description_sha256(urdf_text: str) -> str:
    """sha256 of a robot description's text (as a map stores it)."""
    return hashlib.sha256(urdf_text.encode()).hexdigest()


def solver_for_robot(meta, urdf_text: str, urdf_path: str = '') -> Tuple[object, str]:
    """``(solver, '')``: the map's solver (:func:`ik_node.capability.decide.solver_for`) on
    the robot described by ``urdf_text`` (read from ``urdf_path``, '' for none: meshes are found
    relative to it) when that is the map's robot, else ``(None, why not)``. Building it reads
    the chain and its collision geometry: call it ahead of a request's budget."""
    from ik_node.capability.decide import solver_for
    from ik_node.capability.spec import spec_of_map
    if not urdf_text:
        return None, 'the node has no robot description'
    digest = description_sha256(urdf_text)
    if digest != meta.get('description_sha256'):
        return None, (f"the map's robot (description sha256 "
                      f"{str(meta.get('description_sha256'))[:12]}) is not this robot "
                      f'({digest[:12]})')
    return solver_for(spec_of_map(meta, urdf_text, urdf_path)), ''
