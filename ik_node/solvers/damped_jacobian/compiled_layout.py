"""What damped_jacobian's compiled descents and the Python side that drives them share: the exit
codes of a descent, the columns of a chain's model array, the entries of a descent's state array,
the named structures the kernels take (:class:`DescentSettings`, :class:`Problem`,
:class:`Descent`, :class:`Restarts`, :class:`TreeProblem`), the size of a descent's scratch, and
the loaded kernels.

The kernels are in :mod:`.compiled`, which calls :func:`work_size` and :func:`scratch_size`
(compiled in place by :func:`compile`, which it runs first: numba's cache checks a kernel's own
file only, so after editing this module remove the cached files ``__pycache__/*.nbi``,
``*.nbc``, or run ``warm`` from a clean checkout); the Python side is in :mod:`.compiled_runs`
and :mod:`.tree_runs`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

import ik_node.kernels as kernels

# Exit codes of a descent (the kernel's, and TIMEOUT and GOOD_ENOUGH of descent.py).
CONVERGED = 0
STUCK = 1
ITERATION_CAP = 2
CHUNK_DONE = 3
TIMEOUT = 4  # the budget is spent (set by compiled_runs.DescentRun.descend, not the kernel)
BAD_INPUT = 5  # _first_pose: an input the general path refuses (with its message)
NEED_DRAWS = 6  # _descend_restarts: more batches of restart numbers needed
GOOD_ENOUGH = -1  # position only, within tolerance of the proven bound (descent.GOOD_ENOUGH)

#: Near a stream's seed: the stall factor (descent.STREAM_STALL_FACTOR) and the null-space
#: projector's relative damping (descent._NULL_SPACE_DAMPING); a test keeps them equal.
STREAM_STALL_FACTOR = 0.7
NULL_SPACE_DAMPING = 1e-9

# Columns of the model array: 0-11 the joint's constant 3 x 4 transform (row-major), then:
(_LOW, _HIGH, _PRISMATIC, _WRAPS, _BOUNDED, _CENTRED, _MIDDLE, _INVERSE_HALF) = range(12, 20)
# (_PRISMATIC: fk.PRISMATIC, a test keeps them equal)
_MODEL_COLUMNS = 20
# Entries of a descent's state array, kept between the kernel's calls; _POSITION_ERROR and
# _ANGLE_ERROR: the errors of the last iterate, measured by the kernel's FK [m, rad].
# _TURNS: 1 when :func:`_first_pose` converged with a full-turn joint more than half a turn from
# its seed (the answer is then turned nearest the seed and measured again). _RESTARTS, _DRAWS,
# _DECIDE_AT, _IN_DESCENT: :func:`_descend_restarts`'s count of restarts, of batches of restart
# numbers used, the count at which a stuck descent goes back to Python, and whether a descent is
# under way.
(_LAM, _ITERATIONS, _LAST_BLOCKED, _STALL_COST, _STALL_ITERATION, _BEST_COST, _STALL_NOW,
 _NEAR, _FLOOR, _GOOD, _KEEP_BEST, _PULL, _FRESH, _POSITION_ERROR, _ANGLE_ERROR,
 _TURNS, _RESTARTS, _DRAWS, _DECIDE_AT, _IN_DESCENT) = range(20)
_STATE = 20


class DescentSettings(NamedTuple):
    """The settings of a descent, as the kernels read them: every field a float (numba types
    the tuple once and caches the kernels for it; :meth:`as_floats` makes them so). Flags are
    1.0 or 0.0; counts are whole floats."""

    w2: float = 0.0                        # orientation_weight squared [m^2/rad^2]
    tol_p: float = 0.0                     # position tolerance, with its margin [m]
    tol_r: float = 0.0                     # orientation tolerance, with its margin [rad]
    lambda_min: float = 0.0                # damping bounds and factors (dls_settings)
    lambda_max: float = 0.0
    lambda_down: float = 0.0
    lambda_up: float = 0.0
    stall_iterations: float = 0.0          # the stall window, and with joints sitting out
    stall_iterations_blocked: float = 0.0
    stall_factor: float = 0.0              # the stall factor, and with joints sitting out
    max_step: float = 0.0                  # the largest step of a joint [rad or m]
    max_iterations: float = 0.0
    orientation: float = 0.0               # 1.0: a pose target
    dual: float = 0.0                      # 1.0: the dual (3 x 3) system
    null_space: float = 0.0                # 1.0: a stream's first step pulls from the limits
    null_gain: float = 0.0
    stream_cost: float = 0.0               # a stream's seed is near within this cost [m^2]
    stream_stall: float = 0.0              # the stall factor near a stream's seed
    null_damping: float = 0.0              # the null-space projector's relative damping
    factor_max: float = 0.0                # the pull's largest factor (null_space.FACTOR_MAX)
    damping: float = 0.0                   # the first damping [m^2]
    stall_factor_blocked: float = 0.0

    def as_floats(self) -> 'DescentSettings':
        """These settings with every field a float."""
        return DescentSettings(*(float(v) for v in self))


class Problem(NamedTuple):
    """One solve's chain and target as :func:`_first_pose` reads them (unchecked input)."""

    model: np.ndarray     # (n + 1) x _MODEL_COLUMNS: the serial model
    position: np.ndarray  # the target position [m], 3 floats
    quat: np.ndarray      # the target orientation (x, y, z, w), or empty: a position target
    floor: float          # the squared proven residual [m^2] (0.0: none)


