"""The base-placement scan in one numba call: for every yaw and base position of the floor
grid, the share of task poses whose (voxel, orientation bin) the map marks uniformly reachable,
and the share in mixed cells. The same
arithmetic as :meth:`ik_node.capability.query.CellLookup.rows_of` (a voxel is
``floor(x / voxel + 0.5)``); numpy does it where numba cannot serve (a test compares them)."""

from __future__ import annotations

import math
import threading
from typing import Callable, Optional


_lock = threading.Lock()
_kernel: Optional[Callable] = None


def _shares(lookup, verdicts, tasks, grid, out):
    """``out[0, t, b]``: the share of the task poses in uniformly reachable cells from base
    ``b`` turned by yaw ``t``; ``out[1, t, b]``: the share in mixed cells. ``lookup``:
    ``(rows, low, shape, 1 / voxel)`` of a :class:`~.query.CellLookup` (``rows`` flattened);
    ``verdicts``: ``(the map's three-valued verdicts flattened, orientations)``; ``tasks``:
    ``(positions (J, 3), bins (T, J))``, the orientation bin of each task pose at each yaw;
    ``grid``: ``(bases (B, 2) x, y, yaws (T,), base height)``."""
    rows, low, shape, inv_voxel = lookup
    reached, width = verdicts
    task, bins = tasks
    bases, yaws, z = grid
    sx, sy, sz = shape[0], shape[1], shape[2]
    count = task.shape[0]
    for t in range(yaws.shape[0]):
        c = math.cos(yaws[t])
        s = math.sin(yaws[t])
        for b in range(bases.shape[0]):
            hits = 0
            mixed = 0
            for j in range(count):
                dx = task[j, 0] - bases[b, 0]
                dy = task[j, 1] - bases[b, 1]
                ix = int(math.floor((c * dx + s * dy) * inv_voxel + 0.5)) - low[0]
                iy = int(math.floor((c * dy - s * dx) * inv_voxel + 0.5)) - low[1]
                iz = int(math.floor((task[j, 2] - z) * inv_voxel + 0.5)) - low[2]
                if 0 <= ix < sx and 0 <= iy < sy and 0 <= iz < sz:
                    row = rows[(ix * sy + iy) * sz + iz]
                    if row >= 0:
                        verdict = reached[row * width + bins[t, j]]  # 0, 1 or 2
                        hits += verdict & 1
                        mixed += verdict >> 1
            out[0, t, b] = hits / count if count else 0.0
            out[1, t, b] = mixed / count if count else 0.0


def kernel() -> Optional[Callable]:
    """The compiled :func:`_shares`, or None where numba cannot serve."""
    global _kernel
    if _kernel is None:
        from ik_node import kernels
        if not kernels.available():
            return None
        with _lock:
            if _kernel is None:
                try:
                    import numba
                    _kernel = numba.njit(cache=True, nogil=True)(_shares)
                except Exception:  # numba unusable here: numpy serves
                    return None
    return _kernel
