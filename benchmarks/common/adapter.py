"""The adapter contract shared by every solver in the benchmark (:mod:`peers` and
:mod:`compiled_peers` build on it): the success criteria, the target and robot values, and
:class:`Adapter`.

An adapter is bound to one robot and one task ('6d' or 'position') and splits a solve in three:
``prepare(target, q_seed)`` builds the solver's native inputs (not timed), ``solve(*args)`` is
the call the harness times, ``joints(raw)`` turns the native answer into a numpy joint vector in
ik_node's joint order (not timed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

#: Numeric success criteria (also stated in results.md).
POSITION_TOL_M = 1e-5
ORIENTATION_TOL_RAD = 1e-4


class Skip(Exception):
    """A solver cannot run this robot or task; the message says why."""


@dataclass(frozen=True)
class Target:
    """One IK target: ``T_base_tip`` and its parts."""

    T: np.ndarray          # 4x4 T_base_tip
    position: np.ndarray   # (3,) [m]
    quat_xyzw: np.ndarray  # (4,) unit quaternion (x, y, z, w)


@dataclass
class Robot:
    """A URDF chain under test."""

    name: str
    urdf_path: Path
    base: str
    tip: str
    chain: Any                      # ik_node.Chain
    urdf: Any                       # urdf_parser_py URDF
    path: List[Any] = field(default_factory=list)  # URDF joints base -> tip (fixed included)


def wrap_into_limits(q: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                     revolute: np.ndarray) -> np.ndarray:
    """``q`` with revolute joints moved by whole turns into their limits where that fits."""
    q = np.array(q, dtype=float)
    two_pi = 2.0 * math.pi
    for i in np.flatnonzero(revolute):
        if not (math.isfinite(lower[i]) and math.isfinite(upper[i])) or not math.isfinite(q[i]):
            continue
        if lower[i] <= q[i] <= upper[i]:
            continue
        k = math.ceil((lower[i] - q[i]) / two_pi)
        candidate = q[i] + k * two_pi
        if candidate <= upper[i]:
            q[i] = candidate
    return q


# --------------------------------------------------------------------------------- adapters
class Adapter:
    """One solver bound to one robot and task. See the module docstring."""

    name = ''
    is_peer = True

    def __init__(self, robot: Robot, task: str):
        self.robot = robot
        self.task = task
        self.n = robot.chain.n
        self.settings: Dict[str, Any] = {}
        self._revolute = np.array([j.type != 'prismatic' for j in robot.chain.joints])

    def prepare(self, target: Target, q_seed: np.ndarray) -> Tuple:
        raise NotImplementedError

    def solve(self, *args):
        raise NotImplementedError

    def joints(self, raw) -> np.ndarray:
        raise NotImplementedError

    def iterations(self, raw) -> Optional[int]:
        """Iterations the solver says it took, when it says (only reported, never trusted)."""
        return None

    def inner_time(self, raw) -> Optional[float]:
        """The solver's own timing of its core [s], when it gives one (only reported)."""
        return None

    def _wrapped(self, q: np.ndarray) -> np.ndarray:
        chain = self.robot.chain
        return wrap_into_limits(q, chain.lower, chain.upper, self._revolute)
