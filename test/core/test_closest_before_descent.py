"""Out of reach, decided before any descent where closed forms prove it, and a leg's nearest pose
within limits in the compiled kernel.

- A leg that fits the analytic geometry: :meth:`ExactLeg.out_of_reach` (the target's distance
  from the set the foot reaches, limits aside) sends ``damped_jacobian`` straight to the
  closed-form closest pose, the one ``analytic_hip_knee`` returns; a reachable target is never
  sent there.
- A planar chain: the plane and the reach bound of the target's foot point prove a bound that
  never exceeds the closest error and meets it beyond the reach.
- :func:`ik_node.solvers.hip_knee.compiled_nearest.nearest_offset_leg` takes the Python search's
  samples, candidates and refinement (:meth:`OffsetLeg.nearest_in_python`): the same poses.
"""

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

from ik_node import Chain, IkStatus, make_solver
from ik_node import kernels
from ik_node.solvers.hip_knee import compiled_nearest as compiled, offset_leg
from ik_node.solvers.hip_knee.geometry import geometry_from_chain
from ik_node.solvers.hip_knee.offset_leg import OffsetLeg
from ik_node.solvers.hip_knee.exact_leg import ExactLeg

from reference_robots import SHARED_ROBOTS, skip_reason  # noqa: E402
REPO_URDF = Path(__file__).resolve().parents[2] / 'urdf'
LEGS = {'go1_FR': (SHARED_ROBOTS / 'go1.urdf', 'trunk', 'FR_foot'),
        'go1_RL': (SHARED_ROBOTS / 'go1.urdf', 'trunk', 'RL_foot'),
        'anymal_c_RH': (SHARED_ROBOTS / 'anymal_c.urdf', 'base', 'RH_FOOT'),
        'solo12_FL': (SHARED_ROBOTS / 'solo12.urdf', 'base_link', 'FL_FOOT'),
        'leg3': (REPO_URDF / 'leg3.urdf', 'base_link', 'foot')}


def load(path, base, tip) -> Chain:
    if not path.is_file():
        pytest.skip(skip_reason(path))
    return Chain.from_urdf_file(path, base, tip)


def offset_legs(name):
    """The chain's OffsetLeg, and the same leg with a first joint that turns a full turn."""
    g = geometry_from_chain(load(*LEGS[name]))
    if not (g.lateral or g.axis_offset):
        pytest.skip(f'{name} has no offset')
    return (OffsetLeg(g, 0, 0),
            OffsetLeg(dataclasses.replace(g, first_limits=(-math.inf, math.inf)), 0, 0))


def test_the_kernels_constants_are_the_offset_legs():
    assert compiled.SAMPLE_STEP == offset_leg.SAMPLE_STEP
    assert compiled.REFINED_BASINS == offset_leg.REFINED_BASINS
    assert compiled.ANGLE_TOLERANCE == offset_leg.ANGLE_TOLERANCE
    assert compiled.MAX_REFINE_STEPS == offset_leg.MAX_REFINE_STEPS


@pytest.mark.parametrize('name', ['go1_FR', 'go1_RL', 'anymal_c_RH', 'solo12_FL'])
def test_the_compiled_nearest_pose_within_limits_is_the_python_one(name):
    if not compiled.available() or not kernels.wait():
        pytest.skip(kernels.serving())
    kernel = compiled.nearest_offset_leg()
    rng = np.random.default_rng(5)
    for leg in offset_legs(name):
        core = leg.core
        for _ in range(150):
            x, e1, e2 = rng.uniform(-0.7, 0.7, size=3).tolist()
            seed = [rng.uniform(-2.0, 2.0), rng.uniform(core.lower1, core.upper1),
                    rng.uniform(core.lower2, core.upper2)]
            error, q = leg.nearest_in_python(x, e1, e2, seed)
            fast = kernel(leg.row, x, e1, e2, *seed)
            assert fast[0] == pytest.approx(error, abs=1e-12)
            np.testing.assert_allclose(fast[1:], q, atol=1e-9)
            assert leg.nearest_within_limits(x, e1, e2, seed) == (fast[0], list(fast[1:]))


@pytest.mark.parametrize('name', sorted(LEGS))
def test_a_leg_target_outside_the_foots_reach_goes_to_the_closed_form_before_any_descent(name):
    chain = load(*LEGS[name])
    exact = ExactLeg.of(chain)
    analytic = make_solver('analytic_hip_knee', chain)
    solver = make_solver('damped_jacobian', chain, {'timeout': 30.0})
    rng = np.random.default_rng(8)
    low, high = chain.lower, chain.upper
    outside = 0
    for _ in range(60):
        q = rng.uniform(low, high)
        tip = chain.fk(q)[:3, 3]
        assert exact.reach_gap(tip.tolist()) <= 1e-9  # a tip is in the foot's set
        assert not exact.out_of_reach(tip.tolist())
        target = tip + rng.normal(scale=0.3, size=3)
        seed = rng.uniform(low, high)
        closed = analytic.solve(target, None, seed)
        if not exact.out_of_reach(target.tolist()):
            continue
        outside += 1
        # The gap is proven: never above the closest pose's error.
        assert exact.reach_gap(target.tolist()) <= closed.position_error + 1e-12
        mine = solver.solve(target, None, seed)
        assert mine.iterations == 1  # the closed form's one step, no descent
        np.testing.assert_allclose(mine.joint_positions, closed.joint_positions, atol=1e-9)
        assert not mine.reachable and not mine.best_found
    assert outside >= 10


@pytest.mark.parametrize('solver_name', ['damped_jacobian', 'fabrik'])
def test_a_planar_chains_plane_bound_is_proven_and_meets_the_error_beyond_the_reach(solver_name):
    chain = load(REPO_URDF / 'planar4.urdf', 'base_link', 'tip')
    solver = make_solver(solver_name, chain, {'timeout': 30.0})
    (nx, ny, nz), offset = chain.motion_plane()
    normal = np.array([nx, ny, nz])
    reach = float(np.max(np.linalg.norm(
        [chain.fk(q)[:3, 3] for q in np.random.default_rng(0).uniform(
            chain.lower, chain.upper, size=(2000, chain.n))], axis=1)))
    rng = np.random.default_rng(9)
    for k in range(20):
        in_plane = rng.normal(size=3)
        in_plane -= np.dot(in_plane, normal) * normal
        in_plane *= (reach + 0.05 + 0.3 * rng.random()) / np.linalg.norm(in_plane)
        off = (0.02 + 0.3 * rng.random()) * (1 if k % 2 else -1)
        target = in_plane + (offset + off) * normal
        result = solver.solve(target)
        assert result.status is IkStatus.UNREACHABLE and not result.best_found
        assert abs(off) <= result.min_residual <= result.position_error + 1e-12
        assert result.position_error <= result.min_residual + 1e-3  # the bound is met
