"""Smooth target streams, each solve seeded with the previous answer as the node does, move the
joints smoothly: no full-turn jumps, no jumps between solution branches.

Paths. Targets are FK of a smooth joint curve ``q(t) = c + a sin(2 pi f t + phi)``, t in [0, 1],
in ``STEPS`` samples, drawn with a seeded RNG per joint (amplitude 0.3-0.8 rad, 0.5-1.5 cycles,
``MARGIN_RAD`` inside every limit, full-turn and continuous joints within +-pi), so every target
is reachable. Targets are positions (every solver) and, where the solver takes an orientation,
positions with orientations (6D). The stream starts from q(0), or (``start='zero'``) from the
zero state the node starts in, where the first answer may lie on another solution branch.

The bound. Let ``x_k`` be target k (tip position(s) [m], plus for 6D the rotation, as a rotation
vector [rad]), ``q_k`` the answer, ``dx = x_k - x_(k-1)``, ``J`` the task Jacobian at ``q_(k-1)``
(stacked tip position rows, plus the angular rows for 6D) restricted to the joints not pinned at
the same limit in both answers, ``J+`` its pseudo-inverse (singular values below 1e-9 of the
largest are structural zeros, e.g. the z row of a planar arm). To first order (Taylor)
``dx + r_k - r_(k-1) = J dq``, with ``r`` the answers' residuals: ``|r| <= tol_r`` =
``sqrt(tips * position_tolerance^2 [+ orientation_tolerance^2 for 6D])``. A solver that stays on
the solution branch of its seed takes the least-norm solution of that equation when the task
fixes the joints locally (rank = free joints: every solver), or when its steps are combinations
of the Jacobian's rows (damped least squares, Jacobian transpose: the displacement lies in the
row space, where the solution is unique). So

    max_i |dq_i| <= |dq| <= SAFETY * (|J+ dx| + 2 ||J+|| tol_r),

where ``SAFETY = 2`` covers the second-order remainder while it is no larger than the first-order
term (steps here are <= 0.025 rad per joint). On redundant chains damped_jacobian's first step on
a stream also moves along the self-motion away from the joint limits (``null_space_gain``), by a
fraction of the target's step: not a least-norm step, but within the safety factor on these
paths (test_streaming.py bounds it on the real arms by the pull's own size).

FABRIK on a redundant task (more free joints than the Jacobian's rank) does not take the least-norm
step: it also moves along the self-motion, by an amount the target step does not bound (measured:
0.44 rad for a 5 mm step, Panda joint 5). For it the bound adds ``SELF_MOTION_RAD = pi / 2``, an
allowance stated rather than derived, 3.5 times the largest self-motion step measured.

A full turn fails the check: a counted step's bound must be below pi, and a 2 pi jump on top of a
legitimate step (<= bound) exceeds 2 pi - bound > bound. The test of the check itself injects one
into a real stream. Besides the bound, every solve (counted or not, restarts and the first solve
from the first seed included) must leave each continuous or full-turn joint within half a turn of
its seed, unless the value a turn nearer is beyond the limits: the nearest-turn rule of the
solvers.

Counted steps: both answers converged, the current solve took no random restart (damped_jacobian
says "converged after 0 restarts"; a restart may land on any branch) and the bound is below pi
(near a singularity the linear bound says nothing). At least ``MIN_COUNTED_SHARE`` of the steps of
every stream are counted, so a stream cannot pass by counting nothing.

The leg passing through the stretched pose (knee at 0) is a test of its own: the two knee branches
meet there; ``branch: closest`` and damped least squares stay on the seed's branch (the knee bounces
back), FABRIK goes through. On the bounced branch the hip pitch can reach its limit, and there the
only solution is on the other branch: the analytic solver changes branch in one step (0.54 rad at
the knee on the path below), damped least squares by a restart (not counted). Such a step is
allowed exactly when the seed's knee branch has no solution within the limits for the new target,
which the test checks with the analytic solver preferring each branch. The transpose variant has
no restarts: it stays against the limit, honestly not converged, so fewer of its steps count.
"""

import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import List, Optional, Sequence

import numpy as np
import pytest
import transforms3d

from ik_node.model.chain import Chain
from ik_node.config.node_config import build_chain, load_config
from ik_node.solvers import make_solver
from ik_node.solvers.damped_jacobian.residuals import rotation_vector_from_matrix

REPO = Path(__file__).resolve().parents[2]
STEPS = 300
SAFETY = 2.0
SELF_MOTION_RAD = math.pi / 2
MARGIN_RAD = 0.15
MIN_COUNTED_SHARE = 0.9
RCOND = 1e-9
AT_LIMIT = 1e-9
TWO_PI = 2.0 * math.pi
# The iterative solvers end at their iteration cap, never at the clock (no dependence on load).
NO_CLOCK = {'timeout': 60.0}
SHARED = {'ur5': ('ur5.urdf', 'base_link', 'tool0'),
          'panda': ('panda.urdf', 'panda_link0', 'panda_hand_tcp')}


