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
