"""The solver base's input checks and error measures agree with transforms3d and numpy."""

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
import transforms3d

from ik_node import Chain, TargetError, make_solver
from ik_node.solvers.base import (IkResult, IkStatus, RawSolution, Solver, new_result,
                                  rotation_error, rotation_from_input, target_from_input,
                                  target_values)


def test_rotation_from_quaternion_matches_transforms3d_with_ros_order():
    rng = np.random.default_rng(3)
    for _ in range(200):
        quat_xyzw = rng.normal(size=4) * rng.uniform(0.1, 10.0)  # not unit: normalised
        w_first = np.roll(quat_xyzw, 1) / np.linalg.norm(quat_xyzw)
        np.testing.assert_allclose(rotation_from_input(quat_xyzw),
                                   transforms3d.quaternions.quat2mat(w_first), atol=1e-12)


def test_rotation_error_is_the_angle_between_rotations_small_and_large():
    rng = np.random.default_rng(4)
    for angle in [0.0, 1e-9, 1e-5, 0.1, 1.0, 3.0, math.pi]:
        axis = rng.normal(size=3)
        R_a = transforms3d.euler.euler2mat(*rng.uniform(-3, 3, size=3))
        R_b = R_a @ transforms3d.axangles.axangle2mat(axis, angle)
        assert rotation_error(R_a, R_b) == pytest.approx(angle, abs=1e-9)


@pytest.mark.parametrize('bad', [[0, 0, 0, 0], [float('nan'), 0, 0, 1], [0, 0, 1],
                                 [float('inf'), 0, 0, 1], 'abcd', np.zeros(4),
                                 np.array([0.0, float('nan'), 0.0, 1.0]),
                                 np.array([0.0, 0.0, -float('inf'), 1.0]), np.zeros(3)])
def test_invalid_quaternions_raise_target_error_naming_the_value(bad):
    with pytest.raises(TargetError, match='orientation|quaternion'):
        rotation_from_input(bad)


def test_a_quaternion_as_a_float_array_or_a_list_gives_the_same_rotation():
    rng = np.random.default_rng(5)
    for quat_xyzw in [*rng.normal(size=(50, 4)), np.array([1e-3, 0.0, 0.0, 0.0]),
                      np.array([1e160, 2e160, 0.0, 1e160])]:  # its squared norm overflows
        as_list = rotation_from_input(quat_xyzw.tolist())
        assert np.array_equal(rotation_from_input(quat_xyzw), as_list)
        assert np.all(np.isfinite(as_list))


@pytest.mark.parametrize('bad', [[float('nan'), 0, 0], [0, float('inf'), 0], [1e12, 0, 0],
                                 [1, 2], 'xyz', None])
def test_invalid_positions_raise_target_error(bad):
    with pytest.raises(TargetError, match='target position'):
        target_from_input(bad)


# ------------------------------------------------------------ the float fast paths of solve()
# Solver.solve checks its inputs and measures the result in plain floats (numpy's per-call
# overhead would be most of a closed-form solve). Each fast path is checked against the
# general one: the numpy conversions, chain.fk, and the dataclass constructor.
URDF_DIR = Path(__file__).resolve().parents[2] / 'urdf'


def _chain(name, tip):
    return Chain.from_urdf_file(URDF_DIR / f'{name}.urdf', 'base_link', tip)


class _Returns(Solver):
    """A solver whose answer is set by the test (any type, any value)."""

    name = 'returns_test'

    def _solve(self, p_target, R_target, q_seed):
        assert isinstance(p_target, np.ndarray) and p_target.shape == (3,)
        assert isinstance(q_seed, np.ndarray) and q_seed.shape == (self.chain.n,)
        return RawSolution(self.answer, IkStatus.CONVERGED, 1)


def _measured(chain, q, p_target, R_target=None):
    """Position and angle errors of ``q`` by the numpy FK (the reference path: a batch of one
    configuration never takes the generated FK)."""
    T = chain.fk(np.asarray(q, dtype=float)[None, :])[0]
    angle = None if R_target is None else rotation_error(T[:3, :3], R_target)
    return float(np.linalg.norm(T[:3, 3] - p_target)), angle


