"""Capability maps: orientations binned back to themselves, shards that merge to the same map
whatever the split or the workers (byte for byte), a killed build that resumes without
recomputing, verdicts that real IK confirms, and bad inputs refused with a clear error."""

import math
import os
from pathlib import Path

import numpy as np
import pytest

from ik_node import Chain, ConfigError, TargetError, make_solver
from ik_node.capability import (REACHABLE, UNREACHABLE, CapabilityMap, MapSpec, PlacementGrid,
                                base_placement, build_map, load_map, merge, orientation_bins,
                                orientation_set, reachable, save_map, verify_placements)
from ik_node.capability import storage
from ik_node.capability.decide import cells_of, decide_shard
from ik_node.capability.orientations import quats_from_rotations, rotations_from_quats
from ik_node.capability.placement import Placement, task_in_base
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
    # Forward queries at the cells' centres and orientations read the verdicts back: uniform
    # cells answer, mixed ones are uncertain without a solver.
    poses = np.hstack([np.repeat(capability.cells * capability.voxel_m, len(orientations), 0),
                       np.tile(orientations.quats_xyzw, (len(capability.cells), 1))])
    answer = reachable(capability, poses)
    mixed = capability.mixed.ravel()
    np.testing.assert_array_equal(answer.uncertain, mixed)
    np.testing.assert_array_equal(answer.reachable, capability.reached.ravel() & ~mixed)
    assert 0 < mixed.mean() < 1 and not answer.by_ik.any()
    far = reachable(capability, [[3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]])
    assert far.verdict[0] == UNREACHABLE  # beyond the proven reach: no IK, not uncertain


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
    # Task poses in uniformly reachable cells from a base at (0.6, -0.4) turned by 90 degrees.
    rows, bins = np.nonzero(ur5e_map.reached & ~ur5e_map.mixed)
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
    # Task poses in mixed cells too: the map alone cannot claim them, IK at the candidates can.
    rows, bins = np.nonzero(ur5e_map.reached & ur5e_map.mixed)
    pick = np.random.default_rng(3).choice(len(rows), 30, replace=False)
    local = np.hstack([ur5e_map.cells[rows[pick]] * ur5e_map.voxel_m,
                       orientations.quats_xyzw[bins[pick]]])
    world = np.hstack([local[:, :3] @ Rz.T + [0.6, -0.4, 0.0],
                       quats_from_rotations(Rz @ rotations_from_quats(local[:, 3:]))])
    scan = base_placement(ur5e_map, world, grid, top=10_000)

    def alone(x, y, yaw):  # the map's shares at a base pose
        return next(p for p in scan if np.allclose(p[:3], (x, y, yaw), atol=1e-9))

    hidden = alone(0.6, -0.4, math.pi / 2)
    assert hidden.share < 1.0 and hidden.share + hidden.mixed == 1.0
    decided = base_placement(ur5e_map, world, grid, top=3, solver=solver)
    assert [p.mixed for p in decided] == [0.0] * 3
    assert decided[0].share >= decided[1].share >= decided[2].share
    best = alone(*decided[0][:3])
    assert best.share < decided[0].share <= best.share + best.mixed  # IK decided mixed ones
    assert verify_placements(solver, world, decided[:1])[0] >= decided[0].share


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


