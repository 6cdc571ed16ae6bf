"""analytic_hip_knee's compiled legs (numba): every leg of a tree in one call, the same answers
as the Python path.

Both paths solve the same four-foot targets from the same seeds: in reach from random seeds,
the mid configuration and seeds beyond the limits, feet out of reach, single feet, positions as
lists, orientations. The compiled answers must match the Python path's (statuses, messages,
per-foot errors and bounds; joints within 1e-12 rad) and FK of the returned joints must put
every reached foot on its target. Legs of every kind: quad12 (lateral offset), a leg3 quadruped
(no offset), Solo 12 and ANYmal C (../shared/robots, skipped when absent), and quadrupeds of
HyQ-type legs (axis offset) and Bolt-type legs (both offsets). Where numba cannot serve these
tests skip, except the one showing that the Python path then serves.
"""

from pathlib import Path

import numpy as np
import pytest

from ik_node import Chain, make_solver
from ik_node import kernels
from ik_node.solvers.geometry import planar_core
from ik_node.solvers.hip_knee import compiled, compiled_legs
from ik_node.kernels import planar
from tree_models import QUAD_FEET, quad_leg3_urdf

REPO = Path(__file__).resolve().parents[2]
SHARED = {
    'solo12': ('solo12.urdf', 'base_link', ('FL_FOOT', 'FR_FOOT', 'HL_FOOT', 'HR_FOOT')),
    'anymal_c': ('anymal_c.urdf', 'base', ('LF_FOOT', 'RF_FOOT', 'LH_FOOT', 'RH_FOOT')),
}
#: Hip positions of the made-up quadrupeds [m].
HIPS = {'lf': (0.3, 0.1), 'rf': (0.3, -0.1), 'lh': (-0.3, 0.1), 'rh': (-0.3, -0.1)}
#: Offsets of the made-up legs: (pitch joint's origin, foot's origin) in the hip's frames.
OFFSET_LEGS = {'hyq_type': ('0 0 -0.08', '0 0 -0.35'),
               'bolt_type': ('0.02 -0.05 -0.06', '0.03 -0.02 -0.3')}
JOINTS_ABS = 1e-12  # [rad] compiled against Python
FK_ABS = 1e-12      # [m] a reported error against the FK error of the returned joints

needs_numba = pytest.mark.skipif(not compiled_legs.available(), reason='numba is not installed')


@pytest.fixture(scope='module')
def loaded():
    """The compiled kernels, loaded (or compiled) before the module's tests."""
    if not kernels.wait():
        pytest.skip(kernels.serving())


def offset_quadruped_urdf(pitch_xyz: str, foot_xyz: str) -> str:
    """Four abduction legs (about x) from a trunk, pitch and knee about y, with the offsets
    given."""
    parts = ['<robot name="quad"><link name="trunk"/>']
    limit = '<limit lower="{}" upper="{}" effort="1" velocity="1"/>'
    for leg, (x, y) in HIPS.items():
        parts.append(''.join(f'<link name="{leg}_{name}"/>'
                             for name in ('hip', 'thigh', 'shank', 'foot')))
        parts.append(
            f'<joint name="{leg}_haa" type="revolute"><parent link="trunk"/>'
            f'<child link="{leg}_hip"/><origin xyz="{x} {y} 0"/><axis xyz="1 0 0"/>'
            f'{limit.format(-1.2, 1.2)}</joint>'
            f'<joint name="{leg}_hfe" type="revolute"><parent link="{leg}_hip"/>'
            f'<child link="{leg}_thigh"/><origin xyz="{pitch_xyz}"/><axis xyz="0 1 0"/>'
            f'{limit.format(-2.5, 2.5)}</joint>'
            f'<joint name="{leg}_kfe" type="revolute"><parent link="{leg}_thigh"/>'
            f'<child link="{leg}_shank"/><origin xyz="0 0 -0.35"/><axis xyz="0 1 0"/>'
            f'{limit.format(-2.8, 2.8)}</joint>'
            f'<joint name="{leg}_foot_joint" type="fixed"><parent link="{leg}_shank"/>'
            f'<child link="{leg}_foot"/><origin xyz="{foot_xyz}"/></joint>')
    return ''.join(parts) + '</robot>'


