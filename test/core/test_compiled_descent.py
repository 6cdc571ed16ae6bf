"""damped_jacobian's optional compiled descent (numba) against the pure-Python descent.

The kernel must take exactly the iterations of the Python loop: the same error, normal
equations, damped steps, joints sitting out, stall test. Where numba is missing these tests skip,
except the one showing that the Python descent then serves. Iteration caps end these solves,
never the clock.
"""

from pathlib import Path

import numpy as np
import pytest
import transforms3d

from ik_node.model.chain import Chain
from ik_node.solvers import IkStatus, make_solver
from ik_node.solvers.base import rotation_error
from ik_node.solvers.damped_jacobian import compiled

REPO_URDF = Path(__file__).resolve().parents[2] / 'urdf'
DETERMINISTIC = {'timeout': 60.0, 'max_iterations': 5000, 'orientation_tolerance': 1e-5}

needs_numba = pytest.mark.skipif(not compiled.available(), reason='numba is not installed')


def _targets(chain, count, seed):
    rng = np.random.default_rng(seed)
    lo = np.where(np.isfinite(chain.lower), chain.lower, -np.pi)
    hi = np.where(np.isfinite(chain.upper), chain.upper, np.pi)
    out = []
    for _ in range(count):
        T = chain.fk(rng.uniform(lo, hi))
        w, x, y, z = transforms3d.quaternions.mat2quat(T[:3, :3])
        out.append((T, np.array([x, y, z, w]), rng.uniform(lo, hi)))
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


@needs_numba
@pytest.mark.slow
def test_compiled_descents_take_the_python_iterations_and_reach_the_target(shared_robot,
                                                                          monkeypatch):
    for chain in _chains(shared_robot):
        fast = make_solver('damped_jacobian', chain, DETERMINISTIC)
        assert fast._compiled is not None, 'numba is installed: the compiled descent serves'
        slow = _python_solver(chain, DETERMINISTIC, monkeypatch)
        assert slow._compiled is None
        for T, quat, q_seed in _targets(chain, 40, 3):
            a = fast.solve(T[:3, 3], quat, q_seed)
            b = slow.solve(T[:3, 3], quat, q_seed)
            assert (a.status, a.iterations) == (b.status, b.iterations), chain.tip_link
            assert np.max(np.abs(a.joint_positions - b.joint_positions)) < 1e-8
            assert a.status is IkStatus.CONVERGED
            T_solved = chain.fk(a.joint_positions)
            assert np.linalg.norm(T_solved[:3, 3] - T[:3, 3]) < 1e-5
            assert rotation_error(T_solved[:3, :3], T[:3, :3]) < 1e-5
            assert np.all(a.joint_positions >= chain.lower) and \
                np.all(a.joint_positions <= chain.upper)


@needs_numba
def test_the_kernels_error_and_normal_equations_match_the_generated_kinematics():
    chain = Chain.from_urdf_file(REPO_URDF / 'arm6.urdf', 'base_link', 'tool0')
    solver = make_solver('damped_jacobian', chain, {})
    kernel = solver._compiled
    evaluate = compiled._evaluate  # compiled by numba once a CompiledDescent exists
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
        cost, position_error, angle_error, built = evaluate(kernel.model, n, target, w2, 0.0,
                                                            0.0, q, H, g, compiled._new_work(n))
        expected = fast.pose_normal(tuple(target.tolist()), w2, (0.0, 0.0), q.tolist())
        assert built
        assert cost == pytest.approx(expected[0], rel=1e-10, abs=1e-14)
        assert position_error == pytest.approx(expected[1], rel=1e-10, abs=1e-14)
        assert angle_error == pytest.approx(expected[2], rel=1e-10, abs=1e-14)
        lower = [H[a, b] for a in range(n) for b in range(a + 1)]
        np.testing.assert_allclose(lower, expected[3], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(g, expected[4], rtol=1e-9, atol=1e-12)


def test_without_numba_the_python_descent_solves_pose_targets(monkeypatch):
    chain = Chain.from_urdf_file(REPO_URDF / 'arm6.urdf', 'base_link', 'tool0')
    solver = _python_solver(chain, DETERMINISTIC, monkeypatch)
    assert solver._compiled is None
    for T, quat, q_seed in _targets(chain, 10, 4):
        result = solver.solve(T[:3, 3], quat, q_seed)
        assert result.status is IkStatus.CONVERGED
        T_solved = chain.fk(result.joint_positions)
        assert np.linalg.norm(T_solved[:3, 3] - T[:3, 3]) < 1e-5
        assert rotation_error(T_solved[:3, :3], T[:3, :3]) < 1e-5


def test_ik_node_no_numba_turns_the_accelerator_off(monkeypatch):
    monkeypatch.setenv('IK_NODE_NO_NUMBA', '1')
    assert not compiled.available()
    chain = Chain.from_urdf_file(REPO_URDF / 'arm6.urdf', 'base_link', 'tool0')
    assert make_solver('damped_jacobian', chain, {})._compiled is None
