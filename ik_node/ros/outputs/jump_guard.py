"""The jump guard: no commanded answer moves a joint farther than the robot may move it.

A solver's answer can lie on another solution branch than the last one (a random restart, a
branch that runs into a joint limit); a position controller given it moves the arm there at full
speed. The guard stands between solve and publish. Each joint ``i`` may move from the last
commanded position by at most

    bound_i = min(jump_max_step, jump_velocity_scaling * v_i * dt)

where ``v_i`` is the URDF velocity limit (no velocity term where the URDF gives none) and ``dt``
the time since the last commanded answer [s]. An answer that moves some joint farther is, by
``jump_guard``:

* ``hold``: not commanded; the last command stays in force (nothing is published), and the
  verdict names the joint that would jump, by how much and the bound (the node reports ERROR);
* ``limit``: commanded as a step toward it, the whole joint vector scaled along the straight
  line so the most constrained joint moves exactly its bound (every other joint less); the
  verdict says so (the node reports WARN: the tip is not at the target).

Every command is inside the joint limits (the answers are; a step between two configurations
inside the limits stays inside, and the guard clips once more against round-off). The first
answer, with no command before it, passes unless a measured state is given: then it is measured
against that state with the ``jump_max_step`` bound alone (the time since the robot last moved
is unknown).

The parameters are validated in :mod:`ik_node.config.ros_graph` (``GraphConfig.guard`` is the
mode in force). Plain Python (no rclpy), so the rule is tested without ROS.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

@dataclass
class Verdict:
    """What the guard made of one answer.

    Attributes:
        q: the configuration to command (chain order) [rad or m], or None: hold (publish
            nothing, the last command stays).
        action: 'pass' (the answer as is), 'hold' or 'limit'.
        joint: the joint that would move farthest beyond its bound ('' on pass).
        move: how far that joint would move [rad or m].
        bound: its bound [rad or m].
        scale: the share of the answer's step commanded (1 on pass, 0 on hold).
        collision: on a hold because the answer collides (:mod:`.collision_hold`), the
            colliding pairs and their depths ('' otherwise).
    """

    q: Optional[List[float]]
    action: str
    joint: str = ''
    move: float = 0.0
    bound: float = math.inf
    scale: float = 1.0
    collision: str = ''

    @property
    def message(self) -> str:
        """One line for diagnostics and the log ('' on pass)."""
        if self.collision:
            return f'collision guard: held the last command: the answer collides: ' \
                   f'{self.collision}'
        if self.action == 'hold':
            return (f'jump guard: held the last command: {self.joint} would move '
                    f'{self.move:.3f} (bound {self.bound:.3f})')
        if self.action == 'limit':
            return (f'jump guard: limited: {self.joint} would move {self.move:.3f} (bound '
                    f'{self.bound:.3f}); commanded {100.0 * self.scale:.1f} % of the step, '
                    'the tip is not at the target yet')
        return ''


def guard_values(verdict: Verdict) -> Dict[str, str]:
    """Diagnostic key-values of a verdict that is not a pass (empty on pass)."""
    if verdict.action == 'pass':
        return {}
    if verdict.collision:
        return {'collision_hold': verdict.collision}
    return {'jump_joint': verdict.joint, 'jump_move': f'{verdict.move:.4g}',
            'jump_bound': f'{verdict.bound:.4g}', 'jump_commanded_share': f'{verdict.scale:.4g}'}


class JumpGuard:
    """Holds or limits answers that move a joint farther than its bound (module docstring).

    Args:
        joint_names: the chain's joints, in chain order.
        lower, upper: their position limits [rad or m].
        velocities: their URDF velocity limits [rad/s or m/s] (inf: none).
        mode: 'hold', 'limit' or 'off'.
        max_step: ``jump_max_step`` [rad or m], > 0.
        velocity_scaling: ``jump_velocity_scaling``, in (0, 1].

    Raises:
        ValueError: a bound that is not a positive finite number, or an unknown mode (the
            config layer refuses these first, with the parameter's name).
    """

    def __init__(self, joint_names: Sequence[str], lower: Sequence[float],
                 upper: Sequence[float], velocities: Sequence[float], mode: str,
                 max_step: float, velocity_scaling: float) -> None:
        if mode not in ('hold', 'limit', 'off'):
            raise ValueError(f'jump guard mode {mode!r} is not one of: hold, limit, off')
        for name, value in (('max_step', max_step), ('velocity_scaling', velocity_scaling)):
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f'jump guard {name} must be a positive finite number, got '
                                 f'{value!r}')
        if not len(joint_names) == len(lower) == len(upper) == len(velocities):
            raise ValueError('jump guard: joint names, limits and velocities differ in length')
        self.names = list(joint_names)
        self.lower, self.upper = [float(v) for v in lower], [float(v) for v in upper]
        self.velocities = [float(v) for v in velocities]
        self.mode, self.max_step, self.scaling = mode, float(max_step), float(velocity_scaling)
        # each joint's speed bound [rad/s or m/s], None where the URDF gives no velocity
        self._speeds = [self.scaling * v if math.isfinite(v) and v > 0.0 else None
                        for v in self.velocities]
        self._last: Optional[List[float]] = None
        self._last_time = -math.inf

    @property
    def on(self) -> bool:
        return self.mode != 'off'

    @property
    def last_command(self) -> Optional[List[float]]:
        """The last configuration commanded through the guard (chain order), or None."""
        return None if self._last is None else list(self._last)

    def carry_over(self, previous: 'JumpGuard') -> None:
        """Take the last command of the guard this one replaces (the same chain, new
        parameters), so a parameter change does not let the next answer jump."""
        if previous._last is not None and len(previous._last) == len(self.names):
            self._last, self._last_time = list(previous._last), previous._last_time

    def reset(self) -> None:
        """Forget the last command (a new chain, or the robot moved by other means)."""
        self._last, self._last_time = None, -math.inf

    def bounds(self, now: float) -> List[float]:
        """Each joint's bound [rad or m] for an answer commanded at ``now`` [s]."""
        dt, step = now - self._last_time, self.max_step
        if not math.isfinite(dt):
            return [step] * len(self._speeds)
        dt = max(dt, 0.0)
        return [step if speed is None else min(step, speed * dt) for speed in self._speeds]

    def check(self, q: Sequence[float], now: float,
              q_measured: Optional[Sequence[float]] = None) -> Verdict:
        """The verdict on answer ``q`` (chain order) to be commanded at ``now`` [s, monotonic].

        ``q_measured``: the robot's measured state (chain order), the reference of the first
        answer. A passed or limited answer becomes the last command.
        """
        tolist = getattr(q, 'tolist', None)  # an array's values as floats, in one call
        values = tolist() if tolist is not None else [float(v) for v in q]
        lower, upper = self.lower, self.upper
        if len(values) != len(lower):
            raise ValueError(f'jump guard: {len(values)} joint values for '
                             f'{len(lower)} joints')
        q = values  # clipped into the limits once more (round-off), copied only if that moves one
        for v, lo, hi in zip(values, lower, upper):
            if not lo <= v <= hi:
                q = [lo if v < lo else hi if v > hi else v
                     for v, lo, hi in zip(values, lower, upper)]
                break
        if self.mode == 'off':
            return Verdict(q, 'pass')
        if self._last is None:
            if q_measured is None:
                return self._commit(q, now, Verdict(q, 'pass'))
            reference, bounds = [float(v) for v in q_measured], [self.max_step] * len(q)
        else:
            reference, bounds = self._last, self.bounds(now)
        scale, worst = 1.0, -1
        for i, (a, b, bound) in enumerate(zip(reference, q, bounds, strict=True)):
            move = abs(b - a)
            if move > bound and bound / move < scale:
                scale, worst = bound / move, i
        if worst < 0:
            return self._commit(q, now, Verdict(q, 'pass'))
        move = abs(q[worst] - reference[worst])
        if self.mode == 'hold':
            return Verdict(None, 'hold', self.names[worst], move, bounds[worst], 0.0)
        limited = [min(max(a + scale * (b - a), lo), hi) for a, b, lo, hi in
                   zip(reference, q, lower, upper)]
        return self._commit(limited, now, Verdict(limited, 'limit', self.names[worst], move,
                                                  bounds[worst], scale))

    def _commit(self, q: List[float], now: float, verdict: Verdict) -> Verdict:
        self._last, self._last_time = list(q), now
        return verdict
