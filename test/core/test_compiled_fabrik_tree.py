"""fabrik's compiled tree passes (numba) against the Python tree passes (numpy).

The kernel must take exactly the iterations of the Python loop over a tree: the same forward and
backward passes with the same fits and clamps, the same extrapolation, polish, stall rule,
restarts (drawn by the same generator) and best configuration. So the comparison is strict: the
same status and iteration count, and joints within 1e-9 rad (numpy's small products and its linear
solve may round the last bit otherwise). Compared through the solver (the tree passes and, when
some tips are proven out of reach, the task-priority phase) on twin_arm's two hands, on its left
hand and two right fingers, and on a random tree with a shared trunk (random axes and offsets, a
continuous joint), and run by run on the passes alone (a stretching first pass, no extrapolation,
no polish, capped iterations). Each comparison asserts that the compiled passes served. Iteration
caps end these solves, never the clock. Where numba cannot serve these tests skip, except the one
showing the Python passes then run.
"""

from pathlib import Path

import numpy as np
import pytest

from ik_node.model.chain import Chain
from ik_node import kernels
from ik_node.solvers import IkStatus, make_solver
from ik_node.solvers.fabrik import compiled_tree
from ik_node.solvers.fabrik.iteration import FabrikProblem, FabrikSettings
from ik_node.solvers.fabrik.tree import FabrikTree
from urdf_texts import joint, links, robot

TWIN_ARM = Path(__file__).resolve().parents[2] / 'urdf' / 'twin_arm.urdf'
NO_CLOCK = {'timeout': 60.0, 'position_tolerance': 1e-4, 'max_iterations': 300}
JOINT_TOLERANCE = 1e-9

needs_numba = pytest.mark.skipif(not compiled_tree.available(),
                                 reason='numba is not installed')


@pytest.fixture(scope='module')
def loaded():
    """The compiled kernels, loaded (or compiled) before the module's tests."""
    if not kernels.wait():
        pytest.skip(kernels.serving())


def _random_tree(seed):
    """A trunk of two joints and three branches of two or three joints (random axes and
    offsets; the trunk's second joint continuous), one tip per branch."""
    rng = np.random.default_rng(seed)
    names, parts = ['base', 't0', 't1'], []

    def add(name, parent, child, continuous=False):
        axis = rng.normal(size=3)
        parts.append(joint(
            name, parent, child, 'continuous' if continuous else 'revolute',
            ' '.join(f'{v:.4f}' for v in axis / np.linalg.norm(axis)),
            ' '.join(f'{v:.4f}' for v in rng.uniform(-0.1, 0.1, 3) + [0.0, 0.0, 0.15]),
            ' '.join(f'{v:.4f}' for v in rng.uniform(-1.0, 1.0, 3)),
            '' if continuous else 'lower="-2.5" upper="2.5"'))

    add('trunk0', 'base', 't0')
    add('trunk1', 't0', 't1', continuous=True)
    tips = []
    for b, length in enumerate((2, 3, 2)):
        parent = 't1'
        for k in range(length):
            child = f'b{b}l{k}'
            names.append(child)
            add(f'b{b}j{k}', parent, child)
            parent = child
        names.append(f'tip{b}')
        parts.append(joint(f'tip{b}_fixed', parent, f'tip{b}', 'fixed', xyz='0.1 0 0.05',
                           limit=''))
        tips.append(f'tip{b}')
    return Chain.from_urdf_string(robot(links(*names), *parts), 'base', tips)


def _trees():
    return [('hands', Chain.from_urdf_file(TWIN_ARM, 'base_link', ['left_hand', 'right_hand'])),
            ('nested', Chain.from_urdf_file(
                TWIN_ARM, 'base_link', ['left_hand', 'right_finger_a', 'right_finger_b'])),
            ('random', _random_tree(7))]


def _limits(chain):
    return (np.where(np.isfinite(chain.lower), chain.lower, -np.pi),
            np.where(np.isfinite(chain.upper), chain.upper, np.pi))


