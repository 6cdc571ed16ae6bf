"""The collision model and check: geometry placed where the URDF puts it, capsules that enclose
the hulls, a check that never calls free what the raw meshes find colliding, the pair table, the
world, and every bad input refused with its reason.

Reads the vendors' UR5e and FR3 with their meshes from ../shared/robots (skipped when absent);
the primitives are tested on URDFs written here.
"""

import math

import numpy as np
import pytest
import transforms3d

from ik_node import Chain
from ik_node.collision import (CollisionModelError, CollisionSettings, Obstacle, checker_for,
                               pair_table_for)
from ik_node.collision.gjk import Hulls, _support
from ik_node.collision.kernel import FINE_SCREEN_M, _unpack, check_kernel, compiled_kernel
from ik_node.collision.packing import link_hull
from ik_node.collision.check import CollisionChecker, exact_mesh_objects
from ik_node.collision.dependencies import require
from ik_node.collision.model import CollisionModel
from ik_node.collision.pairs import adjacent_pairs, srdf_from_table, table_from_srdf
from ik_node.collision.world import World

#: Needs the collision extra (skipped, naming what is missing, without it: test/core/conftest.py).
pytestmark = pytest.mark.collision

ROBOTS = {'ur5e': ('base_link', 'tool0'), 'fr3': ('fr3_link0', 'fr3_hand_tcp')}


@pytest.fixture(scope='module', params=sorted(ROBOTS))
def vendor_chain(request, collision_robot):
    base, tip = ROBOTS[request.param]
    return Chain.from_urdf_file(collision_robot(f'{request.param}.urdf'), base, tip)


def random_q(chain, rng, count):
    lower = np.maximum(chain.lower, -math.pi)
    upper = np.minimum(chain.upper, math.pi)
    return rng.uniform(lower, upper, size=(count, chain.n))


def test_every_link_is_placed_where_the_urdf_puts_it(vendor_chain):
    model = CollisionModel.from_chain(vendor_chain)
    assert len(model.links) >= 7
    rng = np.random.default_rng(3)
    for q in random_q(vendor_chain, rng, 5):
        T = model.link_transforms(q)
        for k, link in enumerate(model.links):
            np.testing.assert_allclose(T[k], vendor_chain.link_transform(link, q), atol=1e-9)


def test_every_capsule_set_encloses_its_links_hull_vertices(vendor_chain):
    from ik_node.collision.capsules import segment_distances
    model = CollisionModel.from_chain(vendor_chain)
    for k, link in enumerate(model.links):
        points = np.vstack([p.hull_vertices for p in model.pieces[link]])
        caps = model.caps_of_link[k]
        d = segment_distances(model.seg_a[caps][None], model.seg_b[caps][None],
                              points[:, None], points[:, None]) - model.radius[caps]
        assert d.min(axis=1).max() <= 1e-9, link


def test_the_compiled_kernel_bounds_the_hull_distances_from_both_sides(vendor_chain):
    """The kernel's gaps are lower bounds of the hulls' distances (the check skips only pairs
    proven apart), never below the capsules' where those are near; GJK raises some above the
    padding; its upper bounds are upper bounds; the compiled kernel says what its Python does;
    and a configuration the check calls colliding has a pair whose hulls are that close."""
    checker = checker_for(vendor_chain)
    pad, model = checker.padding, checker.model
    floats, ints, work, _ = checker._kernel_args
    rng = np.random.default_rng(4)
    separated, colliding = 0, 0
    for k, q in enumerate(random_q(vendor_chain, rng, 80)):
        if k % 2:  # the normals the last check kept (witness) are where GJK starts
            checker.is_free(q)
        T_numpy = model.link_transforms(q)
        gaps_numpy = model.pair_gaps(T_numpy, checker.pairs)
        before = work.copy()
        mine = before.copy()
        smallest = check_kernel(q, floats, ints, mine, pad)  # as Python
        _, w = _unpack(floats, ints, mine)
        assert smallest == w.gaps.min()
        np.testing.assert_allclose(w.links.reshape(-1, 4, 4), T_numpy, atol=1e-9)
        assert np.all(w.gaps >= np.minimum(gaps_numpy, pad + FINE_SCREEN_M) - 1e-9)
        hulls = [checker.pair_distance(T_numpy, int(i), int(j), exact=False)
                 for i, j in checker.pairs]
        for m, (i, j) in enumerate(checker.pairs):
            assert w.gaps[m] <= max(hulls[m], 0.0) + 1e-9, checker.pair_names[m]
            if checker._hulls_decide[i] and checker._hulls_decide[j]:
                assert w.upper[m] >= hulls[m] - 1e-7, checker.pair_names[m]
            separated += gaps_numpy[m] <= pad < w.gaps[m]
        for T, quat in zip(T_numpy, w.quats.reshape(-1, 4)):
            np.testing.assert_allclose(transforms3d.quaternions.quat2mat(quat), T[:3, :3],
                                       atol=1e-9)
        if compiled_kernel() is not None:
            compiled = before.copy()
            compiled_kernel()(q, floats, ints, compiled, pad)
            np.testing.assert_allclose(_unpack(floats, ints, compiled)[1].gaps, w.gaps,
                                       atol=1e-9)
        if not checker.is_free(q):
            colliding += 1
            assert min(hulls) < pad + 1e-6
    assert separated > 0  # GJK cleared some pairs the capsules could not
    assert colliding > 0
    if checker._kernel is not None:  # the compiled check keeps GJK's normals to start from
        assert np.any(checker._witness != 0.0)


