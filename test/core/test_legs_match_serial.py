"""A solve of several independent legs answers exactly what each leg's own serial solver answers.

:class:`~ik_node.solvers.trees.legs.Legs` solves leg by leg without building a result per leg: every
targeted foot's joints must be bit for bit those of ``solve`` on the leg's serial chain from the
same seed, with the same per-tip errors, status and message; the other joints keep the seed. Every
error is also checked by FK of the answer against the target, never a copied number.
"""

from pathlib import Path

import numpy as np
import pytest

from ik_node import Chain, make_solver
from ik_node.solvers.base import IkStatus
from ik_node.solvers.results import combined_status
from tree_models import QUAD_FEET, quad_leg3_urdf

REPO = Path(__file__).resolve().parents[2]
QUAD12_FEET = ('FL_foot', 'FR_foot', 'RL_foot', 'RR_foot')
#: name -> (URDF in ../shared/robots, base, feet)
SHARED_QUADRUPEDS = {
    'solo12': ('solo12.urdf', 'base_link', ('FL_FOOT', 'FR_FOOT', 'HL_FOOT', 'HR_FOOT')),
    'anymal_c': ('anymal_c.urdf', 'base', ('LF_FOOT', 'RF_FOOT', 'LH_FOOT', 'RH_FOOT')),
}
FK_ABS = 1e-12  # [m] the reported error against the FK error of the returned joints


def quadruped(name: str, shared_robot) -> Chain:
    if name == 'quad12':
        return Chain.from_urdf_file(REPO / 'urdf' / 'quad12.urdf', 'base_link',
                                    list(QUAD12_FEET))
    if name == 'quad_leg3':  # legs without a lateral offset: the solver's other leg path
        return Chain.from_urdf_string(quad_leg3_urdf(), 'trunk', list(QUAD_FEET))
    urdf, base, feet = SHARED_QUADRUPEDS[name]
    return Chain.from_urdf_file(shared_robot(urdf), base, list(feet))


def cases(chain: Chain, rng: np.random.Generator, n: int):
    """``(targets, seed)`` pairs: every foot in reach, feet out of reach (far and just beyond),
    one foot only, three feet out of tip order, positions as lists with an orientation; seeds
    within the limits, beyond them, or None."""
    feet = chain.tip_links
    for i in range(n):
        T = chain.fk_tips(rng.uniform(chain.lower, chain.upper))
        p = {f: T[f][:3, 3].copy() for f in feet}
        seed = (None, rng.uniform(chain.lower, chain.upper),
                3.0 * rng.uniform(chain.lower, chain.upper))[i % 3]
        kind = i % 5
        if kind == 0:
            targets = p
        elif kind == 1:
            targets = {**p, feet[1]: 3.0 * p[feet[1]], feet[2]: 1.3 * p[feet[2]]}
        elif kind == 2:
            targets = {feet[i % len(feet)]: p[feet[i % len(feet)]]}
        elif kind == 3:
            targets = {f: p[f] for f in reversed(feet[1:])}
        else:
            targets = {f: (p[f].tolist(), [0.0, 0.0, 0.0, 1.0]) for f in feet}
        yield targets, seed


def assert_answers_of_each_leg_alone(chain: Chain, solver, leg_solvers, targets, seed) -> set:
    """Solve ``targets`` at once and each leg alone; assert they agree, and the FK. Returns the
    statuses of the targeted tips."""
    result = solver.solve(targets=targets, seed=seed)
    q = result.joint_positions
    q_seed = np.clip(chain.mid_configuration() if seed is None else seed, chain.lower,
                     chain.upper)
    assert chain.within_limits(q) and np.all(np.isfinite(q))
    T_out = chain.fk_tips(q)
    moved = set()
    for foot, value in targets.items():
        position, quat = value if isinstance(value, tuple) else (value, None)
        joints = chain.joints_of_tip(foot)
        moved.update(joints)
        alone = leg_solvers[foot].solve(position, quat, seed=q_seed[joints])
        assert q[joints].tobytes() == alone.joint_positions.tobytes(), (foot, q[joints],
                                                                        alone.joint_positions)
        tip = result.tips[foot]
        assert (tip.reachable, tip.position_error, tip.min_residual, tip.status,
                tip.orientation_error, tip.message) == \
            (alone.reachable, alone.position_error, alone.min_residual, alone.status,
             alone.orientation_error, alone.message), foot
        error = float(np.linalg.norm(T_out[foot][:3, 3] - np.asarray(position)))
        assert abs(error - tip.position_error) <= FK_ABS, foot
        assert tip.reachable == (error <= solver.params['position_tolerance']), foot
    for j in set(range(chain.n)) - moved:
        assert q[j] == q_seed[j]
    tips = result.tips
    assert list(tips) == [f for f in chain.tip_links if f in targets]
    assert result.reachable == all(t.reachable for t in tips.values())
    assert result.status is combined_status(t.status for t in tips.values())
    assert result.position_error == max(t.position_error for t in tips.values())
    bounds = [t.min_residual for t in tips.values() if t.min_residual is not None]
    assert result.min_residual == (max(bounds) if bounds else None)
    assert result.orientation_ignored == any(isinstance(v, tuple) for v in targets.values())
    for foot, t in tips.items():
        assert (foot in result.message) == (not t.reachable)
    return {t.status for t in tips.values()}


def check_robot(chain: Chain, n: int, seed: int, consecutive: bool = True) -> set:
    solver = make_solver('analytic_hip_knee', chain)
    # The Python path, bit for bit; the compiled legs agree with it to the last bits of a few
    # angles (test_compiled_legs.py).
    solver._compiled_legs = None
    leg_solvers = {f: make_solver('analytic_hip_knee', chain.serial_chain(f))
                   for f in chain.tip_links}
    if not consecutive:  # the path for legs whose joints are not one run of the tree's
        legs = solver.legs
        legs._plan = [(tip, None, *rest) for tip, _, *rest in legs._plan]
    statuses = set()
    for targets, q_seed in cases(chain, np.random.default_rng(seed), n):
        statuses |= assert_answers_of_each_leg_alone(chain, solver, leg_solvers, targets, q_seed)
    return statuses


@pytest.mark.parametrize('name', ['quad12', 'quad_leg3', 'solo12', 'anymal_c'])
def test_each_foot_gets_exactly_the_answer_of_its_leg_solved_alone(name, shared_robot):
    chain = quadruped(name, shared_robot)
    statuses = check_robot(chain, 150, 31)
    assert IkStatus.CONVERGED in statuses and IkStatus.UNREACHABLE in statuses  # the cases do
    # both


@pytest.mark.parametrize('name', ['quad12', 'anymal_c'])
def test_legs_whose_joints_are_not_consecutive_get_the_same_answers(name, shared_robot):
    check_robot(quadruped(name, shared_robot), 40, 32, consecutive=False)