@pytest.mark.parametrize('position', [np.array([0.1, -0.2, 0.3]), [0.1, -0.2, 0.3],
                                      (0.1, -0.2, 0.3), np.array([[0.1, -0.2, 0.3]]),
                                      np.array([1, -2, 3]), np.array([0.1, -0.2, 0.3], '>f8'),
                                      np.array([0.1, -0.2, 0.3], np.float32)])
def test_target_values_are_the_floats_numpy_reads_whatever_the_input_type(position):
    values = target_values(position)
    assert all(type(v) is float for v in values)
    assert values == np.asarray(position, dtype=float).reshape(-1).tolist()
    np.testing.assert_array_equal(target_from_input(position), values)


@pytest.mark.parametrize('bad', [np.array([math.nan, 0.0, 0.0]), np.array([0.0, -math.inf, 0.0]),
                                 np.array([0.0, 0.0, 2e6]), np.zeros(4), np.zeros((3, 1, 2))])
def test_invalid_float_arrays_are_refused_like_lists(bad):
    with pytest.raises(TargetError, match='target position') as from_array:
        target_values(bad)
    with pytest.raises(TargetError, match='target position') as from_list:
        target_values(bad.tolist() if bad.ndim == 1 else bad.reshape(-1).tolist())
    assert str(from_array.value) == str(from_list.value)


def test_seed_arrays_and_lists_give_the_same_clipped_seed():
    chain = _chain('leg3', 'foot')
    solver = make_solver('analytic_hip_knee', chain)
    rng = np.random.default_rng(14)
    for _ in range(200):
        seed = rng.uniform(chain.lower - 1.0, chain.upper + 1.0)
        expected = np.clip(seed, chain.lower, chain.upper).tolist()
        for form in (seed, seed.tolist(), tuple(seed), seed[None, :], seed.astype('>f8')):
            values = solver._seed_values(form)
            assert values == expected and all(type(v) is float for v in values)
    assert solver._seed_values(None) == chain.mid_configuration().tolist()
    # Huge but finite values (their sum overflows) are clipped, not refused as infinite.
    assert solver._seed_values(np.array([1e308, 1e308, -1e308])) == \
        [chain.upper[0], chain.upper[1], chain.lower[2]]


@pytest.mark.parametrize('bad', [[math.nan, 0.0, 0.0], [0.0, math.inf, 0.0],
                                 [-math.inf, 0.0, 0.0], [1e308, 1e308, math.nan]])
def test_non_finite_seeds_are_refused_as_arrays_and_lists(bad):
    solver = make_solver('analytic_hip_knee', _chain('leg3', 'foot'))
    for form in (np.array(bad), bad):
        with pytest.raises(TargetError, match='seed contains NaN or inf'):
            solver.solve([0.1, 0.0, -0.4], seed=form)


@pytest.mark.parametrize('robot,tip,solver,orientation', [
    ('leg3', 'foot', 'analytic_hip_knee', False), ('arm6', 'tool0', 'damped_jacobian', False),
    ('arm6', 'tool0', 'damped_jacobian', True), ('planar4', 'tip', 'fabrik', False)])
