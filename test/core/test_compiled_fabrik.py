"""fabrik's compiled serial passes (numba) against the Python passes in floats.

The kernel must take exactly the iterations of the Python loop: the same forward and backward
passes with the same fits and clamps, the same extrapolation, polish (with a stream's pull
along the self-motion), stall rule and best configuration. So the comparison is strict: the
same status and iteration count, and joints within 1e-9 rad (the kernel does the Python's float
operations in the Python's order; only ``math.remainder``, which numba lacks, is computed another
way, and it decides nothing but an exact tie between two limits). Compared through the solver
(FABRIK and, after a stall, the closest-pose search) on planar4, leg3, arm6, a random 3D chain
with a continuous joint, UR5 and Panda (7 joints; the shared robots where present), and run by
run on the passes alone (stretching first pass, no extrapolation, no polish). Each comparison
asserts that the compiled passes served. Iteration caps end these solves, never the clock.
Where numba cannot serve these tests skip, except the one showing the Python passes then run.
"""

from pathlib import Path

import numpy as np
import pytest

from ik_node.model.chain import Chain
from ik_node import kernels
from ik_node.solvers import IkStatus, make_solver
from ik_node.solvers.fabrik import compiled, compiled_runs
from ik_node.solvers.fabrik.iteration import FabrikProblem, FabrikSettings
from ik_node.solvers.fabrik.serial import SerialFabrik
from ik_node.solvers.fabrik.tree import FabrikTree
from urdf_texts import joint, links, robot

REPO_URDF = Path(__file__).resolve().parents[2] / 'urdf'
NO_CLOCK = {'timeout': 60.0}
JOINT_TOLERANCE = 1e-9

needs_numba = pytest.mark.skipif(not compiled_runs.available(), reason='numba is not installed')


@pytest.fixture(scope='module')
def loaded():
    """The compiled kernels, loaded (or compiled) before the module's tests."""
    if not kernels.wait():
        pytest.skip(kernels.serving())


def _random_chain(seed, n=5):
    """A serial chain with random offsets, orientations and axes; joint 2 continuous."""
    rng = np.random.default_rng(seed)
    parts = [links(*[f'l{i}' for i in range(n + 2)])]
    for i in range(n):
        axis = rng.normal(size=3)
        parts.append(joint(
            f'j{i}', f'l{i}', f'l{i + 1}', 'continuous' if i == 2 else 'revolute',
            ' '.join(f'{v:.4f}' for v in axis / np.linalg.norm(axis)),
            ' '.join(f'{v:.4f}' for v in rng.uniform(-0.2, 0.2, 3) + [0.0, 0.0, 0.1]),
            ' '.join(f'{v:.4f}' for v in rng.uniform(-np.pi, np.pi, 3)),
            '' if i == 2 else 'lower="-2.5" upper="2.5"'))
    parts.append(joint('tip', f'l{n}', f'l{n + 1}', 'fixed', xyz='0.15 0.05 0', limit=''))
    return Chain.from_urdf_string(robot(*parts), 'l0', f'l{n + 1}')


def _chains(shared_robot):
    chains = [Chain.from_urdf_file(REPO_URDF / 'planar4.urdf', 'base_link', 'tip'),
              Chain.from_urdf_file(REPO_URDF / 'leg3.urdf', 'base_link', 'foot'),
              Chain.from_urdf_file(REPO_URDF / 'arm6.urdf', 'base_link', 'tool0'),
              _random_chain(3)]
    for name, base, tip in (('ur5.urdf', 'base_link', 'tool0'),
                            ('panda.urdf', 'panda_link0', 'panda_hand_tcp')):
        try:
            chains.append(Chain.from_urdf_file(shared_robot(name), base, tip))
        except pytest.skip.Exception:
            pass
    return chains


def _limits(chain):
    return (np.where(np.isfinite(chain.lower), chain.lower, -np.pi),
            np.where(np.isfinite(chain.upper), chain.upper, np.pi))


def _cases(chain, count, seed):
    """(target, seed) pairs: FK of random joints, each from a random seed and from a stream's
    seed (near the answer, within a few cm: the polish's first step pulls along the
    self-motion)."""
    rng = np.random.default_rng(seed)
    lo, hi = _limits(chain)
    out = []
    for _ in range(count):
        q = rng.uniform(lo, hi)
        target = chain.fk(q)[:3, 3].copy()
        out.append((target, rng.uniform(lo, hi)))
        out.append((target, np.clip(q + rng.normal(scale=0.05, size=chain.n), lo, hi)))
    return out


class _Counted:
    """Counts the runs the compiled passes served and the runs the Python passes ran."""

    def __init__(self, solver):
        self.served = self.python = 0
        compiled_run, python_run = solver._compiled.run, solver._serial.run

        def run_compiled(problem, settings):
            run = compiled_run(problem, settings)
            self.served += run is not None
            return run

        def run_python(problem, settings):
            self.python += 1
            return python_run(problem, settings)

        solver._compiled.run, solver._serial.run = run_compiled, run_python


