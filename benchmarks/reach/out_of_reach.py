"""Out-of-reach position targets for the solver benchmark, and the long search that rates them.

Kinds of target (per robot, own RNG stream ``rng_seed + 2``):

* ``beyond``: FK of a random in-limit configuration, pushed along the ray from the first joint
  to 1.02-1.5 times the reach (the largest distance from the first joint among 4000 random
  FK samples);
* ``inner``: random points closer than 0.35 times the reach to the first joint (the inner hole,
  where one exists);
* ``behind_limits``: FK of a configuration drawn from the limit box widened by half its span on
  each side, with at least one joint outside its limits, closer than 0.95 times the reach.

A candidate that ``damped_jacobian`` reaches (FK-checked, 1e-5 m) is reachable and dropped; the
others are rated by the long search and kept when its best error exceeds 1e-4 m. Robots whose
limits allow every pose, or that reach their base, give few or none of a kind: the tables say
how many were found in how many tries.

**The long search** (the reference "best error"): descents from ``starts`` random in-limit
configurations plus the mid configuration, all at once (batched numpy on
:meth:`Chain.joint_frames`): projected Newton steps on ``|t - p(q)|^2`` within the limit box with
the exact Hessian ``J^T J - S`` (``S_jk = w_j . (J_k x e)``), damped per start until a step lowers
the error, until the projected gradient vanishes (1e-12 relative) or 200 iterations. With the
default 100 starts that is 50-100 times the work of one solve. A solver that ends lower than the
long search lowers the reference (its excess is then 0) and is counted.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

KINDS = ('beyond', 'inner', 'behind_limits')
#: A target counts as unreachable when the long search ends above this [m].
UNREACHABLE_M = 1e-4
#: The closest-pose criterion: within 1 mm or 0.1 % of the target's distance from the first
#: joint, whichever is larger, of the best error found.
EXCESS_M, EXCESS_RELATIVE = 1e-3, 1e-3


def allowed_excess(chain, target: np.ndarray) -> float:
    """The excess [m] over the best error that still counts as the closest pose."""
    origin = chain.joint_frames(np.zeros(chain.n))[0, :3, 3]
    return max(EXCESS_M, EXCESS_RELATIVE * float(np.linalg.norm(target - origin)))


# ------------------------------------------------------------------------------ long search
def _batch_system(chain, target: np.ndarray, Q: np.ndarray):
    """Costs (B,), H (B, n, n) and g (B, n) of ``|target - p(q)|^2`` for a batch ``Q``."""
    frames = chain.joint_frames(Q)                                   # (B, n, 4, 4)
    T_tip = frames[:, chain.tips[0].parent] @ chain.tips[0].T_joint_tip
    p = T_tip[:, :3, 3]
    axes = np.einsum('bnij,nj->bni', frames[..., :3, :3], np.array([j.axis for j in
                                                                    chain.joints]))
    origins = frames[..., :3, 3]
    prismatic = np.array([j.is_prismatic for j in chain.joints])
    linear = np.where(prismatic[None, :, None], axes, np.cross(axes, p[:, None, :] - origins))
    angular = np.where(prismatic[None, :, None], 0.0, axes)
    e = target[None, :] - p
    cross = np.cross(linear, e[:, None, :])                          # J_k x e
    S = np.einsum('bji,bki->bjk', angular, cross)                    # w_j . (J_k x e)
    S = np.triu(S) + np.transpose(np.triu(S, 1), (0, 2, 1))
    H = np.einsum('bji,bki->bjk', linear, linear) - S
    g = np.einsum('bki,bi->bk', linear, e)
    return np.einsum('bi,bi->b', e, e), H, g


def long_search(chain, target: np.ndarray, starts: int, rng: np.random.Generator,
                iterations: int = 200) -> Tuple[float, np.ndarray]:
    """The best ``(error [m], q)`` of projected Newton descents from ``starts`` random
    configurations and the mid configuration (see the module docstring)."""
    lower = np.where(np.isfinite(chain.lower), chain.lower, -math.pi)
    upper = np.where(np.isfinite(chain.upper), chain.upper, math.pi)
    Q = np.vstack([chain.mid_configuration()[None, :], rng.uniform(lower, upper,
                                                                   (starts, chain.n))])
    B, n = Q.shape
    cost, H, g = _batch_system(chain, target, Q)
    damping = np.full(B, 1e-4)
    active = np.ones(B, dtype=bool)
    eye = np.eye(n)
    for _ in range(iterations):
        free = ~(((Q <= chain.lower) & (g < 0.0)) | ((Q >= chain.upper) & (g > 0.0)))
        gf = np.where(free, g, 0.0)
        active &= np.linalg.norm(gf, axis=1) > 1e-12 * np.maximum(1.0, np.sqrt(cost))
        active &= damping < 1e8
        if not active.any():
            break
        idx = np.flatnonzero(active)
        mask = free[idx]
        Hf = H[idx] * mask[:, :, None] * mask[:, None, :] + \
            eye * (~mask)[:, :, None] + damping[idx, None, None] * eye
        eig_min = np.linalg.eigvalsh(Hf)[:, 0]
        ok = eig_min > 0.0
        step = np.zeros((len(idx), n))
        if ok.any():
            step[ok] = np.linalg.solve(Hf[ok], gf[idx][ok][:, :, None])[:, :, 0]
        Q_try = np.clip(Q[idx] + step, chain.lower, chain.upper)
        cost_try, H_try, g_try = _batch_system(chain, target, Q_try)
        better = ok & (cost_try < cost[idx])
        good, bad = idx[better], idx[~better]
        Q[good], cost[good], H[good], g[good] = Q_try[better], cost_try[better], \
            H_try[better], g_try[better]
        damping[good] = np.maximum(damping[good] * 0.2, 1e-12)
        damping[bad] *= 10.0
    k = int(np.argmin(cost))
    return math.sqrt(float(cost[k])), Q[k].copy()


# ---------------------------------------------------------------------------------- targets
def reach_of(chain, rng: np.random.Generator) -> Tuple[np.ndarray, float]:
    """(first joint's origin, the largest distance of 4000 random FK samples from it)."""
    lower = np.where(np.isfinite(chain.lower), chain.lower, -math.pi)
    upper = np.where(np.isfinite(chain.upper), chain.upper, math.pi)
    origin = chain.joint_frames(np.zeros(chain.n))[0, :3, 3]
    frames = chain.joint_frames(rng.uniform(lower, upper, (4000, chain.n)))
    tips = (frames[:, chain.tips[0].parent] @ chain.tips[0].T_joint_tip)[:, :3, 3]
    return origin, float(np.max(np.linalg.norm(tips - origin, axis=1)))


def make_targets(chain, n: int, rng_seed: int, starts: int, reachable_check,
                 log=print) -> Dict[str, Dict[str, Any]]:
    """Per kind: ``{'targets': [(target, best error, q_best), ...], 'tries': int}``.

    ``reachable_check(target) -> bool``: True when a solver reaches it (FK-checked).
    """
    rng = np.random.default_rng(rng_seed + 2)
    origin, reach = reach_of(chain, rng)
    lower = np.where(np.isfinite(chain.lower), chain.lower, -math.pi)
    upper = np.where(np.isfinite(chain.upper), chain.upper, math.pi)
    out: Dict[str, Dict[str, Any]] = {}
    for kind in KINDS:
        found: List[Tuple[np.ndarray, float, np.ndarray]] = []
        tries = 0
        max_tries = 8 * n if kind != 'beyond' else 4 * n
        while len(found) < n and tries < max_tries:
            tries += 1
            target = _candidate(chain, kind, rng, origin, reach, lower, upper)
            if target is None or reachable_check(target):
                continue
            best, q_best = long_search(chain, target, starts, rng)
            if best > UNREACHABLE_M:
                found.append((target, best, q_best))
        log(f'  out of reach, {kind}: {len(found)} targets in {tries} tries')
        out[kind] = {'targets': found, 'tries': tries, 'reach_m': reach}
    return out


def _candidate(chain, kind, rng, origin, reach, lower, upper) -> Optional[np.ndarray]:
    if kind == 'beyond':
        d = chain.fk(rng.uniform(lower, upper))[:3, 3] - origin
        return origin + d / max(float(np.linalg.norm(d)), 1e-12) * reach * rng.uniform(1.02, 1.5)
    if kind == 'inner':
        d = rng.normal(size=3)
        return origin + d / np.linalg.norm(d) * reach * 0.35 * rng.uniform(0.0, 1.0)
    span = upper - lower
    q = rng.uniform(lower - 0.5 * span, upper + 0.5 * span)
    if np.all((q >= lower) & (q <= upper)):
        return None
    target = chain.fk(q)[:3, 3]
    return target if np.linalg.norm(target - origin) < 0.95 * reach else None


# ------------------------------------------------------------------------------- measuring
def measure(chain, solvers: Dict[str, Any], kinds: Dict[str, Dict[str, Any]], rng_seed: int,
            budget_s: float, label: str, log=print) -> Dict[str, Any]:
    """Every solver on every target, interleaved (order rotating), random seeds.

    Returns ``{kind: {solver: summary}}`` plus ``'all'`` (kinds pooled). Errors are measured
    by FK on the returned joints; the excess is over the best error known for the target (the
    long search's, or a solver's when lower).
    """
    import gc
    import time
    rng = np.random.default_rng(rng_seed + 3)
    lower = np.where(np.isfinite(chain.lower), chain.lower, -math.pi)
    upper = np.where(np.isfinite(chain.upper), chain.upper, math.pi)
    names = sorted(solvers)
    pooled: Dict[str, Dict[str, list]] = {name: _empty() for name in names}
    out: Dict[str, Any] = {}
    for kind in KINDS:
        targets = kinds[kind]['targets']
        rec = {name: _empty() for name in names}
        for name in names:  # warm-up
            for target, _, _ in targets[:3]:
                solvers[name].solve(target)
        gc.collect()
        gc.disable()
        try:
            for i, (target, best, _) in enumerate(targets):
                seed = rng.uniform(lower, upper)
                errors = {}
                for j in range(len(names)):
                    name = names[(i + j) % len(names)]
                    t0 = time.perf_counter()
                    r = solvers[name].solve(target, None, seed.copy())
                    elapsed = time.perf_counter() - t0
                    error = float(np.linalg.norm(chain.fk(r.joint_positions)[:3, 3] - target))
                    errors[name] = (error, elapsed, r)
                known = min([best] + [e for e, _, _ in errors.values()])
                allowed = allowed_excess(chain, target)
                for name, (error, elapsed, r) in errors.items():
                    for store in (rec[name], pooled[name]):
                        store['t'].append(elapsed)
                        store['excess'].append(error - known)
                        store['closest'].append(error - known <= allowed)
                        store['beat'].append(error < best - 1e-9)
                        store['status'].append(r.status.value)
                        store['bound_ok'].append(r.min_residual is None or
                                                 r.min_residual <= known + 1e-9)
                        store['in_limits'].append(bool(chain.within_limits(r.joint_positions,
                                                                           1e-9)))
        finally:
            gc.enable()
        out[kind] = {name: summarize(rec[name], budget_s) for name in names}
        out[kind]['_targets'] = {'n': len(targets), 'tries': kinds[kind]['tries']}
        if targets:
            log(f'[{label} | {kind}] ' + ' | '.join(
                f'{name} closest {s["closest_pct"]:.1f}% median {s["median_ms"]:.3f}ms'
                for name, s in out[kind].items() if not name.startswith('_')))
    out['all'] = {name: summarize(pooled[name], budget_s) for name in names}
    return out


def _empty() -> Dict[str, list]:
    return {'t': [], 'excess': [], 'closest': [], 'beat': [], 'status': [], 'bound_ok': [],
            'in_limits': []}


def summarize(r: Dict[str, list], budget_s: float) -> Dict[str, Any]:
    if not r['t']:
        return {'n': 0}
    t, excess = np.array(r['t']), np.array(r['excess'])
    statuses: Dict[str, int] = {}
    for s in r['status']:
        statuses[s] = statuses.get(s, 0) + 1
    return {
        'n': len(t),
        'closest_pct': 100.0 * float(np.mean(r['closest'])),
        'median_ms': 1e3 * float(np.median(t)),
        'p95_ms': 1e3 * float(np.percentile(t, 95)),
        'max_ms': 1e3 * float(np.max(t)),
        'in_budget_pct': 100.0 * float(np.mean(t <= budget_s)),
        'excess_median_m': float(np.median(excess)),
        'excess_p99_m': float(np.percentile(excess, 99)),
        'excess_max_m': float(np.max(excess)),
        'beat_long_search': int(np.sum(r['beat'])),
        'min_residual_violations': int(len(t) - np.sum(r['bound_ok'])),
        'in_limits_pct': 100.0 * float(np.mean(r['in_limits'])),
        'statuses': statuses,
    }