def test_result_errors_are_those_of_the_numpy_fk_on_the_returned_joints(robot, tip, solver,
                                                                         orientation):
    chain = _chain(robot, tip)
    s = make_solver(solver, chain, {'timeout': 60.0} if solver == 'damped_jacobian' else {})
    rng = np.random.default_rng(15)
    q = chain.mid_configuration()
    for _ in range(40):
        T = chain.fk(rng.uniform(chain.lower, chain.upper))
        p = T[:3, 3] + rng.normal(scale=0.05, size=3) * (rng.uniform() < 0.3)
        quat_xyzw = None
        if orientation:
            w, x, y, z = transforms3d.quaternions.mat2quat(T[:3, :3])
            quat_xyzw = [x, y, z, w]
        result = s.solve(p, quat_xyzw, q)
        R_target = None if quat_xyzw is None else rotation_from_input(quat_xyzw)
        position_error, angle_error = _measured(chain, result.joint_positions, p, R_target)
        assert result.position_error == pytest.approx(position_error, abs=1e-12)
        if orientation:
            assert result.orientation_error == pytest.approx(angle_error, abs=1e-9)
        else:
            assert result.orientation_error is None
        assert result.reachable == (position_error <= s.params['position_tolerance'] and
                                    (angle_error is None or
                                     angle_error <= s.params['orientation_tolerance']))
        assert type(result.joint_positions) is np.ndarray
        assert result.joint_positions.dtype == float
        assert np.all(result.joint_positions >= chain.lower)
        assert np.all(result.joint_positions <= chain.upper)
        q = result.joint_positions


def test_the_numpy_fk_path_gives_the_result_of_the_generated_fk():
    fast_chain, numpy_chain = _chain('leg3', 'foot'), _chain('leg3', 'foot')
    numpy_chain._fast_built, numpy_chain._fast = True, None  # as for a chain without one
    fast, slow = (make_solver('analytic_hip_knee', c) for c in (fast_chain, numpy_chain))
    rng = np.random.default_rng(16)
    for _ in range(100):
        p = rng.uniform(-0.6, 0.6, size=3)
        seed = rng.uniform(fast_chain.lower, fast_chain.upper)
        a, b = fast.solve(p, None, seed), slow.solve(p, None, seed)
        np.testing.assert_array_equal(a.joint_positions, b.joint_positions)
        assert a.position_error == pytest.approx(b.position_error, abs=1e-12)
        assert (a.reachable, a.status, a.min_residual, a.message) == \
            (b.reachable, b.status, b.min_residual, b.message)


@pytest.mark.parametrize('answer', [[0.3, -0.2, 1.0], (0.3, -0.2, 1.0), np.array([0.3, -0.2, 1.0]),
                                    np.array([0, 1, -2]), [np.float64(0.3), 0, 1],
                                    np.array([0.3, -0.2, 1.0], np.float32)])
def test_a_solver_may_return_a_list_or_any_numeric_array(answer):
    chain = _chain('leg3', 'foot')
    solver = _Returns(chain)
    solver.answer = answer
    p = [0.1, 0.0, -0.4]
    result = solver.solve(p)
    expected = np.asarray(answer, dtype=float)
    np.testing.assert_array_equal(result.joint_positions, expected)
    assert result.joint_positions.dtype == float
    assert result.position_error == pytest.approx(_measured(chain, expected, p)[0], abs=1e-12)


def test_a_solver_answer_beyond_the_limits_is_clipped_and_a_nan_one_reset():
    chain = _chain('leg3', 'foot')
    solver = _Returns(chain)
    p = [0.1, 0.0, -0.4]
    solver.answer = [5.0, -math.inf, 0.5]
    result = solver.solve(p)
    assert result.joint_positions.tolist() == [chain.upper[0], chain.lower[1], 0.5]
    assert result.position_error == pytest.approx(
        _measured(chain, result.joint_positions, p)[0], abs=1e-12)
    for bad in ([math.nan, 0.0, 0.0], np.array([0.0, 0.0, math.nan])):
        solver.answer = bad
        result = solver.solve(p, seed=[0.1, 0.1, 0.1])
        np.testing.assert_array_equal(result.joint_positions, chain.mid_configuration())
        assert result.message == 'solver produced NaN; reset'
        error = _measured(chain, result.joint_positions, p)[0]
        assert result.position_error == pytest.approx(error, abs=1e-12)
        assert result.reachable == (error <= solver.params['position_tolerance'])