def quadruped(name: str, shared_robot) -> Chain:
    if name == 'quad12':
        return Chain.from_urdf_file(REPO / 'urdf' / 'quad12.urdf', 'base_link',
                                    ['FL_foot', 'FR_foot', 'RL_foot', 'RR_foot'])
    if name == 'quad_leg3':
        return Chain.from_urdf_string(quad_leg3_urdf(), 'trunk', list(QUAD_FEET))
    if name in OFFSET_LEGS:
        return Chain.from_urdf_string(offset_quadruped_urdf(*OFFSET_LEGS[name]), 'trunk',
                                      [f'{leg}_foot' for leg in HIPS])
    urdf, base, feet = SHARED[name]
    return Chain.from_urdf_file(shared_robot(urdf), base, list(feet))


def python_solver(chain, monkeypatch, **params):
    with monkeypatch.context() as patch:
        patch.setattr(compiled_legs, 'available', lambda: False)
        solver = make_solver('analytic_hip_knee', chain, params)
    assert solver._compiled_legs is None
    return solver


def cases(chain: Chain, rng: np.random.Generator, n: int):
    """``(targets, seed)``: every foot in reach (most cases), from random seeds, the mid
    configuration (None) and seeds beyond the limits; a foot out of reach; one foot; feet out of
    tip order; positions as lists; positions with an orientation."""
    feet = chain.tip_links
    lower = np.maximum(chain.lower, -np.pi)
    upper = np.minimum(chain.upper, np.pi)
    for i in range(n):
        T = chain.fk_tips(rng.uniform(lower, upper))
        p = {f: T[f][:3, 3] for f in feet}  # views of T: not contiguous
        seed = (None, rng.uniform(lower, upper), 3.0 * rng.uniform(lower, upper),
                rng.uniform(lower, upper))[i % 4]
        kind = i % 10
        if kind == 5:
            targets = {**p, feet[1]: 3.0 * p[feet[1]]}
        elif kind == 6:
            targets = {feet[i % len(feet)]: p[feet[i % len(feet)]]}
        elif kind == 7:
            targets = {f: p[f] for f in reversed(feet)}
        elif kind == 8:
            targets = {f: p[f].tolist() for f in feet}
        elif kind == 9:
            targets = {f: (p[f].tolist(), [0.0, 0.0, 0.0, 1.0]) for f in feet}
        else:
            targets = p
        yield targets, seed


def assert_same(chain, a, b, targets, label):
    """``a`` (compiled) answers as ``b`` (Python); FK of ``a``'s joints against the targets."""
    assert vars(a).keys() == vars(b).keys() and a.as_dict().keys() == b.as_dict().keys()
    assert all(vars(a.tips[f]).keys() == vars(b.tips[f]).keys() for f in b.tips)
    assert a.joint_positions.dtype == b.joint_positions.dtype and \
        type(a.position_error) is type(b.position_error)
    assert (a.reachable, a.status, a.message, a.min_residual, a.iterations,
            a.orientation_ignored, a.best_found, list(a.tips)) == \
        (b.reachable, b.status, b.message, b.min_residual, b.iterations,
         b.orientation_ignored, b.best_found, list(b.tips)), label
    assert np.max(np.abs(a.joint_positions - b.joint_positions)) <= JOINTS_ABS, label
    assert abs(a.position_error - b.position_error) <= FK_ABS, label
    assert chain.within_limits(a.joint_positions), label
    T = chain.fk_tips(a.joint_positions)
    for foot, value in targets.items():
        position = value[0] if isinstance(value, tuple) else value
        ta, tb = a.tips[foot], b.tips[foot]
        assert (ta.reachable, ta.status, ta.message, ta.min_residual, ta.best_found) == \
            (tb.reachable, tb.status, tb.message, tb.min_residual, tb.best_found), label
        error = float(np.linalg.norm(T[foot][:3, 3] - np.asarray(position)))
        assert abs(error - ta.position_error) <= FK_ABS, label
        assert ta.reachable == (error <= 1e-5), label