def test_a_cell_is_mixed_where_its_neighbours_disagree():
    # A 5 x 5 x 5 block of cells, reached where x <= 2, every orientation alike.
    cells = np.array(np.meshgrid(*[np.arange(5)] * 3, indexing='ij')).reshape(3, -1).T
    meta = {'voxel_m': 0.1, 'directions': 6, 'rolls': 1}
    reached = np.repeat((cells[:, 0] <= 2)[:, None], 6, axis=1)
    block = CapabilityMap(meta, cells, reached)
    x, inner = cells[:, 0], np.all((cells[:, 1:] >= 1) & (cells[:, 1:] <= 3), axis=1)
    uniform_reached = (x == 1) & inner  # every neighbour inside the block and reached
    uniform_none = x == 4  # no neighbour reached (beyond the block: beyond the reach)
    np.testing.assert_array_equal(block.mixed[:, 0], ~uniform_reached & ~uniform_none)
    assert (block.mixed == block.mixed[:, :1]).all()  # every orientation alike
    verdicts = block.verdicts
    assert set(np.unique(verdicts[uniform_reached])) == {storage.ALL}
    assert set(np.unique(verdicts[uniform_none])) == {storage.NONE}
    # One target not reached in the middle: it, its neighbours in its orientation bin and its
    # adjacent bins in its voxel turn mixed; a bin not adjacent stays uniform.
    centre = int(np.flatnonzero((cells == [1, 2, 2]).all(axis=1))[0])
    holed = reached.copy()
    holed[centre, 0] = False
    mixed = CapabilityMap(meta, cells, holed).mixed
    from ik_node.capability.uniform import adjacent_bins
    adjacent = adjacent_bins(orientation_set(6, 1))[0]
    assert mixed[centre, 0] and mixed[centre, adjacent].all()
    assert not mixed[centre, [k for k in range(1, 6) if k not in adjacent]].any()
    assert mixed[uniform_reached, 0].all()  # all within one voxel of the hole


@pytest.mark.slow  # builds maps by IK (seconds with numba)
def test_mixed_cells_are_decided_by_ik_at_query_time(ur5e_spec, ur5e_map):
    from ik_node.capability.decide import solver_for
    from ik_node.capability.query import query_seeds, QueryIk
    solver = solver_for(ur5e_spec)
    chain = solver.chain
    rng = np.random.default_rng(5)
    Q = rng.uniform(chain.lower, chain.upper, size=(40, chain.n))
    T = np.array([chain.fk(q) for q in Q])
    poses = np.vstack([np.hstack([T[:, :3, 3], quats_from_rotations(T[:, :3, :3])]),
                       np.hstack([rng.uniform(-0.8, 0.8, (40, 3)), rng.normal(size=(40, 4))])])
    without = reachable(ur5e_map, poses)
    answer = reachable(ur5e_map, poses, solver=solver)
    mixed = without.uncertain
    assert mixed.sum() >= 20 and (answer.by_ik == mixed).all()
    np.testing.assert_array_equal(answer.verdict[~mixed], without.verdict[~mixed])
    assert not answer.uncertain.any()
    yes = np.flatnonzero(answer.verdict == REACHABLE)
    no = np.flatnonzero(mixed & (answer.verdict == UNREACHABLE))
    assert len(yes) and len(no)
    for i in yes[mixed[yes]].tolist():  # the answer found at query time reaches the pose
        T = chain.fk(answer.joints[i])
        assert np.linalg.norm(T[:3, 3] - poses[i, :3]) <= solver.params['position_tolerance']
        R = rotations_from_quats(poses[i, 3:])[0]
        angle = np.arccos(np.clip((np.trace(R.T @ T[:3, :3]) - 1) / 2, -1, 1))
        assert angle <= solver.params['orientation_tolerance'] + 1e-9
    assert np.isnan(answer.joints[no]).all()
    for i in no.tolist():  # solve() from the same starts finds nothing either
        for seed in query_seeds(chain, QueryIk()):
            assert not solver.solve(poses[i, :3], poses[i, 3:], seed).reachable, i


