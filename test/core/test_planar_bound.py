"""A planar chain's tip never leaves its plane: the distance of a target from that plane is a
proven lower bound (min_residual) for every solver, and such a target is 'unreachable'."""

import numpy as np
import pytest

from ik_node import Chain, make_solver
from ik_node.model.resources import urdf_path


@pytest.fixture(scope='module')
def planar4():
    return Chain.from_urdf_file(urdf_path('planar4'), 'base_link', 'tip')


@pytest.mark.parametrize('solver', ['fabrik', 'damped_jacobian'])
def test_out_of_plane_target_is_unreachable_with_the_plane_distance_as_bound(planar4, solver):
    rng = np.random.default_rng(4)
    normal = planar4.joint_frames(np.zeros(4))[0, :3, :3] @ planar4.joints[0].axis
    normal /= np.linalg.norm(normal)
    for _ in range(5):
        p_in = planar4.fk(rng.uniform(planar4.lower, planar4.upper))[:3, 3]
        lift = rng.uniform(0.05, 0.4)
        result = make_solver(solver, planar4).solve(p_in + lift * normal)
        assert result.status.value == 'unreachable' and not result.reachable
        assert result.min_residual == pytest.approx(lift, abs=1e-9)
        # A bound: no configuration does better, and the measured error respects it.
        tips = planar4.fk(rng.uniform(planar4.lower, planar4.upper, (200, 4)))[:, :3, 3]
        best_sampled = np.min(np.linalg.norm(tips - (p_in + lift * normal), axis=1))
        assert result.min_residual <= best_sampled + 1e-12
        assert result.min_residual <= result.position_error + 1e-12


def test_a_non_planar_chain_gets_no_plane_bound():
    leg = Chain.from_urdf_file(urdf_path('leg3'), 'base_link', 'foot')
    result = make_solver('fabrik', leg).solve([0.1, 0.1, -0.4])
    assert result.reachable and result.min_residual in (None, 0.0)


def test_the_motion_plane_holds_every_configuration_of_a_planar_tip_and_only_such_tips(planar4):
    plane = planar4.motion_plane()
    assert plane is not None
    normal = np.array(plane.normal)
    assert np.linalg.norm(normal) == pytest.approx(1.0, abs=1e-12)
    rng = np.random.default_rng(8)
    tips = planar4.fk(rng.uniform(planar4.lower, planar4.upper, (200, 4)))[:, :3, 3]
    np.testing.assert_allclose(tips @ normal, plane.offset, atol=1e-12)
    # One revolute joint: its tip turns on a circle, in a plane too.
    one = Chain.from_urdf_file(urdf_path('planar4'), 'base_link', 'link1')
    assert one.n == 1 and one.motion_plane() is not None
    for robot, base, tips_ in (('leg3', 'base_link', 'foot'), ('arm6', 'base_link', 'tool0')):
        assert Chain.from_urdf_file(urdf_path(robot), base, tips_).motion_plane() is None
    twin = Chain.from_urdf_file(urdf_path('twin_arm'), 'base_link', ['left_hand', 'right_hand'])
    assert all(twin.motion_plane(tip) is None for tip in twin.tip_links)
