"""Tests of ik_node.reachability: the map holds exactly the voxels and direction cells of its
samples (recomputed here by the chain's own FK), builds are reproducible, incremental and
cancellable, the queries keep their promises, and the files round-trip through numpy alone."""

import dataclasses
import math
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from ik_node import Chain, ChainError, ConfigError, TargetError
from ik_node.reachability import (BuildProgress, DirectionBins, MapFileError, ReachabilityBuilder,
                                  ReachabilityMap, build_reachability_map,
                                  build_reachability_maps, load_npz, map_slice,
                                  nearest_reachable_distance, reach_bound,
                                  reachability_index_at, save_npz, save_ply, tip_pose_function)

REPO = Path(__file__).resolve().parents[2]
HIP_PITCH_M = np.array([0.0, 0.0, -0.05])  # urdf/leg3.urdf, read by hand
LEG_REACH_M = 0.30 + 0.28




@pytest.fixture(scope='module')
def twin():
    return Chain.from_urdf_file(REPO / 'urdf' / 'twin_arm.urdf', 'base_link',
                                ['left_hand', 'right_hand'])


@pytest.fixture(scope='module')
def arm_map(arm6):
    return build_reachability_map(arm6, samples=20_000, voxel_size=0.15, directions=20, seed=3)


@pytest.fixture(scope='module')
def leg_map(leg):
    return build_reachability_map(leg, samples=60_000, voxel_size=0.04, seed=1)


def _samples(chain, joints, samples, seed):
    """The configurations a build draws: one generator, uniform within the limits."""
    lower, upper = chain.lower[joints], chain.upper[joints]
    low = np.where(np.isfinite(lower), lower, -math.pi)
    high = np.where(np.isfinite(upper), upper, math.pi)
    return np.random.default_rng(seed).uniform(low, high, size=(samples, len(joints)))


# ---------------------------------------------------------------------------------- FK, bins
@pytest.mark.parametrize('robot, base, tip', [('arm6', 'base_link', 'tool0'),
                                              ('leg3', 'base_link', 'foot'),
                                              ('planar4', 'base_link', 'tip')])
def test_vectorised_fk_equals_chain_fk(robot, base, tip):
    chain = Chain.from_urdf_file(REPO / 'urdf' / f'{robot}.urdf', base, tip)
    joints, pose = tip_pose_function(chain)
    q = _samples(chain, list(joints), 50, seed=7)
    p, R = pose(q.T)
    for k in range(len(q)):
        T = chain.fk(q[k])
        np.testing.assert_allclose([np.broadcast_to(c, (50,))[k] for c in p], T[:3, 3],
                                   atol=1e-12)
        np.testing.assert_allclose([np.broadcast_to(c, (50,))[k] for c in R],
                                   T[:3, :3].ravel(), atol=1e-12)


def test_vectorised_fk_of_each_tip_of_a_tree_equals_chain_fk(twin):
    q = _samples(twin, list(range(twin.n)), 20, seed=8)
    for tip in twin.tip_links:
        joints, pose = tip_pose_function(twin, tip)
        assert list(joints) == twin.joints_of_tip(tip)
        p, _ = pose(q[:, list(joints)].T)
        for k in range(len(q)):
            np.testing.assert_allclose([c[k] for c in p], twin.fk(q[k], tip)[:3, 3], atol=1e-12)


def test_continuous_and_prismatic_joints_are_sampled_over_a_turn_and_their_travel():
    from urdf_texts import MIXED_URDF  # yaw (continuous), lift (prismatic 0..0.5 m), elbow
    mixed = Chain.from_urdf_string(MIXED_URDF, 'base', 'tool')
    joints, pose = tip_pose_function(mixed)
    q = _samples(mixed, list(joints), 30, seed=9)
    assert np.all(np.abs(q[:, 0]) <= math.pi) and np.all((q[:, 1] >= 0) & (q[:, 1] <= 0.5))
    p, _ = pose(q.T)
    for k in range(len(q)):
        np.testing.assert_allclose([c[k] for c in p], mixed.fk(q[k])[:3, 3], atol=1e-12)
    reach_map = build_reachability_map(mixed, samples=20_000, voxel_size=0.05)
    z = reach_map.centres[:, 2]
    # the tool sits 0.3 m from the lift on an elbow of -1 .. 1.5 rad about y, lifted 0 .. 0.5 m
    assert z.min() >= -0.3 * math.sin(1.5) - 0.05 and z.max() <= 0.5 + 0.3 * math.sin(1.0) + 0.05
    angles = np.arctan2(reach_map.centres[:, 1], reach_map.centres[:, 0])
    assert np.histogram(angles, bins=8, range=(-math.pi, math.pi))[0].min() > 0  # all round


