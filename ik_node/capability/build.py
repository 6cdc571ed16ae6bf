"""Building a capability map: its shards computed on this machine's cores or on a Ray cluster,
written as they finish, then merged.

The default runs the shards in a pool of worker processes on this machine
(:class:`concurrent.futures.ProcessPoolExecutor`, started by ``spawn``): no server, no network,
nothing to install; each worker loads the compiled kernels once from numba's cache and keeps
its solver for every shard it gets. Ray's local mode would start a Ray runtime (a GCS server,
a raylet, a dashboard's ports) to do the same on one machine. With a Ray address
(``ray_address``, or ``RAY_ADDRESS`` set) the same shard function runs as Ray tasks
(:mod:`.ray_backend`). Either way the workers send each shard's verdicts back and the builder
writes the shard file, so a cluster needs no shared disk.

Shards already in the map folder (of the same spec) are not computed again: a killed build
resumes where it was.
"""

from __future__ import annotations

import concurrent.futures
import json
import multiprocessing
import os
import re
from pathlib import Path
from typing import Callable, Iterable, Optional

import numpy as np

import ik_node.capability.storage as storage
from ik_node.capability.decide import ShardAnswer, cells_of, shard_task
from ik_node.capability.progress import Progress
from ik_node.capability.spec import MapSpec, shard_bounds
from ik_node.errors import ConfigError

#: Beside the map: the CPU time its shards took (not in the map, which is the same file for
#: the same spec whatever the build took).
BUILD_FILE = 'build.json'
def robot_name(urdf_text: str) -> str:
    """The ``<robot name=...>`` of a URDF text ('' if none)."""
    match = re.search(r'<robot\b[^>]*\bname\s*=\s*["\']([^"\']*)["\']', urdf_text)
    return match.group(1) if match else ''


def build_map(spec: MapSpec, folder: Path, workers: int = 0,
              ray_address: Optional[str] = None, progress: Optional[Progress] = None,
              stop_after: Optional[int] = None) -> Optional[storage.CapabilityMap]:
    """Build (or finish) the map of ``spec`` in ``folder`` and return it.

    Args:
        spec: what to build.
        folder: the map folder (``capability_map.npz``, ``shards/``).
        workers: worker processes (0: one per core); with Ray, the tasks in flight (0: as many
            as the cluster has CPUs).
        ray_address: a Ray cluster (``host:port``; None: ``RAY_ADDRESS`` if set, else this
            machine's process pool).
        progress: shown as shards finish (None: none).
        stop_after: compute at most this many shards, then return None (a build cut short,
            for tests of resuming).

    Raises:
        ConfigError: a bad spec, an unwritable folder, Ray not installed or not reachable.
    """
    folder = Path(folder)
    cells = cells_of(spec)
    bounds = shard_bounds(cells, spec.shard_cells)
    count = len(bounds) - 1
    shard_dir = storage.shard_folder(folder, spec)
    try:
        shard_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f'cannot create {str(shard_dir)!r}: {exc.strerror}') from None
    finished = storage.finished_shards(shard_dir)
    todo = [k for k in range(count) if k not in finished]
    if stop_after is not None:
        todo = todo[:stop_after]
    orientations = spec.directions * spec.rolls
    per_shard = (np.diff(bounds) * orientations).tolist()
    if progress is not None:
        progress.total = len(cells) * orientations
        progress.done = progress._resumed = sum(per_shard[k] for k in finished)

    def finished_one(answer: ShardAnswer) -> None:
        index, bits, width, seconds = answer
        reached = np.unpackbits(bits, axis=1, count=width).astype(bool)
        storage.save_shard(shard_dir, index, reached, seconds)
        if progress is not None:
            progress.update(per_shard[index])

    address = ray_address if ray_address is not None else os.environ.get('RAY_ADDRESS') or None
    if todo:
        if address:
            from ik_node.capability.ray_backend import run_shards
            run_shards(spec, todo, address, workers, finished_one)
        else:
            _run_local(spec, todo, workers, finished_one)
    if progress is not None:
        progress.close()
    finished = storage.finished_shards(shard_dir)
    if len(finished) < count:
        return None
    shards, seconds = {}, 0.0
    for k, path in finished.items():
        if k < count:
            shards[k], spent = storage.load_shard(path)
            seconds += spent
    capability = storage.merge(spec, robot_name(spec.urdf_text), cells, shards)
    storage.save_map(capability, folder)
    (folder / BUILD_FILE).write_text(json.dumps({'shard_seconds': round(seconds, 3),
                                                 'shards': count}) + '\n')
    return capability


def _run_local(spec: MapSpec, todo: Iterable[int], workers: int,
               finished_one: Callable[[ShardAnswer], None]) -> None:
    """The shards in this process (one worker) or a pool of ``workers`` processes."""
    todo = list(todo)
    workers = workers or os.cpu_count() or 1
    if workers == 1 or len(todo) == 1:
        for k in todo:
            finished_one(shard_task(spec, k))
        return
    context = multiprocessing.get_context('spawn')
    with concurrent.futures.ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = [pool.submit(shard_task, spec, k) for k in todo]
        try:
            for future in concurrent.futures.as_completed(futures):
                finished_one(future.result())
        except BaseException:
            for future in futures:
                future.cancel()
            raise