@dataclass
class Stream:
    """A streamed path: the chain, its targets (per step: {tip: T_base_tip}) and the answers."""

    chain: Chain
    tips: Optional[List[str]]          # None: the solver's single tip (the chain's first)
    six_d: bool
    solver_name: str
    tol_r: float                       # bound on the norm of one answer's task residual
    q_start: np.ndarray                # the seed of the first solve
    targets: list
    results: list

    @property
    def answers(self) -> np.ndarray:
        return np.array([r.joint_positions for r in self.results])


def _quat_xyzw(R):
    w, x, y, z = transforms3d.quaternions.mat2quat(R)
    return [x, y, z, w]


def _full_turn_joints(chain: Chain) -> List[int]:
    """Joints taking one angle at several values within their limits (defined here, not
    imported, so this test also runs against code without the fix)."""
    return [i for i, j in enumerate(chain.joints)
            if not j.is_prismatic and j.upper - j.lower >= TWO_PI]


def joint_curve(chain: Chain, rng: np.random.Generator, steps: int = STEPS) -> np.ndarray:
    """``(steps, n)`` samples of a smooth joint curve ``MARGIN_RAD`` inside the limits."""
    lo = np.maximum(chain.lower, -math.pi) + MARGIN_RAD
    hi = np.minimum(chain.upper, math.pi) - MARGIN_RAD
    centre = rng.uniform(lo, hi)
    amplitude = np.minimum(rng.uniform(0.3, 0.8, chain.n),
                           np.minimum(centre - lo, hi - centre))
    cycles, phase = rng.uniform(0.5, 1.5, chain.n), rng.uniform(0.0, TWO_PI, chain.n)
    t = np.linspace(0.0, 1.0, steps)[:, None]
    return centre + amplitude * np.sin(TWO_PI * cycles * t + phase)


def stream(chain: Chain, solver_name: str, params: dict, Q: np.ndarray, six_d: bool,
           q_start: np.ndarray, tips: Optional[Sequence[str]] = None) -> Stream:
    """Solve FK(Q[k]) for every k, each seeded with the previous answer (the first: q_start)."""
    solver = make_solver(solver_name, chain, params)
    tips = None if tips is None else list(tips)
    n_tips = 1 if tips is None else len(tips)
    tol_r = math.sqrt(n_tips * solver.params['position_tolerance'] ** 2 +
                      (solver.params['orientation_tolerance'] ** 2 if six_d else 0.0))
    seed, targets, results = q_start, [], []
    for q in Q:
        if tips is None:
            T = {chain.tip_link: chain.fk(q)}
            R = T[chain.tip_link][:3, :3]
            result = solver.solve(T[chain.tip_link][:3, 3], _quat_xyzw(R) if six_d else None,
                                  seed)
        else:
            T = {tip: chain.fk(q, tip) for tip in tips}
            result = solver.solve(targets={tip: T[tip][:3, 3] for tip in tips}, seed=seed)
        targets.append(T)
        results.append(result)
        seed = result.joint_positions
    return Stream(chain, tips, six_d, solver_name, tol_r, q_start, targets, results)


def _task(s: Stream, k: int, q_prev: np.ndarray):
    """(dx, J): the task step into target k and the task Jacobian at ``q_prev``."""
    dx, rows = [], []
    tips = s.tips or [s.chain.tip_link]
    for tip in tips:
        dx.append(s.targets[k][tip][:3, 3] - s.targets[k - 1][tip][:3, 3])
        rows.append(s.chain.jacobian(q_prev, tip if s.tips else None)[:3])
    if s.six_d:
        T_now, T_prev = s.targets[k][tips[0]], s.targets[k - 1][tips[0]]
        dx.append(rotation_vector_from_matrix(T_now[:3, :3] @ T_prev[:3, :3].T))
        rows.append(s.chain.jacobian(q_prev)[3:])
    return np.concatenate(dx), np.vstack(rows)


def step_bound(s: Stream, k: int) -> float:
    """The bound [rad or m] on step k's largest joint move, derived in the module docstring."""
    chain, q_prev, q_now = s.chain, s.results[k - 1].joint_positions, s.results[k].joint_positions
    dx, J = _task(s, k, q_prev)
    pinned = (((q_prev <= chain.lower + AT_LIMIT) & (q_now <= chain.lower + AT_LIMIT)) |
              ((q_prev >= chain.upper - AT_LIMIT) & (q_now >= chain.upper - AT_LIMIT)))
    J_free = J[:, ~pinned]
    sv = np.linalg.svd(J_free, compute_uv=False)
    kept = sv[sv > RCOND * sv[0]] if sv.size and sv[0] > 0.0 else sv[:0]
    if kept.size == 0:
        return math.inf
    J_pinv = np.linalg.pinv(J_free, rcond=RCOND)
    bound = SAFETY * (float(np.linalg.norm(J_pinv @ dx)) + 2.0 * s.tol_r / kept[-1])
    if s.solver_name == 'fabrik' and int((~pinned).sum()) > kept.size:  # redundant task
        bound += SELF_MOTION_RAD
    return bound


