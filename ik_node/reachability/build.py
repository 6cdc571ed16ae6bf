"""Building reachability maps: sampling, vectorised FK and binning, chunk by chunk."""

from __future__ import annotations

import math
from typing import Callable, Dict, Iterator, List, NamedTuple, Optional, Tuple

import numpy as np

from ik_node.model.chain import Chain, Joint, Tip
from ik_node.errors import ConfigError
from ik_node.reachability.directions import MAX_DIRECTIONS, DirectionBins
from ik_node.reachability.voxel_map import _OFFSET, ReachabilityMap, _pack, _unpack

DEFAULT_SAMPLES = 2_000_000
DEFAULT_VOXEL_M = 0.1
DEFAULT_DIRECTIONS = 50
DEFAULT_CHUNK = 8192
#: Tips moved by fewer joints than this get position-only maps unless asked otherwise.
FULL_POSE_DOF = 6


class BuildProgress(NamedTuple):
    """How far a build has got: after each chunk, ``samples_done`` of ``samples_total``."""

    tip_link: str
    samples_done: int
    samples_total: int

    @property
    def fraction(self) -> float:
        """``samples_done / samples_total``, in [0, 1]."""
        return self.samples_done / self.samples_total if self.samples_total else 1.0


def tip_pose_function(chain: Chain, tip: Optional[str] = None
                      ) -> Tuple[Tuple[int, ...], Callable[[np.ndarray], Tuple]]:
    """A vectorised FK of one tip: ``(joints, f)``, ``f(q_rows) -> (p, R)``.

    ``joints`` are the indices (into the chain) of the joints that move the tip; ``q_rows`` is
    ``(len(joints), N)`` (one row per joint); ``p`` is 3 arrays (x, y, z) [m] and ``R`` 9 arrays
    (row-major) of ``T_base_tip``, each ``(N,)`` or a float when constant. It is the chain's
    generated FK (:mod:`ik_node.model.fast_kinematics`) of the serial chain from the base to the
    tip, run on numpy arrays instead of floats: the generated code is straight-line arithmetic and
    ``cos``/``sin``, so binding those names to numpy's gives the same formulas elementwise.
    """
    k = chain.tip_index(tip)
    joints = tuple(chain.joints_of_tip(chain.tip_links[k]))
    tip_spec = chain.tips[k]
    if not joints:
        T = tip_spec.T_joint_tip
        return joints, lambda q_rows: (tuple(T[:3, 3]), tuple(T[:3, :3].ravel()))
    serial = Chain([_reparented(chain.joints[i], n - 1) for n, i in enumerate(joints)],
                   [Tip(tip_spec.link, len(joints) - 1, tip_spec.T_joint_tip)], chain.base_link)
    namespace = {'cos': np.cos, 'sin': np.sin, 'sqrt': np.sqrt, 'atan2': np.arctan2,
                 'half_turn': None}
    exec(compile(serial.fast_kinematics.source, f'<vectorised FK of {tip_spec.link}>', 'exec'),
         namespace)
    return joints, namespace['pose']


def reach_bound(chain: Chain, tip: Optional[str] = None) -> float:
    """An upper bound [m] of the tip's distance from the base origin over all configurations:
    the lengths of the constant offsets from the base to the tip plus the prismatic travel."""
    k = chain.tip_index(tip)
    bound = float(np.linalg.norm(chain.tips[k].T_joint_tip[:3, 3]))
    for i in chain.joints_of_tip(chain.tip_links[k]):
        joint = chain.joints[i]
        bound += float(np.linalg.norm(joint.T_parent_joint[:3, 3]))
        if joint.is_prismatic:
            bound += max(abs(joint.lower), abs(joint.upper))
    return bound


def _reparented(joint: Joint, parent: int) -> Joint:
    return Joint(joint.name, joint.type, joint.axis, joint.T_parent_joint, parent,
                 joint.child_link, joint.lower, joint.upper)


class MapParams(NamedTuple):
    """What a map is built with besides its chain and tip: the keyword arguments of
    :class:`ReachabilityBuilder` (an unknown name raises ``TypeError``)."""

    samples: int = DEFAULT_SAMPLES
    voxel_size: float = DEFAULT_VOXEL_M
    seed: int = 0
    position_only: Optional[bool] = None
    directions: int = DEFAULT_DIRECTIONS
    chunk_size: int = DEFAULT_CHUNK
    self_collision: bool = True