def test_direction_cells_cover_the_sphere_in_equal_areas():
    rng = np.random.default_rng(0)
    v = rng.normal(size=(200_000, 3))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    for count in (1, 2, 3, 7, 50, 130):
        bins = DirectionBins(count)
        assert bins.centres.shape == (count, 3)
        np.testing.assert_allclose(np.linalg.norm(bins.centres, axis=1), 1.0)
        np.testing.assert_array_equal(bins.bin_of(*bins.centres.T), np.arange(count))
        share = np.bincount(bins.bin_of(*v.T), minlength=count) / len(v) * count
        # equal areas: each cell gets 1/count of uniform directions (binomial noise < 5 sigma)
        sigma = math.sqrt(count / len(v))
        assert np.all(np.abs(share - 1.0) < 5 * sigma + 1e-9), (count, share.min(), share.max())


def test_a_direction_falls_in_a_cell_near_its_centre():
    bins = DirectionBins(50)
    rng = np.random.default_rng(1)
    v = rng.normal(size=(20_000, 3))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    angle = np.arccos(np.clip(np.sum(v * bins.centres[bins.bin_of(*v.T)], axis=1), -1, 1))
    assert angle.max() < math.radians(30)  # a cell of 4 pi / 50 sr is ~16 degrees across


# ------------------------------------------------------------------------------- the map
def test_map_holds_exactly_the_voxels_and_directions_of_its_samples(arm6, arm_map):
    q = _samples(arm6, list(range(6)), 20_000, seed=3)
    bins = DirectionBins(20)
    cells = {}
    counts = {}
    for k in range(len(q)):
        T = arm6.fk(q[k])
        voxel = tuple(np.rint(T[:3, 3] / 0.15).astype(int))
        cells.setdefault(voxel, set()).add(int(bins.bin_of(*T[:3, 2])))
        counts[voxel] = counts.get(voxel, 0) + 1
    got = {tuple(v): (i, c) for v, i, c in zip(arm_map.voxel_indices.tolist(), arm_map.index,
                                               arm_map.sample_counts)}
    assert set(got) == set(cells)
    for voxel, (index, count) in got.items():
        assert index == pytest.approx(len(cells[voxel]) / 20)
        assert count == counts[voxel]
    assert arm_map.samples == 20_000 and not arm_map.position_only
    np.testing.assert_allclose(arm_map.centres, arm_map.voxel_indices * 0.15)


def test_fewer_than_six_joints_give_a_position_only_map(leg_map):
    assert leg_map.position_only and leg_map.directions.shape == (0, 3)
    assert np.all(leg_map.index == 1.0)
    assert leg_map.joint_names == ('hip_yaw', 'hip_pitch', 'knee')


def test_position_only_can_be_asked_for(arm6):
    reach_map = build_reachability_map(arm6, samples=2000, voxel_size=0.2, position_only=True)
    assert reach_map.position_only and np.all(reach_map.index == 1.0)


def test_every_voxel_is_within_the_reach_bound(leg, leg_map):
    # the leg's tip stays within thigh + shin of the hip pitch joint; voxel centres within
    # half a voxel diagonal more
    d = np.linalg.norm(leg_map.centres - HIP_PITCH_M, axis=1)
    assert d.max() <= LEG_REACH_M + math.sqrt(3) / 2 * 0.04 + 1e-9
    assert reach_bound(leg) >= np.linalg.norm(HIP_PITCH_M) + LEG_REACH_M - 1e-12


def test_the_map_does_not_depend_on_the_chunk_size(arm6):
    maps = [build_reachability_map(arm6, samples=5000, voxel_size=0.2, directions=10,
                                   chunk_size=chunk) for chunk in (333, 5000, 8192)]
    for other in maps[1:]:
        np.testing.assert_array_equal(maps[0].voxel_indices, other.voxel_indices)
        np.testing.assert_array_equal(maps[0].index, other.index)
        np.testing.assert_array_equal(maps[0].sample_counts, other.sample_counts)


def test_partial_maps_grow_into_the_final_map(arm6):
    builder = ReachabilityBuilder(arm6, samples=3000, voxel_size=0.2, chunk_size=1000)
    assert builder.step() == BuildProgress('tool0', 1000, 3000)
    partial = builder.partial()
    assert partial.samples == 1000 and not builder.done
    final = builder.result()
    assert builder.done and final.samples == 3000
    keys = {tuple(v): i for v, i in zip(final.voxel_indices.tolist(), final.index)}
    for voxel, index in zip(partial.voxel_indices.tolist(), partial.index):
        assert keys[tuple(voxel)] >= index
    assert final.sample_counts.sum() == 3000


