"""The shards of a capability map as Ray tasks on a running cluster (the optional ``scale``
extra: ``pip install ik_node[scale]``).

The driver connects to ``address`` (``host:port`` of the head's GCS), sends each shard as one
task of :func:`ik_node.capability.decide.shard_task` (one CPU each) and writes each shard's
verdicts as it comes back. Every node of the cluster needs ik_node (and numba, and the robot's
meshes where collisions are checked) installed; nothing is uploaded.
"""

from __future__ import annotations

import socket
from typing import Callable, List

from ik_node.errors import ConfigError

#: How long the driver tries to reach the head before it gives up [s].
CONNECT_TIMEOUT_S = 5.0


def _ray():
    try:
        import ray
    except ImportError:
        raise ConfigError('--ray-address needs Ray: pip install "ik_node[scale]" (or pip '
                          'install ray)') from None
    return ray


def check_address(address: str) -> None:
    """Raise :class:`ConfigError` unless ``address`` (``host:port``) accepts a TCP connection
    within :data:`CONNECT_TIMEOUT_S` ('auto' is left to Ray)."""
    if address in ('auto', 'local'):
        return
    host, sep, port = address.rpartition(':')
    if address.startswith('ray://'):
        host, sep, port = address[len('ray://'):].rpartition(':')
    if not sep or not port.isdigit():
        raise ConfigError(f'Ray address {address!r}: expected host:port, e.g. 127.0.0.1:6379')
    try:
        with socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:
        raise ConfigError(f'cannot reach the Ray cluster at {address}: {exc.strerror or exc} '
                          '(is `ray start --head` running there?)') from None


def run_shards(spec, todo: List[int], address: str, in_flight: int,
               finished_one: Callable) -> None:
    """Compute shards ``todo`` of ``spec`` as Ray tasks on the cluster at ``address``, at most
    ``in_flight`` at once (0: twice the cluster's CPUs), calling ``finished_one`` with each
    answer as it arrives."""
    ray = _ray()
    check_address(address)
    from ik_node.capability.decide import shard_task
    started_here = not ray.is_initialized()
    if started_here:
        try:
            ray.init(address=address, log_to_driver=False, include_dashboard=False)
        except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ...
            raise ConfigError(f'cannot join the Ray cluster at {address}: {exc}') from None
    try:
        task = ray.remote(num_cpus=1)(shard_task)
        spec_ref = ray.put(spec)
        limit = in_flight or max(2, 2 * int(ray.cluster_resources().get('CPU', 1)))
        pending, queue = [], list(todo)
        while queue or pending:
            while queue and len(pending) < limit:
                pending.append(task.remote(spec_ref, queue.pop(0)))
            done, pending = ray.wait(pending, num_returns=1)
            finished_one(ray.get(done[0]))
    finally:
        if started_here:
            ray.shutdown()