def _cases(chain, count, seed):
    """(targets, seed) pairs, targets {tip: position}: FK of random joints for every tip, from a
    random seed and from a stream's seed (within a few cm of the answer); every fourth pair puts
    one tip's target out of reach (the task-priority phase), every seventh targets one tip only
    (out of reach: the stretching first pass)."""
    rng = np.random.default_rng(seed)
    lo, hi = _limits(chain)
    out = []
    for k in range(count):
        q = rng.uniform(lo, hi)
        T = chain.fk_tips(q)
        targets = {tip: T[tip][:3, 3].copy() for tip in chain.tip_links}
        if k % 4 == 3:
            targets[chain.tip_links[-1]] = targets[chain.tip_links[-1]] * 4.0
        if k % 7 == 6:
            targets = {chain.tip_links[0]: targets[chain.tip_links[0]] * 4.0}
        seed_q = rng.uniform(lo, hi) if k % 2 == 0 else \
            np.clip(q + rng.normal(scale=0.05, size=chain.n), lo, hi)
        out.append((targets, seed_q))
    return out


class _Counted:
    """Counts the tree runs the compiled passes served and the runs the Python passes ran."""

    def __init__(self, solver):
        self.served = self.python = 0
        compiled_run, python_run = solver._compiled_tree.run, solver._tree.run

        def run_compiled(problem, settings):
            run = compiled_run(problem, settings)
            self.served += run is not None
            return run

        def run_python(problem, settings):
            self.python += 1
            return python_run(problem, settings)

        solver._compiled_tree.run, solver._tree.run = run_compiled, run_python


