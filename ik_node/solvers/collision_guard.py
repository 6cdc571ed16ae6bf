"""Reachable means collision-free: the self-collision and world check of every solver's answer.

:meth:`Solver.solve <ik_node.solvers.base.Solver.solve>` hands each measured answer of a chain
whose URDF has collision geometry to :class:`CollisionGuard` (with ``self_collision`` on, the
default). An answer within tolerance is ``reachable`` only when the checker finds it free; an
answer that is free costs one check and nothing more.

An answer within tolerance that collides goes, in turn:

1. to the solver's collision term, where it has one (``damped_jacobian`` on a serial chain:
   :mod:`ik_node.solvers.damped_jacobian.collision_term`): the descent goes on from the answer
   with the colliding pairs pushed apart along their closest points' normal as constraints of
   first priority and the target kept in their null space, until the answer is within
   tolerance and free, a few steps (at most 0.2 rad per joint each) from the colliding one.
   It needs joints to spare beside the target (position targets on arms of 4 or more joints,
   6D targets on 7-joint arms); on a 6-joint arm's 6D target the answers are isolated and the
   restarts alone serve;
2. to new seeds: in turn a collision-free configuration whose tip lies near the target (from a
   pool of random collision-free configurations made with the solver; nearest by position,
   plus ``orientation_weight`` times the angle for a 6D target) and a random configuration
   within the limits (seeded per solver so runs repeat; for ``analytic_hip_knee`` a new seed
   picks the other knee branch under ``branch: closest``), at most ``collision_restarts``
   times; each a solve from the new seed (``damped_jacobian``: its compiled start, as a solve
   of its own begins, where that serves).

All within a budget: the whole solve, term and retries included, ends within the solver's
``timeout`` (where it has one) plus ``collision_retry_time``; the term gets a quarter of what
is left (``TERM_SHARE``), each retry a share of the rest. When no collision-free answer within
tolerance turns up, the result is ``in_collision`` (``reachable: false``), its joints are the
best collision-free pose found (nearest the target, else the seed when that is free, else the
colliding answer itself), and its message names the colliding pair and the depth.

Closed-form and geometric solvers (``analytic_hip_knee``, ``fabrik``) have no collision term:
their answers are checked and re-solved from new seeds (other branches). Trees and several tips
are checked as one robot and re-solved from new seeds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
import weakref
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ik_node.solvers.results import IkResult, IkStatus, RawSolution

#: Random configurations drawn once per guard; the collision-free ones seed retries near a target.
POOL_SIZE = 2000
_pools: 'weakref.WeakKeyDictionary' = weakref.WeakKeyDictionary()
_pool_lock = threading.Lock()
#: Used when collision checking is wanted but cannot run (a library missing): said once per
#: result, so no answer is taken as checked when it was not.
NOT_CHECKED = 'self-collision not checked: '
#: The share of the collision budget the solver's collision term may take: the rest is left
#: for new seeds when the term finds no free answer.
TERM_SHARE = 0.25


class CollisionGuard:
    """Checks answers and re-solves colliding ones (see the module docstring).

    Args:
        checker: an :class:`ik_node.collision.CollisionChecker` of the solver's chain.
        lower, upper: the joint limits (infinite ones are sampled within +-pi).
        restarts: the most new seeds tried for one target.
        budget_s: wall time [s] a solve may spend in all, retries included.
        seed: of the random seeds' generator.
    """

    def __init__(self, checker, lower: np.ndarray, upper: np.ndarray, restarts: int,
                 budget_s: float, seed: int = 0):
        self.checker = checker
        self._lower = np.where(np.isfinite(lower), lower, -np.pi)
        self._upper = np.where(np.isfinite(upper), upper, np.pi)
        self.restarts = int(restarts)
        self.budget_s = float(budget_s)
        self._rng = np.random.default_rng(seed)
        #: The colliding answer behind the newest ``in_collision`` result (for the RViz view).
        self.last_colliding_q: Optional[np.ndarray] = None
        self._pool: Optional[np.ndarray] = None  # collision-free configurations
        self._pool_tips: Optional[np.ndarray] = None
        self._pool_rotations: Optional[np.ndarray] = None
        self._pool_norms: Optional[np.ndarray] = None  # squared norms of the pool's tips
        #: The solver's collision term (False: not asked yet; None: it has none).
        self._term = False
        self._pool_seeds(None)  # made now, not in a solve's budget

    def _pool_seeds(self, p_target, R_target=None, weight: float = 0.5) -> Sequence:
        """Self-collision-free configurations whose first tip lies nearest ``p_target`` [m]
        (and, with ``R_target``, turned nearest it: ``weight`` [m/rad] times the angle added),
        nearest first (made once per collision model: ``POOL_SIZE`` random configurations, the
        free ones kept; the world is checked on the answers, not on the seeds)."""
        if self._pool is None:
            model = self.checker.model
            with _pool_lock:
                if model not in _pools:
                    chain = model.chain
                    Q = np.random.default_rng(1).uniform(self._lower, self._upper,
                                                         size=(POOL_SIZE, chain.n))
                    pool = Q[self.checker.free_mask(Q, world=False)]
                    frames = chain.joint_frames(pool)
                    tip = chain.tips[0]
                    tips = frames[:, tip.parent] @ tip.T_joint_tip if tip.parent >= 0 else \
                        np.broadcast_to(np.eye(4), (len(pool), 4, 4))
                    points = np.ascontiguousarray(tips[:, :3, 3])
                    _pools[model] = (pool, points,
                                     np.ascontiguousarray(tips[:, :3, :3].reshape(-1, 9)),
                                     np.einsum('ij,ij->i', points, points))
                self._pool, self._pool_tips, self._pool_rotations, self._pool_norms = \
                    _pools[model]
        if p_target is None or not len(self._pool):
            return []
        return NearSeeds(self._pool, self._pool_distances(p_target, R_target, weight),
                         min(self.restarts, len(self._pool)))

    def _pool_distances(self, p_target, R_target, weight: float) -> np.ndarray:
        """Each pool configuration's tip distance to the target (see :meth:`_pool_seeds`);
        for a position target its square (the same order, no root taken)."""
        p = np.asarray(p_target, dtype=float)
        # |t - p|^2 = |t|^2 - 2 t.p + |p|^2: one matrix-vector product over the pool
        d2 = self._pool_norms - 2.0 * (self._pool_tips @ p) + float(p @ p)
        if R_target is None:
            return d2  # ranks as the distance does
        d = np.sqrt(np.maximum(d2, 0.0))
        # the angle between each tip's rotation and the target's: cos = (tr(R^T R_t) - 1) / 2
        trace = self._pool_rotations @ np.asarray(R_target, dtype=float).ravel()
        d += weight * np.arccos(np.clip(0.5 * (trace - 1.0), -1.0, 1.0))
        return d

    # ------------------------------------------------------------------ the solver's hooks
    def values(self, solver, result: IkResult, p_list, R_target, q_seed: List[float],
               started: float) -> IkResult:
        """The guarded result of a one-tip solve (``Solver._solve_values``), its
        ``solve_time`` from ``started`` (``time.perf_counter()``) to the end of the check."""
        if not result.reachable or self.checker.answer_is_free(result.joint_positions):
            return timed(result, started)
        return self.repair(solver, result, p_list, R_target, q_seed, started)

    def repair(self, solver, result: IkResult, p_list, R_target, q_seed: List[float],
               started: float, solve_from: Optional[Callable] = None) -> IkResult:
        """The guarded result of a reachable answer the checker found colliding: freed by the
        collision term, by new seeds, or ``in_collision`` (the module docstring).
        ``solve_from(seed)``: the solver's own solve from a new seed (a result, or None where
        it does not serve), tried before its general path."""
        deadline = started + self.budget_s

        def finish(raw, seed):
            return solver._finish(raw, p_list, R_target, 0.0, result.orientation_ignored, seed)

        def freed(answer: IkResult, seed) -> Optional[IkResult]:
            """``answer`` (in collision) brought free by the collision term, or None."""
            term = self._term_of(solver)
            if term is None:
                return None
            left = deadline - time.perf_counter()
            if left <= 0.0:
                return None
            found = term.repair(p_list, R_target, answer.joint_positions,
                                time.perf_counter() + TERM_SHARE * left)
            if found is None:
                return None
            q, steps = found
            raw = RawSolution(q, IkStatus.CONVERGED, answer.iterations + steps,
                              message=answer.message)
            repaired = finish(raw, seed)
            if not repaired.reachable or not self.checker.is_free(repaired.joint_positions):
                return None
            note = f'collision-free by the collision term ({steps} steps)'
            return dataclasses.replace(repaired, message=f'{answer.message}; {note}'
                                       if answer.message else note)

        repaired = freed(result, q_seed)
        if repaired is not None:
            return timed(repaired, started)  # a new result, made by this solve

        quick = solve_from

        def solve_from(seed):
            found = None if quick is None else quick(seed)
            if found is not None:
                return found
            return finish(solver._raw_solution(p_list, R_target, seed), seed)

        def measure(q):
            raw = RawSolution(list(q), IkStatus.NOT_REACHED, 0)
            return solver._finish(raw, p_list, R_target, 0.0, result.orientation_ignored,
                                  q_seed)
        return self._resolve(solver, result, solve_from, measure, q_seed, started,
                             self._pool_seeds(p_list, R_target,
                                              solver.params.get('orientation_weight', 0.5)))

    def _term_of(self, solver):
        """The solver's collision term with this guard's checker (made on first use, when the
        solver is built), or None for a solver without one."""
        if self._term is False:
            make = getattr(solver, 'collision_term', None)
            self._term = None if make is None else make(self.checker)
        return self._term

    def targets(self, solver, parsed, q_seed: List[float]) -> IkResult:
        """The guarded result of a solve of several tips (``Solver._solve_targets``)."""
        started = time.perf_counter()
        result = solver._solve_parsed(parsed, q_seed)
        if not result.reachable or self.checker.is_free(result.joint_positions):
            return timed(result, started)
        return self._resolve(solver, result, lambda seed: solver._solve_parsed(parsed, seed),
                             None, q_seed, started)

    # ----------------------------------------------------------------------- the retries
    def _resolve(self, solver, result: IkResult, solve_from: Callable, measure: Optional[
            Callable], q_seed: List[float], started: float,
            near_seeds: Sequence[List[float]] = ()) -> IkResult:
        """New seeds for a reachable answer in collision, then ``in_collision``: in turn a
        collision-free configuration with its tip near the target (``near_seeds``) and a random
        one."""
        checker = self.checker
        deadline = started + self.budget_s
        best_free: Optional[IkResult] = None
        attempts = 0
        while attempts < self.restarts:
            remaining = deadline - time.perf_counter()
            if remaining <= 0.0:
                break
            attempts += 1
            if attempts % 2 == 1 and attempts // 2 < len(near_seeds):
                seed = near_seeds[attempts // 2]
            else:
                seed = self._rng.uniform(self._lower, self._upper).tolist()
            # A share of what is left, so one seed that does not converge leaves time for more.
            share = remaining / min(3, self.restarts - attempts + 1)
            with _timeout(solver, share):
                retry = solve_from(seed)
            if not checker.answer_is_free(retry.joint_positions):
                continue
            if retry.reachable:
                message = f'collision-free answer from restart {attempts}'
                if retry.message:
                    message = f'{retry.message}; {message}'
                return timed(dataclasses.replace(retry, message=message), started)
            if best_free is None or _error_key(retry) < _error_key(best_free):
                best_free = retry
        report = checker.report(result.joint_positions)
        if best_free is None and measure is not None and \
                checker.is_free(np.asarray(q_seed, dtype=float)):
            best_free = measure(q_seed)
        chosen = best_free if best_free is not None else result
        self.last_colliding_q = np.array(result.joint_positions, dtype=float)
        what = report.colliding_text() or 'closer than the padding'
        if chosen is result:
            message = f'reachable only in collision ({what}); no collision-free pose found ' \
                      f'in {attempts} restart(s): the joints are the colliding answer'
        else:
            message = f'reachable only in collision ({what}); the joints are the best ' \
                      f'collision-free pose found in {attempts} restart(s)'
        tips = None
        if chosen.tips is not None:
            tips = {tip: dataclasses.replace(t, reachable=False, status=IkStatus.IN_COLLISION,
                                             message=message)
                    for tip, t in chosen.tips.items()}
        return timed(dataclasses.replace(chosen, reachable=False,
                                         status=IkStatus.IN_COLLISION, message=message,
                                         tips=tips), started)


class NearSeeds(Sequence):
    """The ``count`` pool configurations nearest a target, nearest first, as lists of floats:
    the nearest found at once (the retry that usually succeeds), the rest ranked on first use.
    """

    def __init__(self, pool: np.ndarray, distances: np.ndarray, count: int):
        self._pool, self._d, self._count = pool, distances, count
        self._first = int(np.argmin(distances)) if count else -1
        self._order: Optional[np.ndarray] = None

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(self._count))]
        if not -self._count <= k < self._count:
            raise IndexError(k)
        k %= self._count
        if k == 0:
            return self._pool[self._first].tolist()
        if self._order is None:
            d, count = self._d, self._count
            nearest = np.argpartition(d, count - 1)[:count]
            self._order = nearest[np.argsort(d[nearest], kind='stable')]
        return self._pool[self._order[k]].tolist()


def timed(result: IkResult, started: float) -> IkResult:
    """``result`` with ``solve_time`` from ``started`` (``time.perf_counter()``) to now, set on
    the result itself: only for a result made by this solve and not handed out yet (a
    ``dataclasses.replace`` would cost more than the check whose time it adds)."""
    object.__setattr__(result, 'solve_time', time.perf_counter() - started)
    return result


class NotChecked:
    """The hook of a solver whose chain has collision geometry that cannot be checked (a library
    missing): every result says so in its message."""

    def __init__(self, note: str):
        self.note = note

    def values(self, solver, result: IkResult, p_list, R_target, q_seed, started) -> IkResult:
        """``result`` with the note."""
        return self._noted(result)

    def targets(self, solver, parsed, q_seed) -> IkResult:
        """The unguarded solve, with the note."""
        return self._noted(solver._solve_parsed(parsed, q_seed))

    def _noted(self, result: IkResult) -> IkResult:
        message = f'{result.message}; {self.note}' if result.message else self.note
        return dataclasses.replace(result, message=message)


@contextlib.contextmanager
def _timeout(solver, seconds: float):
    """The solver's ``timeout`` parameter set to ``seconds`` for one retry (solvers read it at
    the start of each solve), restored after."""
    params = solver.params
    if 'timeout' not in params:
        yield
        return
    saved = params['timeout']
    params['timeout'] = min(saved, max(seconds, 1e-6))
    try:
        yield
    finally:
        params['timeout'] = saved


def _error_key(result: IkResult):
    return (result.position_error, result.orientation_error or 0.0)


def collision_hook(solver):
    """The collision hook of ``solver`` (its chain, its parameters): a :class:`CollisionGuard`,
    a :class:`NotChecked` when a library is missing, or None when its URDF has no collision
    geometry or ``self_collision`` is off.

    Raises:
        CollisionModelError: a missing or unreadable mesh (unless
            ``collision_skip_missing_meshes``), a package not found, a bad SRDF.
    """
    from ik_node import collision
    params = solver.params
    if not params.get('self_collision', False) or not collision.has_collision_geometry(
            solver.chain):
        return None
    settings = collision.CollisionSettings(
        padding=params['collision_padding'],
        skip_missing_meshes=params['collision_skip_missing_meshes'],
        **getattr(solver, 'collision_world', {}))
    try:
        checker = collision.checker_for(solver.chain, settings)
    except collision.CollisionUnavailable as exc:
        return NotChecked(NOT_CHECKED + str(exc))
    budget = (params.get('timeout') or 0.0) + params['collision_retry_time']
    guard = CollisionGuard(checker, solver.chain.lower, solver.chain.upper,
                           params['collision_restarts'], budget)
    guard._term_of(solver)  # made now, not in the first solve that needs it
    return guard


def has_collision_check(solver) -> bool:
    """True if ``solver`` checks collisions (:func:`collision_outputs` has something to say)."""
    return isinstance(getattr(solver, '_collision', None), CollisionGuard)


def collision_outputs(solver, q, result: Optional[IkResult] = None
                      ) -> Tuple[Dict[str, str], Optional[np.ndarray]]:
    """What the node shows of answer ``q`` (of ``result``) under ``solver``'s collision check.

    Returns:
        ``(values, triangles)``: diagnostic values ``min_distance_m`` (signed distance of the
        closest checked pair at ``q`` [m], negative: penetration), ``closest_pair``,
        ``colliding_links`` and, per colliding pair (up to three, deepest first), ``colliding``,
        ``colliding_2``, ``colliding_3`` (``'forearm_link - obstacle table/1: 76 mm in'``);
        and the convex-hull triangles of the colliding links in the base frame,
        ``(m, 3, 3)`` [m], or None when none collides: those of ``q``, or for an
        ``in_collision`` result those of the colliding answer it replaced (the pose that
        reaches the target, shown where it collides). ``({}, None)`` when the solver checks no
        collision.
    """
    guard = getattr(solver, '_collision', None)
    if not isinstance(guard, CollisionGuard):
        return {}, None
    checker = guard.checker
    q = np.asarray(q, dtype=float)
    report = checker.report(q)
    if report.closest is None:
        return {}, None
    model = checker.model
    colliding = sorted({name for c in report.colliding for name in (c.link_a, c.link_b)
                        if name in model.index})
    values = {'min_distance_m': f'{report.closest.distance_m:.4g}',
              'closest_pair': report.closest.pair_text,
              'colliding_links': ', '.join(colliding)}
    if result is not None and result.status is IkStatus.IN_COLLISION and \
            guard.last_colliding_q is not None:
        q = guard.last_colliding_q
        report = checker.report(q)
        colliding = sorted({name for c in report.colliding
                            for name in (c.link_a, c.link_b) if name in model.index})
    # the pairs in collision with their depths, one key each (deepest first): of the answer,
    # or of the colliding answer an in_collision result replaced
    for k, contact in enumerate(report.colliding[:3]):
        values['colliding' if k == 0 else f'colliding_{k + 1}'] = contact.describe()
    if not colliding:
        return values, None
    T = model.link_transforms(q)
    triangles = []
    for link in colliding:
        T_link = T[model.index[link]]
        for piece in model.pieces[link]:
            points = piece.hull_vertices @ T_link[:3, :3].T + T_link[:3, 3]
            triangles.append(points[piece.hull_faces])
    return values, np.concatenate(triangles)