def test_hill_climbing_finds_the_farthest_hull_vertex(vendor_chain):
    """The kernel's support (hill climbing along a link's hull edges from its seeds) is the
    vertex a scan of all the link's vertices finds farthest, in every direction tried: what
    makes its planes' gaps lower bounds."""
    checker = checker_for(vendor_chain)
    floats, ints, work, _ = checker._kernel_args
    g, _ = _unpack(floats, ints, work.copy())
    hulls = Hulls(g.points, g.adj_start, g.adj, g.seeds)
    points = g.points.reshape(-1, 3)
    rng = np.random.default_rng(6)
    links = np.tile(np.eye(4).ravel(), len(checker.model.links))
    starts = np.cumsum([0] + [len(link_hull(p).vertices) for p in checker._hull_points])
    for d in rng.normal(size=(300, 3)):
        for k in range(len(checker.model.links)):
            found = np.array(_support(hulls, links, k, tuple(d)))
            best = np.max(points[starts[k]:starts[k + 1]] @ d)
            assert found @ d == pytest.approx(best, abs=1e-12)


def placed_mesh_pairs(checker, exact, q):
    """``(a, b, obj_a, obj_b)``: the raw meshes (BVH) of every piece of each checked pair
    ``(a, b)``, placed at ``q``: the independent exact check."""
    fcl = require('fcl')
    T = checker.model.link_transforms(q)
    for a, b in checker.pair_names:
        for obj_a, T_a in exact[a]:
            for obj_b, T_b in exact[b]:
                Ta = T[checker.model.index[a]] @ (np.eye(4) if T_a is None else T_a)
                Tb = T[checker.model.index[b]] @ (np.eye(4) if T_b is None else T_b)
                obj_a.setTransform(fcl.Transform(Ta[:3, :3], Ta[:3, 3]))
                obj_b.setTransform(fcl.Transform(Tb[:3, :3], Tb[:3, 3]))
                yield a, b, obj_a, obj_b


def mesh_contact_pairs(checker, exact, q):
    """Checked pairs whose raw meshes (BVH) touch at ``q``."""
    fcl = require('fcl')
    return [(a, b) for a, b, obj_a, obj_b in placed_mesh_pairs(checker, exact, q)
            if fcl.collide(obj_a, obj_b, fcl.CollisionRequest(), fcl.CollisionResult())]


@pytest.mark.slow
def test_with_no_padding_no_mesh_contact_is_called_free(vendor_chain):
    """The approximation is conservative: whenever the raw meshes of a checked pair touch, the
    check (padding 0: capsules, then hulls) reports a collision, and names that pair."""
    base = checker_for(vendor_chain)
    checker = CollisionChecker(base.model, base.pair_names, padding=0.0)
    exact = exact_mesh_objects(checker.model)
    rng = np.random.default_rng(5)
    Q = random_q(vendor_chain, rng, 400)
    mask = checker.free_mask(Q)
    contacts_seen = 0
    for q, free in zip(Q, mask):
        touching = mesh_contact_pairs(checker, exact, q)
        contacts_seen += bool(touching)
        assert checker.is_free(q) == free
        if touching:
            assert not free, (q, touching)
            named = {(c.link_a, c.link_b) for c in checker.report(q).colliding}
            assert set(touching) <= named
    assert contacts_seen > 5  # the sample did test contacts