def _python_solver(chain, params, monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr(compiled_tree, 'available', lambda: False)
        return make_solver('fabrik', chain, params)


@needs_numba
def test_compiled_tree_takes_the_python_iterations_and_reaches_the_targets(monkeypatch,
                                                                           loaded):
    for name, chain in _trees():
        fast = make_solver('fabrik', chain, NO_CLOCK)
        slow = _python_solver(chain, NO_CLOCK, monkeypatch)
        assert fast._compiled_tree is not None and fast._compiled_tree.ready()
        assert slow._compiled_tree is None
        counted = _Counted(fast)
        cases = _cases(chain, 28, 11)
        converged = reachable = 0
        for k, (targets, q_seed) in enumerate(cases):
            a = fast.solve(targets=targets, seed=q_seed)
            b = slow.solve(targets=targets, seed=q_seed)
            label = f'{name} case {k}'
            assert (a.status, a.iterations, a.min_residual) == \
                (b.status, b.iterations, b.min_residual), label
            assert np.max(np.abs(a.joint_positions - b.joint_positions)) < JOINT_TOLERANCE, label
            assert np.all(a.joint_positions >= chain.lower) and \
                np.all(a.joint_positions <= chain.upper), label
            if k % 4 != 3 and k % 7 != 6:
                reachable += 1
                converged += a.status is IkStatus.CONVERGED
            if a.status is IkStatus.CONVERGED:
                T = chain.fk_tips(a.joint_positions)
                for tip, p in targets.items():
                    assert np.linalg.norm(T[tip][:3, 3] - p) <= \
                        fast.params['position_tolerance'], label
        assert converged >= 0.9 * reachable, name
        # Every tree run of the fast solver was the kernel's (none left to Python).
        assert counted.served >= len(cases) and counted.python == 0, name


def _runs_agree(a, b, label):
    assert (a.iterations, a.converged, a.stalled, a.timed_out) == \
        (b.iterations, b.converged, b.stalled, b.timed_out), label
    assert np.max(np.abs(a.q - b.q)) < JOINT_TOLERANCE, label
    assert np.max(np.abs(a.tip_errors - b.tip_errors)) < JOINT_TOLERANCE, label


@needs_numba
@pytest.mark.parametrize('settings', [
    FabrikSettings(1e-4, 300, 1e-9, 5, polish=10),
    FabrikSettings(1e-5, 60, 1e-9, 5, extrapolate=False, polish=0),
    FabrikSettings(1e-6, 7, 0.0, 3, polish=3)], ids=['defaults', 'plain', 'capped'])
def test_compiled_tree_runs_match_the_python_runs(settings, loaded):
    for name, chain in _trees():
        tree = FabrikTree(chain)
        kernel = compiled_tree.CompiledTree(tree)
        rng = np.random.default_rng(5)
        lo, hi = _limits(chain)
        T = len(chain.tip_links)
        for k in range(16):
            targets = np.array([p[:3, 3] for p in chain.fk_tips(rng.uniform(lo, hi)).values()])
            tips = tuple(range(T))
            weights = rng.uniform(0.5, 2.0, T) if k % 3 == 1 else np.ones(T)
            stretch = None
            if k % 4 == 3:  # one tip, beyond the reach: the stretching first pass
                tips, targets, weights, stretch = (1,), targets[1:2] * 4.0, np.ones(1), 1
            problem = FabrikProblem(rng.uniform(lo, hi), tips, targets, weights, stretch,
                                    restarts=0 if k % 5 == 4 else 20,
                                    stop_when_stuck=k % 5 == 4)
            a = kernel.run(problem, settings)
            assert a is not None, name
            _runs_agree(a, tree.run(problem, settings), f'{name} case {k}')


@needs_numba
def test_a_tree_run_past_its_deadline_does_no_iteration_as_the_python_run(loaded):
    chain = _trees()[0][1]
    tree = FabrikTree(chain)
    targets = np.array([p[:3, 3] for p in chain.fk_tips(np.full(chain.n, 0.3)).values()])
    problem = FabrikProblem(np.zeros(chain.n), (0, 1), targets, np.ones(2), deadline=0.0)
    settings = FabrikSettings(1e-4, 300, 1e-9, 5, polish=10)
    a = compiled_tree.CompiledTree(tree).run(problem, settings)
    _runs_agree(a, tree.run(problem, settings), 'deadline passed')
    assert a.timed_out and a.iterations == 0


@needs_numba
def test_a_tree_run_that_records_its_history_is_left_to_the_python_passes(loaded):
    chain = _trees()[0][1]
    fast = make_solver('fabrik', chain, dict(NO_CLOCK, record_history=True))
    counted = _Counted(fast)
    targets, q_seed = _cases(chain, 1, 4)[0]
    result = fast.solve(targets=targets, seed=q_seed)
    assert result.history and counted.served == 0 and counted.python >= 1


def test_until_the_kernel_is_loaded_the_python_tree_passes_answer():
    chain = _trees()[0][1]
    tree = FabrikTree(chain)
    waiting = compiled_tree.CompiledTree(tree, {})  # no kernel loaded
    assert not waiting.ready()
    targets, q_seed = _cases(chain, 1, 6)[0]
    problem = FabrikProblem(q_seed, (0, 1), np.array([targets[t] for t in chain.tip_links]),
                            np.ones(2))
    assert waiting.run(problem, FabrikSettings(1e-4, 300, 1e-9, 5, polish=10)) is None


def test_without_numba_the_python_tree_passes_run(monkeypatch):
    chain = _trees()[0][1]
    solver = _python_solver(chain, NO_CLOCK, monkeypatch)
    assert solver._compiled_tree is None
    targets, q_seed = _cases(chain, 1, 6)[0]
    result = solver.solve(targets=targets, seed=q_seed)
    assert result.status is IkStatus.CONVERGED
    T = chain.fk_tips(result.joint_positions)
    for tip, p in targets.items():
        assert np.linalg.norm(T[tip][:3, 3] - p) <= solver.params['position_tolerance']


def test_the_plan_keeps_each_joints_fit():
    chain = _trees()[1][1]
    tree = FabrikTree(chain)
    weights = np.array([1.0, 2.0, 0.5])
    ints, floats = compiled_tree.plan_of(tree, (0, 1, 2), weights)
    from ik_node.solvers.fabrik.tree_passes import TreePlan
    plan = TreePlan(tree, (0, 1, 2), weights)
    kind, start, nodes = ints[4], ints[5], ints[6]
    for i, align in enumerate(plan.align):
        if align is None:
            assert kind[i] == compiled_tree.NO_FIT
            continue
        assert kind[i] == (compiled_tree.BONES if align[0] == 'bones' else compiled_tree.POINTS)
        assert list(nodes[start[i]:start[i + 1]]) == list(align[1])
    assert list(ints[0]) == list(plan.tip_nodes)
    assert np.array_equal(floats[0], plan.fit_weight)
