"""Reachability maps: where a chain's tip can go, and in how many directions, by sampling.

A map is built by forward kinematics only: joint configurations are drawn uniformly within the
joint limits (continuous joints over one turn, [-pi, pi)), every sample's tip pose is computed,
and its position is binned into cubic voxels of the base frame. Voxel ``(i, j, k)`` is the cube
of side ``voxel_size`` centred on ``(i, j, k) * voxel_size`` [m], so the base origin is a voxel
centre.

**Reachability index** (after Reuleaux, Makhal & Goins 2018, whose index is the share of the
poses on a "sphere of directions" around a voxel that are reachable). Here the orientation set
is ``directions`` (default 50) equal-area cells of the unit sphere of directions
(:class:`DirectionBins`: two polar caps and rings of latitude cut into azimuth sectors). A
sample's approach direction is the tip frame's z axis in the base frame and falls in one cell;
its roll about that axis is ignored, as on Reuleaux's sphere. A voxel's index is the share
(0, 1] of the cells that at least one sample in the voxel falls in. Position-only maps (tips
moved by fewer than 6 joints, or asked for) bin no directions: every voxel a sample falls in has
index 1.

**What a sampled map proves.** Every voxel of the map holds the FK tip position of at least one
in-limit configuration, so a voxel in the map is reachable (somewhere inside the cube), and a
direction counted in a voxel's index was reached there. The converse does not hold: a sampled map
under-approximates. A voxel or direction missing from the map may still be reachable (thin or
sparsely sampled regions, the workspace boundary, more samples needed), and indices are lower
bounds of the sampled quantity. Never use a map to claim that a target is unreachable; that is
the solvers' ``min_residual`` (a proven lower bound) or a failed solve. Collisions (self or with
the world) are not checked: "reached" means within the joint limits only.

How far from converged a sampled map is depends on the samples per voxel: the defaults
(2,000,000 samples, 0.1 m voxels, 50 directions) find most voxels of an arm the size of the
Panda and give indices somewhat low; smaller voxels need more samples (the figures:
``docs/node.md``, Reachability map). Compare indices only between maps built with the same
parameters.

Builds run chunk by chunk (:class:`ReachabilityBuilder`), so a caller can report progress, build
in a background thread and cancel (:func:`build_reachability_map` with ``progress`` and
``cancel``). The result is the immutable :class:`ReachabilityMap`; :func:`save_npz` writes it for
numpy alone to read (``np.load(path)``, keys listed at :func:`save_npz`), :func:`save_ply` as a
point cloud coloured by the index. :func:`map_points` gives a light picture of a map: a bounded
set of points coloured by the index, or by the depth inside the workspace for position-only maps.

Imports numpy only (and ik_node's chain).
"""

from ik_node.reachability.build import (DEFAULT_CHUNK, DEFAULT_DIRECTIONS, DEFAULT_SAMPLES,
                                        DEFAULT_VOXEL_M, BuildProgress, ReachabilityBuilder,
                                        build_reachability_map, build_reachability_maps,
                                        reach_bound, tip_pose_function)
from ik_node.reachability.directions import MAX_DIRECTIONS, DirectionBins
from ik_node.reachability.map_points import MapPoints, boundary_depth, map_points
from ik_node.reachability.files import (MapFileError, colours_from_index, load_npz, save_npz,
                                        save_ply)
from ik_node.reachability.voxel_map import (PLANES, MapSlice, ReachabilityMap, map_slice,
                                            nearest_reachable_distance, reachability_index_at)

__all__ = ['DEFAULT_CHUNK', 'DEFAULT_DIRECTIONS', 'DEFAULT_SAMPLES', 'DEFAULT_VOXEL_M',
           'MAX_DIRECTIONS', 'PLANES', 'BuildProgress', 'DirectionBins', 'MapFileError',
           'MapPoints', 'MapSlice', 'ReachabilityBuilder', 'ReachabilityMap', 'boundary_depth',
           'build_reachability_map', 'build_reachability_maps', 'colours_from_index',
           'load_npz', 'map_points', 'map_slice', 'nearest_reachable_distance', 'reach_bound',
           'reachability_index_at', 'save_npz', 'save_ply', 'tip_pose_function']