def test_a_tool_offset_reads_three_six_or_seven_numbers(shared_robot):
    from ik_node.capability.tool import offset_matrix, tip_targets, tool_offset
    assert tool_offset([]) == () and tool_offset([0, 0, 0]) == ()
    assert tool_offset([0.1, 0, 0.2]) == (0.1, 0.0, 0.2, 0.0, 0.0, 0.0, 1.0)
    rpy = offset_matrix(tool_offset([0.01, -0.02, 0.15, 0.3, -0.2, 1.1]))
    c, s = np.cos, np.sin
    Rx = np.array([[1, 0, 0], [0, c(0.3), -s(0.3)], [0, s(0.3), c(0.3)]])
    Ry = np.array([[c(-0.2), 0, s(-0.2)], [0, 1, 0], [-s(-0.2), 0, c(-0.2)]])
    Rz = np.array([[c(1.1), -s(1.1), 0], [s(1.1), c(1.1), 0], [0, 0, 1]])
    np.testing.assert_allclose(rpy[:3, :3], Rz @ Ry @ Rx, atol=1e-9)
    quat = tool_offset([0.01, -0.02, 0.15, *quats_from_rotations(Rz @ Ry @ Rx)[0]])
    np.testing.assert_allclose(offset_matrix(quat), rpy, atol=1e-9)
    # The tip poses that put the tool at a pose: FK of a configuration, then the offset.
    chain = Chain.from_urdf_file(shared_robot('ur5e.urdf'), 'base_link', 'tool0')
    Q = np.random.default_rng(3).uniform(chain.lower, chain.upper, size=(5, chain.n))
    tips = np.array([chain.fk(q) for q in Q])
    tools = tips @ rpy
    p, q = tip_targets(tools[:, :3, 3], quats_from_rotations(tools[:, :3, :3]), quat)
    np.testing.assert_allclose(p, tips[:, :3, 3], atol=1e-12)
    np.testing.assert_allclose(rotations_from_quats(q), tips[:, :3, :3], atol=1e-12)
    for bad, words in (([1, 2], 'give x y z'), ([0, 0, np.nan], 'finite'),
                       ([0, 0, 0, 0, 0, 0, 0], 'zero')):
        with pytest.raises(ConfigError, match=words):
            tool_offset(bad)


@pytest.mark.slow  # builds maps by IK (seconds with numba)
def test_a_map_with_a_tool_offset_is_of_the_tools_poses(ur5e_spec, tmp_path):
    import dataclasses
    from ik_node.capability.decide import decide_targets, solver_for
    from ik_node.capability.tool import offset_matrix
    spec = dataclasses.replace(ur5e_spec, tool_offset=(0.02, -0.03, 0.15, 0.3, -0.2, 1.1))
    assert len(spec.tool_offset) == 7 and spec.key() != ur5e_spec.key()
    capability = build_map(spec, tmp_path, workers=1)
    loaded = load_map(tmp_path)
    assert loaded.tool_offset == spec.tool_offset
    np.testing.assert_array_equal(loaded.mixed, capability.mixed)
    solver = solver_for(spec)
    chain, offset = solver.chain, offset_matrix(spec.tool_offset)
    tol = solver.params['position_tolerance'] + 0.2 * solver.params['orientation_tolerance']

    def assert_tool_at(joints, pose):
        T = chain.fk(joints) @ offset  # the tool's pose, not the tip's
        assert np.linalg.norm(T[:3, 3] - pose[:3]) <= tol
        R = rotations_from_quats(pose[3:])[0]
        assert np.arccos(np.clip((np.trace(R.T @ T[:3, :3]) - 1) / 2, -1, 1)) <= 1e-3

    rows, bins = np.nonzero(capability.reached)
    pick = np.random.default_rng(4).choice(len(rows), 15, replace=False)
    targets = np.hstack([capability.cells[rows[pick]] * capability.voxel_m,
                         capability.orientations.quats_xyzw[bins[pick]]])
    found, joints = decide_targets(solver, targets[:, :3], targets[:, 3:],
                                   [chain.mid_configuration()], 8, spec.tool_offset)
    assert found.sum() >= 10
    for i in np.flatnonzero(found).tolist():
        assert_tool_at(joints[i], targets[i])
    # Forward queries in mixed cells: the answers found put the tool at the pose.
    Q = np.random.default_rng(6).uniform(chain.lower, chain.upper, size=(60, chain.n))
    tools = np.array([chain.fk(q) @ offset for q in Q])
    poses = np.hstack([tools[:, :3, 3], quats_from_rotations(tools[:, :3, :3])])
    answer = reachable(loaded, poses, solver=solver)
    decided = np.flatnonzero(answer.by_ik & (answer.verdict == REACHABLE))
    assert len(decided) >= 5
    for i in decided.tolist():
        assert_tool_at(answer.joints[i], poses[i])
    # Base placement verifies the tool's poses too: from the origin all of these are reached.
    assert verify_placements(solver, poses, [Placement(0.0, 0.0, 0.0, 1.0)],
                             tool=loaded.tool_offset) == [1.0]