def _restarted(result) -> bool:
    match = re.search(r'after (\d+) restarts', result.message)
    return match is not None and int(match.group(1)) > 0


def check(s: Stream, allowed=lambda k: False):
    """(violations, counted steps, steps) of a stream. Step k goes from answer k - 1 to answer
    k; ``allowed(k)``: a step over the bound excused by the caller (explained there)."""
    answers = s.answers
    seeds = np.vstack([s.q_start, answers[:-1]])  # the seed of each solve
    turn_joints = _full_turn_joints(s.chain)
    violations, counted = [], 0
    for k, (q_seed, q) in enumerate(zip(seeds, answers)):
        move = np.abs(q - q_seed)
        for i in turn_joints:  # every solve: within half a turn of its seed, where allowed
            toward = q[i] + math.copysign(TWO_PI, q_seed[i] - q[i])
            if move[i] > math.pi + 1e-9 and s.chain.lower[i] <= toward <= s.chain.upper[i]:
                violations.append(f'solve {k}: {s.chain.joint_names[i]} {q_seed[i]:.4f} -> '
                                  f'{q[i]:.4f}, while {toward:.4f} is the same angle within '
                                  'the limits')
        if k == 0:
            continue  # the first target is not one step away from the first seed
        prev, now = s.results[k - 1], s.results[k]
        if not (prev.reachable and now.reachable) or _restarted(now):
            continue
        bound = step_bound(s, k)
        if bound >= math.pi:
            continue
        counted += 1
        if move.max() > bound and not allowed(k):
            i = int(move.argmax())
            violations.append(f'step {k}: {s.chain.joint_names[i]} moved {move[i]:.4f} > bound '
                              f'{bound:.4f} ({q_seed[i]:.4f} -> {q[i]:.4f}; {now.message})')
    return violations, counted, len(answers) - 1


# ----------------------------------------------------------------------------------- the cases
# (robot, solver, 6D, start, extra parameters). Packaged robots use their config/*.yaml (base,
# tips, solver parameters); the reference UR5 and Panda use the solver defaults.
TRANSPOSE = {'method': 'transpose', 'max_iterations': 2000}
CASES = [
    ('leg3', 'analytic_hip_knee', False, 'path', {}),
    ('leg3', 'fabrik', False, 'path', {}),
    ('leg3', 'damped_jacobian', False, 'path', {}),
    ('leg3', 'damped_jacobian', True, 'path', {}),
    ('leg3', 'damped_jacobian', False, 'path', TRANSPOSE),
    ('planar4', 'fabrik', False, 'path', {}),
    ('planar4', 'damped_jacobian', False, 'path', {}),
    ('planar4', 'damped_jacobian', True, 'path', {}),
    ('planar4', 'damped_jacobian', False, 'path', TRANSPOSE),
    ('arm6', 'damped_jacobian', True, 'path', {}),
    ('arm6', 'damped_jacobian', True, 'zero', {}),
    ('arm6', 'damped_jacobian', False, 'path', {}),
    ('arm6', 'fabrik', False, 'path', {}),
    ('twin_arm', 'fabrik', False, 'path', {}),      # both hands at once (branched)
    ('twin_arm', 'damped_jacobian', False, 'path', {}),  # both hands (a shared trunk)
    ('ur5', 'damped_jacobian', True, 'path', {}),
    ('ur5', 'damped_jacobian', True, 'zero', {}),
    ('ur5', 'fabrik', False, 'path', {}),
    ('panda', 'damped_jacobian', True, 'path', {}),
    ('panda', 'damped_jacobian', False, 'path', {}),
    ('panda', 'fabrik', False, 'path', {}),
]


def _case_id(case):
    robot, solver, six_d, start, extra = case
    return f'{robot}-{extra.get("method", solver)}-{"6d" if six_d else "position"}-{start}'


def _chain_and_params(robot, solver, shared_robot):
    if robot in SHARED:
        name, base, tip = SHARED[robot]
        return Chain.from_urdf_file(shared_robot(name), base, tip), {}
    config = load_config(REPO / 'config' / f'{robot}.yaml')
    return build_chain(config), config.params_of(solver)