@pytest.mark.slow
def test_a_configuration_called_free_has_every_checked_pair_the_padding_apart_by_its_meshes(
        vendor_chain):
    """With the default padding, the check (capsules, separating planes, hulls, meshes) calls a
    configuration free only when python-fcl's distance between the raw triangle meshes of every
    checked pair is at least the padding; and it calls free most configurations that are."""
    fcl = require('fcl')
    checker = checker_for(vendor_chain)
    pad = checker.padding
    exact = exact_mesh_objects(checker.model)
    rng = np.random.default_rng(6)
    free_by_meshes = called_free = 0
    for q in random_q(vendor_chain, rng, 150):
        nearest = min(fcl.distance(obj_a, obj_b, fcl.DistanceRequest(), fcl.DistanceResult())
                      for _a, _b, obj_a, obj_b in placed_mesh_pairs(checker, exact, q))
        free = checker.is_free(q)
        if free:
            called_free += 1
            assert nearest >= pad - 1e-9, (q, nearest)
        free_by_meshes += nearest >= pad
    assert called_free >= 0.95 * free_by_meshes > 0


def test_a_configuration_folded_into_itself_is_named_with_its_depth(collision_robot):
    chain = Chain.from_urdf_file(collision_robot('ur5e.urdf'), 'base_link', 'tool0')
    checker = checker_for(chain)
    q = np.array([0.0, -1.57, 2.9, 0.0, 0.0, 0.0])  # the elbow folded: forearm into the base
    report = checker.report(q)
    assert not report.free and not checker.is_free(q)
    deepest = report.colliding[0]
    assert deepest.distance_m < 0.0
    assert ' mm in' in report.message() and deepest.link_a in report.message()
    assert checker.is_free(np.array([0.0, -1.57, 0.0, -1.57, 0.0, 0.0]))


def test_the_pair_table_leaves_out_adjacent_pairs_and_checks_the_elbow_against_the_base(
        collision_robot):
    chain = Chain.from_urdf_file(collision_robot('ur5e.urdf'), 'base_link', 'tool0')
    model, table, pairs = pair_table_for(chain)
    for pair in adjacent_pairs(model):
        assert table[pair] == 'adjacent' and pair not in pairs
    assert ('base_link_inertia', 'forearm_link') in pairs
    assert ('shoulder_link', 'upper_arm_link') not in pairs
    # The same table read back from the SRDF it writes.
    srdf = srdf_from_table('ur', table)
    assert set(table_from_srdf(srdf, model)) == set(table)


def test_an_srdf_naming_an_unknown_link_is_refused_naming_it(collision_robot):
    chain = Chain.from_urdf_file(collision_robot('ur5e.urdf'), 'base_link', 'tool0')
    srdf = '<robot name="ur"><disable_collisions link1="base_link_inertia" ' \
           'link2="no_such_link" reason="Never"/></robot>'
    with pytest.raises(CollisionModelError, match='no_such_link'):
        checker_for(chain, CollisionSettings(srdf=srdf))
    with pytest.raises(CollisionModelError, match='malformed SRDF'):
        checker_for(chain, CollisionSettings(srdf='<robot'))


# --------------------------------------------------------------------- written URDFs
def two_links(geometry_a, geometry_b, length=0.5):
    """A base with one geometry and an arm turning about y carrying another, ``length`` up."""
    return f'''<robot name="two">
      <link name="base"><collision>{geometry_a}</collision></link>
      <link name="arm"><collision><origin xyz="0 0 {length}"/>{geometry_b}</collision></link>
      <link name="tip"/>
      <joint name="j" type="revolute"><parent link="base"/><child link="arm"/>
        <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
      <joint name="t" type="fixed"><parent link="arm"/><child link="tip"/>
        <origin xyz="0 0 1"/></joint>
    </robot>'''