@pytest.mark.parametrize('tool', [(), (0.02, -0.03, 0.15, 0.3, -0.2, 1.1)])
def test_the_wrist_bound_never_rules_out_a_reached_pose(ur5e_spec, tool):
    import dataclasses
    from ik_node.capability.decide import _prepared, beyond_wrist_reach
    from ik_node.capability.tool import offset_matrix
    spec = dataclasses.replace(ur5e_spec, tool_offset=tool)
    solver, _, orientations, wrist = _prepared(spec)
    chain = solver.chain
    assert wrist is not None and wrist.radius < 1.0  # the UR5e's wrist reach is < its tip's
    Q = np.random.default_rng(7).uniform(chain.lower, chain.upper, size=(3000, chain.n))
    T = np.array([chain.fk(q) @ offset_matrix(spec.tool_offset) for q in Q])
    reached = np.hstack([T[:, :3, 3], quats_from_rotations(T[:, :3, :3])])
    assert not beyond_wrist_reach(solver, wrist, reached[:, :3], reached[:, 3:],
                                  spec.tool_offset).any()
    if tool:
        return
    # It does rule out poses: at the rim of the reach, the tool pointing outwards.
    rim = np.array([[0.0, 1.0, 0.1625]]).repeat(len(orientations), 0)
    ruled_out = beyond_wrist_reach(solver, wrist, rim, orientations.quats_xyzw)
    assert 0 < ruled_out.sum() < len(rim)


@pytest.mark.slow  # builds maps by IK (seconds with numba)
def test_the_wrist_bound_changes_no_verdict(ur5e_spec, ur5e_map):
    from ik_node.capability.decide import _cache, _prepared
    solver, cells, orientations, wrist = _prepared(ur5e_spec)
    _cache[ur5e_spec.key()] = (solver, cells, orientations, None)
    try:
        unbounded = [decide_shard(ur5e_spec, k) for k in range(3)]
    finally:
        _cache[ur5e_spec.key()] = (solver, cells, orientations, wrist)
    bounds = shard_bounds(cells, ur5e_spec.shard_cells)
    np.testing.assert_array_equal(np.vstack(unbounded), ur5e_map.reached[:bounds[3]])


@pytest.mark.slow  # builds maps by IK (seconds with numba)
def test_place_base_claims_for_its_top_answer_only_what_ik_reaches(ur5e_spec, ur5e_map):
    from ik_node.capability import place_base
    from ik_node.capability.decide import solver_for
    solver = solver_for(ur5e_spec)
    chain = solver.chain
    rng = np.random.default_rng(9)
    Q = rng.uniform(chain.lower, chain.upper, size=(30, chain.n))
    T = np.array([chain.fk(q) for q in Q])
    local = np.hstack([T[:, :3, 3], quats_from_rotations(T[:, :3, :3])])
    local[:4, :3] = [[2.0, 0.0, 0.3], [0.0, 2.0, 0.3], [-2.0, 0.0, 0.3], [0.0, 0.0, 2.0]]
    world = task_in_base(local, Placement(-0.2, 0.4, 0.0, 1.0))  # the base at (0.2, -0.4)
    grid = PlacementGrid(x=(0.0, 0.4, 0.2), y=(-0.6, -0.2, 0.2), yaw_step=math.pi / 2)
    answer = place_base(ur5e_map, world, grid, top=3, solver=solver)
    assert answer.basis == 'ik' and answer.verified[0]
    top = answer.placements[0]
    in_base = task_in_base(world, top)
    found = np.flatnonzero(np.isfinite(answer.joints[:, 0]))
    for i in found.tolist():  # each answer reaches its task pose (FK-checked)
        T = chain.fk(answer.joints[i])
        assert np.linalg.norm(T[:3, 3] - in_base[i, :3]) <= solver.params['position_tolerance']
    assert top.share == len(found) / len(world) and 0.5 < top.share <= 26 / 30
    assert verify_placements(solver, world, [top])[0] >= top.share
    alone = place_base(ur5e_map, world, grid, top=3, why_not='no robot')
    assert alone.basis == 'uniformly reachable only: no robot' and alone.joints is None
    assert not any(alone.verified)
    assert alone.placements == alone.scan.best(3)


