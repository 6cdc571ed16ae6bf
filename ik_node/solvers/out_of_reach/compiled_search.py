"""The closest-pose search's Newton descents and stretch sweeps, compiled by numba.

:class:`~ik_node.solvers.out_of_reach.closest_pose.ClosestPose` runs its descents and stretch
sweeps here once the kernels are loaded (:mod:`ik_node.kernels` loads them in a
background thread; the Python methods serve until then and where numba cannot serve): the
same steps as :meth:`~ik_node.solvers.out_of_reach.closest_pose.ClosestPose.descend` and
:meth:`~ik_node.solvers.out_of_reach.closest_pose.ClosestPose.stretch` (Newton with the exact
Hessian ``J^T J - S``, Levenberg-Marquardt damping, joints pressed against a limit sitting out,
the gradient and Newton-decrement stationarity tests, the Cholesky test of a minimum; one
cyclic-coordinate sweep), in machine code, tens of times faster than the generated Python.
Only the order of some sums differs, so the two paths agree to round-off
(``test/core/test_closest_compiled.py``).

A chain is an array (per joint the constant 3 x 4 transform of
:class:`~ik_node.model.fast_kinematics.SerialKinematics`, its limits and kind; the last row the
tip's transform), so one compiled function serves every serial chain. A descent runs in chunks
of :data:`CHUNK` iterations; the caller asks the solve's budget between two chunks.

The forward kinematics mirror ``_tip`` of :mod:`ik_node.solvers.damped_jacobian.compiled` and the
angle helpers those of :mod:`ik_node.solvers.geometry.planar_core`: numba compiles and caches a
kernel together with the helpers of its own module, and the model arrays differ (this one has
no centring columns).
"""

from __future__ import annotations

import math
from typing import List, Optional, Sequence, Tuple

import numpy as np

import ik_node.kernels as kernels
from ik_node.kernels import fk, linalg, planar
from ik_node.solvers.numerics.codegen import MAX_STEP

# Columns of the model array: 0-11 the joint's constant 3 x 4 transform (row-major), then:
_LOW, _HIGH, _PRISMATIC, _WRAPS, _BOUNDED = range(12, 17)  # _PRISMATIC: fk.PRISMATIC
_COLUMNS = 17
# Ends of a chunk of a descent.
REACHED = 0      # within the tolerance of the target
STATIONARY = 1   # at a stationary point of the tip distance within the limits
CHUNK_DONE = 2   # CHUNK iterations taken: ask the budget, then call again
CAPPED = 3       # the iteration cap reached
# Entries of a descent's state array: the damping, its iterations, its error [m], whether the
# stationary point is a minimum; then per joint 1.0 where pressed against a limit.
_LAM, _ITERATIONS, _ERROR, _MINIMUM = range(4)
_STATE = 4
#: Iterations per kernel call between two checks of the budget.
CHUNK = 8

# The damping and stationarity constants of closest_pose (a test keeps them equal).
LAMBDA_START = 1e-4
LAMBDA_MIN = 1e-12
LAMBDA_MAX = 1e6
LAMBDA_DOWN = 0.2
LAMBDA_UP = 10.0
NEWTON_DECREMENT_M = 1e-7
MINIMUM_DAMPING = 1e-6
_TWO_PI = 2.0 * math.pi

_KERNELS: dict = {}


def available() -> bool:
    """Whether the compiled search may serve (:func:`ik_node.kernels.available`)."""
    return kernels.available()


# ----------------------------------------------------------------------------- kinematics
def _tip(model, n, q, axes, origins, p):
    """The tip position at ``q`` into ``p``; each joint's axis and origin (base frame) into
    ``axes`` and ``origins`` (n x 3) (:func:`ik_node.kernels.fk.frames`)."""
    T = fk.frames(model, n, q, axes, origins, np.empty((3, 4)))
    p[0], p[1], p[2] = T[0, 3], T[1, 3], T[2, 3]


def _newton(model, n, target, q, system, frames):
    """``cost = |t - p(q)|^2`` [m^2]; ``H = J^T J - S`` (lower triangle) and ``g = J^T e``:
    half the Hessian and minus half the gradient of the cost (as ``ClosestPose.newton_system``).
    ``system``: ``(H, g)``, written; ``frames``: ``(axes, origins, p, J)``, scratch."""
    H, g = system
    axes, origins, p, J = frames
    _tip(model, n, q, axes, origins, p)
    fk.jacobian(model, n, p, axes, origins, J, True)
    ex, ey, ez = target[0] - p[0], target[1] - p[1], target[2] - p[2]
    for a in range(n):
        xa, ya, za = J[0, a], J[1, a], J[2, a]
        ca = ya * ez - za * ey
        da = za * ex - xa * ez
        ea = xa * ey - ya * ex
        for b in range(a + 1):
            H[a, b] = xa * J[0, b] + ya * J[1, b] + za * J[2, b] - \
                (J[3, b] * ca + J[4, b] * da + J[5, b] * ea)
        g[a] = xa * ex + ya * ey + za * ez
    return ex * ex + ey * ey + ez * ez