@pytest.mark.parametrize('shape_b', ['<geometry><box size="0.2 0.2 0.2"/></geometry>',
                                     '<geometry><sphere radius="0.1"/></geometry>',
                                     '<geometry><cylinder radius="0.1" length="0.2"/>'
                                     '</geometry>'])
def test_primitives_collide_exactly_where_their_shapes_meet(shape_b):
    # A box base 0.2 wide at the origin; the arm's shape at 0.5 m swings down past x = 0.45.
    xml = two_links('<origin xyz="0.5 0 0"/><geometry><box size="0.2 0.2 0.2"/></geometry>',
                    shape_b)
    chain = Chain.from_urdf_string(xml, 'base', 'tip')
    srdf = '<robot name="two"/>'  # check the adjacent pair too
    checker = checker_for(chain, CollisionSettings(padding=0.0, srdf=srdf))
    assert checker.pair_names == (('arm', 'base'),)
    assert checker.is_free(np.array([0.0]))
    assert not checker.is_free(np.array([math.pi / 2]))  # the arm's shape on the base's box
    d = checker.report(np.array([math.pi / 2])).closest.distance_m
    assert d < -0.05


def test_ground_and_obstacles_are_checked_against_moving_links_only():
    xml = two_links('<geometry><box size="0.2 0.2 0.2"/></geometry>',
                    '<geometry><sphere radius="0.1"/></geometry>')
    chain = Chain.from_urdf_string(xml, 'base', 'tip')
    srdf = '<robot name="two"><disable_collisions link1="arm" link2="base"/></robot>'
    # The base box reaches z = -0.1: below a ground at 0, but it is fixed, so not counted.
    checker = checker_for(chain, CollisionSettings(srdf=srdf, ground_z=0.0))
    assert checker.is_free(np.array([0.0]))
    assert not checker.is_free(np.array([math.pi]))  # the sphere swung below the ground
    report = checker.report(np.array([math.pi]))
    assert report.colliding[0].link_b == 'ground'
    ball = Obstacle('ball', 'sphere', (0.05,), np.array([[1, 0, 0, 0.5], [0, 1, 0, 0],
                                                         [0, 0, 1, 0], [0, 0, 0, 1.0]]))
    checker = checker_for(chain, CollisionSettings(srdf=srdf, obstacles=(ball,)))
    assert checker.is_free(np.array([0.0]))
    assert not checker.is_free(np.array([math.pi / 2]))
    assert checker.report(np.array([math.pi / 2])).colliding[0].link_b == 'ball'


# A tree: a trunk turning about z, a branch sliding along an oblique axis, another turning
# about an oblique axis from an rpy origin; boxes on every link.
BRANCHED = """<robot name="branched">
  <link name="base"><collision><geometry><box size="0.3 0.3 0.1"/></geometry></collision></link>
  <link name="trunk"><collision><origin xyz="0 0 0.25"/><geometry><box size="0.1 0.1 0.4"/>
    </geometry></collision></link>
  <link name="slider"><collision><origin xyz="0.1 0 0"/><geometry><box size="0.2 0.05 0.05"/>
    </geometry></collision></link>
  <link name="arm"><collision><origin xyz="0 0 0.15" rpy="0.3 0 0"/><geometry>
    <box size="0.05 0.06 0.3"/></geometry></collision></link>
  <link name="hand"><collision><origin xyz="0 0.05 0"/><geometry><box size="0.08 0.1 0.04"/>
    </geometry></collision></link>
  <joint name="waist" type="revolute"><parent link="base"/><child link="trunk"/>
    <origin xyz="0 0 0.05"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="slide" type="prismatic"><parent link="trunk"/><child link="slider"/>
    <origin xyz="0.05 0 0.3" rpy="0 0.2 0"/><axis xyz="0.6 0 -0.8"/>
    <limit lower="-0.2" upper="0.3" effort="1" velocity="1"/></joint>
  <joint name="shoulder" type="revolute"><parent link="trunk"/><child link="arm"/>
    <origin xyz="-0.05 0 0.35" rpy="0.4 -0.3 1.2"/><axis xyz="1 1 0"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="wrist" type="fixed"><parent link="arm"/><child link="hand"/>
    <origin xyz="0 0 0.3" rpy="0 1.5707963267948966 0"/></joint>
</robot>"""


