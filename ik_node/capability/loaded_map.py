"""A capability map held for answering requests (the node's base placement): the map and its
solver are loaded in a background thread when asked for, so no request pays for building the
chain, its collision model or the compiled kernels; a request asked meanwhile gets what is
ready (:meth:`MapHolder.current`) and the status says what is missing.
"""

from __future__ import annotations

import threading
from typing import Callable, Hashable, NamedTuple, Optional

import numpy as np

#: :attr:`Ready.state` values.
LOADING, BUILDING_SOLVER, READY, FAILED, NO_MAP = ('loading the map', "building the map's solver",
                                                   'ready', 'failed', 'no map')


class Ready(NamedTuple):
    """What is loaded: the folder, the map (None until loaded), its solver (None: none, see
    ``why_not``), the state and, for FAILED, the error."""

    folder: str = ''
    capability: Optional[object] = None
    solver: Optional[object] = None
    why_not: str = ''
    state: str = NO_MAP
    error: str = ''


class MapHolder:
    """Loads the map of a folder and its solver for a robot description, in the background.

    Args:
        on_status: called (from the loading thread) with each new :class:`Ready`.
    """

    def __init__(self, on_status: Callable[[Ready], None]) -> None:
        self._on_status = on_status
        self._lock = threading.Lock()
        self._ready = Ready()
        self._wanted = ('', '', '')
        self._generation = 0

    def current(self) -> Ready:
        """What is loaded now."""
        with self._lock:
            return self._ready

    def want(self, folder: str, robot: Hashable, urdf_text: Callable[[], str],
             urdf_path: str = '') -> None:
        """Hold the map of ``folder`` ('' for none) with the solver for the robot ``robot``
        (a key: the same key, the same robot) whose description ``urdf_text()`` gives (called
        in the background; '' for no robot; read from ``urdf_path``, '' for none): loaded in a
        background thread unless it is what is held or being loaded already."""
        with self._lock:
            key = (folder, robot, urdf_path)
            if key == self._wanted:
                return
            self._wanted = key
            self._generation += 1
            generation = self._generation
            held = self._ready.folder
        if not folder:  # nothing to load: said at once, and only when a map was held
            if held:
                self._set(generation, Ready())
            return
        thread = threading.Thread(target=self._load, args=(generation, folder, urdf_text,
                                                          urdf_path),
                                  name='capability-map', daemon=True)
        thread.start()

    def _set(self, generation: int, ready: Ready) -> bool:
        with self._lock:
            if generation != self._generation:
                return False
            self._ready = ready
        self._on_status(ready)
        return True

    def _load(self, generation: int, folder: str, urdf_text, urdf_path: str) -> None:
        try:
            from ik_node.capability.storage import load_map
            held = self.current()
            capability = held.capability if held.folder == folder and held.capability else None
            if capability is None:
                self._set(generation, Ready(folder, state=LOADING))
                capability = load_map(folder)
            if not self._set(generation, Ready(folder, capability, state=BUILDING_SOLVER)):
                return
            solver, why = _solver(capability, urdf_text(), urdf_path)
            self._set(generation, Ready(folder, capability, solver, why, READY))
        except Exception as exc:  # a bad folder or description: said in the status
            self._set(generation, Ready(folder, state=FAILED, error=str(exc)))


def _solver(capability, urdf_text: str, urdf_path: str):
    """The map's solver for the robot, warmed up (its kernels loaded by one small answer)."""
    from ik_node.capability.map_robot import solver_for_robot
    from ik_node.capability.placement import PlacementGrid
    from ik_node.capability.placement_answer import place_base
    solver, why = solver_for_robot(capability.meta, urdf_text, urdf_path)
    probe = np.array([[0.3, 0.0, 0.3, 0.0, 0.0, 0.0, 1.0]])
    place_base(capability, probe, PlacementGrid((0.0, 0.0, 0.1), (0.0, 0.0, 0.1), 3.14), 1,
               solver, why)
    return solver, why
