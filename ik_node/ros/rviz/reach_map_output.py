"""``~/reachability``: the sampled reachability map of every tip, built in the background, or
the IK-verified maps of a capability map folder (the ``capability_map`` parameter) where it
holds one for every tip.

The map (:mod:`ik_node.reachability`) is built chunk by chunk in one daemon worker thread that
yields the interpreter between chunks, so solving goes on while it builds; progress goes to the
log. A new chain cancels the build in progress and the worker starts the new one. Once built,
the map also tells how far an unreachable target is from the nearest voxel a sampled
configuration reached.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Dict, Optional, Tuple

import numpy as np
from rclpy.node import Node
from visualization_msgs.msg import MarkerArray

from ik_node.ros.rviz import markers, views
from ik_node.model.chain import Chain
from ik_node.ros.rviz.marker_output import LATCHED_QOS

if TYPE_CHECKING:  # the map's modules load with the first map, not at the node's start-up
    from ik_node.reachability import ReachabilityMap

CHUNK = 2048
PAUSE_S = 0.002  # between chunks: the solving thread gets the interpreter


def map_files(chain: Chain, folder: str) -> Tuple[Path, ...]:
    """``folder``'s ``reach_map_<tip>.npz`` of every tip of ``chain``, or () where ``folder``
    is '' or lacks one of them."""
    if not folder:
        return ()
    files = tuple(Path(folder).expanduser() / f'reach_map_{tip}.npz' for tip in chain.tip_links)
    return files if all(path.is_file() for path in files) else ()


class ReachabilityMaps:
    """Builds, publishes and answers queries on the maps of the chain in force."""

    def __init__(self, node: Node, send: Callable) -> None:
        self._node, self._send = node, send
        self._pub = node.create_publisher(MarkerArray, '~/reachability', LATCHED_QOS)
        self._lock = threading.Lock()
        self._maps: Dict[str, ReachabilityMap] = {}
        self._cancel = threading.Event()
        # One worker thread builds every map, the newest job first (a thread per build would
        # give each its own allocator arena: memory that grows with every description swap).
        self._wake = threading.Condition(self._lock)
        self._job: Optional[tuple] = None  # (chain, samples, voxel_size, cancel) to build next
        self._stopped = False
        self._worker: Optional[threading.Thread] = None
        self._key: Optional[tuple] = None

    def follow(self, chain: Chain, samples: int, voxel_size: float, folder: str = '') -> None:
        """The maps of ``chain``: built anew only when the chain, the sampling or the map
        ``folder`` changed. ``folder``: a capability map folder (``ik-solve capability-map
        --out``); where it holds ``reach_map_<tip>.npz`` of every tip of ``chain`` (same base
        link), those IK-verified maps are shown instead of sampling."""
        key = (id(chain), samples, voxel_size, folder)
        if key != self._key:
            self._key = key
            self.start(chain, samples, voxel_size, folder)

    def clear(self, chain: Chain) -> None:
        """No chain: cancel any build and publish an empty map (frame: ``chain``'s base)."""
        self.start(chain, 0, 0.1)
        self._key = None

    def start(self, chain: Chain, samples: int, voxel_size: float, folder: str = '') -> None:
        """Cancel any build in progress and build the maps of ``chain`` (nothing if 0 samples).

        Does not wait for the cancelled build to end (it stops at its next chunk and never
        publishes): a description change under a flood of targets is answered at once."""
        # The map's modules load here, before the worker runs: the worker importing
        # ik_node.reachability while this thread imports map_markers (which imports a module of
        # that package first, then the package) deadlocks on Python's import locks. The build
        # filters its samples with ik_node.collision.
        from ik_node import collision  # noqa: F401
        from ik_node.ros.rviz import map_markers
        with self._lock:
            self._cancel.set()
            self._maps = {}
            self._cancel = threading.Event()
            files = map_files(chain, folder)
            self._job = (chain, samples, voxel_size, self._cancel, files) \
                if samples > 0 or files else None
            if self._job is not None and self._worker is None and not self._stopped:
                self._worker = threading.Thread(target=self._work, name='reachability_map',
                                                daemon=True)
                self._worker.start()
            self._wake.notify()
        stamp = self._node.get_clock().now().to_msg()
        self._send(self._pub, markers.marker_array(map_markers.reachability_markers(
            chain.base_link, stamp, [])))

    def stop(self) -> None:
        """Cancel any build in progress and end the worker (waiting 2 s at most)."""
        with self._lock:
            self._cancel.set()
            self._stopped, self._job = True, None
            self._wake.notify()
            worker = self._worker
        if worker is not None and worker is not threading.current_thread():
            worker.join(timeout=2.0)

    def _work(self) -> None:
        """The worker: build the newest job, wait for the next, until stopped."""
        while True:
            with self._lock:
                while self._job is None and not self._stopped:
                    self._wake.wait()
                if self._stopped:
                    return
                job, self._job = self._job, None
            try:
                self._build(*job)
            except Exception as exc:  # a map is a picture: the worker lives on for the next
                self._node.get_logger().error(
                    f'reachability map not built: {type(exc).__name__}: {exc}')

    @property
    def ready(self) -> bool:
        with self._lock:
            return bool(self._maps)

    @property
    def count(self) -> int:
        """How many tips' maps are built."""
        with self._lock:
            return len(self._maps)

    def distance(self, tip: str, p_base: np.ndarray) -> Optional[float]:
        """Distance [m] from ``p_base`` to the nearest voxel a sample reached, or None (no map).

        It proves nothing about unreachability: a sampled map under-approximates the workspace.
        """
        with self._lock:
            reach_map = self._maps.get(tip)
        if reach_map is None:
            return None
        from ik_node.reachability import nearest_reachable_distance
        return nearest_reachable_distance(reach_map, p_base)

    def _build(self, chain: Chain, samples: int, voxel_size: float,
               cancel: threading.Event, files=()) -> None:
        from ik_node.reachability import ReachabilityBuilder  # loaded by start()
        from ik_node.ros.rviz import map_markers
        log = self._node.get_logger()
        start = time.monotonic()
        maps = []
        try:
            if files:
                from ik_node.reachability.files import load_npz
                maps = [load_npz(path) for path in files]
                if any(m.base_link != chain.base_link for m in maps):
                    raise ValueError(f'the maps in {files[0].parent} start at '
                                     f'{maps[0].base_link}, the chain at {chain.base_link}')
                log.info(f'reachability map: the capability maps {[str(p) for p in files]}')
            for tip in chain.tip_links if not files else ():
                builder = ReachabilityBuilder(chain, tip, samples=samples, voxel_size=voxel_size,
                                              chunk_size=CHUNK)
                reported = 0
                while not builder.done:
                    if cancel.is_set():
                        return
                    progress = builder.step()
                    if progress.samples_done * 4 // progress.samples_total > reported:
                        reported = progress.samples_done * 4 // progress.samples_total
                        log.info(f'reachability map of {tip}: {25 * reported} % '
                                 f'({time.monotonic() - start:.1f} s)')
                    time.sleep(PAUSE_S)
                maps.append(builder.result())
        except Exception as exc:  # a map is a picture: it never takes the node down
            log.error(f'reachability map not built: {type(exc).__name__}: {exc}')
            return
        try:
            view = views.chain_view(chain)
        except Exception:  # the legend then frames the maps alone
            view = None
        picture = markers.marker_array(map_markers.reachability_markers(
            chain.base_link, self._node.get_clock().now().to_msg(), maps, view=view))
        with self._lock:  # a build cancelled by now is not shown
            if cancel.is_set():
                return
            self._maps = {m.tip_link: m for m in maps}
            self._send(self._pub, picture)
        log.info(f'reachability map published on {self._pub.topic_name}: '
                 f'{sum(len(m.index) for m in maps)} voxels in {time.monotonic() - start:.1f} s')
