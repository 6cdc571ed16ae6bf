"""Streamed smooth paths and the bound on each step's joint move: the machinery of
``test_smooth_paths.py`` and ``test_streaming.py`` (and ``benchmarks/solvers/stream_paths.py``).

A stream solves targets one after the other, each solve seeded with the previous answer as the
node does.

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
paths (``test_streaming.py`` bounds it on the real arms by the pull's own size).

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
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence

import numpy as np
import transforms3d

from ik_node.model.chain import Chain
from ik_node.solvers import make_solver
from ik_node.solvers.geometry.residuals import rotation_vector_from_matrix

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
#: Arms streamed by test_streaming.py and benchmarks/solvers/stream_paths.py: name -> (file in
#: ../shared/robots, base, tip); None: the packaged robot's config/<name>.yaml chain.
ARMS = {
    'ur5': ('ur5.urdf', 'base_link', 'tool0'),
    'ur10': ('ur10.urdf', 'base_link', 'tool0'),
    'panda': ('panda.urdf', 'panda_link0', 'panda_hand_tcp'),
    'iiwa14': ('iiwa14.urdf', 'iiwa_link_0', 'iiwa_link_ee'),
    'kinova': ('kinova_j2s6s200.urdf', 'j2s6s200_link_base', 'j2s6s200_end_effector'),
    'baxter': ('baxter.urdf', 'base', 'right_hand_link'),
    'arm6': None,
}


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


def quat_xyzw(R):
    w, x, y, z = transforms3d.quaternions.mat2quat(R)
    return [x, y, z, w]


def full_turn_joints(chain: Chain) -> List[int]:
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
            result = solver.solve(T[chain.tip_link][:3, 3], quat_xyzw(R) if six_d else None,
                                  seed)
        else:
            T = {tip: chain.fk(q, tip) for tip in tips}
            result = solver.solve(targets={tip: T[tip][:3, 3] for tip in tips}, seed=seed)
        targets.append(T)
        results.append(result)
        seed = result.joint_positions
    return Stream(chain, tips, six_d, solver_name, tol_r, q_start, targets, results)


def task_step(s: Stream, k: int, q_prev: np.ndarray):
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
    dx, J = task_step(s, k, q_prev)
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


def restarted(result) -> bool:
    match = re.search(r'after (\d+) restarts', result.message)
    return match is not None and int(match.group(1)) > 0


def check(s: Stream, allowed=lambda k: False):
    """(violations, counted steps, steps) of a stream. Step k goes from answer k - 1 to answer
    k; ``allowed(k)``: a step over the bound excused by the caller (explained there)."""
    answers = s.answers
    seeds = np.vstack([s.q_start, answers[:-1]])  # the seed of each solve
    turn_joints = full_turn_joints(s.chain)
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
        if not (prev.reachable and now.reachable) or restarted(now):
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
