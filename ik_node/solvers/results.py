"""What a solve returns: :class:`IkStatus`, :class:`IkResult` with its per-tip
:class:`TipResult`, and the solver-side :class:`RawSolution` that the base class measures.

Re-exported by :mod:`ik_node.solvers.base`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

import numpy as np


class IkStatus(enum.Enum):
    """Why a solve stopped. ``.value`` is the string shown in diagnostics and JSON."""

    CONVERGED = 'converged'            # measured error within tolerance
    UNREACHABLE = 'unreachable'        # provably out of reach (min_residual > tolerance)
    NOT_REACHED = 'not_reached'        # the closest pose found, out of reach not proven
    JOINT_LIMITED = 'joint_limited'    # geometrically reachable but not within joint limits
    MAX_ITERATIONS = 'max_iterations'  # ran out of iterations above tolerance
    TIMEOUT = 'timeout'                # ran out of time above tolerance
    DEGENERATE = 'degenerate'          # target on a singular direction: a representative pose
    IN_COLLISION = 'in_collision'      # reached only in collision: the best collision-free pose


#: The status of a solve of several tips, from its tips' statuses: the first of these that a
#: tip has (a tip proven out of reach makes the set of targets out of reach), else converged.
_COMBINED_ORDER = (IkStatus.UNREACHABLE, IkStatus.IN_COLLISION, IkStatus.NOT_REACHED,
                   IkStatus.JOINT_LIMITED,
                   IkStatus.TIMEOUT, IkStatus.MAX_ITERATIONS, IkStatus.DEGENERATE)


def combined_status(statuses: Iterable[IkStatus]) -> IkStatus:
    """The status of a solve of several tips given each targeted tip's status.

    ``converged`` only when every tip converged; a tip proven out of reach makes the whole set
    ``unreachable`` (the proof holds for the set); then a tip's closest pose found
    (``not_reached``), joint limits, time, iterations; a
    ``degenerate`` tip among reached ones makes the set ``degenerate``.
    """
    present = set(statuses)
    for status in _COMBINED_ORDER:
        if status in present:
            return status
    return IkStatus.CONVERGED


@dataclass(frozen=True)
class TipResult:
    """Per-tip outcome of a solve of several tips (``solve(targets=...)``).

    Attributes:
        reachable: the tip's measured errors are within the tolerances.
        position_error: FK-measured distance of the tip from its target [m].
        min_residual: proven lower bound of ``position_error`` [m], or None.
        status: why this tip's solve stopped (None only from code that predates per-tip status).
        orientation_error: FK-measured angle to the target orientation [rad]; None for a
            position target (or an orientation ignored by a position-only solver).
        message: what happened to this tip, when there is something to say.
        best_found: the tip missed its target and its pose is only the best the solver found
            (see :attr:`IkResult.best_found`).
    """

    reachable: bool
    position_error: float
    min_residual: Optional[float] = None
    status: Optional[IkStatus] = None
    orientation_error: Optional[float] = None
    message: str = ''
    best_found: bool = False

    @property
    def excess_bound(self) -> Optional[float]:
        """See :attr:`IkResult.excess_bound`."""
        return _excess_bound(self)

    def as_dict(self) -> Dict[str, Any]:
        """A JSON-ready dict of the fields."""
        return {'reachable': self.reachable, 'position_error': self.position_error,
                'min_residual': self.min_residual,
                'status': None if self.status is None else self.status.value,
                'orientation_error': self.orientation_error, 'message': self.message,
                'best_found': self.best_found, 'excess_bound': self.excess_bound}


@dataclass(frozen=True)
class IkResult:
    """The outcome of one solve. ``joint_positions`` are always within the joint limits, and
    each continuous or full-turn revolute joint is at the value of its angle nearest the seed.

    A solve of several tips (``solve(targets=...)``) fills ``tips`` (one :class:`TipResult` per
    targeted tip); ``position_error`` and ``orientation_error`` are then the largest of the tips,
    ``min_residual`` the largest proven bound, ``reachable`` true when every targeted tip is, and
    ``status`` summarises the tips' statuses (:func:`combined_status`).

    ``best_found`` is True when the target is missed and the pose is only the best the solver
    found within its budget: not shown to be the closest pose within the limits (by a closed
    form, a proven bound, the measured reach or the closest-pose search's confirmation; see
    :mod:`ik_node.solvers.out_of_reach.outcome`). False for a reached target and for a pose
    vouched for as the closest. :attr:`excess_bound` says by how much at most it can be farther
    from the target than the closest pose, where a proven bound is known.
    """

    joint_positions: np.ndarray
    joint_names: Tuple[str, ...]
    reachable: bool
    status: IkStatus
    position_error: float
    orientation_error: Optional[float]
    min_residual: Optional[float]
    iterations: int
    solve_time: float
    message: str = ''
    orientation_ignored: bool = False
    history: Optional[Tuple[float, ...]] = None
    tips: Optional[Dict[str, TipResult]] = None
    best_found: bool = False

    @property
    def excess_bound(self) -> Optional[float]:
        """With :attr:`best_found` and a known ``min_residual``: the most [m] by which
        ``position_error`` can exceed the closest pose's error (``position_error -
        min_residual``); else None."""
        return _excess_bound(self)

    def as_dict(self) -> Dict[str, Any]:
        """A JSON-ready dict of the result fields."""
        out = {
            'joint_names': list(self.joint_names),
            'joint_positions': [float(v) for v in self.joint_positions],
            'reachable': self.reachable,
            'status': self.status.value,
            'position_error': self.position_error,
            'orientation_error': self.orientation_error,
            'min_residual': self.min_residual,
            'iterations': self.iterations,
            'solve_time': self.solve_time,
            'message': self.message,
            'orientation_ignored': self.orientation_ignored,
            'best_found': self.best_found,
            'excess_bound': self.excess_bound,
        }
        if self.tips is not None:
            out['tips'] = {k: v.as_dict() for k, v in self.tips.items()}
        return out


@dataclass
class RawSolution:
    """What a solver's ``_solve`` hands back to :meth:`Solver.solve`.

    ``q`` is an (n,) array or a list of n floats (cheaper for a closed-form solver).
    ``tip_residuals`` holds the proven lower bound [m] of each tip of a tree solve that has one.
    ``vouched``: the solver vouches for ``q`` as the closest pose within the limits when the
    target is missed (a closed form, a proven bound, the measured reach, the closest-pose
    search's confirmation); a missed target without it is reported ``best_found``.
    ``measured``: ``(position error [m], orientation error [rad] or None)`` that the solver's own
    FK measured at exactly ``q`` (a compiled kernel's last iterate), or None; the result takes
    them when the joints returned are exactly ``q`` (nothing clipped or turned), else it
    measures.
    """

    q: Union[np.ndarray, List[float]]
    status: IkStatus
    iterations: int
    min_residual: Optional[float] = None
    message: str = ''
    history: Optional[list] = None
    tip_residuals: Dict[str, float] = field(default_factory=dict)
    vouched: bool = False
    measured: Optional[Tuple[float, Optional[float]]] = None


def _excess_bound(result: Union['IkResult', TipResult]) -> Optional[float]:
    if not result.best_found or result.min_residual is None:
        return None
    return max(result.position_error - result.min_residual, 0.0)


_new_object = object.__new__
_set_attribute = object.__setattr__


def new_tip_result(reachable: bool, position_error: float, min_residual: Optional[float],
                   status: Optional[IkStatus], orientation_error: Optional[float],
                   message: str, best_found: bool = False) -> TipResult:
    """``TipResult(...)`` with every field given, without the frozen dataclass's ``__init__``
    (one ``object.__setattr__`` per field: a microsecond per tip of a four-leg solve)."""
    result = _new_object(TipResult)
    _set_attribute(result, '__dict__', {
        'reachable': reachable, 'position_error': position_error, 'min_residual': min_residual,
        'status': status, 'orientation_error': orientation_error, 'message': message,
        'best_found': best_found})
    return result


def new_result(**fields: Any) -> IkResult:
    """``IkResult(**fields)`` with every field given by name, without the frozen dataclass's
    ``__init__`` (one ``object.__setattr__`` per field); the caller names every field."""
    result = _new_object(IkResult)
    _set_attribute(result, '__dict__', fields)
    return result


def honest_status(status: IkStatus, min_residual: Optional[float],
                  tolerance: float) -> IkStatus:
    """The status of a result that missed its target: ``unreachable`` exactly when the proven
    lower bound ``min_residual`` [m] exceeds ``tolerance`` [m]; a solver's own ``unreachable``
    without that proof (its search found no closer pose, or stopped at the measured reach)
    becomes ``not_reached``."""
    if min_residual is not None and min_residual > tolerance:
        return IkStatus.UNREACHABLE
    if status is IkStatus.UNREACHABLE:
        return IkStatus.NOT_REACHED
    return status