def _python_solver(chain, params, monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr(compiled_runs, 'available', lambda: False)
        return make_solver('fabrik', chain, params)


@needs_numba
def test_compiled_fabrik_takes_the_python_iterations_and_reaches_the_target(
        shared_robot, monkeypatch, loaded):
    for chain in _chains(shared_robot):
        fast = make_solver('fabrik', chain, NO_CLOCK)
        slow = _python_solver(chain, NO_CLOCK, monkeypatch)
        assert fast._compiled is not None and fast._compiled.ready()
        assert slow._compiled is None
        counted = _Counted(fast)
        converged = 0
        cases = _cases(chain, 40, 11)
        for k, (target, q_seed) in enumerate(cases):
            if k % 10 == 9:  # out of reach: the reach checks, then the closest-pose search
                target = target * 3.0
            a = fast.solve(target, None, q_seed)
            b = slow.solve(target, None, q_seed)
            label = f'{chain.tip_link} seed {q_seed}'
            assert (a.status, a.iterations, a.min_residual) == \
                (b.status, b.iterations, b.min_residual), label
            assert np.max(np.abs(a.joint_positions - b.joint_positions)) < JOINT_TOLERANCE, label
            assert np.all(a.joint_positions >= chain.lower) and \
                np.all(a.joint_positions <= chain.upper), label
            if a.status is IkStatus.CONVERGED:
                converged += 1
                error = np.linalg.norm(chain.fk(a.joint_positions)[:3, 3] - target)
                assert error <= fast.params['position_tolerance'], label
        assert converged >= 0.85 * len(cases), chain.tip_link
        # Every FABRIK run of the fast solver was the kernel's (none left to Python).
        assert counted.served >= len(cases) // 2 and counted.python == 0, chain.tip_link
        assert fast._compiled_reach is not None and slow._compiled_reach is None


def _runs_agree(a, b, label):
    assert (a.iterations, a.converged, a.stalled, a.timed_out) == \
        (b.iterations, b.converged, b.stalled, b.timed_out), label
    assert np.max(np.abs(a.q - b.q)) < JOINT_TOLERANCE, label
    assert abs(a.tip_errors[0] - b.tip_errors[0]) < JOINT_TOLERANCE, label


@needs_numba
@pytest.mark.parametrize('settings', [
    FabrikSettings(1e-5, 100, 1e-9, 5, polish=10, null_space_gain=0.5),
    FabrikSettings(1e-5, 60, 1e-9, 5, extrapolate=False, polish=0),
    FabrikSettings(1e-6, 7, 0.0, 3, polish=3)], ids=['defaults', 'plain', 'capped'])
def test_compiled_runs_match_the_python_runs_stretched_or_not(shared_robot, settings, loaded):
    for chain in _chains(shared_robot):
        serial = SerialFabrik(FabrikTree(chain))
        kernel = compiled_runs.CompiledFabrik(serial)
        served = 0
        for k, (target, q_seed) in enumerate(_cases(chain, 15, 5)):
            if k % 4 == 3:  # a target beyond the reach: the stretching first pass
                target = target * 3.0
            problem = FabrikProblem(q_seed, (0,), target[None, :], np.ones(1),
                                    stretch_tip=0 if k % 4 == 3 else None,
                                    stop_when_stuck=k % 2 == 0)
            a = kernel.run(problem, settings)
            assert a is not None, chain.tip_link
            served += 1
            _runs_agree(a, serial.run(problem, settings), f'{chain.tip_link} case {k}')
        assert served == 30


@needs_numba
def test_a_run_past_its_deadline_does_no_iteration_as_the_python_run(loaded):
    chain = Chain.from_urdf_file(REPO_URDF / 'arm6.urdf', 'base_link', 'tool0')
    serial = SerialFabrik(FabrikTree(chain))
    target, q_seed = _cases(chain, 1, 2)[0]
    problem = FabrikProblem(q_seed, (0,), target[None, :], np.ones(1), deadline=0.0)
    settings = FabrikSettings(1e-5, 100, 1e-9, 5, polish=10)
    a = compiled_runs.CompiledFabrik(serial).run(problem, settings)
    b = serial.run(problem, settings)
    _runs_agree(a, b, 'deadline passed')
    assert a.timed_out and a.iterations == 0


@needs_numba
def test_a_run_that_records_its_history_is_left_to_the_python_passes(loaded):
    chain = Chain.from_urdf_file(REPO_URDF / 'planar4.urdf', 'base_link', 'tip')
    fast = make_solver('fabrik', chain, dict(NO_CLOCK, record_history=True))
    counted = _Counted(fast)
    target, q_seed = _cases(chain, 1, 4)[0]
    result = fast.solve(target, None, q_seed)
    assert result.history and counted.served == 0 and counted.python == 1


def test_without_numba_the_python_passes_run(monkeypatch):
    chain = Chain.from_urdf_file(REPO_URDF / 'arm6.urdf', 'base_link', 'tool0')
    solver = _python_solver(chain, NO_CLOCK, monkeypatch)
    assert solver._compiled is None
    target, q_seed = _cases(chain, 1, 6)[0]
    result = solver.solve(target, None, q_seed)
    assert result.status is IkStatus.CONVERGED
    assert np.linalg.norm(chain.fk(result.joint_positions)[:3, 3] - target) <= \
        solver.params['position_tolerance']


def test_the_model_keeps_each_joints_fit():
    chain = Chain.from_urdf_file(REPO_URDF / 'arm6.urdf', 'base_link', 'tool0')
    serial = SerialFabrik(FabrikTree(chain))
    model = compiled.model_of(serial)
    for i, align in enumerate(serial.align):
        fit = model[i, compiled._FIT]
        if align[0] == 'bones':
            assert fit == compiled.BONES
        else:
            assert fit == (compiled.CHILD_AND_TIP if len(align[1]) == 2 else compiled.TIP_ONLY)
