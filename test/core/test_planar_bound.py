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