def test_the_kernel_places_a_tree_s_links_where_the_urdf_does_and_decides_as_numpy():
    """On a tree with a prismatic joint and oblique axes: the kernel's link transforms (run as
    Python and compiled) are the chain's, its joint frames turn about the joints' axes, and
    its verdicts are those of the numpy screen (:meth:`free_mask`)."""
    chain = Chain.from_urdf_string(BRANCHED, 'base', ['slider', 'hand'])
    srdf = '<robot name="branched">' + ''.join(
        f'<disable_collisions link1="{a}" link2="{b}"/>'
        for a, b in (('base', 'trunk'), ('trunk', 'slider'), ('trunk', 'arm'),
                     ('arm', 'hand'))) + '</robot>'  # the touching neighbours
    checker = checker_for(chain, CollisionSettings(srdf=srdf))
    model = checker.model
    floats, ints, work, pad = checker._kernel_args
    Q = random_q(chain, np.random.default_rng(3), 300)
    verdicts = np.array([checker.is_free(q) for q in Q])
    assert 20 < verdicts.sum() < len(Q) - 20  # both verdicts met
    np.testing.assert_array_equal(verdicts, checker.free_mask(Q))
    for q in Q[:40]:
        mine = work.copy()
        check_kernel(q, floats, ints, mine, pad)  # as Python
        _, w = _unpack(floats, ints, mine)
        np.testing.assert_allclose(w.links.reshape(-1, 4, 4), model.link_transforms(q),
                                   atol=1e-12)
        axes = chain.joint_frames(q)[:, :3, :3] @ chain._axes[:, :, None]
        np.testing.assert_allclose(w.frames.reshape(-1, 3, 4)[:, :, 2], axes[:, :, 0],
                                   atol=1e-12)
        if compiled_kernel() is not None:
            compiled = work.copy()
            compiled_kernel()(q, floats, ints, compiled, pad)
            np.testing.assert_allclose(_unpack(floats, ints, compiled)[1].links, w.links,
                                       atol=1e-12)


def ring_and_ball(tmp_path):
    """A ring (a closed mesh: inner radius 0.1, outer 0.2, 0.1 high, axis z) 0.5 m above the
    base, and a ball of radius 0.02 swinging on the arm through the ring's hole (at q = 0) and
    through its solid part (at q = asin(0.3): wholly inside it)."""
    trimesh = pytest.importorskip('trimesh')
    ring = trimesh.creation.annulus(r_min=0.1, r_max=0.2, height=0.1, sections=48)
    assert ring.is_watertight
    path = tmp_path / 'ring.stl'
    ring.export(path)
    xml = two_links(f'<origin xyz="0 0 0.5"/><geometry><mesh filename="{path}"/></geometry>',
                    '<geometry><sphere radius="0.02"/></geometry>')
    return Chain.from_urdf_string(xml, 'base', 'tip')


def test_the_meshes_decide_where_a_concave_mesh_s_hull_calls_a_pair_colliding(tmp_path):
    chain = ring_and_ball(tmp_path)
    srdf = '<robot name="two"/>'  # check the adjacent pair too
    settings = dict(padding=0.005, srdf=srdf)
    exact = checker_for(chain, CollisionSettings(**settings))
    hulls = checker_for(chain, CollisionSettings(mesh_confirm=False, **settings))
    in_hole = np.array([0.0])  # 0.1 - 0.02 = 0.08 m from the ring, inside its hull
    assert not hulls.is_free(in_hole)
    assert exact.is_free(in_hole)
    assert exact.report(in_hole).closest.distance_m == pytest.approx(0.08, abs=2e-3)
    inside = np.array([math.asin(0.3)])  # the ball wholly inside the ring's material
    assert not exact.is_free(inside) and not hulls.is_free(inside)
    assert exact.report(inside).colliding[0].distance_m < 0.0
    touching = np.array([math.asin((0.1 - 0.02 - 0.003) / 0.5)])  # 3 mm from the inner wall
    assert not exact.is_free(touching)  # within the padding
    assert exact.is_free(np.array([1.5]))  # far off