class _Measures(_Returns):
    """A solver that also hands back errors it says it measured (set by the test)."""

    name = 'measures_test'

    def _solve(self, p_target, R_target, q_seed):
        raw = super()._solve(p_target, R_target, q_seed)
        raw.measured = self.claimed
        return raw


def test_a_solvers_own_errors_are_taken_only_for_exactly_the_joints_returned():
    chain = _chain('arm6', 'tool0')
    solver = _Measures(chain)
    q = chain.mid_configuration() + 0.1
    T = chain.fk(q)
    p = T[:3, 3] + 0.01  # 1 cm off: a true measurement never says reached
    quat = transforms3d.quaternions.mat2quat(T[:3, :3])[[1, 2, 3, 0]]
    solver.claimed = (0.0, 0.0)
    solver.answer = q.tolist()  # returned as it is: the solver's errors are the result's
    result = solver.solve(p, quat)
    assert (result.position_error, result.orientation_error, result.reachable) == \
        (0.0, 0.0, True)
    beyond = q.copy()
    beyond[1] = chain.upper[1] + 0.5  # clipped: measured again
    turned = q.copy()
    turned[0] -= 2 * math.pi  # a full-turn joint taken back nearest the seed: measured again
    for answer in (beyond, turned):
        if answer is turned and chain.upper[0] - chain.lower[0] < 4 * math.pi:
            continue
        solver.answer = answer.tolist()
        result = solver.solve(p, quat, seed=q)
        error, angle = _measured(chain, result.joint_positions, p, T[:3, :3])
        assert result.position_error == pytest.approx(error, abs=1e-12)
        assert result.orientation_error == pytest.approx(angle, abs=1e-9)
        assert not result.reachable
    solver.answer = q.tolist()
    result = solver.solve(p)  # a position target: a pose's errors are not its measurement
    assert result.position_error == pytest.approx(_measured(chain, q, p)[0], abs=1e-12)
    assert result.orientation_error is None and not result.reachable


def test_the_fast_result_constructor_builds_the_dataclass_one():
    fields = dict(joint_positions=np.array([0.1, 0.2]), joint_names=('a', 'b'), reachable=True,
                  status=IkStatus.DEGENERATE, position_error=1e-6, orientation_error=None,
                  min_residual=0.0, iterations=3, solve_time=1e-5, message='m',
                  orientation_ignored=True, history=(0.5, 1e-6))
    fast, slow = new_result(**fields, tips=None, best_found=True), IkResult(**fields,
                                                                           best_found=True)
    assert type(fast) is IkResult
    assert [f.name for f in dataclasses.fields(IkResult)] == [*fields, 'tips', 'best_found']
    assert repr(fast) == repr(slow)
    assert fast.as_dict() == slow.as_dict()
    assert dataclasses.replace(fast, message='x') == dataclasses.replace(slow, message='x')
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.reachable = False


def test_solve_calls_the_hook_the_most_derived_class_defines():
    from ik_node.solvers.hip_knee.solver import HipKneeSolver

    calls = []

    class Wrapped(HipKneeSolver):  # overrides the array hook of a float solver
        def _solve(self, p_target, R_target, q_seed):
            calls.append((type(p_target), type(q_seed)))
            return super()._solve(p_target, R_target, q_seed)

    class Neither(Solver):
        name = 'neither_test'

    chain = _chain('leg3', 'foot')
    plain, wrapped = HipKneeSolver(chain), Wrapped(chain)
    rng = np.random.default_rng(17)
    for _ in range(50):
        p = chain.fk(rng.uniform(chain.lower, chain.upper))[:3, 3]
        seed = rng.uniform(chain.lower, chain.upper)
        a, b = plain.solve(p, None, seed), wrapped.solve(p, None, seed)
        np.testing.assert_array_equal(a.joint_positions, b.joint_positions)
        assert (a.position_error, a.status, a.message) == (b.position_error, b.status, b.message)
    assert calls == [(np.ndarray, np.ndarray)] * 50
    with pytest.raises(TypeError, match='abstract.*_solve'):  # the contract, at construction
        Neither(chain)
