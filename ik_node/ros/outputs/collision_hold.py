"""The collision hold: no answer that collides goes out, on any output.

An answer the solver returns within tolerance is collision-free (the solver's collision guard
proved it, :mod:`ik_node.solvers.collision_guard`). Every other answer of a solver that checks
collisions is checked here before it is published: an ``in_collision`` result carries the best
collision-free pose the guard found (published: the JointState shows it, a controller is sent
it), or, where it found none, the colliding answer itself; an answer short of the target (out
of reach, not converged) is the solver's best effort, unchecked. One that collides (two links,
a link and the ground or an obstacle, closer than the padding) is held as the jump guard holds
a jump (:mod:`.jump_guard`): nothing is published, the last command stays in force, and the
status is an ERROR naming the pairs and their depths.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ik_node.ros.outputs.jump_guard import Verdict
from ik_node.solvers.collision_guard import CollisionGuard


def collision_hold(solver, result, q: Sequence[float]) -> Optional[Verdict]:
    """A hold verdict when answer ``q`` (of ``result``) collides under ``solver``'s check, or
    None: it is free, the result is reachable (checked free by the solver already), or the
    solver checks no collision."""
    guard = getattr(solver, '_collision', None)
    if result.reachable or not isinstance(guard, CollisionGuard):
        return None
    checker = guard.checker
    q = np.asarray(q, dtype=float)
    if checker.is_free(q):
        return None
    what = checker.report(q).colliding_text() or 'closer than the padding'
    return Verdict(None, 'hold', collision=what)