def test_a_held_map_loads_in_the_background_and_says_what_it_holds(ur5e_spec, ur5e_map,
                                                                   tmp_path):
    import threading
    from ik_node.capability.loaded_map import BUILDING_SOLVER, FAILED, READY, MapHolder
    save_map(ur5e_map, tmp_path)
    seen, done = [], threading.Event()

    def on_status(ready):
        seen.append(ready)
        if ready.state in (READY, FAILED):
            done.set()

    holder = MapHolder(on_status)
    holder.want(str(tmp_path), 'ur5e', lambda: ur5e_spec.urdf_text)
    assert done.wait(120)
    assert [r.state for r in seen][-2:] == [BUILDING_SOLVER, READY]
    assert holder.current().solver is not None and holder.current().why_not == ''
    done.clear()
    holder.want(str(tmp_path), 'other', lambda: ur5e_spec.urdf_text + ' ')
    assert done.wait(120)
    ready = holder.current()
    assert ready.state == READY and ready.solver is None and 'not this robot' in ready.why_not
    assert ready.capability is not None
    done.clear()
    holder.want(str(tmp_path / 'missing'), 'ur5e', lambda: ur5e_spec.urdf_text)
    assert done.wait(120) and holder.current().state == FAILED


@pytest.mark.parametrize('tool', [(), (0.02, -0.03, 0.15, 0.3, -0.2, 1.1)])
def test_the_lateral_offset_bound_never_rules_out_a_reached_pose(ur5e_spec, tool):
    import dataclasses
    from ik_node.capability.axis_offset import inside_axis_offset, offset_of
    from ik_node.capability.decide import _prepared
    from ik_node.capability.tool import offset_matrix
    spec = dataclasses.replace(ur5e_spec, tool_offset=tool)
    solver = _prepared(spec)[0]
    chain = solver.chain
    bound = offset_of(solver)
    assert bound is not None and abs(bound.offset - 0.1333) < 1e-6  # the UR5e's d4
    Q = np.random.default_rng(8).uniform(chain.lower, chain.upper, size=(5000, chain.n))
    T = np.array([chain.fk(q) @ offset_matrix(spec.tool_offset) for q in Q])
    reached = np.hstack([T[:, :3, 3], quats_from_rotations(T[:, :3, :3])])
    assert not inside_axis_offset(solver, reached[:, :3], reached[:, 3:], spec.tool_offset).any()
    # It does rule out poses: the tool pointing down with its wrist point on the base's axis.
    down = [[0.0, 0.0, 0.3, 1.0, 0.0, 0.0, 0.0], [0.05, 0.05, 0.5, 1.0, 0.0, 0.0, 0.0]]
    if not tool:
        assert inside_axis_offset(solver, np.array(down)[:, :3], np.array(down)[:, 3:]).all()


def test_the_lateral_offset_bound_is_none_for_a_chain_without_one():
    from ik_node.capability.axis_offset import axis_offset
    from ik_node.capability.decide import wrist_sphere
    path = Path(__file__).resolve().parents[2] / 'urdf' / 'planar4.urdf'
    chain = Chain.from_urdf_file(path, 'base_link', 'tip')  # every axis parallel to the first
    assert axis_offset(chain, wrist_sphere(chain, path.read_text())) is None
