"""Smooth target streams shared by the node and solver benchmarks: a joint-space path through
the middle of the limits, put through FK, and its windows pushed out of reach.

``read_config`` reads a packaged ``config/<robot>.yaml``'s node parameters.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Dict

import numpy as np


def read_config(path: Path) -> Dict[str, Any]:
    import yaml
    params = yaml.safe_load(path.read_text())['ik_node']['ros__parameters']
    return params


def trajectory(chain, n: int, rate_hz: float, speed_scale: float, rng_seed: int = 0):
    """``n`` configurations of a smooth joint-space path sampled at ``rate_hz``.

    Every joint moves sinusoidally within the middle 60 % of its range, at its own frequency
    (0.3 .. 0.7 Hz times ``speed_scale``), so the tip never rests.
    """
    rng = np.random.default_rng(rng_seed)
    lo = np.where(np.isfinite(chain.lower), chain.lower, -math.pi)
    hi = np.where(np.isfinite(chain.upper), chain.upper, math.pi)
    mid, amp = 0.5 * (lo + hi), 0.3 * (hi - lo)
    freq = rng.uniform(0.3, 0.7, chain.n) * speed_scale
    phase = rng.uniform(0, 2 * math.pi, chain.n)
    t = np.arange(n)[:, None] / rate_hz
    return mid + amp * np.sin(2 * math.pi * freq * t + phase)


def out_of_reach_mask(n: int, rate_hz: float, share: float, period_s: float = 2.0) -> np.ndarray:
    """Which of ``n`` targets sent at ``rate_hz`` :func:`leave_reach` pushes out of reach: the
    last ``share`` of every ``period_s`` window."""
    if share <= 0.0:
        return np.zeros(n, dtype=bool)
    t = np.arange(n) / rate_hz
    return (t % period_s) >= (1.0 - share) * period_s


def leave_reach(chain, targets: np.ndarray, rate_hz: float, share: float,
                period_s: float = 2.0) -> np.ndarray:
    """``targets`` with the stream out of reach ``share`` of the time (0: unchanged).

    In each ``period_s`` window the last ``share`` of the time (:func:`out_of_reach_mask`) the
    target is pushed along the ray from the chain's first joint to 1.05-1.25 times its summed
    bone lengths (provably out of reach; the factor drifts smoothly), as a teleop target leaving
    the workspace and coming back.
    """
    if share <= 0.0:
        return targets
    from ik_node.model.chain import chain_lengths
    origin = chain.joint_frames(np.zeros(chain.n))[0, :3, 3]
    reach = float(sum(chain_lengths(chain)))
    t = np.arange(len(targets)) / rate_hz
    out_now = out_of_reach_mask(len(targets), rate_hz, share, period_s)
    d = targets - origin
    factor = reach * (1.15 + 0.1 * np.sin(2 * math.pi * t / (3.1 * period_s)))
    pushed = origin + d / np.linalg.norm(d, axis=1)[:, None] * factor[:, None]
    return np.where(out_now[:, None], pushed, targets)


def tip_positions(chain, q: np.ndarray) -> np.ndarray:
    """``(n, tips, 3)``: every tip's position [m] at each configuration of ``q`` ``(n, dof)``."""
    return np.stack([chain.fk(q, tip)[..., :3, 3] for tip in chain.tip_links], axis=1)
