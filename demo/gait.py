"""A trot's foot paths for a quadruped, in the trunk frame, with a few footholds out of reach.

Pure numpy (no ROS): the main job (``main_job.py``) sends these targets to the node as one
``geometry_msgs/PoseArray`` per step, its picture (``pictures.plot_gait``) draws them.

The trunk walks forward at a constant speed over flat ground. Each foot stands at its nominal
foothold (FK of the standing configuration) moved along x by the stride: in stance it stays on
the ground while the trunk passes over it, so in the trunk frame it slides backward by one stride
at the ground's height; in swing it comes forward by one stride on a half-sine arc ``lift`` high.
Diagonal feet move together (a trot): the feet ahead-left and behind-right (the sign of x times
the sign of y of the foothold is positive) in one phase, the other two half a period later.

Out of reach, on purpose: in the cycles listed in ``far_cycles``, one foot (a different one each
time) steps into a hole: its stance foothold is ``hole_depth`` below the ground, deeper than the
leg can stretch. Those targets are marked in :attr:`GaitStep.far`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Sequence, Tuple

import numpy as np

#: The standing joint configuration of each quad12 leg (abduction, hip pitch, knee) [rad].
QUAD12_STAND = (0.0, 0.7, -1.4)


@dataclass(frozen=True)
class GaitStep:
    """One instant of the gait.

    Attributes:
        t: time since the start [s].
        targets: per foot, its target position in the trunk frame [m].
        far: per foot, True when its target is a foothold placed out of reach on purpose.
        stance: per foot, True in stance (on the ground), False in swing.
    """

    t: float
    targets: Dict[str, np.ndarray]
    far: Dict[str, bool]
    stance: Dict[str, bool]


def footholds(chain, stand: Sequence[float] = QUAD12_STAND) -> Dict[str, np.ndarray]:
    """The nominal foothold of every foot: FK of every leg at ``stand`` [m, trunk frame]."""
    q = np.tile(np.asarray(stand, dtype=float), len(chain.tip_links))
    if q.size != chain.n:
        raise ValueError(f'stand has {len(stand)} joints per leg; the chain has {chain.n} '
                         f'joints for {len(chain.tip_links)} feet')
    return {foot: T[:3, 3].copy() for foot, T in chain.fk_tips(q).items()}


def trot(chain, steps: int, rate_hz: float = 50.0, period_s: float = 0.8,
         stride_m: float = 0.12, lift_m: float = 0.06, hole_depth_m: float = 0.25,
         far_cycles: Tuple[int, ...] = (1, 2), stand: Sequence[float] = QUAD12_STAND
         ) -> Tuple[GaitStep, ...]:
    """``steps`` instants of a trot sampled at ``rate_hz`` (see the module's docstring).

    Args:
        chain: the quadruped (four tips, one leg each, joints ordered leg by leg).
        steps: number of instants.
        rate_hz: sampling rate [Hz].
        period_s: one gait cycle (both diagonal pairs swing once) [s].
        stride_m: how far a foot moves relative to the trunk per half cycle [m].
        lift_m: swing height [m].
        hole_depth_m: how far below the ground a foothold out of reach is [m].
        far_cycles: cycles (0, 1, ...) in which one foot steps into a hole.
        stand: the standing configuration of each leg [rad].
    """
    nominal = footholds(chain, stand)
    feet = list(chain.tip_links)
    phase0 = {f: 0.0 if p[0] * p[1] > 0.0 else 0.5 for f, p in nominal.items()}
    out = []
    for k in range(steps):
        t = k / rate_hz
        targets, far, stance = {}, {}, {}
        for foot in feet:
            cycle_time = t / period_s + phase0[foot]
            cycle, phase = int(math.floor(cycle_time)), cycle_time % 1.0
            p = nominal[foot].copy()
            if phase < 0.5:  # stance: the trunk passes over the foot
                s = phase / 0.5
                p[0] += stride_m * (0.5 - s)
                in_hole = cycle in far_cycles and _hole_foot(cycle, far_cycles, feet) == foot
                if in_hole:
                    p[2] -= hole_depth_m
                far[foot], stance[foot] = in_hole, True
            else:  # swing: forward on an arc
                s = (phase - 0.5) / 0.5
                p[0] += stride_m * (0.5 * (1.0 - math.cos(math.pi * s)) - 0.5)
                p[2] += lift_m * math.sin(math.pi * s)
                far[foot], stance[foot] = False, False
            targets[foot] = p
        out.append(GaitStep(t, targets, far, stance))
    return tuple(out)


def _hole_foot(cycle: int, far_cycles: Tuple[int, ...], feet: Sequence[str]) -> str:
    """The foot that steps into a hole in ``cycle`` (a different one each listed cycle)."""
    return feet[far_cycles.index(cycle) % len(feet)]
