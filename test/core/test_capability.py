"""Capability maps: orientations binned back to themselves, shards that merge to the same map
whatever the split or the workers (byte for byte), a killed build that resumes without
recomputing, verdicts that real IK confirms, and bad inputs refused with a clear error."""

import math
import os

import numpy as np
import pytest

from ik_node import Chain, ConfigError, TargetError, make_solver
from ik_node.capability import (MapSpec, PlacementGrid, base_placement, build_map, load_map,
                                merge, orientation_bins, orientation_set, reachable,
                                verify_placements)
from ik_node.capability import storage
from ik_node.capability.decide import cells_of, decide_shard
from ik_node.capability.orientations import quats_from_rotations, rotations_from_quats
from ik_node.capability.query import Placement, task_in_base
from ik_node.capability.ray_backend import check_address
from ik_node.capability.spec import shard_bounds
from reference_robots import SHARED_ROBOTS

#: A coarse map: quick to build, enough cells and orientations to test every part.
COARSE = dict(voxel_m=0.2, directions=6, rolls=2, shard_cells=40)


@pytest.fixture(scope='module')
def ur5e_spec(request):
    path = request.getfixturevalue('shared_robot')('ur5e.urdf')
    return MapSpec(path.read_text(), 'base_link', 'tool0', urdf_path=str(path), **COARSE)


@pytest.fixture(scope='module')
def ur5e_map(ur5e_spec, tmp_path_factory):
    return build_map(ur5e_spec, tmp_path_factory.mktemp('map'), workers=1)


@pytest.fixture(scope='module')
def shared_robot():
    def get(name):
        path = SHARED_ROBOTS / name
        if not path.is_file():
            pytest.skip(f'reference robot {path} is not present')
        return path
    return get


def test_orientation_bins_give_each_orientation_its_own_bin():
    orientations = orientation_set(50, 4)
    assert len(orientations) == 200
    np.testing.assert_array_equal(orientation_bins(orientations, orientations.rotations),
                                  np.arange(200))
    d = orientations.directions
    cosines = d @ d.T - 2.0 * np.eye(len(d))
    nearest = np.degrees(np.arccos(cosines.max(axis=1)))
    assert nearest.max() < 1.6 * nearest.min()  # spread evenly: no clusters, no holes
    R = orientations.rotations
    np.testing.assert_allclose(R @ R.transpose(0, 2, 1), np.broadcast_to(np.eye(3), R.shape),
                               atol=1e-12)


@pytest.mark.slow  # builds maps by IK (seconds with numba)
def test_every_reached_cell_is_reached_by_ik_and_queries_agree(ur5e_spec, ur5e_map):
    capability = ur5e_map
    assert 0.1 < capability.reached.mean() < 0.95
    chain = Chain.from_urdf_file(ur5e_spec.urdf_path, 'base_link', 'tool0')
    solver = make_solver('damped_jacobian', chain, {'self_collision': False})
    orientations = capability.orientations
    rng = np.random.default_rng(1)
    rows, bins = np.nonzero(capability.reached)
    pick = rng.choice(len(rows), 25, replace=False)
    for m, k in zip(rows[pick].tolist(), bins[pick].tolist(), strict=True):
        p = capability.cells[m] * capability.voxel_m
        answer = solver.solve(p, orientations.quats_xyzw[k])
        for seed in (np.random.default_rng(s).uniform(chain.lower, chain.upper) for s in
                     range(20)):
            if answer.reachable:
                break
            answer = solver.solve(p, orientations.quats_xyzw[k], seed)
        assert answer.reachable, (m, k)
        T = chain.fk(answer.joint_positions)
        assert np.linalg.norm(T[:3, 3] - p) <= solver.params['position_tolerance']
    # Forward queries at the cells' centres and orientations read the verdicts back.
    poses = np.hstack([np.repeat(capability.cells * capability.voxel_m, len(orientations), 0),
                       np.tile(orientations.quats_xyzw, (len(capability.cells), 1))])
    np.testing.assert_array_equal(reachable(capability, poses), capability.reached.ravel())
    assert not reachable(capability, [[3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]])[0]


@pytest.mark.slow  # builds maps by IK (seconds with numba)
def test_the_map_is_the_same_byte_for_byte_whatever_the_workers(ur5e_spec, ur5e_map,
                                                                 tmp_path):
    two = build_map(ur5e_spec, tmp_path / 'two', workers=2)
    np.testing.assert_array_equal(two.reached, ur5e_map.reached)
    one_file = storage.save_map(ur5e_map, tmp_path / 'one')
    assert one_file.read_bytes() == (tmp_path / 'two' / storage.MAP_FILE).read_bytes()


@pytest.mark.slow  # builds maps by IK (seconds with numba)
def test_shards_merge_to_the_same_map_whatever_the_split(ur5e_spec, ur5e_map):
    import dataclasses
    finer = dataclasses.replace(ur5e_spec, shard_cells=17)
    cells = cells_of(finer)
    shards = {k: decide_shard(finer, k)
              for k in reversed(range(len(shard_bounds(cells, 17)) - 1))}
    merged = merge(finer, 'ur5e', cells, shards)
    np.testing.assert_array_equal(merged.reached, ur5e_map.reached)
    with pytest.raises(ConfigError, match='shards missing'):
        merge(finer, 'ur5e', cells, {0: shards[0]})