@needs_numba
@pytest.mark.parametrize('name', ['quad12', 'quad_leg3', 'solo12', 'anymal_c', 'hyq_type',
                                  'bolt_type'])
def test_the_compiled_legs_answer_as_the_python_path(name, shared_robot, loaded, monkeypatch):
    chain = quadruped(name, shared_robot)
    fast = make_solver('analytic_hip_knee', chain)
    slow = python_solver(chain, monkeypatch)
    assert fast._compiled_legs is not None and fast._compiled_legs.ready()
    served = 0
    cases_run = 0
    for k, (targets, seed) in enumerate(cases(chain, np.random.default_rng(7), 200)):
        answered = fast._compiled_legs.solve(targets, seed)
        served += answered is not None
        a = fast.solve(targets=targets, seed=seed)
        b = slow.solve(targets=targets, seed=seed)
        assert_same(chain, a, b, targets, (name, k))
        if answered is not None:
            assert_same(chain, answered, b, targets, (name, k, 'kernel'))
        cases_run += 1
    # In reach from any seed the kernel answers; out of reach, orientations, tuples: Python.
    assert served >= 0.4 * cases_run, served


@needs_numba
def test_a_foot_out_of_reach_or_unusual_input_goes_to_the_python_path(shared_robot, loaded):
    chain = quadruped('quad12', shared_robot)
    solver = make_solver('analytic_hip_knee', chain)
    legs = solver._compiled_legs
    T = chain.fk_tips(chain.mid_configuration())
    p = {f: T[f][:3, 3].copy() for f in chain.tip_links}
    assert legs.solve(p, None) is not None
    far = {**p, chain.tip_links[0]: p[chain.tip_links[0]] * 10.0}
    assert legs.solve(far, None) is None
    assert solver.solve(targets=far).tips[chain.tip_links[0]].status.value == 'unreachable'
    for unusual, seed in (({**p, 'trunk': p[chain.tip_links[0]]}, None),
                          ({chain.tip_links[0]: [0.1, 0.2]}, None),
                          ({chain.tip_links[0]: [0.1, 0.2, float('nan')]}, None),
                          ({chain.tip_links[0]: ['a', 0.1, 0.2]}, None),
                          (p, np.zeros(3)), (p, [0.0] * chain.n),
                          (p, np.full(chain.n, np.nan)), ({}, None), (None, None)):
        assert legs.solve(unusual, seed) is None


@needs_numba
def test_the_compiled_legs_wait_for_the_kernels_and_a_history_keeps_the_python_path(
        shared_robot):
    chain = quadruped('quad12', shared_robot)
    assert compiled_legs.CompiledLegs.of(make_solver('analytic_hip_knee', chain,
                                       {'record_history': True})) is None
    leg = make_solver('analytic_hip_knee', chain.serial_chain(chain.tip_links[0]))
    assert leg._compiled_legs is None  # one leg: the Python path
    legs = compiled_legs.CompiledLegs(make_solver('analytic_hip_knee', chain), compiled_kernels={})
    assert not legs.ready()
    assert legs.solve({chain.tip_links[0]: [0.1, 0.1, -0.3]}, None) is None


def test_ik_node_no_numba_keeps_the_python_path(shared_robot, monkeypatch):
    monkeypatch.setenv('IK_NODE_NO_NUMBA', '1')
    chain = quadruped('quad12', shared_robot)
    solver = make_solver('analytic_hip_knee', chain)
    assert solver._compiled_legs is None
    T = chain.fk_tips(chain.mid_configuration())
    result = solver.solve(targets={f: T[f][:3, 3] for f in chain.tip_links})
    assert result.reachable


def test_the_kernels_constants_are_the_planar_cores():
    assert compiled.DEGENERATE_DISTANCE_M == planar_core.DEGENERATE_DISTANCE_M
    assert compiled.TIE_M == planar_core.TIE_M
    assert planar.LIMIT_SLACK == planar_core._LIMIT_SLACK
