"""A long multi-start search for the closest pose, written independently of the solvers.

Numpy only, on :meth:`Chain.fk` and :meth:`Chain.jacobian` (not the generated kinematics):
projected Newton steps on ``|t - p(q)|^2`` within the joint limits (box), the Hessian
``J^T J - S`` with ``S_jk = w_j . (J_k x e)`` for ``j <= k`` built from the Jacobian, damped until
a step lowers the error, run from many random starts. Used by the tests as the reference the
solvers' best-effort answers are compared with.
"""

import math

import numpy as np


def newton_system(chain, target, q):
    """``(cost, H, g)`` of ``|target - p(q)|^2`` at ``q``: H half the Hessian, g minus half the
    gradient (``J^T e``)."""
    p = chain.fk(q)[:3, 3]
    J = chain.jacobian(q)
    linear, angular = J[:3], J[3:]
    e = target - p
    cross = np.cross(linear.T, e)                      # row k: J_k x e
    S = angular.T @ cross.T                            # S[j, k] = w_j . (J_k x e)
    S = np.triu(S) + np.triu(S, 1).T                   # the j <= k entries, symmetric
    return float(e @ e), linear.T @ linear - S, linear.T @ e


def descend(chain, target, q, iterations=300):
    """A local minimum of the tip distance from ``q``: ``(error [m], q)``."""
    lower, upper = chain.lower, chain.upper
    q = np.clip(np.asarray(q, dtype=float), lower, upper)
    cost, H, g = newton_system(chain, target, q)
    damping = 1e-4
    for _ in range(iterations):
        free = ~(((q <= lower) & (g < 0.0)) | ((q >= upper) & (g > 0.0)))
        if np.linalg.norm(g[free]) <= 1e-12 * max(1.0, math.sqrt(cost)):
            break
        Hf = H[np.ix_(free, free)]
        while damping < 1e8:
            step = np.zeros_like(q)
            try:
                np.linalg.cholesky(Hf + damping * np.eye(len(Hf)))
                step[free] = np.linalg.solve(Hf + damping * np.eye(len(Hf)), g[free])
            except np.linalg.LinAlgError:
                damping *= 10.0
                continue
            q_new = np.clip(q + step, lower, upper)
            trial = newton_system(chain, target, q_new)
            if trial[0] < cost:
                q, (cost, H, g) = q_new, trial
                damping = max(damping * 0.2, 1e-12)
                break
            damping *= 10.0
        else:
            break
    return math.sqrt(cost), q


def long_search(chain, target, starts, rng, extra=()):
    """The best ``(error [m], q)`` of descents from ``extra`` and ``starts`` random
    configurations (infinite limits sampled in +-pi)."""
    lower = np.where(np.isfinite(chain.lower), chain.lower, -math.pi)
    upper = np.where(np.isfinite(chain.upper), chain.upper, math.pi)
    best = (math.inf, None)
    for q0 in list(extra) + [rng.uniform(lower, upper) for _ in range(starts)]:
        found = descend(chain, np.asarray(target, dtype=float), q0)
        if found[0] < best[0]:
            best = found
    return best


# --------------------------------------------------------------------- the held-out generator
#: In-limit configurations sampled per chain; the nearest tips refined for the reference.
HELD_OUT_SAMPLES = 60000
HELD_OUT_REFINED = 8
#: Targets lie this far [m] beyond the farthest sample in their direction.
HELD_OUT_BEYOND_M = (0.02, 0.30)


class HeldOutTargets:
    """Out-of-reach position targets of a chain and their reference closest distances, from a
    generator the solvers were not developed on.

    ``HELD_OUT_SAMPLES`` configurations drawn uniformly within the limits (infinite ones as
    +-pi) and their tips (batched :meth:`Chain.joint_frames`). A target: a random direction
    ``d``, the sample tip farthest along ``d`` (largest ``p . d``), and the target
    ``HELD_OUT_BEYOND_M`` beyond it along ``d``: outside every sampled tip's half-space in that
    direction. Its reference: the ``HELD_OUT_REFINED`` sample tips nearest the target, each
    refined by :func:`bounded_lm`; the least error [m] and its configuration.
    """

    def __init__(self, chain, rng, samples: int = HELD_OUT_SAMPLES):
        self.chain = chain
        self.lower = np.where(np.isfinite(chain.lower), chain.lower, -math.pi)
        self.upper = np.where(np.isfinite(chain.upper), chain.upper, math.pi)
        self.q = rng.uniform(self.lower, self.upper, (samples, chain.n))
        tip = chain.tips[0]
        frames = chain.joint_frames(self.q)
        self.tips = (frames[:, tip.parent] @ tip.T_joint_tip)[:, :3, 3]

    def target(self, rng) -> np.ndarray:
        """One target [m] (see the class docstring)."""
        d = rng.normal(size=3)
        d /= np.linalg.norm(d)
        farthest = self.tips[np.argmax(self.tips @ d)]
        return farthest + rng.uniform(*HELD_OUT_BEYOND_M) * d

    def reference(self, target: np.ndarray):
        """``(error [m], q)``: the best of the bounded LM refinements of the nearest samples."""
        nearest = np.argsort(np.linalg.norm(self.tips - target, axis=1))[:HELD_OUT_REFINED]
        return min((bounded_lm(self.chain, target, self.q[k]) for k in nearest),
                   key=lambda found: found[0])

    def reachable(self, rng) -> np.ndarray:
        """A reachable target: the tip of a random in-limit configuration [m]."""
        return self.tips[rng.integers(len(self.tips))].copy()


def bounded_lm(chain, target, q, iterations: int = 200):
    """Levenberg-Marquardt on ``|target - p(q)|`` within the joint limits from ``q`` (steps
    clipped into the box, joints at a limit pushed outwards left out): ``(error [m], q)``."""
    lower, upper = chain.lower, chain.upper
    q = np.clip(np.asarray(q, dtype=float), lower, upper)
    e = target - chain.fk(q)[:3, 3]
    cost = float(e @ e)
    damping = 1e-3
    for _ in range(iterations):
        J = chain.jacobian(q)[:3]
        g = J.T @ e
        free = ~(((q <= lower) & (g < 0.0)) | ((q >= upper) & (g > 0.0)))
        if np.linalg.norm(g[free]) <= 1e-12:
            break
        Jf = J[:, free]
        improved = False
        while damping < 1e8:
            step = np.zeros_like(q)
            step[free] = np.linalg.solve(Jf.T @ Jf + damping * np.eye(Jf.shape[1]), g[free])
            q_new = np.clip(q + step, lower, upper)
            e_new = target - chain.fk(q_new)[:3, 3]
            if float(e_new @ e_new) < cost:
                q, e, cost = q_new, e_new, float(e_new @ e_new)
                damping = max(damping * 0.3, 1e-9)
                improved = True
                break
            damping *= 4.0
        if not improved or cost - float(e @ e) > 0.0:
            break
    return math.sqrt(cost), q