@pytest.mark.parametrize('kind, size, match', [('cone', (1.0,), 'not one of'),
                                               ('box', (1.0, 2.0), 'takes 3'),
                                               ('sphere', (-1.0,), 'sizes > 0'),
                                               ('sphere', (float('nan'),), 'sizes > 0')])
def test_a_bad_obstacle_is_refused_saying_why(kind, size, match):
    with pytest.raises(CollisionModelError, match=match):
        Obstacle('bad', kind, size)
    with pytest.raises(CollisionModelError, match='ground_z'):
        World(ground_z=float('inf'))


def test_a_missing_mesh_is_refused_naming_it_unless_the_user_skips_it(tmp_path):
    xml = two_links('<geometry><box size="0.2 0.2 0.2"/></geometry>',
                    f'<geometry><mesh filename="file://{tmp_path}/gone.stl"/></geometry>')
    chain = Chain.from_urdf_string(xml, 'base', 'tip')
    with pytest.raises(CollisionModelError, match='gone.stl.*not found'):
        checker_for(chain)
    checker = checker_for(chain, CollisionSettings(skip_missing_meshes=True))
    assert checker.model.links == ('base',)


def test_an_unreadable_mesh_is_refused_naming_it(tmp_path):
    bad = tmp_path / 'bad.stl'
    bad.write_bytes(b'solid nothing\nthis is not an stl\n')
    xml = two_links('<geometry><box size="0.2 0.2 0.2"/></geometry>',
                    f'<geometry><mesh filename="{bad}"/></geometry>')
    chain = Chain.from_urdf_string(xml, 'base', 'tip')
    with pytest.raises(CollisionModelError, match='bad.stl'):
        checker_for(chain)


def test_a_package_not_on_the_ament_index_is_refused_saying_how_to_add_it(monkeypatch):
    monkeypatch.setenv('AMENT_PREFIX_PATH', '/nonexistent')
    xml = two_links('<geometry><box size="0.2 0.2 0.2"/></geometry>',
                    '<geometry><mesh filename="package://no_such_pkg/m.stl"/></geometry>')
    chain = Chain.from_urdf_string(xml, 'base', 'tip')
    with pytest.raises(CollisionModelError, match='no_such_pkg.*AMENT_PREFIX_PATH'):
        checker_for(chain)


def test_a_scaled_mesh_is_scaled(tmp_path, collision_robot):
    import shutil
    source = collision_robot('collision_prefix/share/ur_description/meshes/ur5e/collision/'
                             'wrist3.stl')
    shutil.copy(source, tmp_path / 'w.stl')
    sizes = []
    for scale in ('1 1 1', '2 2 2'):
        xml = two_links('<geometry><box size="0.2 0.2 0.2"/></geometry>',
                        f'<geometry><mesh filename="{tmp_path}/w.stl" scale="{scale}"/>'
                        '</geometry>')
        model = CollisionModel.from_chain(Chain.from_urdf_string(xml, 'base', 'tip'))
        hull = model.pieces['arm'][0].hull_vertices
        sizes.append(np.ptp(hull, axis=0))
    np.testing.assert_allclose(sizes[1], 2 * sizes[0], rtol=1e-9)


def test_segment_distances_match_a_dense_sampling_of_both_segments():
    from ik_node.collision.capsules import segment_distances
    from ik_node.collision.kernel import _segment_closest
    rng = np.random.default_rng(8)
    u = np.linspace(0.0, 1.0, 201)
    for case in range(60):
        p1, q1, p2, q2 = rng.normal(size=(4, 3))
        if case % 3 == 1:
            q2 = p2.copy()  # a point
        elif case % 3 == 2:
            q1 = p1.copy()
        A = p1 + u[:, None] * (q1 - p1)
        B = p2 + u[:, None] * (q2 - p2)
        sampled = np.linalg.norm(A[:, None] - B[None], axis=2).min()
        d = float(segment_distances(p1, q1, p2, q2))
        assert d <= sampled + 1e-12 and d >= sampled - 0.02
        dist, dx, dy, dz = _segment_closest(np.concatenate([p1, q1]), 0,
                                            np.concatenate([p2, q2]), 0)
        assert dist == pytest.approx(d, abs=1e-12)
        assert math.sqrt(dx * dx + dy * dy + dz * dz) == pytest.approx(d, abs=1e-12)
