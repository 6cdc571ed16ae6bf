"""damped_jacobian's compiled descents (numba) against the pure-Python descents.

The kernel must take exactly the iterations of the Python loop: the same error, step system
(normal equations, or the 3 x 3 dual system for position targets on six joints or more), damped
steps, joints sitting out, stall test, and a stream's rules (damping, stall factor, the first
step's pull along the self-motion). Compared on pose and position targets, from random seeds and
from a stream's seeds, on arms of 6 and 7 joints and a 4-joint planar arm. Where numba cannot
serve these tests skip, except those showing that the Python descent then serves. Iteration caps
end these solves, never the clock.
"""

from pathlib import Path

import numpy as np
import pytest
import transforms3d

from ik_node.errors import TargetError
from ik_node.model.chain import Chain
from ik_node import kernels
from ik_node.solvers import IkStatus, make_solver
from ik_node.solvers.base import Solver, rotation_error
from ik_node.solvers.input_checks import rotation_from_input
from ik_node.solvers.damped_jacobian import compiled, descent

REPO_URDF = Path(__file__).resolve().parents[2] / 'urdf'
DETERMINISTIC = {'timeout': 60.0, 'max_iterations': 5000, 'orientation_tolerance': 1e-5}

needs_numba = pytest.mark.skipif(not compiled.available(), reason='numba is not installed')


@pytest.fixture(scope='module')
def loaded():
    """The compiled kernels, loaded (or compiled) before the module's tests."""
    if not kernels.wait():
        pytest.skip(kernels.serving())


def _targets(chain, count, seed):
    rng = np.random.default_rng(seed)
    lo = np.where(np.isfinite(chain.lower), chain.lower, -np.pi)
    hi = np.where(np.isfinite(chain.upper), chain.upper, np.pi)
    out = []
    for _ in range(count):
        q = rng.uniform(lo, hi)
        T = chain.fk(q)
        w, x, y, z = transforms3d.quaternions.mat2quat(T[:3, :3])
        # A random seed, or a stream's: near the answer, the target within a few cm.
        near = np.clip(q + rng.normal(scale=0.02, size=chain.n), lo, hi)
        out.append((T, np.array([x, y, z, w]), rng.uniform(lo, hi), near))
    return out


