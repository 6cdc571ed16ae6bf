"""Real legs (Solo 12, Go1, ANYmal C from ../shared/robots): reachable targets are reached, a
missed target is ``unreachable`` only with a proven bound, and the closest pose to a target out
of reach is the closest a long multi-start search finds.

The legs' limits are what makes them hard: Solo 12's knee folds fully (a free local minimum of
the tip distance sits beside targets next to the hip), Go1's thigh turns from -0.69 to 4.5 rad
(the closest pose to a target behind its limits may lie on the far side of a limit), ANYmal C's
hip abduction is limited to about +-0.6 rad. No assertion depends on wall time: every solve gets
a 60 s timeout.
"""

import math
import zlib

import numpy as np
import pytest

from benchmarks.reach import out_of_reach  # the batched long search
from ik_node import Chain, IkStatus, make_solver

NO_CLOCK = {'timeout': 60.0}
LEGS = {'solo12': ('base_link', 'FL_FOOT'), 'go1': ('base', 'FL_foot'),
        'anymal_c': ('base', 'LF_FOOT')}


def leg(shared_robot, name: str) -> Chain:
    base, tip = LEGS[name]
    return Chain.from_urdf_file(shared_robot(f'{name}.urdf'), base, tip)


def box(chain):
    return (np.where(np.isfinite(chain.lower), chain.lower, -math.pi),
            np.where(np.isfinite(chain.upper), chain.upper, math.pi))


def honest(result, solver) -> bool:
    """A missed target's status claims no more than is proven."""
    if result.reachable:
        return result.status is IkStatus.CONVERGED
    tolerance = solver.params['position_tolerance']
    proven = result.min_residual is not None and result.min_residual > tolerance
    return (result.status is IkStatus.UNREACHABLE) == proven


@pytest.mark.slow
@pytest.mark.parametrize('solver_name', ['fabrik', 'damped_jacobian'])
def test_solo12_targets_beside_a_folded_knee_are_reached(shared_robot, solver_name):
    # FK of configurations with the knee folded to within 0.15 rad of a half turn: the foot
    # next to the hip. From the mid configuration, the solvers' own iterations stall there and
    # the closest-pose search's structured starts agree on a free local minimum millimetres
    # away: such targets ended as 'unreachable' although reachable.
    chain = leg(shared_robot, 'solo12')
    solver = make_solver(solver_name, chain, NO_CLOCK)
    rng = np.random.default_rng(22)
    lower, upper = box(chain)
    for _ in range(120):
        q = rng.uniform(lower, upper)
        q[2] = rng.choice([-1.0, 1.0]) * (math.pi - rng.uniform(0.0, 0.15))
        target = chain.fk(q)[:3, 3]
        r = solver.solve(target)
        assert r.reachable, (q.tolist(), r.status.value, r.position_error, r.message)
        assert np.linalg.norm(chain.fk(r.joint_positions)[:3, 3] - target) <= 1e-5


def behind_limit_targets(chain, count, rng):
    """FK of configurations with a joint outside its limits, closer than 0.95 times the reach
    to the first joint (the benchmark's ``behind_limits`` kind), and targets pushed beyond the
    reach along the ray from the first joint (``beyond``)."""
    lower, upper = box(chain)
    origin, reach = out_of_reach.reach_of(chain, rng)
    out = []
    while len(out) < count:
        if len(out) % 2:
            d = chain.fk(rng.uniform(lower, upper))[:3, 3] - origin
            out.append(origin + d / np.linalg.norm(d) * reach * rng.uniform(1.02, 1.5))
            continue
        span = upper - lower
        q = rng.uniform(lower - 0.5 * span, upper + 0.5 * span)
        target = chain.fk(q)[:3, 3]
        if not np.all((q >= lower) & (q <= upper)) and \
                np.linalg.norm(target - origin) < 0.95 * reach:
            out.append(target)
    return out


@pytest.mark.slow
@pytest.mark.parametrize('name', ['go1', 'anymal_c'])
def test_the_closest_pose_on_a_real_leg_is_the_closest_of_a_long_search(shared_robot, name):
    # 160 targets behind the limits or beyond the reach, from random seeds, each solver's error
    # within 1 mm of the best of 60 random starts (batched projected Newton, numpy). Before
    # the flips (closest_pose._flips) 1-3 of these ended 6-58 mm farther, pressed against the
    # near side of a limit.
    chain = leg(shared_robot, name)
    solvers = [make_solver(s, chain, NO_CLOCK) for s in ('damped_jacobian', 'fabrik')]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    lower, upper = box(chain)
    misses = []
    for target in behind_limit_targets(chain, 160, rng):
        best, _ = out_of_reach.long_search(chain, target, 60, rng)
        seed = rng.uniform(lower, upper)
        for solver in solvers:
            r = solver.solve(target, seed=seed)
            assert honest(r, solver), (r.status.value, r.min_residual, r.message)
            assert chain.within_limits(r.joint_positions, tol=0.0)
            best = min(best, r.position_error)
            if r.position_error > best + 1e-3:
                misses.append((solver.name, target.tolist(), r.position_error, best, r.message))
    assert not misses, misses


@pytest.mark.parametrize('solver_name', ['fabrik', 'damped_jacobian'])
def test_a_confirmed_closest_pose_without_a_proven_bound_is_not_reached(shared_robot,
                                                                        solver_name):
    # Go1, a target behind the limits near its hip: no bound proves it out of reach, so the
    # closest pose is never reported 'unreachable': the leg's closed form (which every solver
    # takes on a leg) proves it within the leg's reach and every solution beyond a limit,
    # 'joint_limited'; the search alone reports the pose it confirms as 'not_reached'.
    chain = leg(shared_robot, 'go1')
    solver = make_solver(solver_name, chain, NO_CLOCK)
    target = chain.fk(np.array([0.0, -1.5, -0.3]))[:3, 3]  # thigh and knee past their limits
    best, _ = out_of_reach.long_search(chain, target, 40, np.random.default_rng(3))
    assert best > 1e-3  # the premise: out of reach
    r = solver.solve(target)
    assert not r.reachable and r.min_residual is None and not r.best_found
    assert r.status is IkStatus.JOINT_LIMITED, r.message
    assert r.position_error <= best + 1e-6
    solver._exact = None  # the search alone
    r = solver.solve(target)
    assert not r.reachable and r.min_residual is None and not r.best_found
    assert r.status is IkStatus.NOT_REACHED, r.message
    assert r.position_error <= best + 1e-6
