"""One solve as the node's outputs see it: an immutable value handed to the statuses and
markers, built by keyword.

No rclpy: a NamedTuple over the chain, the solver's result and the targets solved (made on every
answer: a NamedTuple is built in a fraction of a frozen dataclass's time)."""

from __future__ import annotations

from typing import Any, Callable, Dict, Mapping, NamedTuple, Optional, Tuple

import numpy as np

from ik_node.model.chain import Chain
from ik_node.ros.inputs.targets import TargetInBase
from ik_node.ros.outputs.jump_guard import Verdict
from ik_node.solvers.base import IkResult


class Once:
    """A function of no argument, called on the first call only: later calls return its first
    value. Holds a solve's collision check until a status or the markers first ask."""

    __slots__ = ('_function', '_value')

    def __init__(self, function: Callable[[], Any]) -> None:
        self._function, self._value = function, None

    def __call__(self) -> Any:
        if self._function is not None:
            self._value, self._function = self._function(), None
        return self._value


class SolveReport(NamedTuple):
    """A solve, answered: what was solved, how, and what went out.

    Attributes:
        chain: the chain solved.
        solver: the solver's name.
        result: the solver's result.
        targets: the targets of this solve in the base frame, by slot (a tip; None for a
            serial chain's one tip).
        standing: a branched chain's standing target position of every tip [m] (the new ones
            included), which the solve answered together; empty for a serial chain.
        q: the solution checked for publishing (finite, within the limits) [rad or m].
        frame: the frames the targets were given in, comma-separated.
        stamps: the stamps of the targets answered, comma-separated.
        count: the solve's number (``solve_count``).
        seed_note: where the seed came from (``measured`` or why the last solution).
        output: the output kind (``joint_states``, ``position_command``, ...).
        joint_state_stamp: the stamp of the output message sent ('' when the guard held it).
        guard: the jump guard's verdict on ``q``.
        collision_check: returns ``(collision, colliding_triangles)`` (below) of ``q``, at
            most once (a :class:`Once`); run when a status or the markers first ask (a person
            reads them, at their rates, not on every answer of a stream); None: no collision
            geometry.

    Properties :attr:`collision` (the collision check's key-values of ``q``:
    ``min_distance_m``, ``closest_pair``, ``colliding_links``; empty without collision
    geometry) and :attr:`colliding_triangles` (the colliding links' hull triangles in the base
    frame, ``(m, 3, 3)`` [m], for RViz; None when no link collides).
    """

    chain: Chain
    solver: str
    result: IkResult
    targets: Mapping[Optional[str], TargetInBase]
    standing: Mapping[str, np.ndarray]
    q: np.ndarray
    frame: str
    stamps: str
    count: int
    seed_note: str
    output: str
    joint_state_stamp: str
    guard: Optional[Verdict] = None
    collision_check: Optional[Callable[[], Tuple[Mapping[str, str],
                                                 Optional[np.ndarray]]]] = None

    def _collision(self) -> Tuple[Mapping[str, str], Optional[np.ndarray]]:
        return ({}, None) if self.collision_check is None else self.collision_check()

    @property
    def collision(self) -> Mapping[str, str]:
        return self._collision()[0]

    @property
    def colliding_triangles(self) -> Optional[np.ndarray]:
        return self._collision()[1]

    @property
    def placed(self) -> Dict[Optional[str], Tuple[np.ndarray, Optional[np.ndarray]]]:
        """``{slot: (position [m], quat_xyzw or None)}`` of the targets solved (base frame)."""
        return {slot: (t.position, t.quat_xyzw) for slot, t in self.targets.items()}

    @property
    def tip_stamps(self) -> Dict[str, str]:
        """The stamp of the target each named tip answers (a tip solved again for its earlier
        target has none)."""
        return {tip: t.target.stamp_text for tip, t in self.targets.items() if tip}

    @property
    def projected_m(self) -> Optional[float]:
        """The largest distance a point target was moved onto the chain's plane [m], None when
        none was."""
        moved = [t.projected_m for t in self.targets.values() if t.projected_m]
        return max(moved) if moved else None
