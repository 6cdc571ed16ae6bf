"""Streams on the real 6- and 7-joint arms: smooth paths, each solve seeded with the previous
answer (as the node does), move every joint by at most the first-order bound, and never jump.

The paths, the stream and the bound ``2 (|J+ dx| + 2 ||J+|| tol)`` are those of
test_smooth_paths.py (derived there). On a chain with more joints than the target has
dimensions, damped_jacobian's first step on a stream also moves along the self-motion away from
the joint limits (``null_space_gain``): that pull is not a least-norm step, so each step is also
allowed the pull's own size, ``|d| = gain * e * |f(x)|`` at the previous answer (``e``: the
weighted distance of the previous answer's pose from the new target, at most ``|dx_w| + tol``;
``f``: :func:`ik_node.solvers.numerics.null_space.limit_pull` per unit scale). The full measurement
is 20 paths x 400 steps per arm by ``benchmarks/solvers/stream_paths.py``; here a reduced set: the
paths whose streams jump (a step above 1 rad) without the stream rules (near-seed restarts, the
pull), with the solve's clock lifted (``timeout`` 60 s, so the load of the machine does not
decide when restarts begin). On these hardest paths the share of steps within the plain bound
is asked to be 99.5 % (Panda's three here have 5 steps of 1197 pressed against a limit or
restarted, beyond it).
"""

import math

import numpy as np
import pytest

from ik_node.model.chain import Chain
from ik_node.config.node_config import build_chain, load_config
from ik_node.solvers import make_solver
from ik_node.solvers.numerics.null_space import centring_terms, limit_pull
from smooth_paths import (ARMS, REPO, joint_curve, quat_xyzw, restarted, step_bound, stream,
                          task_step)

STEPS = 400
JUMP_RAD = 1.0
WITHIN_SHARE = 0.995
PRESSED_RAD = 1e-3
NO_CLOCK = {'timeout': 60.0}
#: Paths (RNG seeds of joint_curve) per arm: those that jump without the stream rules (6D, no
#: clock), and path 0 where none does.
PATHS = {'ur5': (4,), 'ur10': (0,), 'panda': (3, 9, 14), 'iiwa14': (4, 6),
         'kinova': (0,), 'baxter': (2, 5, 19), 'arm6': (4,)}


def arm_chain(name: str, shared_robot) -> Chain:
    if ARMS[name] is None:
        return build_chain(load_config(REPO / 'config' / f'{name}.yaml'))
    file, base, tip = ARMS[name]
    return Chain.from_urdf_file(shared_robot(file), base, tip)


def pull_allowance(s, k: int, gain: float) -> float:
    """The largest joint move [rad or m] of the null-space pull of step k (module docstring)."""
    if gain == 0.0 or s.chain.n <= (6 if s.six_d else 3):
        return 0.0
    q_prev = s.results[k - 1].joint_positions
    dx, _ = task_step(s, k, q_prev)
    if s.six_d:
        dx = np.concatenate([dx[:3], 0.5 * dx[3:]])  # the default orientation_weight [m/rad]
    e = float(np.linalg.norm(dx)) + s.tol_r
    terms = centring_terms(s.chain.lower.tolist(), s.chain.upper.tolist(), range(s.chain.n))
    return float(np.linalg.norm(limit_pull(q_prev.tolist(), terms, gain * e)))


def _pressed(s, k: int) -> bool:
    """A joint within PRESSED_RAD of the same limit in answers k - 1 and k: the self-motion is
    cut there and the answers slide along the limit (a limit reached, a genuine reason)."""
    lower, upper = s.chain.lower, s.chain.upper
    a, b = s.results[k - 1].joint_positions, s.results[k].joint_positions
    return bool(np.any(((a <= lower + PRESSED_RAD) & (b <= lower + PRESSED_RAD)) |
                       ((a >= upper - PRESSED_RAD) & (b >= upper - PRESSED_RAD))))


