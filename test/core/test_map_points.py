"""The picture of a reachability map (ik_node.reachability.map_points): a bounded set of points
whose colour values vary for position-only maps too."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from ik_node import Chain, ConfigError
from ik_node.reachability import ReachabilityMap, build_reachability_map
from ik_node.reachability.map_points import (DEPTH_SCALE, INDEX_SCALE, boundary_depth,
                                             map_points)

REPO = Path(__file__).resolve().parents[2]


def voxel_map(ijk, position_only=True, index=None, voxel_size=0.1) -> ReachabilityMap:
    ijk = np.array(sorted(map(tuple, np.asarray(ijk, dtype=np.int64))), dtype=np.int64)
    index = np.ones(len(ijk)) if index is None else np.asarray(index, dtype=float)
    directions = np.zeros((0, 3)) if position_only else np.eye(3)
    return ReachabilityMap('base_link', 'tip', ('j1',), voxel_size, ijk.reshape(-1, 3), index,
                           np.ones(len(ijk), dtype=np.int64), directions, 1, 0, position_only)


def brute_depth(ijk, axes=(0, 1, 2)) -> np.ndarray:
    """Each voxel's L1 distance (over ``axes``) to the nearest cell not in the set, by search."""
    inside = {tuple(v) for v in ijk}
    lo, hi = np.min(ijk, axis=0) - 1, np.max(ijk, axis=0) + 1
    ranges = [range(lo[a], hi[a] + 1) if a in axes else [None] for a in range(3)]
    out = []
    for v in ijk:
        best = np.inf
        for cell in itertools.product(*ranges):
            c = tuple(v[a] if cell[a] is None else cell[a] for a in range(3))
            if c not in inside:
                best = min(best, sum(abs(c[a] - v[a]) for a in axes))
        out.append(best)
    return np.array(out)


@pytest.fixture(scope='module')
def leg_map():
    leg = Chain.from_urdf_file(REPO / 'urdf' / 'leg3.urdf', 'base_link', 'foot')
    return build_reachability_map(leg, samples=60_000, voxel_size=0.04, seed=1)


@pytest.fixture(scope='module')
def planar_map():
    planar = Chain.from_urdf_file(REPO / 'urdf' / 'planar4.urdf', 'base_link', 'tip')
    return build_reachability_map(planar, samples=40_000, voxel_size=0.1, seed=2)


@pytest.fixture(scope='module')
def arm_map():
    arm6 = Chain.from_urdf_file(REPO / 'urdf' / 'arm6.urdf', 'base_link', 'tool0')
    return build_reachability_map(arm6, samples=20_000, voxel_size=0.15, directions=20, seed=3)


def test_depth_is_the_face_step_distance_to_the_nearest_cell_outside_the_map():
    rng = np.random.default_rng(7)
    for _ in range(6):
        blob = np.argwhere(rng.random((7, 6, 5)) < 0.75) - 3
        np.testing.assert_array_equal(boundary_depth(voxel_map(blob)), brute_depth(blob))


def test_a_solid_cube_is_one_deep_at_its_faces_and_deepest_at_its_centre():
    cube = np.array(list(itertools.product(range(5), repeat=3)))
    depth = boundary_depth(voxel_map(cube))
    assert depth.min() == 1 and depth.max() == 3
    assert depth[np.all(cube == 2, axis=1)][0] == 3


def test_a_map_one_voxel_thick_is_measured_in_its_plane(planar_map):
    assert len(np.unique(planar_map.voxel_indices[:, 2])) == 1  # planar4 moves in z = 0
    depth = boundary_depth(planar_map)
    np.testing.assert_array_equal(depth, brute_depth(planar_map.voxel_indices, axes=(0, 1)))
    assert depth.max() > 3


def test_position_only_values_go_from_0_at_the_boundary_to_1_at_the_deepest_voxel(leg_map):
    picture = map_points(leg_map, max_points=10 ** 6)
    depth = boundary_depth(leg_map)
    assert picture.scale == DEPTH_SCALE and len(picture.points) == len(leg_map)
    np.testing.assert_array_equal(picture.points, leg_map.centres)
    assert np.all(picture.value[depth == 1] == 0.0)
    assert np.all(picture.value[depth == depth.max()] == 1.0)
    assert len(np.unique(picture.value)) == depth.max()


def test_a_map_with_directions_is_coloured_by_its_index(arm_map):
    picture = map_points(arm_map, max_points=10 ** 6)
    assert picture.scale == INDEX_SCALE
    np.testing.assert_array_equal(picture.value, arm_map.index)
    assert picture.spacing == arm_map.voxel_size


@pytest.mark.parametrize('max_points', [1, 7, 50, 300, 600])
def test_points_are_bounded_and_each_is_the_mean_of_its_block(arm_map, max_points):
    picture = map_points(arm_map, max_points)
    assert 1 <= len(picture.points) <= max_points < len(arm_map)
    factor = picture.spacing / arm_map.voxel_size
    assert factor > 1.0
    blocks = np.floor(arm_map.voxel_indices / factor).astype(np.int64)
    keys = {tuple(b) for b in blocks}
    assert len(keys) == len(picture.points)  # one point per block holding a voxel
    for key in keys:
        members = np.all(blocks == key, axis=1)
        mean = arm_map.centres[members].mean(axis=0)
        at = np.flatnonzero(np.all(np.isclose(picture.points, mean, atol=1e-12), axis=1))
        assert len(at) == 1
        assert picture.value[at[0]] == pytest.approx(arm_map.index[members].mean())


def test_the_blocks_are_the_smallest_tried_that_fit(arm_map):
    from ik_node.reachability.map_points import MERGE_FACTORS
    picture = map_points(arm_map, 600)
    tried = [f for f in MERGE_FACTORS if f < picture.spacing / arm_map.voxel_size - 1e-9]
    for factor in tried:
        blocks = np.floor(arm_map.voxel_indices / factor).astype(np.int64)
        assert len(np.unique(blocks, axis=0)) > 600


def test_an_empty_map_has_no_points():
    picture = map_points(voxel_map(np.zeros((0, 3))))
    assert picture.points.shape == (0, 3) and len(picture.value) == 0


@pytest.mark.parametrize('bad', [0, -3, 1.5, True, '10', None])
def test_max_points_must_be_a_positive_integer(leg_map, bad):
    with pytest.raises(ConfigError, match='max_points'):
        map_points(leg_map, bad)