@pytest.mark.slow  # builds maps by IK (seconds with numba)
def test_a_killed_build_resumes_without_recomputing_finished_shards(ur5e_spec, ur5e_map,
                                                                    tmp_path):
    assert build_map(ur5e_spec, tmp_path, workers=1, stop_after=2) is None  # cut short
    shard_dir = storage.shard_folder(tmp_path, ur5e_spec)
    first = storage.finished_shards(shard_dir)
    assert sorted(first) == [0, 1]
    stamps = {k: os.stat(p).st_mtime_ns for k, p in first.items()}
    (shard_dir / '.shard_000002.npz.999.tmp').write_bytes(b'half a file')  # a killed write
    resumed = build_map(ur5e_spec, tmp_path, workers=1)
    assert {k: os.stat(p).st_mtime_ns for k, p in first.items()} == stamps
    assert len(storage.finished_shards(shard_dir)) == \
        len(shard_bounds(ur5e_map.cells, ur5e_spec.shard_cells)) - 1
    np.testing.assert_array_equal(resumed.reached, ur5e_map.reached)
    np.testing.assert_array_equal(load_map(tmp_path).reached, ur5e_map.reached)


@pytest.mark.slow  # builds maps by IK (seconds with numba)
def test_base_placement_finds_a_base_that_real_ik_confirms(ur5e_spec, ur5e_map):
    chain = Chain.from_urdf_file(ur5e_spec.urdf_path, 'base_link', 'tool0')
    solver = make_solver('damped_jacobian', chain, {'self_collision': False})
    # Task poses the map reaches from a base at (0.6, -0.4) turned by 90 degrees.
    rows, bins = np.nonzero(ur5e_map.reached)
    pick = np.random.default_rng(2).choice(len(rows), 30, replace=False)
    orientations = ur5e_map.orientations
    local = np.hstack([ur5e_map.cells[rows[pick]] * ur5e_map.voxel_m,
                       orientations.quats_xyzw[bins[pick]]])
    c, s = math.cos(math.pi / 2), math.sin(math.pi / 2)
    Rz = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    world = np.hstack([local[:, :3] @ Rz.T + [0.6, -0.4, 0.0],
                       quats_from_rotations(Rz @ rotations_from_quats(local[:, 3:]))])
    back = task_in_base(world, Placement(0.6, -0.4, math.pi / 2, 1.0))
    np.testing.assert_allclose(back[:, :3], local[:, :3], atol=1e-12)
    grid = PlacementGrid(x=(0.0, 1.0, 0.2), y=(-1.0, 0.0, 0.2), yaw_step=math.pi / 4)
    top = base_placement(ur5e_map, world, grid, top=3)
    assert top[0].share == 1.0
    everything = base_placement(ur5e_map, world, grid, top=10_000)
    assert everything == base_placement(ur5e_map, world, grid, top=10_000, compiled=False)
    assert len({p.share for p in everything}) > 3  # a scan that tells bases apart
    verified = verify_placements(solver, world, top[:1])
    assert verified[0] >= top[0].share


@pytest.mark.parametrize('change, words', [
    (dict(voxel_m=0.0), 'voxel'), (dict(voxel_m=float('nan')), 'voxel'),
    (dict(attempts=0), 'attempts'),
])
def test_bad_specs_are_refused(ur5e_spec, change, words):
    import dataclasses
    with pytest.raises(ConfigError, match=words):
        dataclasses.replace(ur5e_spec, **change)


def test_a_billion_cell_grid_is_refused_before_any_work(ur5e_spec):
    import dataclasses
    with pytest.raises(ConfigError, match='cells'):
        cells_of(dataclasses.replace(ur5e_spec, voxel_m=0.001))


def test_nan_poses_and_bad_grids_are_refused():
    from ik_node.capability import CapabilityMap
    ur5e_map = CapabilityMap({'voxel_m': 0.2, 'directions': 6, 'rolls': 2},
                             np.array([[1, 0, 1], [2, 0, 1]]), np.ones((2, 12), bool))
    with pytest.raises(TargetError, match='pose 1'):
        reachable(ur5e_map, [[0.3, 0.0, 0.3, 0, 0, 0, 1], [np.nan, 0, 0, 0, 0, 0, 1]])
    with pytest.raises(TargetError, match='shape'):
        reachable(ur5e_map, [[0.3, 0.0, 0.3]])
    with pytest.raises(ConfigError, match='base poses'):
        base_placement(ur5e_map, [[0.3, 0.0, 0.3, 0, 0, 0, 1]],
                       PlacementGrid(x=(-100, 100, 0.01), y=(-100, 100, 0.01)))
    with pytest.raises(ConfigError, match='range'):
        base_placement(ur5e_map, [[0.3, 0.0, 0.3, 0, 0, 0, 1]], PlacementGrid(x=(1, 0, 0.1)))


def test_an_unreachable_ray_address_is_a_clear_error():
    import socket
    with socket.socket() as probe:  # a free port on loopback: nothing listens there
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
    with pytest.raises(ConfigError, match='cannot reach the Ray cluster'):
        check_address(f'127.0.0.1:{port}')
    with pytest.raises(ConfigError, match='host:port'):
        check_address('nowhere')