def _pressed(model, n, q, g, mask):
    """``mask[k]`` 1.0 for each bounded joint at a limit whose descent direction ``g[k]``
    points outwards (else 0.0); their count."""
    count = 0
    for k in range(n):
        mask[k] = 0.0
        if model[k, _BOUNDED] != 0.0 and ((g[k] < 0.0 and q[k] <= model[k, _LOW]) or
                                          (g[k] > 0.0 and q[k] >= model[k, _HIGH])):
            mask[k] = 1.0
            count += 1
    return count


def _advance(model, n, q, dq, out):
    """``q + dq`` with ``dq`` scaled down to at most ``MAX_STEP`` per joint, then wrapped by
    whole turns or clipped into the limits (the generated ``advance`` of
    :func:`~ik_node.solvers.numerics.codegen.limit_functions`)."""
    largest = 0.0
    for k in range(n):
        largest = max(largest, abs(dq[k]))
    scale = MAX_STEP / largest if largest > MAX_STEP else 1.0
    for k in range(n):
        d = dq[k] * scale if scale != 1.0 else dq[k]
        v = q[k] + d
        lo, hi = model[k, _LOW], model[k, _HIGH]
        wraps = model[k, _WRAPS] != 0.0
        if v < lo:
            v = v + _TWO_PI * math.ceil((lo - v) / _TWO_PI) if wraps else lo
        elif v > hi:
            v = v - _TWO_PI * math.ceil((v - hi) / _TWO_PI) if wraps else hi
        out[k] = v


def _descend(model, target, q, state, steps, max_iterations, tolerance, gradient_scale):
    """Up to ``steps`` iterations of one descent from ``q`` (updated in place); ``state``
    carries the damping and the iteration count between calls (``state[_LAM]`` 0: a fresh
    descent). Returns REACHED, STATIONARY (``state[_MINIMUM]`` 1.0 at a minimum), CAPPED or
    CHUNK_DONE; ``state[_ERROR]`` the error [m] at ``q`` and ``state[_STATE:]`` the joints
    pressed against a limit."""
    n = q.shape[0]
    axes = np.empty((n, 3))
    origins = np.empty((n, 3))
    p = np.empty(3)
    J = np.empty((6, n))
    H = np.zeros((n, n))
    g = np.empty(n)
    Ht = np.zeros((n, n))
    gt = np.empty(n)
    L = np.zeros((n, n))
    x = np.empty(n)
    q_new = np.empty(n)
    mask = state[_STATE:_STATE + n]
    cost = _newton(model, n, target, q, (H, g), (axes, origins, p, J))
    lam = state[_LAM] if state[_LAM] > 0.0 else LAMBDA_START
    iterations = int(state[_ITERATIONS])
    tol2 = tolerance * tolerance
    taken = 0
    code = CHUNK_DONE
    while True:
        _pressed(model, n, q, g, mask)
        gradient2 = 0.0
        for k in range(n):
            if mask[k] == 0.0:
                gradient2 += g[k] * g[k]
        error = math.sqrt(cost)
        if cost <= tol2:
            state[_MINIMUM] = 1.0
            code = REACHED
            break
        if gradient2 <= (gradient_scale * error) ** 2:
            code = STATIONARY
            break
        if iterations >= max_iterations:
            code = CAPPED
            break
        if taken >= steps:
            break
        iterations += 1
        taken += 1
        done = False
        while True:
            if linalg.damped_solve(H, g, lam, n, mask, L, x):
                decrement = 0.0
                for k in range(n):
                    if mask[k] == 0.0:
                        decrement += g[k] * x[k]
                if lam <= LAMBDA_START and decrement <= 2.0 * error * NEWTON_DECREMENT_M:
                    done = True  # the promised drop is below round-off: stationary
                    break
                _advance(model, n, q, x, q_new)
                trial = _newton(model, n, target, q_new, (Ht, gt), (axes, origins, p, J))
                if trial < cost:
                    q[:] = q_new
                    cost = trial
                    H, Ht = Ht, H
                    g, gt = gt, g
                    lam = max(lam * LAMBDA_DOWN, LAMBDA_MIN)
                    break
            lam *= LAMBDA_UP
            if lam > LAMBDA_MAX:  # no step lowers the error: stationary to round-off
                done = True
                break
        if done:
            code = STATIONARY
            break
    if code == STATIONARY:
        minimum = linalg.damped_solve(H, np.zeros(n), MINIMUM_DAMPING, n, mask, L, x)
        state[_MINIMUM] = 1.0 if minimum else 0.0
    state[_LAM] = lam
    state[_ITERATIONS] = iterations
    state[_ERROR] = math.sqrt(cost)
    return code