def test_progress_is_reported_per_chunk_and_a_set_cancel_stops_the_build(arm6):
    seen = []
    build_reachability_map(arm6, samples=2500, voxel_size=0.2, chunk_size=1000,
                           progress=seen.append)
    assert [p.samples_done for p in seen] == [1000, 2000, 2500]
    assert seen[-1].fraction == 1.0

    cancel = threading.Event()
    seen = []

    def on_progress(state):
        seen.append(state)
        cancel.set()  # e.g. the chain changed

    assert build_reachability_map(arm6, samples=5000, voxel_size=0.2, chunk_size=1000,
                                  progress=on_progress, cancel=cancel) is None
    assert len(seen) == 1


def test_a_background_thread_can_build_while_the_caller_waits(arm6):
    results = {}
    worker = threading.Thread(target=lambda: results.update(
        build_reachability_maps(arm6, samples=3000, voxel_size=0.2)))
    worker.start()
    worker.join(timeout=60)
    assert list(results) == ['tool0'] and len(results['tool0']) > 0


def test_a_branched_chain_gets_one_map_per_tip(twin):
    maps = build_reachability_maps(twin, samples=3000, voxel_size=0.1)
    assert list(maps) == ['left_hand', 'right_hand']
    for tip, reach_map in maps.items():
        assert reach_map.tip_link == tip
        assert reach_map.joint_names == tuple(twin.joint_names[i]
                                              for i in twin.joints_of_tip(tip))
    # the hands are mirror images: their maps are too, about the x-z plane
    left = {tuple(v) for v in maps['left_hand'].voxel_indices.tolist()}
    right = {(i, -j, k) for i, j, k in maps['right_hand'].voxel_indices.tolist()}
    assert len(left & right) > 0.5 * len(left)


def test_the_map_is_immutable(arm_map):
    assert isinstance(arm_map, ReachabilityMap)
    with pytest.raises(dataclasses.FrozenInstanceError):
        arm_map.voxel_size = 1.0
    for array in (arm_map.voxel_indices, arm_map.index, arm_map.sample_counts,
                  arm_map.directions):
        with pytest.raises(ValueError):
            array[...] = 0


# ----------------------------------------------------------------------------------- queries
def test_a_sampled_tip_position_is_at_distance_zero_and_has_its_voxels_index(arm6, arm_map):
    q = _samples(arm6, list(range(6)), 5, seed=3)  # the first samples of the build
    for k in range(5):
        p = arm6.fk(q[k])[:3, 3]
        assert nearest_reachable_distance(arm_map, p) == 0.0
        voxel = np.rint(p / 0.15).astype(int)
        row = np.flatnonzero(np.all(arm_map.voxel_indices == voxel, axis=1))[0]
        assert reachability_index_at(arm_map, p) == arm_map.index[row]
    assert reachability_index_at(arm_map, [50.0, 0.0, 0.0]) == 0.0


def test_distance_is_to_the_nearest_voxel_cube(arm_map):
    rng = np.random.default_rng(4)
    half = 0.5 * arm_map.voxel_size
    for point in rng.uniform(-2.0, 2.0, size=(20, 3)):
        outside = np.maximum(np.abs(arm_map.centres - point) - half, 0.0)
        expected = np.sqrt((outside ** 2).sum(axis=1)).min()
        assert nearest_reachable_distance(arm_map, point) == pytest.approx(expected)
    strong = arm_map.index >= 0.5
    point = np.array([1.5, 1.5, 1.5])
    outside = np.maximum(np.abs(arm_map.centres[strong] - point) - half, 0.0)
    assert nearest_reachable_distance(arm_map, point, min_index=0.5) == pytest.approx(
        np.sqrt((outside ** 2).sum(axis=1)).min())
    assert nearest_reachable_distance(arm_map, point, min_index=1.1) == math.inf


def test_distance_plus_a_voxel_diagonal_bounds_the_distance_to_the_workspace(leg_map):
    # Points straight below the hip (the pitch allows that ray) beyond the leg's reach: the
    # workspace is exactly |p - hip| - reach away; the map's distance plus a voxel diagonal
    # must be an upper bound of it (and it is not a lower bound: not tested, not promised).
    for depth in (0.70, 0.85, 1.2):
        point = HIP_PITCH_M + np.array([0.0, 0.0, -depth])
        true_distance = depth - LEG_REACH_M
        d = nearest_reachable_distance(leg_map, point)
        assert true_distance <= d + math.sqrt(3) * leg_map.voxel_size


def test_a_slice_is_the_layer_of_voxels_as_an_image(arm_map):
    for plane, (h, v, normal) in {'xz': (0, 2, 1), 'xy': (0, 1, 2), 'yz': (1, 2, 0)}.items():
        image = map_slice(arm_map, plane, offset=0.1)  # rounds to the layer at 0.15 m
        assert image.offset == pytest.approx(0.15)
        layer = arm_map.voxel_indices[:, normal] == 1
        assert np.count_nonzero(np.isfinite(image.index)) == layer.sum()
        for (i, j, k), index in zip(arm_map.voxel_indices[layer], arm_map.index[layer]):
            ijk = (i, j, k)
            c = np.flatnonzero(np.isclose(image.h_centres, ijk[h] * 0.15))[0]
            r = np.flatnonzero(np.isclose(image.v_centres, ijk[v] * 0.15))[0]
            assert image.index[r, c] == index
    with pytest.raises(ConfigError, match='xz'):
        map_slice(arm_map, 'ab')


