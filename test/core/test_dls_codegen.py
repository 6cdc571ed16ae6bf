"""The generated damped step of damped_jacobian against a numpy reference: the damped solve,
joints at a limit sitting out the step, the per-joint step cap and the limits (clip or wrap).

Seeded random systems and configurations; joints are put exactly at their limits often, so the
sitting-out path is exercised.
"""

import math

import numpy as np
import pytest

from ik_node.solvers.numerics.codegen import (MAX_STEP, damped_solve_function,
                                          damped_trial_function, limit_functions, lower_index)

TWO_PI = 2.0 * math.pi
# (low, high, wraps) per joint: a clipped revolute joint, a full-turn joint that wraps, an
# unbounded one, a narrow one (Panda's fourth joint), a prismatic-like one [m].
JOINTS = [(-1.5, 1.5, False), (-TWO_PI, TWO_PI, True), (-math.inf, math.inf, False),
          (-3.0718, -0.0698, False), (0.0, 0.3, False), (-2.9, 2.9, False),
          (-0.0175, 3.7525, False)]


def _limits(n):
    low = [j[0] for j in JOINTS[:n]]
    high = [j[1] for j in JOINTS[:n]]
    wraps = [j[2] for j in JOINTS[:n]]
    bounded = [k for k in range(n) if not wraps[k] and math.isfinite(low[k])]
    return low, high, wraps, bounded


def _reference_trial(q, H, g, lam, low, high, wraps, bounded):
    """numpy: (H + lam I) dq = g; bounded joints at a limit stepping outwards sit out (their
    rows and columns become the identity's, their gradient 0) and the rest is solved again;
    then the step is capped at MAX_STEP per joint and q + dq wrapped or clipped."""
    n = len(q)
    A = H + lam * np.eye(n)
    dq = np.linalg.solve(A, g)
    blocked = [k for k in bounded if (dq[k] < 0.0 and q[k] <= low[k]) or
               (dq[k] > 0.0 and q[k] >= high[k])]
    if blocked:
        free = [k for k in range(n) if k not in blocked]
        dq = np.zeros(n)
        dq[free] = np.linalg.solve(A[np.ix_(free, free)], g[free])
    largest = np.max(np.abs(dq))
    if largest > MAX_STEP:
        dq *= MAX_STEP / largest
    q_new = q + dq
    for k in range(n):
        if q_new[k] < low[k]:
            q_new[k] = q_new[k] + TWO_PI * math.ceil((low[k] - q_new[k]) / TWO_PI) \
                if wraps[k] else low[k]
        elif q_new[k] > high[k]:
            q_new[k] = q_new[k] - TWO_PI * math.ceil((q_new[k] - high[k]) / TWO_PI) \
                if wraps[k] else high[k]
    return q_new, blocked


def _random_case(rng, n, low, high):
    """A positive semi-definite H (rank-deficient half the time, as J^T J of a 6 x n or
    singular Jacobian), g, and q within the limits with joints often exactly at a limit."""
    rows = 6 if rng.random() < 0.5 else int(rng.integers(1, n + 1))
    J = rng.normal(size=(rows, n))
    H = J.T @ J
    g = J.T @ rng.normal(size=rows) * rng.choice([0.01, 1.0, 100.0])
    q = np.empty(n)
    for k in range(n):
        lo = low[k] if math.isfinite(low[k]) else -4.0
        hi = high[k] if math.isfinite(high[k]) else 4.0
        q[k] = rng.choice([lo, hi, rng.uniform(lo, hi)], p=[0.25, 0.25, 0.5])
    return H, g, q


@pytest.mark.slow
@pytest.mark.parametrize('n', [1, 3, 6, 7])
def test_generated_trial_equals_the_numpy_reference(n):
    low, high, wraps, bounded = _limits(n)
    trial = damped_trial_function(low, high, wraps, bounded)
    rng = np.random.default_rng(n)
    sat_out = 0
    for _ in range(400):
        H, g, q = _random_case(rng, n, low, high)
        lam = float(rng.choice([1e-6, 1e-3, 0.1, 10.0]))
        H_flat = [H[a, b] for a in range(n) for b in range(a + 1)]
        q_new, blocked = trial(q.tolist(), H_flat, g.tolist(), lam)
        q_expected, blocked_expected = _reference_trial(q, H, g, lam, low, high, wraps,
                                                        bounded)
        assert list(blocked) == blocked_expected
        # lam down to 1e-6 on a rank-deficient H: round-off grows with the condition number
        np.testing.assert_allclose(q_new, q_expected, rtol=1e-7, atol=1e-7)
        assert all(lo <= v <= hi for v, lo, hi in zip(q_new, low, high))
        sat_out += bool(blocked)
    assert sat_out > 20  # the sitting-out path was exercised


@pytest.mark.parametrize('n', [3, 6, 7])
def test_generated_trial_gives_the_same_floats_as_solve_blocked_advance(n):
    # The fused function replaced damped_solve_function + limit_functions called in turn: the
    # same arithmetic, so the solver's iterates are unchanged bit for bit.
    low, high, wraps, bounded = _limits(n)
    trial = damped_trial_function(low, high, wraps, bounded)
    solve = damped_solve_function(n)
    advance, blocked_joints = limit_functions(low, high, wraps, bounded)
    rng = np.random.default_rng(100 + n)
    for _ in range(400):
        H, g, q = _random_case(rng, n, low, high)
        lam = float(rng.choice([1e-6, 1e-3, 0.1]))
        H_flat = [H[a, b] for a in range(n) for b in range(a + 1)]
        dq = solve(H_flat, g.tolist(), lam)
        blocked = blocked_joints(q.tolist(), dq)
        if blocked:
            H_masked, g_masked = list(H_flat), g.tolist()
            for k in blocked:
                for j in range(n):
                    H_masked[lower_index(max(k, j), min(k, j))] = 0.0
                g_masked[k] = 0.0
            dq = solve(H_masked, g_masked, lam)
        assert trial(q.tolist(), H_flat, g.tolist(), lam) == (advance(q.tolist(), dq), blocked)


def test_generated_trial_raises_on_a_matrix_that_is_not_positive_definite():
    low, high, wraps, bounded = _limits(3)
    trial = damped_trial_function(low, high, wraps, bounded)
    H_flat = [-1.0, 0.0, -1.0, 0.0, 0.0, -1.0]  # -I: H + lam I is negative definite
    with pytest.raises((ValueError, ZeroDivisionError)):
        trial([0.0, 0.0, 0.0], H_flat, [1.0, 1.0, 1.0], 0.5)