# -------------------------------------------------------------------------------- stretch
def _stretch(model, target, q, from_base):
    """One cyclic-coordinate sweep on ``q`` in place (``ClosestPose.stretch``)."""
    n = q.shape[0]
    axes = np.empty((n, 3))
    origins = np.empty((n, 3))
    p = np.empty(3)
    J = np.empty((6, n))
    for step in range(n):
        k = step if from_base else n - 1 - step
        _tip(model, n, q, axes, origins, p)
        fk.jacobian(model, n, p, axes, origins, J, True)
        ex, ey, ez = target[0] - p[0], target[1] - p[1], target[2] - p[2]
        lx, ly, lz = J[0, k], J[1, k], J[2, k]
        lo, hi = model[k, _LOW], model[k, _HIGH]
        if model[k, _PRISMATIC] != 0.0:
            q[k] = min(max(q[k] + ex * lx + ey * ly + ez * lz, lo), hi)
            continue
        ax, ay, az = J[3, k], J[4, k], J[5, k]
        ux, uy, uz = ly * az - lz * ay, lz * ax - lx * az, lx * ay - ly * ax
        along = ex * ax + ey * ay + ez * az
        wx, wy, wz = ex - along * ax + ux, ey - along * ay + uy, ez - along * az + uz
        s = ax * (uy * wz - uz * wy) + ay * (uz * wx - ux * wz) + az * (ux * wy - uy * wx)
        c = ux * wx + uy * wy + uz * wz
        if s * s + c * c <= 1e-30:
            continue
        value = q[k]
        turned = value + math.atan2(s, c)
        if not (math.isfinite(lo) and math.isfinite(hi)):
            q[k] = turned
        elif model[k, _WRAPS] != 0.0:
            if turned < lo:
                turned += _TWO_PI * math.ceil((lo - turned) / _TWO_PI)
            elif turned > hi:
                turned -= _TWO_PI * math.ceil((turned - hi) / _TWO_PI)
            q[k] = min(max(turned, lo), hi)
        else:
            q[k] = min(max(planar.clamp_on_circle(turned, value, lo, hi), lo), hi)


def _distance(model, target, q):
    """The tip's distance [m] from ``target`` at ``q``."""
    n = q.shape[0]
    p = np.empty(3)
    _tip(model, n, q, np.empty((n, 3)), np.empty((n, 3)), p)
    return math.sqrt((target[0] - p[0]) ** 2 + (target[1] - p[1]) ** 2 +
                     (target[2] - p[2]) ** 2)


def _nearest(tips, qs, target, count, spacing, out):
    """The indices (into ``out``) of the ``count`` sample tips nearest ``target``, nearest
    first, each configuration differing from every one kept before by more than ``spacing`` in
    some joint (``TipSample.starts``); their number."""
    m = tips.shape[0]
    count = min(count, m)
    best = np.full(count, np.inf)
    index = np.zeros(count, np.int64)
    for i in range(m):
        d = (tips[i, 0] - target[0]) ** 2 + (tips[i, 1] - target[1]) ** 2 + \
            (tips[i, 2] - target[2]) ** 2
        if d < best[count - 1]:
            j = count - 1
            while j > 0 and best[j - 1] > d:
                best[j] = best[j - 1]
                index[j] = index[j - 1]
                j -= 1
            best[j] = d
            index[j] = i
    kept = 0
    n = qs.shape[1]
    for c in range(count):
        i = index[c]
        spread = True
        for r in range(kept):
            other = out[r]
            largest = 0.0
            for k in range(n):
                largest = max(largest, abs(qs[i, k] - qs[other, k]))
            if largest <= spacing:
                spread = False
                break
        if spread:
            out[kept] = i
            kept += 1
    return kept


_HELPERS = ('_tip', '_newton', '_pressed', '_advance')


def compile() -> None:
    """Compile the kernels (or load them from numba's cache on disk) and run each once;
    :mod:`ik_node.kernels` calls it in its loading thread."""
    if _KERNELS:
        return
    fk.compile()
    planar.compile()
    linalg.compile()
    import numba
    jit = numba.njit(cache=True, nogil=True)
    namespace = globals()
    for name in _HELPERS:  # the helpers first: the functions calling them see the compiled ones
        namespace[name] = jit(namespace[name])
    compiled = {'descend': jit(_descend), 'stretch': jit(_stretch),
                'distance': jit(_distance), 'nearest': jit(_nearest)}
    model = np.zeros((4, _COLUMNS))
    model[:, :12] = np.eye(4)[:3].ravel()
    model[:3, _LOW], model[:3, _HIGH], model[:3, _BOUNDED] = -1.0, 1.0, 1.0
    model[:3, 3] = 0.1  # bones along x
    target, q = np.array([1.0, 0.2, 0.0]), np.zeros(3)
    compiled['stretch'](model, target, q, True)
    compiled['descend'](model, target, q, np.zeros(_STATE + 3), 4, 100, 1e-6, 1e-7)
    compiled['distance'](model, target, q)
    compiled['nearest'](np.zeros((4, 3)), np.zeros((4, 3)), target, 2, 0.5, np.zeros(2, np.int64))
    _KERNELS.update(compiled)


