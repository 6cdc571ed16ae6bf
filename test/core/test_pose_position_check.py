"""damped_jacobian, pose targets: when the closest-pose search on the position alone runs.

It tells a position out of reach (no restart can reach the pose) from a hard pose, and costs
about ten Python descents. Within the measured reach it runs only after eight stuck descents (in
reachable solves it is wasted time); beyond the measured reach after two (there it stops after
one Newton descent). The same rule with or without the compiled descents. No wall time decides
these solves: the timeout is far beyond their iteration caps.
"""

from pathlib import Path

import numpy as np
import transforms3d

from ik_node.model.chain import Chain
from ik_node.solvers import IkStatus, make_solver

REPO_URDF = Path(__file__).resolve().parents[2] / 'urdf'
PARAMS = {'timeout': 60.0, 'max_iterations': 20000, 'orientation_tolerance': 1e-5}


def _arm6():
    return Chain.from_urdf_file(REPO_URDF / 'arm6.urdf', 'base_link', 'tool0')


def _recording(solver):
    """The solver with its position search wrapped: the restarts count at each call."""
    calls = []
    search = solver._search

    def recorded(p_target, q, budget, iterations, restarts, *rest):
        calls.append(restarts)
        return search(p_target, q, budget, iterations, restarts, *rest)
    solver._search = recorded
    return calls


def test_reachable_pose_targets_run_the_position_search_only_after_eight_stuck_descents():
    chain = _arm6()
    solver = make_solver('damped_jacobian', chain, PARAMS)
    calls = _recording(solver)
    rng = np.random.default_rng(11)
    restarted = 0
    for _ in range(150):
        T = chain.fk(rng.uniform(chain.lower, chain.upper))
        w, x, y, z = transforms3d.quaternions.mat2quat(T[:3, :3])
        result = solver.solve(T[:3, 3], [x, y, z, w], rng.uniform(chain.lower, chain.upper))
        assert result.status is IkStatus.CONVERGED
        restarted += 'after 0 restarts' not in result.message
    assert restarted >= 10, 'too few hard targets to see the rule'
    assert all(restarts >= 7 for restarts in calls), calls


def test_a_pose_beyond_the_measured_reach_is_not_reached_after_two_descents():
    chain = _arm6()
    solver = make_solver('damped_jacobian', chain, PARAMS)
    reach = solver._closest.reach
    calls = _recording(solver)
    rng = np.random.default_rng(12)
    checked = 0
    for _ in range(20):
        direction = rng.normal(size=3)
        direction /= np.linalg.norm(direction)
        p = np.asarray(reach.centre) + direction * (reach.largest + 0.01)
        if solver._min_residual(p) is not None and solver._min_residual(p) > 1e-5:
            continue  # provably out of reach: the other rule (best of two descents)
        before = len(calls)
        R = transforms3d.euler.euler2mat(*rng.uniform(-np.pi, np.pi, 3))
        w, x, y, z = transforms3d.quaternions.mat2quat(R)
        result = solver.solve(p, [x, y, z, w], chain.mid_configuration())
        # the measured reach is a measurement, not a proof: not_reached, never unreachable
        assert result.status is IkStatus.NOT_REACHED
        assert calls[before:] == [1], 'the search runs once, after the second stuck descent'
        assert 'the best pose of 2 descents' in result.message
        T = chain.fk(result.joint_positions)
        assert np.linalg.norm(T[:3, 3] - p) >= 0.01 - 1e-6  # no pose comes nearer than the gap
        checked += 1
    assert checked >= 5