class ReachabilityBuilder:
    """Builds the map of one tip chunk by chunk: :meth:`step` until :attr:`done`, then
    :meth:`result`. :meth:`partial` gives the map of the samples so far at any time.

    The samples are the same whatever the chunk size (one generator, drawn in order), so the
    map depends on ``samples``, ``voxel_size``, ``directions``, ``seed`` and the chain only.

    Args:
        chain: the robot.
        tip: the tip link (``None``: the first tip).
        **params: the fields of :class:`MapParams`, by name: ``samples`` (configurations to
            sample, >= 1), ``voxel_size`` (voxel edge [m], > 0), ``seed`` (of
            ``numpy.random.default_rng``), ``position_only`` (bin positions only; ``None``:
            when fewer than 6 joints move the tip), ``directions`` (approach-direction bins of
            the index, 1 .. 4096), ``chunk_size`` (samples per :meth:`step`),
            ``self_collision`` (True: only self-collision-free samples count).

    Raises:
        TypeError: an unknown parameter name.
        ConfigError: a parameter out of range (the message names it and its value).
        ChainError: ``tip`` is not a tip of ``chain``.
    """

    def __init__(self, chain: Chain, tip: Optional[str] = None, **params) -> None:
        samples, voxel_size, seed, position_only, directions, chunk_size, self_collision = \
            MapParams(**params)
        _check_whole('samples', samples, 1)
        _check_whole('chunk_size', chunk_size, 1)
        _check_whole('seed', seed, 0)
        if not (isinstance(voxel_size, (int, float)) and math.isfinite(voxel_size)
                and voxel_size > 0.0):
            raise ConfigError(f'voxel_size must be a finite length > 0 [m], got {voxel_size!r}')
        self.tip_link = chain.tip_links[chain.tip_index(tip)]
        self._joints, self._pose = tip_pose_function(chain, self.tip_link)
        bound = reach_bound(chain, self.tip_link)
        if bound / voxel_size >= _OFFSET - 1:
            raise ConfigError(f'voxel_size {voxel_size!r} m is too small for this chain: its '
                              f'tip may reach {bound:.3g} m from the base, more than '
                              f'{_OFFSET - 2} voxels')
        self.base_link = chain.base_link
        self.joint_names = tuple(chain.joint_names[i] for i in self._joints)
        self.position_only = (len(self._joints) < FULL_POSE_DOF if position_only is None
                              else bool(position_only))
        self.voxel_size = float(voxel_size)
        self.seed = int(seed)
        self.samples_total = int(samples)
        self.samples_done = 0
        self.chunk_size = int(chunk_size)
        self._bins = DirectionBins(directions)
        self.directions = np.zeros((0, 3)) if self.position_only else self._bins.centres
        lower = chain.lower[list(self._joints)]
        upper = chain.upper[list(self._joints)]
        self._low = np.where(np.isfinite(lower), lower, -math.pi)
        self._high = np.where(np.isfinite(upper), upper, math.pi)
        self._rng = np.random.default_rng(self.seed)
        #: Keeps the collision-free rows of a chunk of samples (None: every row counts).
        self._free = _collision_filter(chain, self._joints) if self_collision else None
        # per chunk: (sorted unique voxel-direction keys, their sample counts)
        self._pairs: List[Tuple[np.ndarray, np.ndarray]] = []

    @property
    def done(self) -> bool:
        """True once every sample has been binned."""
        return self.samples_done >= self.samples_total

    @property
    def progress(self) -> BuildProgress:
        """Samples binned so far."""
        return BuildProgress(self.tip_link, self.samples_done, self.samples_total)

    def step(self) -> BuildProgress:
        """Sample, FK and bin the next chunk (nothing when :attr:`done`)."""
        count = min(self.chunk_size, self.samples_total - self.samples_done)
        if count <= 0:
            return self.progress
        q = self._rng.uniform(self._low, self._high, size=(count, len(self._low)))
        if self._free is not None:
            q = q[self._free(q)]
            if len(q) == 0:
                self.samples_done += count
                return self.progress
        p, R = self._pose(np.ascontiguousarray(q.T))
        kept = len(q)
        p = np.column_stack([np.broadcast_to(c, (kept,)) for c in p])
        keys = _pack(np.rint(p / self.voxel_size).astype(np.int64)) * MAX_DIRECTIONS
        if not self.position_only:
            keys += self._bins.bin_of(*(np.broadcast_to(R[i], (kept,)) for i in (2, 5, 8)))
        self._pairs.append(_unique_counts(keys))
        self.samples_done += count
        if len(self._pairs) >= 64:  # merge now and then: memory stays about the map's size
            self._merge()
        return self.progress

    def steps(self) -> Iterator[BuildProgress]:
        """Run the build, yielding the progress after each chunk (stop iterating to cancel)."""
        while not self.done:
            yield self.step()

    def partial(self) -> ReachabilityMap:
        """The map of the samples binned so far (``samples`` says how many)."""
        self._merge()
        pairs, pair_counts = self._pairs[0] if self._pairs else (np.zeros(0, np.int64),) * 2
        # pairs are sorted, so the pairs of one voxel are consecutive
        voxel_keys, directions_hit, starts = _unique_counts(pairs // MAX_DIRECTIONS, True)
        counts = (np.add.reduceat(pair_counts, starts) if len(starts)
                  else np.zeros(0, np.int64))
        index = (np.ones(len(voxel_keys)) if self.position_only
                 else directions_hit / len(self.directions))
        return ReachabilityMap(self.base_link, self.tip_link, self.joint_names, self.voxel_size,
                               _unpack(voxel_keys), index, counts, self.directions,
                               self.samples_done, self.seed, self.position_only)

    def result(self) -> ReachabilityMap:
        """The finished map: runs the remaining chunks first."""
        for _ in self.steps():
            pass
        return self.partial()

    def _merge(self) -> None:
        if len(self._pairs) > 1:
            keys = np.concatenate([k for k, _ in self._pairs])
            counts = np.concatenate([c for _, c in self._pairs])
            self._pairs = [_unique_counts(keys, weights=counts)]


def _collision_filter(chain: Chain, joints) -> Optional[Callable[[np.ndarray], np.ndarray]]:
    """The mask of self-collision-free rows of sampled configurations (every joint of a chain
    with collision geometry sampled), or None: no geometry, a tree's tip (its other joints
    unsampled), or the collision libraries missing (the map then counts every sample)."""
    from ik_node import collision
    if list(joints) != list(range(chain.n)) or not collision.has_collision_geometry(chain):
        return None
    try:
        return collision.checker_for(chain).free_mask
    except collision.CollisionUnavailable:
        return None


def build_reachability_map(chain: Chain, tip: Optional[str] = None, *,
                           progress: Optional[Callable[[BuildProgress], None]] = None,
                           cancel=None, **params) -> Optional[ReachabilityMap]:
    """The reachability map of one tip (see :class:`ReachabilityBuilder` for ``params``).

    Args:
        chain: the robot.
        tip: the tip link (``None``: the first tip).
        progress: called with a :class:`BuildProgress` after every chunk.
        cancel: anything with ``is_set()`` (a ``threading.Event``), checked before every
            chunk; once set, the build stops.
        **params: ``samples``, ``voxel_size``, ``seed``, ``position_only``, ``directions``,
            ``chunk_size``, ``self_collision`` (True: only self-collision-free samples count,
            for a chain with collision geometry).

    Returns:
        The map, or None when cancelled.
    """
    return _run(ReachabilityBuilder(chain, tip, **params), progress, cancel)


def build_reachability_maps(chain: Chain, *,
                            progress: Optional[Callable[[BuildProgress], None]] = None,
                            cancel=None, **params) -> Optional[Dict[str, ReachabilityMap]]:
    """One map per tip of ``chain``, keyed by tip link (one entry for a serial chain).

    Arguments as :func:`build_reachability_map`; returns None when cancelled.
    """
    builders = [ReachabilityBuilder(chain, tip, **params) for tip in chain.tip_links]
    maps: Dict[str, ReachabilityMap] = {}
    for builder in builders:
        reach_map = _run(builder, progress, cancel)
        if reach_map is None:
            return None
        maps[builder.tip_link] = reach_map
    return maps


def _run(builder: ReachabilityBuilder, progress, cancel) -> Optional[ReachabilityMap]:
    while not builder.done:
        if cancel is not None and cancel.is_set():
            return None
        state = builder.step()
        if progress is not None:
            progress(state)
    return builder.partial()


def _unique_counts(keys: np.ndarray, starts: bool = False, weights=None):
    """Sorted unique keys and how often each occurs (or the sum of its ``weights``); with
    ``starts``, also where each key's run begins in ``keys`` (which must then be sorted)."""
    if weights is not None:
        order = np.argsort(keys, kind='stable')
        keys, weights = keys[order], weights[order]
    elif not starts:
        keys = np.sort(keys)
    first = np.empty(len(keys), dtype=bool)
    first[:1] = True
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    begin = np.flatnonzero(first)
    if weights is not None:
        counts = np.add.reduceat(weights, begin) if len(begin) else weights[:0]
    else:
        counts = np.diff(np.append(begin, len(keys)))
    return (keys[begin], counts, begin) if starts else (keys[begin], counts)


def _check_whole(name: str, value, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ConfigError(f'{name} must be a whole number >= {minimum}, got {value!r}')
