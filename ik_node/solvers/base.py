"""The solver contract: what a solver implements, the result type and the honest wrap around a
solve.

A solver subclasses :class:`Solver` (its target and seed arrive as arrays, ``_solve``) or
:class:`FloatSolver` (as lists of floats, ``_solve_floats``: for a closed-form solver whose whole
solve costs a few small-array operations); both are abstract, so a class that implements
neither hook cannot be built. :meth:`Solver.solve` validates the target once, times the solve,
measures the errors by forward kinematics on the joint positions actually returned, and decides
``reachable`` from those measured errors, never from the solver's own belief. That wrap runs in
plain floats: it is most of a closed-form solve.

Every joint that can take an angle at two values within its limits (continuous joints, revolute
joints spanning a full turn) is returned at the value nearest the seed, whatever whole turns the
solver's own search added (wraps at a +-2 pi limit, random restarts): consecutive solves seeded
with the previous answer do not turn a joint a full turn for the same pose, unless its limits
leave no nearer value (a joint driven past its limit reappears a turn away, at the other end).
"""

from __future__ import annotations

import abc
import enum
import math
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, List, Mapping, Optional, Tuple, Union

import numpy as np

from ik_node.model.chain import Chain, full_turn_joints, nearest_turns
from ik_node.errors import ConfigError, TargetError
# Re-exported: other modules import the input checks and ParamSpec from here.
from ik_node.solvers.input_checks import (FLOAT64, MAX_COORDINATE_M, rotation_error,  # noqa: F401
                                    rotation_from_input, target_from_input, target_values)
from ik_node.solvers.params import COMMON_PARAMS, ParamSpec


class IkStatus(enum.Enum):
    """Why a solve stopped. ``.value`` is the string shown in diagnostics and JSON."""

    CONVERGED = 'converged'            # measured error within tolerance
    UNREACHABLE = 'unreachable'        # provably out of reach: best effort returned
    JOINT_LIMITED = 'joint_limited'    # geometrically reachable but not within joint limits
    MAX_ITERATIONS = 'max_iterations'  # ran out of iterations above tolerance
    TIMEOUT = 'timeout'                # ran out of time above tolerance
    DEGENERATE = 'degenerate'          # target on a singular direction: a representative pose


@dataclass(frozen=True)
class TipResult:
    """Per-tip outcome of a multi-target (branched) solve."""

    reachable: bool
    position_error: float
    min_residual: Optional[float] = None


@dataclass(frozen=True)
class IkResult:
    """The outcome of one solve. ``joint_positions`` are always within the joint limits, and
    each continuous or full-turn revolute joint is at the value of its angle nearest the seed."""

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
        }
        if self.tips is not None:
            out['tips'] = {k: {'reachable': v.reachable, 'position_error': v.position_error,
                               'min_residual': v.min_residual} for k, v in self.tips.items()}
        return out


@dataclass
class RawSolution:
    """What a solver's ``_solve`` hands back to :meth:`Solver.solve`.

    ``q`` is an (n,) array or a list of n floats (cheaper for a closed-form solver).
    """

    q: Union[np.ndarray, List[float]]
    status: IkStatus
    iterations: int
    min_residual: Optional[float] = None
    message: str = ''
    history: Optional[list] = None
    tip_residuals: Dict[str, float] = field(default_factory=dict)