# ------------------------------------------------------------------------------------ files
def test_npz_round_trips_and_numpy_alone_reads_it(arm_map, tmp_path):
    path = save_npz(arm_map, tmp_path / 'arm6_map')
    assert path.name == 'arm6_map.npz'
    loaded = load_npz(path)
    for name in ('voxel_indices', 'index', 'sample_counts', 'directions'):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(arm_map, name))
    for name in ('base_link', 'tip_link', 'joint_names', 'voxel_size', 'samples', 'seed',
                 'position_only'):
        assert getattr(loaded, name) == getattr(arm_map, name)
    with np.load(path) as data:  # no pickles, plain arrays
        np.testing.assert_allclose(data['centres'], arm_map.centres)
        assert str(data['tip_link']) == 'tool0' and float(data['voxel_size']) == 0.15


def test_loading_something_else_raises_map_file_error(arm_map, tmp_path):
    np.savez(tmp_path / 'other.npz', x=np.zeros(3))
    with pytest.raises(MapFileError, match='missing'):
        load_npz(tmp_path / 'other.npz')
    (tmp_path / 'text.npz').write_text('not a zip')
    with pytest.raises(MapFileError, match='cannot read'):
        load_npz(tmp_path / 'text.npz')
    with pytest.raises(MapFileError, match='cannot read'):
        load_npz(tmp_path / 'absent.npz')
    path = save_npz(arm_map, tmp_path / 'map.npz')
    with np.load(path) as data:
        fields = dict(data)
    fields['format'] = np.int64(99)
    np.savez(tmp_path / 'future.npz', **fields)
    with pytest.raises(MapFileError, match='format 99'):
        load_npz(tmp_path / 'future.npz')


def test_ply_lists_every_voxel_with_its_index_and_a_colour(arm_map, tmp_path):
    path = save_ply(arm_map, tmp_path / 'map.ply')
    lines = path.read_text().splitlines()
    end = lines.index('end_header')
    assert lines[0] == 'ply' and f'element vertex {len(arm_map)}' in lines
    rows = np.loadtxt(lines[end + 1:], ndmin=2)
    assert rows.shape == (len(arm_map), 7)
    np.testing.assert_allclose(rows[:, :3], arm_map.centres, atol=1e-5)
    np.testing.assert_allclose(rows[:, 6], arm_map.index, atol=1e-5)
    assert np.all((rows[:, 3:6] >= 0) & (rows[:, 3:6] <= 255))
    low, high = np.argmin(arm_map.index), np.argmax(arm_map.index)
    assert not np.array_equal(rows[low, 3:6], rows[high, 3:6])


# ------------------------------------------------------------------------------- bad inputs
@pytest.mark.parametrize('kwargs, word', [
    ({'samples': 0}, 'samples'), ({'samples': 2.5}, 'samples'), ({'samples': True}, 'samples'),
    ({'voxel_size': 0.0}, 'voxel_size'), ({'voxel_size': math.nan}, 'voxel_size'),
    ({'voxel_size': 1e-9}, 'too small'), ({'directions': 0}, 'directions'),
    ({'directions': 5000}, 'directions'), ({'chunk_size': 0}, 'chunk_size'),
    ({'seed': -1}, 'seed')])
def test_each_bad_parameter_raises_config_error_naming_it(arm6, kwargs, word):
    with pytest.raises(ConfigError, match=word):
        ReachabilityBuilder(arm6, **kwargs)


def test_an_unknown_tip_raises_chain_error(arm6):
    with pytest.raises(ChainError, match='tool0'):
        ReachabilityBuilder(arm6, 'hand')


@pytest.mark.parametrize('point', [[0.0, 0.0], [0.0, math.nan, 0.0], 'abc'])
def test_a_bad_point_raises_target_error(arm_map, point):
    with pytest.raises(TargetError, match='point'):
        nearest_reachable_distance(arm_map, point)
    with pytest.raises(TargetError, match='point'):
        reachability_index_at(arm_map, point)


def test_the_build_benchmark_runs_and_prints_a_markdown_row():
    proc = subprocess.run([sys.executable, '-m', 'benchmarks.reach.map_build', '--robots', 'arm6',
                           '--samples', '2000', '--repeat', '1'],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    header, rule, row = proc.stdout.strip().splitlines()
    assert header.startswith('| date') and rule.startswith('|---')
    assert row.count('|') == header.count('|') and 'voxels' in row