class CompiledSearch:
    """The compiled descents and sweeps bound to one serial chain.

    Args:
        joint_transforms: per joint the constant 3 x 4 (or 4 x 4) transform of
            :class:`~ik_node.model.fast_kinematics.SerialKinematics` (joint axis along z).
        tip_transform: the tip's constant transform.
        low, high: the joint limits [rad or m].
        wraps, prismatic: per joint.
        bounded: the joints whose limits constrain a step.
    """

    def __init__(self, joint_transforms: Sequence[np.ndarray], tip_transform: np.ndarray,
                 low: Sequence[float], high: Sequence[float], wraps: Sequence[bool],
                 prismatic: Sequence[bool], bounded: Sequence[int]):
        n = len(joint_transforms)
        model = fk.model_rows(list(joint_transforms) + [tip_transform], prismatic, _COLUMNS)
        for i in range(n):
            model[i, _LOW], model[i, _HIGH] = low[i], high[i]
            model[i, _WRAPS] = float(wraps[i])
            model[i, _BOUNDED] = float(i in bounded)
        self.model = model
        self.n = n

    @classmethod
    def of(cls, chain, low: Sequence[float], high: Sequence[float], wraps: Sequence[bool],
           bounded: Sequence[int]) -> Optional['CompiledSearch']:
        """The chain's compiled search where numba may serve and the chain has generated
        serial kinematics; else None."""
        fast = chain.fast_kinematics
        if fast is None or not available():
            return None
        return cls(fast.joint_transforms, fast.tip_transform, low, high, wraps,
                   [j.is_prismatic for j in chain.joints], bounded)

    @staticmethod
    def ready() -> bool:
        """Whether the kernels are loaded (never blocks); starts loading them otherwise."""
        if _KERNELS and kernels.ready():
            return True
        kernels.start()
        return False

    def descend(self, target_array: np.ndarray, q: Sequence[float], budget,
                max_iterations: int, tolerance: float, gradient_scale: float
                ) -> Tuple[List[float], float, int, int, bool, Tuple[int, ...]]:
        """One descent from ``q`` toward ``target_array`` (3 floats [m], an array), the
        budget asked before each chunk of :data:`CHUNK` iterations: ``(q, error [m],
        iterations, end, minimum, pressed)``, ``end`` REACHED, STATIONARY, CAPPED or
        CHUNK_DONE (out of time)."""
        n = self.n
        q_array = np.array(q, dtype=float)
        state = np.zeros(_STATE + n)
        descend = _KERNELS['descend']
        code, ran = CHUNK_DONE, False
        while budget.allows():
            code = descend(self.model, target_array, q_array, state, CHUNK, max_iterations,
                           tolerance, gradient_scale)
            ran = True
            if code != CHUNK_DONE:
                break
        if not ran:  # no time for an iteration: the start as it is
            state[_ERROR] = _KERNELS['distance'](self.model, target_array, q_array)
        values = state.tolist()
        pressed = tuple(k for k, v in enumerate(values[_STATE:]) if v)
        return (q_array.tolist(), values[_ERROR], int(values[_ITERATIONS]), code,
                values[_MINIMUM] != 0.0, pressed)

    def stretch(self, target_array: np.ndarray, q: Sequence[float], from_base: bool
                ) -> List[float]:
        """:meth:`ClosestPose.stretch` in the kernel (the target an array)."""
        q_array = np.array(q, dtype=float)
        _KERNELS['stretch'](self.model, target_array, q_array, from_base)
        return q_array.tolist()

    def distance(self, target_array: np.ndarray, q: Sequence[float]) -> float:
        """The tip's distance [m] from the target at ``q``."""
        return _KERNELS['distance'](self.model, target_array, np.array(q, dtype=float))

    @staticmethod
    def nearest(samples, target_array: np.ndarray, count: int, spacing: float
                ) -> List[List[float]]:
        """:meth:`~ik_node.solvers.out_of_reach.tip_sample.TipSample.starts` in the kernel:
        the configurations of the ``count`` sample tips nearest the target, each differing
        from those before by more than ``spacing``."""
        out = np.empty(count, np.int64)
        kept = _KERNELS['nearest'](samples.tips, samples.q, target_array, count, spacing, out)
        return samples.q[out[:kept]].tolist()