def measure(s, gain: float):
    """(jumps, steps over bound + pull among the counted ones, steps within the plain bound,
    steps) of a stream. Counted, as in test_smooth_paths.py: both answers converged, no joint
    pressed against a limit in both (:func:`_pressed`), the solve took no restart (its seeded
    descent stalled: a limit or a singularity in the way, where the next starts near the seed
    may find the branch's continuation farther than the bound; only the jump test and the share
    within the bound see those steps) and the bound is below pi."""
    answers = s.answers
    jumps, over, within = [], [], 0
    for k in range(1, len(answers)):
        move = np.abs(answers[k] - answers[k - 1])
        i = int(move.argmax())
        if move[i] > JUMP_RAD:
            jumps.append(f'step {k}: {s.chain.joint_names[i]} moved {move[i]:.3f} rad '
                         f'({s.results[k].message})')
        bound = step_bound(s, k)
        within += bool(move[i] <= bound or not math.isfinite(bound))
        counted = (s.results[k - 1].reachable and s.results[k].reachable and
                   not restarted(s.results[k]) and not _pressed(s, k) and bound < math.pi)
        if counted and move[i] > bound + pull_allowance(s, k, gain):
            over.append(f'step {k}: {s.chain.joint_names[i]} moved {move[i]:.4f} > bound '
                        f'{bound:.4f} + pull {pull_allowance(s, k, gain):.4f}')
    return jumps, over, within, len(answers) - 1


@pytest.mark.slow
@pytest.mark.parametrize('six_d', [True, False], ids=['6d', 'position'])
@pytest.mark.parametrize('arm', list(ARMS))
def test_streamed_smooth_paths_on_real_arms_never_jump(arm, six_d, shared_robot):
    chain = arm_chain(arm, shared_robot)
    gain = make_solver('damped_jacobian', chain).params['null_space_gain']
    problems, within, steps = [], 0, 0
    for path in PATHS[arm]:
        Q = joint_curve(chain, np.random.default_rng(path), STEPS)
        s = stream(chain, 'damped_jacobian', NO_CLOCK, Q, six_d, Q[0])
        jumps, over, path_within, path_steps = measure(s, gain)
        problems += [f'path {path} {p}' for p in jumps + over]
        within, steps = within + path_within, steps + path_steps
    assert not problems, '\n'.join(problems[:10])
    if six_d:
        assert within >= WITHIN_SHARE * steps, f'{within} of {steps} within the bound'


def test_a_stream_moves_a_redundant_arm_away_from_a_joint_limit(shared_robot):
    """Panda, joint 1 0.3 rad from its limit, the target going back and forth by 5 mm: along the
    stream the pull moves joint 1 away from its limit along the self-motion (every answer on
    target), where least-norm answers (gain 0) leave it there."""
    chain = arm_chain('panda', shared_robot)
    q_start = np.array([2.6, -0.4, 0.2, -2.0, 0.3, 1.8, 0.5])
    T = chain.fk(q_start)
    quat = quat_xyzw(T[:3, :3])
    margin = {}
    for gain in (0.0, 0.5):
        solver = make_solver('damped_jacobian', chain, {'null_space_gain': gain, **NO_CLOCK})
        q = q_start
        for k in range(40):
            result = solver.solve(T[:3, 3] + [0.005 * (k % 2), 0.0, 0.0], quat, q)
            assert result.reachable
            step = np.abs(result.joint_positions - q).max()
            assert step < 0.05, (gain, k, step)
            q = result.joint_positions
        margin[gain] = chain.upper[0] - q[0]
    assert margin[0.0] < 0.3 + 0.01, margin
    assert margin[0.5] > 0.3 + 0.1, margin


def test_a_target_that_stays_put_moves_nothing(shared_robot):
    chain = arm_chain('panda', shared_robot)
    q_seed = np.array([0.3, -0.4, 0.2, -2.0, 2.6, 1.8, 0.5])
    T = chain.fk(q_seed)
    solver = make_solver('damped_jacobian', chain, NO_CLOCK)
    result = solver.solve(T[:3, 3], quat_xyzw(T[:3, :3]), q_seed)
    assert result.reachable
    np.testing.assert_array_equal(result.joint_positions, q_seed)