class Solver(abc.ABC):
    """The contract of a solver: what a subclass declares, what it implements, what it may add.

    Declares (class attributes):
        name: the registry name, the value of the ``solver`` parameter.
        PARAMS: its own :class:`ParamSpec` by parameter name; the common ones
            (:data:`~ik_node.solvers.params.COMMON_PARAMS`) are added to them.
        supports_orientation: False for a position-only solver (an orientation given to it is
            ignored, and the result says so).

    Implements:
        ``_solve(p_target, R_target, q_seed) -> RawSolution`` (abstract), or, through
        :class:`FloatSolver`, ``_solve_floats`` on lists of floats. It sees only checked input
        (a finite target, a rotation matrix or None, a seed within the limits) and returns its
        joint positions and a status; :meth:`solve` measures the errors, clips into the limits,
        chooses whole turns and corrects a status the measurement contradicts.

    May add:
        ``check_chain(chain)``: raise :class:`~ik_node.errors.ChainError` for a chain it cannot
        solve; ``_check_param_combination(params)``: checks across parameters;
        ``reach_envelope(tip) -> (centre, r_min, r_max)``: an exact reach shell, drawn by the
        node's envelope marker when present.

    Parameters are validated once, in ``__init__``, by :meth:`validate_params` (each value
    against its spec, then :meth:`_check_param_combination`): a solver reads ``self.params``
    and never checks a value again. The configuration layer calls the same
    :meth:`validate_params` to refuse a file before any chain is built. A target out of reach
    that a solver hands to the closest-pose search gets its status and message from the one
    table of :mod:`ik_node.solvers.out_of_reach.outcome`.
    """

    name: ClassVar[str] = ''
    #: The solver's own parameters (the common ones are added automatically).
    PARAMS: ClassVar[Dict[str, ParamSpec]] = {}
    #: False for position-only solvers: an orientation given to them is ignored and said so.
    supports_orientation: ClassVar[bool] = True

    def __init__(self, chain: Chain, params: Optional[Mapping[str, Any]] = None):
        self.chain = chain
        self.params = self.validate_params(params)
        self.check_chain(chain)
        self._q_mid = chain.mid_configuration()
        self._lower_list = chain.lower.tolist()
        self._upper_list = chain.upper.tolist()
        self._shape = (chain.n,)
        self._fast_kinematics = chain.fast_kinematics  # None for a tree
        self._takes_floats = _defined_last(type(self), ('_solve_floats', '_solve')) == \
            '_solve_floats'
        self._joint_names = tuple(chain.joint_names)
        self._turn_joints = full_turn_joints(chain)
        self._plane = _motion_plane(chain)
        self._tol_p = self.params['position_tolerance']
        self._tol_r = self.params['orientation_tolerance']

    # -------------------------------------------------------------------------- parameters
    @classmethod
    def param_specs(cls) -> Dict[str, ParamSpec]:
        """Every parameter this solver takes, common ones first."""
        return {**COMMON_PARAMS, **cls.PARAMS}

    @classmethod
    def default_params(cls) -> Dict[str, Any]:
        """Defaults of :meth:`param_specs`."""
        return {k: s.default for k, s in cls.param_specs().items()}

    @classmethod
    def validate_params(cls, params: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
        """Defaults overlaid with ``params``, each validated. Raises :class:`ConfigError`."""
        specs = cls.param_specs()
        out = cls.default_params()
        for key, value in (params or {}).items():
            if key not in specs:
                raise ConfigError(f'unknown parameter {key!r} for solver {cls.name!r}. '
                                  f'Valid parameters: {", ".join(sorted(specs))}')
            out[key] = specs[key].validate(key, value)
        cls._check_param_combination(out)
        return out

    @classmethod
    def _check_param_combination(cls, params: Dict[str, Any]) -> None:
        """Optional hook for checks across parameters; raise :class:`ConfigError`. By default
        every combination of valid values is accepted."""
        return None

    def check_chain(self, chain: Chain) -> None:
        """Optional hook: raise :class:`ChainError` if the solver cannot work on this chain. By
        default every chain is accepted."""
        return None

    # ------------------------------------------------------------------------------ solving
    def solve(self, target_position, target_orientation=None, seed=None) -> IkResult:
        """Solve for a tip position [m] (base frame) and optional orientation (x, y, z, w).

        Args:
            target_position: (3,) tip position in the base frame [m].
            target_orientation: unit quaternion (x, y, z, w), or None for position only. It is
                normalised; a zero or non-finite quaternion raises :class:`TargetError`.
            seed: (n,) start configuration, clipped into the limits; None = the mid configuration.
                The result's continuous and full-turn joints are the values nearest it.

        Returns:
            An :class:`IkResult` whose errors are measured by FK on the returned joint positions.
        """
        p_list = target_values(target_position)
        R_target = None
        if target_orientation is not None:
            R_target = rotation_from_input(target_orientation)
        q_seed_list = self._seed_values(seed)
        ignored = R_target is not None and not self.supports_orientation
        if ignored:
            R_target = None
        if self._takes_floats:
            start = time.perf_counter()
            raw = self._solve_floats(p_list, R_target, q_seed_list)
        else:
            p_target, q_seed = np.array(p_list), np.array(q_seed_list)
            start = time.perf_counter()
            raw = self._solve(p_target, R_target, q_seed)
        elapsed = time.perf_counter() - start
        return self._finish(raw, p_list, R_target, elapsed, ignored, q_seed_list)

    # solve() calls the hook its most derived class defines (_solve_floats if a class defines
    # both), so a subclass of a FloatSolver may override _solve and call super(): FloatSolver's
    # _solve converts and calls _solve_floats.
    @abc.abstractmethod
    def _solve(self, p_target: np.ndarray, R_target: Optional[np.ndarray],
               q_seed: np.ndarray) -> RawSolution:
        """The solve proper: target position (3,) [m], rotation (3, 3) or None, seed (n,),
        both within the checks of :meth:`solve`. Errors are measured afterwards."""

    def _seed_from_input(self, seed) -> np.ndarray:
        """The seed as an (n,) array within the limits, or :class:`TargetError`."""
        return np.array(self._seed_values(seed))

    def _seed_values(self, seed) -> List[float]:
        """The seed as a list of n floats within the limits (clipped), or :class:`TargetError`.

        None is the mid configuration. NaN, inf and a wrong number of values are refused.
        """
        if seed is None:
            return self._q_mid.tolist()
        if type(seed) is np.ndarray and seed.dtype is FLOAT64 and seed.shape == self._shape:
            values = seed.tolist()  # the common case (the previous answer): no conversion
        else:
            try:
                values = np.asarray(seed, dtype=float).reshape(-1).tolist()
            except (TypeError, ValueError) as exc:
                raise TargetError(f'seed {seed!r} is not numeric') from exc
            if len(values) != self.chain.n:
                raise TargetError(f'seed has {len(values)} values; the chain has '
                                  f'{self.chain.n} joints ({", ".join(self.chain.joint_names)})')
        # A finite sum proves every value finite (one inf or NaN makes the sum inf or NaN); a
        # sum that overflows needs the value-by-value check.
        if not math.isfinite(sum(values)) and not all(math.isfinite(v) for v in values):
            raise TargetError(f'seed contains NaN or inf: {values}')
        return _clip(values, self._lower_list, self._upper_list)

    def _near_seed(self, q_list: list, q_seed) -> list:
        """``q_list`` (finite, within limits) with whole turns chosen nearest ``q_seed`` (a list
        of floats or an array)."""
        if not self._turn_joints:
            return q_list
        if isinstance(q_seed, np.ndarray):
            q_seed = q_seed.tolist()
        return nearest_turns(q_list, q_seed, self._lower_list, self._upper_list,
                             self._turn_joints)

    def _finish(self, raw: RawSolution, p_target: List[float], R_target: Optional[np.ndarray],
                elapsed: float, orientation_ignored: bool, q_seed: List[float]) -> IkResult:
        """The result of ``raw``: joints clipped into the limits and turned nearest the seed,
        then every error measured by FK on exactly those joints.

        Plain floats throughout: for 2-7 joints each small numpy operation would cost about as
        much as the whole float computation (this runs after every solve).
        """
        tol_p, tol_r = self._tol_p, self._tol_r
        q_raw = raw.q
        if type(q_raw) is np.ndarray and q_raw.dtype is FLOAT64:
            q_raw = q_raw.tolist()
        elif type(q_raw) is not list:
            q_raw = np.asarray(q_raw, dtype=float).reshape(-1).tolist()
        q_list = _clip(q_raw, self._lower_list, self._upper_list)
        if q_list is None or not math.isfinite(sum(q_list)):  # a solver bug never gets out
            q_list = self._q_mid.tolist()
            raw.status, raw.message = IkStatus.MAX_ITERATIONS, 'solver produced NaN; reset'
        if self._turn_joints:
            q_list = self._near_seed(q_list, q_seed)
        q = np.array(q_list, FLOAT64)
        fast = self._fast_kinematics
        R = None
        if fast is None:
            T = self.chain.fk(q)
            p = T[:3, 3].tolist()
            R = T[:3, :3].tolist()
        elif R_target is None:  # serial chain, position only: the tip position in floats
            p = fast.position(q_list)
        else:  # serial chain: FK in floats, no 4x4 array
            p, R_flat = fast.pose(q_list)
            R = [R_flat[0:3], R_flat[3:6], R_flat[6:9]]
        tx, ty, tz = p_target
        dx, dy, dz = p[0] - tx, p[1] - ty, p[2] - tz
        pos_err = math.sqrt(dx * dx + dy * dy + dz * dz)
        rot_err = None if R_target is None else rotation_error(R, R_target)
        reached = pos_err <= tol_p and (rot_err is None or rot_err <= tol_r)
        status = raw.status
        if reached and status is not IkStatus.DEGENERATE:
            status = IkStatus.CONVERGED
        elif not reached and (status is IkStatus.CONVERGED or status is IkStatus.DEGENERATE):
            status = IkStatus.MAX_ITERATIONS
        min_residual = raw.min_residual
        if not reached and self._plane is not None:
            # Every joint turns about parallel axes: the tip never leaves its plane, so the
            # target's distance from that plane is a proven bound.
            (nx, ny, nz), offset = self._plane
            off_plane = abs(nx * tx + ny * ty + nz * tz - offset)
            if min_residual is None or off_plane > min_residual:
                min_residual = off_plane
        if not reached and min_residual is not None and min_residual > tol_p:
            status = IkStatus.UNREACHABLE
        history = raw.history
        return _new_result(
            q, self._joint_names, reached, status, pos_err, rot_err,
            min_residual, int(raw.iterations), elapsed, raw.message, orientation_ignored,
            None if history is None else tuple(float(e) for e in history))


class FloatSolver(Solver):
    """A solver that works in plain floats: it implements :meth:`_solve_floats`, and
    :meth:`Solver.solve` hands it the target position and the seed as lists (no round trip
    through small arrays, which for a closed-form solve would cost about as much as the solve)."""

    @abc.abstractmethod
    def _solve_floats(self, p_target: List[float], R_target: Optional[np.ndarray],
                      q_seed: List[float]) -> RawSolution:
        """:meth:`Solver._solve` with the target position and the seed as lists of floats. The
        lists are read, never changed: :meth:`Solver._finish` uses the same seed afterwards."""

    def _solve(self, p_target: np.ndarray, R_target: Optional[np.ndarray],
               q_seed: np.ndarray) -> RawSolution:
        """:meth:`_solve_floats` on arrays (for a subclass that overrides :meth:`_solve` and
        calls ``super()``)."""
        return self._solve_floats(p_target.tolist(), R_target, q_seed.tolist())


def _defined_last(cls: type, names: Tuple[str, ...]) -> Optional[str]:
    """Which of ``names`` the most derived class below :class:`Solver` defines, or None."""
    for klass in cls.__mro__:
        if klass is Solver:
            break
        for name in names:
            if name in vars(klass):
                return name
    return None


def _clip(values: List[float], lower: List[float], upper: List[float]) -> Optional[List[float]]:
    """``values`` clipped into ``[lower, upper]`` element-wise (an infinite value beyond a finite
    limit becomes the limit); None if one is NaN. ``values`` itself when all are within.

    Comparisons rather than ``min(max(...))``: a third of the time for a handful of joints.
    """
    for v, lo, hi in zip(values, lower, upper):
        if not lo <= v <= hi:
            break
    else:
        return values  # the common case: nothing to clip
    out = []
    append = out.append
    for v, lo, hi in zip(values, lower, upper):
        if lo <= v <= hi:
            append(v)
        elif v < lo:
            append(lo)
        elif v > hi:
            append(hi)
        else:  # NaN: compares false with everything
            return None
    return out


_new_object = object.__new__
_set_attribute = object.__setattr__


def _new_result(joint_positions: np.ndarray, joint_names: Tuple[str, ...], reachable: bool,
                status: IkStatus, position_error: float, orientation_error: Optional[float],
                min_residual: Optional[float], iterations: int, solve_time: float,
                message: str, orientation_ignored: bool,
                history: Optional[Tuple[float, ...]]) -> IkResult:
    """``IkResult(...)`` with every field given, built without the frozen dataclass's
    ``__init__``: that one calls ``object.__setattr__`` once per field, a noticeable share of
    a closed-form solve.

    The same object: ``test_base.py`` checks it equals the one ``IkResult(...)`` builds.
    """
    result = _new_object(IkResult)
    _set_attribute(result, '__dict__', {
        'joint_positions': joint_positions, 'joint_names': joint_names, 'reachable': reachable,
        'status': status, 'position_error': position_error,
        'orientation_error': orientation_error, 'min_residual': min_residual,
        'iterations': iterations, 'solve_time': solve_time, 'message': message,
        'orientation_ignored': orientation_ignored, 'history': history, 'tips': None})
    return result


def _motion_plane(chain: Chain):
    """``((nx, ny, nz), offset)`` when the chain is serial and every joint is revolute about
    parallel axes: the tip then moves in the plane ``n . p = offset`` (base frame). Else None."""
    if chain.n < 1 or not chain.is_serial or len(chain.tip_links) != 1 or \
            any(j.is_prismatic for j in chain.joints):
        return None
    q0 = np.zeros(chain.n)
    frames = chain.joint_frames(q0)
    axes = np.array([frames[i, :3, :3] @ chain.joints[i].axis for i in range(chain.n)])
    n = axes[0] / np.linalg.norm(axes[0])
    if not np.all(np.abs(np.abs(axes @ n) - np.linalg.norm(axes, axis=1)) < 1e-9):
        return None
    p_tip = chain.fk(q0)[:3, 3]
    return tuple(float(v) for v in n), float(n @ p_tip)