def _stream_case(case, shared_robot, rng_seed=0, steps=STEPS) -> Stream:
    robot, solver, six_d, start, extra = case
    chain, params = _chain_and_params(robot, solver, shared_robot)
    if solver in ('damped_jacobian', 'fabrik'):
        params = {**params, **NO_CLOCK, **extra}
    Q = joint_curve(chain, np.random.default_rng(rng_seed), steps)
    q_start = Q[0] if start == 'path' else np.zeros(chain.n)
    tips = chain.tip_links if len(chain.tip_links) > 1 else None
    return stream(chain, solver, params, Q, six_d, q_start, tips)


@pytest.mark.slow
@pytest.mark.parametrize('case', CASES, ids=[_case_id(c) for c in CASES])
def test_streamed_smooth_path_moves_every_joint_within_the_derived_step_bound(case,
                                                                              shared_robot):
    s = _stream_case(case, shared_robot)
    violations, counted, steps = check(s)
    assert not violations, '\n'.join(violations[:10])
    assert counted >= MIN_COUNTED_SHARE * steps, \
        f'only {counted} of {steps} steps counted (not converged, restarted or near-singular)'


def test_the_step_check_fails_a_full_turn_jump_in_a_real_stream():
    s = _stream_case(('arm6', 'damped_jacobian', True, 'path', {}), None)
    assert check(s)[0] == []
    shoulder = s.chain.joint_names.index('shoulder_lift')
    for k in range(150, STEPS):  # the reported symptom: one joint a turn off from step 150 on
        q = s.results[k].joint_positions.copy()
        q[shoulder] += TWO_PI if q[shoulder] < 0.0 else -TWO_PI
        np.testing.assert_allclose(s.chain.fk(q), s.chain.fk(s.results[k].joint_positions),
                                   atol=1e-12)  # the same pose
        s.results[k] = replace(s.results[k], joint_positions=q)
    violations = check(s)[0]
    assert violations and all(v.startswith(('step 150:', 'solve 150:')) for v in violations), \
        violations
    assert any('> bound' in v for v in violations) and any('same angle' in v for v in violations)


# ------------------------------------------------------------------- the leg, stretched pose
LEG_THROUGH_STRETCHED_PARAMS = [('analytic_hip_knee', {}), ('fabrik', {}),
                                ('damped_jacobian', {}), ('damped_jacobian', TRANSPOSE)]


def _leg_through_stretched() -> np.ndarray:
    """Hip yaw swinging, hip pitch near 1.25 rad (limit 1.6), knee from -0.6 through 0 to 0.6."""
    t = np.linspace(0.0, 1.0, STEPS)[:, None]
    return np.hstack([0.2 * np.sin(TWO_PI * t), 1.25 + 0.1 * np.sin(math.pi * t),
                      -0.6 * np.cos(math.pi * t)])


@pytest.mark.slow
@pytest.mark.parametrize('solver, extra', LEG_THROUGH_STRETCHED_PARAMS,
                         ids=[e.get('method', s) for s, e in LEG_THROUGH_STRETCHED_PARAMS])
def test_leg_through_the_stretched_pose_changes_knee_branch_only_where_limits_force_it(solver,
                                                                                      extra):
    config = load_config(REPO / 'config' / 'leg3.yaml')
    chain = build_chain(config)
    params = config.params_of(solver)
    if solver in ('damped_jacobian', 'fabrik'):
        params = {**params, **NO_CLOCK, **extra}
    Q = _leg_through_stretched()
    s = stream(chain, solver, params, Q, False, Q[0])
    knee = chain.joint_names.index('knee')
    preferring = {b: make_solver('analytic_hip_knee', chain, {'branch': b})
                  for b in ('forward', 'backward')}

    excused = []

    def seed_branch_impossible(k):
        """True when no solution on the seed's knee side is within the limits at target k."""
        q_prev, q_now = s.results[k - 1].joint_positions, s.results[k].joint_positions
        if np.sign(q_prev[knee]) == np.sign(q_now[knee]):
            return False  # not a branch change: no excuse
        p = s.targets[k][chain.tip_link][:3, 3]
        sides = {np.sign(preferring[b].solve(p, seed=q_prev).joint_positions[knee])
                 for b in preferring}
        if np.sign(q_prev[knee]) in sides:
            return False
        excused.append(k)
        return True

    violations, counted, steps = check(s, allowed=seed_branch_impossible)
    assert not violations, '\n'.join(violations[:10])
    # One forced branch change at most; the analytic solver bounced, so it makes exactly one.
    if solver == 'analytic_hip_knee':
        assert len(excused) == 1, excused
    assert len(excused) <= 1, excused
    # The transpose variant has no restarts: after the bounce it stays pressed against the hip
    # pitch limit, honestly not converged, and it converges slowly near the stretched pose.
    share = 0.2 if extra.get('method') == 'transpose' else MIN_COUNTED_SHARE
    assert counted >= share * steps, f'{counted} of {steps} counted'