def _python_solver(chain, params, monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr(compiled, 'available', lambda: False)
        return make_solver('damped_jacobian', chain, params)


def _chains(shared_robot):
    chains = [Chain.from_urdf_file(REPO_URDF / 'arm6.urdf', 'base_link', 'tool0')]
    for name, base, tip in (('panda.urdf', 'panda_link0', 'panda_hand_tcp'),
                            ('kinova_j2s6s200.urdf', 'j2s6s200_link_base',
                             'j2s6s200_end_effector')):
        try:
            chains.append(Chain.from_urdf_file(shared_robot(name), base, tip))
        except pytest.skip.Exception:
            pass
    return chains


def _assert_same(a, b, label, tolerance=1e-8):
    assert (a.status, a.iterations) == (b.status, b.iterations), label
    assert np.max(np.abs(a.joint_positions - b.joint_positions)) < tolerance, label


# A stream's first step on a redundant chain moves along the self-motion, projected by a solve
# with relative damping 1e-9 (descent.py): it magnifies the last bits in which the kernel's
# sums (in another order) differ, to about 1e-8 rad in the answer; the iterations stay equal.
STREAM_TOLERANCE = 1e-6


def _assert_reached(chain, result, T, with_orientation):
    assert result.status is IkStatus.CONVERGED
    T_solved = chain.fk(result.joint_positions)
    assert np.linalg.norm(T_solved[:3, 3] - T[:3, 3]) < 1e-5
    if with_orientation:
        assert rotation_error(T_solved[:3, :3], T[:3, :3]) < 1e-5
    assert np.all(result.joint_positions >= chain.lower) and \
        np.all(result.joint_positions <= chain.upper)


@needs_numba
@pytest.mark.slow
def test_compiled_pose_descents_take_the_python_iterations_and_reach_the_target(
        shared_robot, monkeypatch, loaded):
    for chain in _chains(shared_robot):
        fast = make_solver('damped_jacobian', chain, DETERMINISTIC)
        assert fast._compiled is not None and fast._compiled.serves(True)
        slow = _python_solver(chain, DETERMINISTIC, monkeypatch)
        assert slow._compiled is None
        for T, quat, q_random, q_near in _targets(chain, 30, 3):
            for q_seed, tolerance in ((q_random, 1e-8), (q_near, STREAM_TOLERANCE)):
                a = fast.solve(T[:3, 3], quat, q_seed)
                b = slow.solve(T[:3, 3], quat, q_seed)
                _assert_same(a, b, chain.tip_link, tolerance)
                _assert_reached(chain, a, T, True)


@needs_numba
def test_compiled_position_descents_take_the_python_iterations(shared_robot, monkeypatch,
                                                               loaded):
    chains = _chains(shared_robot)[:2] + [
        Chain.from_urdf_file(REPO_URDF / 'planar4.urdf', 'base_link', 'tip')]
    for chain in chains:
        fast = make_solver('damped_jacobian', chain, DETERMINISTIC)
        assert fast._compiled is not None and fast._compiled.serves(False)
        slow = _python_solver(chain, DETERMINISTIC, monkeypatch)
        converged = 0
        for T, _, q_random, q_near in _targets(chain, 25, 7):
            for q_seed, tolerance in ((q_random, 1e-8), (q_near, STREAM_TOLERANCE)):
                a = fast.solve(T[:3, 3], None, q_seed)
                b = slow.solve(T[:3, 3], None, q_seed)
                _assert_same(a, b, chain.tip_link, tolerance)
                if a.status is IkStatus.CONVERGED:
                    converged += 1
                    _assert_reached(chain, a, T, False)
        assert converged >= 45, chain.tip_link


@needs_numba
def test_a_stream_of_pose_targets_gets_the_python_answers(monkeypatch, loaded):
    chain = Chain.from_urdf_file(REPO_URDF / 'arm6.urdf', 'base_link', 'tool0')
    fast = make_solver('damped_jacobian', chain, DETERMINISTIC)
    slow = _python_solver(chain, DETERMINISTIC, monkeypatch)
    q0 = (chain.lower + chain.upper) / 2 + 0.3
    q_fast = q_slow = q0
    for k in range(60):  # a target moving along a circle, each solve seeded by the last
        T = chain.fk(q0)
        T[:3, 3] += 0.05 * np.array([np.cos(k / 10), np.sin(k / 10), 0.0])
        w, x, y, z = transforms3d.quaternions.mat2quat(T[:3, :3])
        a = fast.solve(T[:3, 3], [x, y, z, w], q_fast)
        b = slow.solve(T[:3, 3], [x, y, z, w], q_slow)
        _assert_same(a, b, k, STREAM_TOLERANCE)
        _assert_reached(chain, a, T, True)
        q_fast, q_slow = a.joint_positions, b.joint_positions


@needs_numba
def test_the_kernels_error_and_normal_equations_match_the_generated_kinematics(loaded):
    chain = Chain.from_urdf_file(REPO_URDF / 'arm6.urdf', 'base_link', 'tool0')
    solver = make_solver('damped_jacobian', chain, {})
    kernel = solver._compiled
    settings = kernel.settings[True]._replace(tol_p=0.0, tol_r=0.0)
    evaluate = compiled._evaluate  # compiled by numba once the kernels are loaded
    fast = chain.fast_kinematics
    rng = np.random.default_rng(5)
    w2 = 0.5 ** 2
    n = chain.n
    for k in range(60):
        q = rng.uniform(chain.lower, chain.upper)
        T = chain.fk(rng.uniform(chain.lower, chain.upper))
        if k % 3 == 0:  # nearly half a turn away: the careful branch of the rotation vector
            T = chain.fk(q)
            axis = rng.normal(size=3)
            T[:3, :3] = transforms3d.axangles.axangle2mat(axis, np.pi - 1e-7) @ T[:3, :3]
        target = np.concatenate([T[:3, 3], T[:3, :3].ravel()])
        H, g = np.empty((n, n)), np.empty(n)
        cost, position_error, angle_error, built = evaluate(
            kernel.model, n, target, settings, q, H, g, compiled._new_work(n))
        expected = fast.pose_normal(tuple(target.tolist()), w2, (0.0, 0.0), q.tolist())
        assert built
        assert cost == pytest.approx(expected[0], rel=1e-10, abs=1e-14)
        assert position_error == pytest.approx(expected[1], rel=1e-10, abs=1e-14)
        assert angle_error == pytest.approx(expected[2], rel=1e-10, abs=1e-14)
        lower = [H[a, b] for a in range(n) for b in range(a + 1)]
        np.testing.assert_allclose(lower, expected[3], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(g, expected[4], rtol=1e-9, atol=1e-12)


def test_the_kernels_constants_are_the_python_descents():
    assert compiled.GOOD_ENOUGH == descent.GOOD_ENOUGH
    assert compiled.STREAM_STALL_FACTOR == descent.STREAM_STALL_FACTOR
    assert compiled.NULL_SPACE_DAMPING == descent._NULL_SPACE_DAMPING


def test_before_the_kernels_load_the_python_descent_answers(monkeypatch):
    chain = Chain.from_urdf_file(REPO_URDF / 'arm6.urdf', 'base_link', 'tool0')
    solver = make_solver('damped_jacobian', chain, DETERMINISTIC)
    if solver._compiled is not None:  # as while the loading thread is still at work
        monkeypatch.setattr(solver._compiled, 'ready', lambda: False)
        assert not solver._compiled.serves(True)
    for T, quat, q_seed, _ in _targets(chain, 5, 4):
        _assert_reached(chain, solver.solve(T[:3, 3], quat, q_seed), T, True)


def test_without_numba_the_python_descent_solves_pose_targets(monkeypatch):
    chain = Chain.from_urdf_file(REPO_URDF / 'arm6.urdf', 'base_link', 'tool0')
    solver = _python_solver(chain, DETERMINISTIC, monkeypatch)
    assert solver._compiled is None
    for T, quat, q_seed, _ in _targets(chain, 10, 4):
        _assert_reached(chain, solver.solve(T[:3, 3], quat, q_seed), T, True)


def test_ik_node_no_numba_turns_the_accelerator_off(monkeypatch):
    monkeypatch.setenv('IK_NODE_NO_NUMBA', '1')
    assert not compiled.available()
    assert 'IK_NODE_NO_NUMBA' in kernels.serving()
    chain = Chain.from_urdf_file(REPO_URDF / 'arm6.urdf', 'base_link', 'tool0')
    assert make_solver('damped_jacobian', chain, {})._compiled is None


@needs_numba
def test_compiled_tree_descents_take_the_python_iterations(monkeypatch, loaded):
    import yaml
    params = yaml.safe_load((REPO_URDF.parent / 'config' / 'twin_arm.yaml').read_text())
    params = params['ik_node']['ros__parameters']
    chain = Chain.from_urdf_file(REPO_URDF / 'twin_arm.urdf', params['base_link'],
                                 params['tip_links'])
    settings = {**params.get('damped_jacobian', {}), **DETERMINISTIC}
    fast = make_solver('damped_jacobian', chain, settings)
    assert fast._tree_solver._compiled is not None and fast._tree_solver._compiled.serves()
    slow = _python_solver(chain, settings, monkeypatch)
    assert slow._tree_solver._compiled is None
    rng = np.random.default_rng(11)
    converged = 0
    for k in range(40):
        q = rng.uniform(chain.lower, chain.upper)
        T = chain.fk_tips(q)
        targets = {}
        for j, tip in enumerate(chain.tip_links):
            if k % 2 and j == 0:  # a pose for the first hand in every other solve
                w, x, y, z = transforms3d.quaternions.mat2quat(T[tip][:3, :3])
                targets[tip] = (T[tip][:3, 3], np.array([x, y, z, w]))
            else:
                targets[tip] = T[tip][:3, 3]
        seed = rng.uniform(chain.lower, chain.upper)
        a = fast.solve(targets=targets, seed=seed)
        b = slow.solve(targets=targets, seed=seed)
        _assert_same(a, b, k)
        if a.status is IkStatus.CONVERGED:
            converged += 1
            reached = chain.fk_tips(a.joint_positions)
            for tip in chain.tip_links:
                assert np.linalg.norm(reached[tip][:3, 3] - T[tip][:3, 3]) < 1e-5
    assert converged >= 35


@needs_numba
def test_the_seeds_descent_in_one_step_gives_the_general_paths_answers(shared_robot, loaded):
    """Where the compiled descents serve, a pose solve starts in one compiled call (the input
    checks, the seed's descent: DampedJacobianSolver._first_pose), a position solve in one
    step (the reach checks and the seed's descent: _solve_values), and the kernel's errors at
    the returned joints are their measurement; every answer, reached at the seed's descent or
    after restarts or the closest-pose search, is the general path's, and its errors are those
    FK measures on the returned joints."""
    for chain in _chains(shared_robot):
        solver = make_solver('damped_jacobian', chain, DETERMINISTIC)
        assert solver._lean is not None
        first_descent = restarted = 0
        for T, quat, q_random, q_near in _targets(chain, 30, 11):
            far = T[:3, 3] * 3.0  # out of reach: the position's closest pose
            for position, quat_or_none, q_seed in ((T[:3, 3], quat, q_random),
                                                   (T[:3, 3], quat, q_near),
                                                   (T[:3, 3], None, q_random),
                                                   (far, None, q_random)):
                lean = solver.solve(position, quat_or_none, q_seed)
                p = [float(v) for v in position]
                R = None if quat_or_none is None else rotation_from_input(quat_or_none)
                general = Solver._solve_values(solver, p, R, np.array(q_seed).tolist())
                label = (chain.tip_link, position.tolist())
                assert lean.joint_positions.tolist() == general.joint_positions.tolist(), label
                assert (lean.status, lean.iterations, lean.message, lean.reachable) == \
                    (general.status, general.iterations, general.message,
                     general.reachable), label
                T_solved = chain.fk(lean.joint_positions)
                assert abs(lean.position_error -
                           np.linalg.norm(T_solved[:3, 3] - position)) < 1e-12, label
                if quat_or_none is not None:
                    assert abs(lean.orientation_error - rotation_error(
                        T_solved[:3, :3], R)) < 1e-9, label
                if lean.reachable and lean.message == 'converged after 0 restarts':
                    first_descent += 1
                elif lean.reachable:
                    restarted += 1
        assert first_descent >= 30 and restarted >= 1, (chain.tip_link, first_descent,
                                                         restarted)


@needs_numba
def test_the_one_call_start_refuses_what_the_general_checks_refuse(loaded):
    """Inputs the compiled start does not take go through Solver.solve, which refuses them with
    its message; inputs of other types and layouts get the answer of float64 vectors."""
    chain = Chain.from_urdf_file(REPO_URDF / 'arm6.urdf', 'base_link', 'tool0')
    solver = make_solver('damped_jacobian', chain, DETERMINISTIC)
    assert solver._first is not None
    T, quat, q_random, _ = _targets(chain, 1, 5)[0]
    p = T[:3, 3]
    nan, inf = float('nan'), float('inf')
    bad = [(np.array([nan, 0.0, 0.3]), quat, q_random), (np.array([1e7, 0.0, 0.0]), quat, None),
           (np.array([0.1, inf, 0.3]), quat, None), (p, np.zeros(4), None),
           (p, np.array([nan, 0.0, 0.0, 1.0]), None), (p, np.array([inf, 0.0, 0.0, 1.0]), None),
           (p, quat, np.where(np.arange(chain.n) == 2, nan, q_random)),
           (p, quat, np.zeros(chain.n + 1)), (p[:2], quat, None), (p, quat[:3], None),
           (['a', 'b', 'c'], quat, None), (p, quat, 'seed'),
           (np.array([nan, 0.0, 0.3]), None, None), (p, None, np.zeros(chain.n + 1)),
           (np.array([1e7, 0.0, 0.0]), None, q_random)]
    for position, orientation, seed in bad:
        with pytest.raises(TargetError) as fast:
            solver.solve(position, orientation, seed)
        with pytest.raises(TargetError) as general:
            Solver.solve(solver, position, orientation, seed)
        assert str(fast.value) == str(general.value)
    reference = solver.solve(p, quat, q_random)
    assert reference.reachable
    rows = np.asfortranarray(np.stack([p, p]))  # its rows are not contiguous
    for position, orientation, seed in ((p.tolist(), quat.tolist(), q_random.tolist()),
                                        (p[None, :], tuple(quat), q_random),
                                        (rows[0], np.repeat(quat, 2)[::2],
                                         np.repeat(q_random, 2)[::2])):
        answer = solver.solve(position, orientation, seed)
        assert answer.joint_positions.tolist() == reference.joint_positions.tolist()


def test_the_one_call_starts_checks_are_the_input_checks():
    from ik_node.solvers import input_checks
    assert compiled._MAX_COORDINATE == input_checks.MAX_COORDINATE_M
    assert compiled._MAX_NORM2 == input_checks._MAX_NORM2


@needs_numba
@pytest.mark.slow
def test_long_restart_sequences_in_the_kernel_take_the_python_restarts(shared_robot,
                                                                       monkeypatch, loaded):
    """The plain restarts run in the kernel (DescentRun.descend_restarts) between the checks of
    the solver's loop (the position check after the eighth stuck descent, the restarts limit):
    solves of many restarts take exactly the Python path's restarts, iterations and answer."""
    chain = Chain.from_urdf_file(shared_robot('panda.urdf'), 'panda_link0', 'panda_hand_tcp')
    fast = make_solver('damped_jacobian', chain, DETERMINISTIC)
    slow = _python_solver(chain, DETERMINISTIC, monkeypatch)
    long_ones = []
    for T, quat, q_random, _ in _targets(chain, 300, 17):
        a = fast.solve(T[:3, 3], quat, q_random)
        restarts = int(a.message.split()[2]) if a.message.startswith('converged after') else 0
        if restarts >= 12:
            long_ones.append((T, quat, q_random, a))
    assert len(long_ones) >= 2
    for T, quat, q_random, a in long_ones[:4]:
        b = slow.solve(T[:3, 3], quat, q_random)
        _assert_same(a, b, chain.tip_link)
        assert a.message == b.message
        _assert_reached(chain, a, T, True)
    limited = make_solver('damped_jacobian', chain, {**DETERMINISTIC, 'restarts': 10})
    limited_slow = _python_solver(chain, {**DETERMINISTIC, 'restarts': 10}, monkeypatch)
    T, quat, q_random, _ = long_ones[0]
    a, b = limited.solve(T[:3, 3], quat, q_random), limited_slow.solve(T[:3, 3], quat, q_random)
    _assert_same(a, b, chain.tip_link)
    assert a.message == b.message