class Descent(NamedTuple):
    """A descent's arrays, which the kernels update in place."""

    target: np.ndarray   # 12: the target position [m], then its rotation (row-major)
    q: np.ndarray        # n: the iterate
    best_q: np.ndarray   # n: the best configuration so far
    state: np.ndarray    # _STATE: what a descent keeps between calls
    scratch: np.ndarray  # scratch_size(n): the work arrays


class Restarts(NamedTuple):
    """The restart candidates of :func:`_descend_restarts`: ``low + span * batches[b, c]``."""

    batches: np.ndarray  # (batches, candidates, n): uniform numbers in [0, 1)
    low: np.ndarray      # n
    span: np.ndarray     # n


class TreeProblem(NamedTuple):
    """A tree's targeted tips, as the tree kernels read them."""

    model: np.ndarray    # the tips' serial models, stacked (rows: see tree_runs.TreeKernel._plan)
    tips: np.ndarray     # per tip: _TIP_ROW, _TIP_JOINTS, _TIP_ORIENTATION, _TIP_WEIGHT, ...
    columns: np.ndarray  # per tip's joint: its active column
    targets: np.ndarray  # per tip: 12 floats as Descent.target


def available() -> bool:
    """Whether the compiled path may serve (:func:`ik_node.kernels.available`)."""
    return kernels.available()


def work_size(n):
    """The floats of a :class:`_Work`."""
    return 27 + 20 * n + n * n


def scratch_size(n):
    """The floats of one descent's scratch: its :class:`_Work`, then its two step systems
    (``A``, ``b`` of at most max(n, 3) rows each)."""
    return work_size(n) + 2 * max(n, 3) * (n + 1)


# Columns of a tree's tips array: per targeted tip its first row in the tree's model array, its
# joint count, whether it has an orientation target, its weight, its first entry in the columns
# array (the active column of each of its path's joints).
_TIP_ROW, _TIP_JOINTS, _TIP_ORIENTATION, _TIP_WEIGHT, _TIP_COLUMNS = range(5)

#: The loaded kernels by name (filled by :func:`.compiled.compile`).
_KERNELS = {}


_COMPILED = []


def compile() -> None:  # noqa: A001 - the kernel modules' entry point is named so
    """Compile :func:`work_size` and :func:`scratch_size` in place (or load them from numba's
    cache on disk), once."""
    if not _COMPILED:
        kernels.jitted(globals(), ('work_size', 'scratch_size'), ())
        _COMPILED.append(True)
