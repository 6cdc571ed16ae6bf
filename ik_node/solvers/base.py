"""What every solver shares: parameters, the result type and the honest wrap around a solve.

A solver subclasses :class:`Solver`, declares its own parameters in ``PARAMS`` and implements
``_solve``. :meth:`Solver.solve` validates the target once, times the solve, measures the errors
by forward kinematics on the joint positions actually returned, and decides ``reachable`` from
those measured errors, never from the solver's own belief.

Every joint that can take an angle at two values within its limits (continuous joints, revolute
joints spanning a full turn) is returned at the value nearest the seed, whatever whole turns the
solver's own search added (wraps at a +-2 pi limit, random restarts): consecutive solves seeded
with the previous answer do not turn a joint a full turn for the same pose, unless its limits
leave no nearer value (a joint driven past its limit reappears a turn away, at the other end).
"""

from __future__ import annotations

import enum
import math
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, Mapping, Optional, Tuple

import numpy as np

from ik_node.chain import Chain, full_turn_joints, nearest_turns
from ik_node.errors import ConfigError, TargetError

#: Coordinates beyond this magnitude [m] are refused as nonsense rather than solved.
MAX_COORDINATE_M = 1e6


class IkStatus(enum.Enum):
    """Why a solve stopped. ``.value`` is the string shown in diagnostics and JSON."""

    CONVERGED = 'converged'            # measured error within tolerance
    UNREACHABLE = 'unreachable'        # provably out of reach: best effort returned
    JOINT_LIMITED = 'joint_limited'    # geometrically reachable but not within joint limits
    MAX_ITERATIONS = 'max_iterations'  # ran out of iterations above tolerance
    TIMEOUT = 'timeout'                # ran out of time above tolerance
    DEGENERATE = 'degenerate'          # target on a singular direction: a representative pose


@dataclass(frozen=True)
class ParamSpec:
    """One solver parameter: type, default, valid range or choices, unit and meaning."""

    type: type
    default: Any
    description: str
    unit: str = ''
    min: Optional[float] = None
    max: Optional[float] = None
    min_inclusive: bool = True
    choices: Tuple[str, ...] = ()

    def validate(self, name: str, value: Any) -> Any:
        """Return ``value`` converted to the parameter's type, or raise :class:`ConfigError`."""
        if self.type is bool:
            if not isinstance(value, (bool, np.bool_)):
                raise ConfigError(f'parameter {name!r} must be true or false, got {value!r}')
            return bool(value)
        if self.type is str:
            if not isinstance(value, str):
                raise ConfigError(f'parameter {name!r} must be a string, got {value!r}')
            if self.choices and value not in self.choices:
                raise ConfigError(f'parameter {name!r} = {value!r} is not one of: '
                                  f'{", ".join(self.choices)}')
            return value
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
            raise ConfigError(f'parameter {name!r} must be a number, got {value!r}')
        if self.type is int:
            if float(value) != int(value):
                raise ConfigError(f'parameter {name!r} must be a whole number, got {value!r}')
            value = int(value)
        else:
            value = float(value)
        if not math.isfinite(value):
            raise ConfigError(f'parameter {name!r} must be finite, got {value!r}')
        if self.min is not None and (value < self.min or
                                     (value == self.min and not self.min_inclusive)):
            raise ConfigError(f'parameter {name!r} = {value!r} is out of range: '
                              f'{self.range_text()}')
        if self.max is not None and value > self.max:
            raise ConfigError(f'parameter {name!r} = {value!r} is out of range: '
                              f'{self.range_text()}')
        return value

    def range_text(self) -> str:
        """The valid range as text, e.g. ``'> 0'``, ``'1 .. 100000'``, ``'forward | backward'``."""
        if self.choices:
            return ' | '.join(self.choices)
        if self.min is not None and self.max is not None:
            left = '[' if self.min_inclusive else '('
            return f'{left}{self.min:g}, {self.max:g}]'
        if self.min is not None:
            return f'{">=" if self.min_inclusive else ">"} {self.min:g}'
        return 'any'


#: Parameters every solver takes.
COMMON_PARAMS: Dict[str, ParamSpec] = {
    'position_tolerance': ParamSpec(float, 1e-5, 'tip position error counted as reached', 'm',
                                    min=0.0, max=1.0, min_inclusive=False),
    'orientation_tolerance': ParamSpec(float, 1e-4, 'tip orientation error counted as reached',
                                       'rad', min=0.0, max=math.pi, min_inclusive=False),
    'max_iterations': ParamSpec(int, 100, 'iteration cap of one solve', '', min=1, max=1_000_000),
    'record_history': ParamSpec(bool, False, 'keep the position error of every iteration in '
                                'result.history (for plots; slows the solve)'),
}


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
    """What a solver's ``_solve`` hands back to :meth:`Solver.solve`."""

    q: np.ndarray
    status: IkStatus
    iterations: int
    min_residual: Optional[float] = None
    message: str = ''
    history: Optional[list] = None
    tip_residuals: Dict[str, float] = field(default_factory=dict)


class Solver:
    """Base class of the solvers. Subclasses set ``name``, ``PARAMS`` and implement ``_solve``."""

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
        self._joint_names = tuple(chain.joint_names)
        self._turn_joints = full_turn_joints(chain)
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
        """Hook for checks across parameters; raise :class:`ConfigError`."""

    def check_chain(self, chain: Chain) -> None:
        """Raise :class:`ChainError` if the solver cannot work on this chain."""

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
        p_target = target_from_input(target_position)
        R_target = None
        if target_orientation is not None:
            R_target = rotation_from_input(target_orientation)
        q_seed = self._seed_from_input(seed)
        ignored = R_target is not None and not self.supports_orientation
        if ignored:
            R_target = None
        start = time.perf_counter()
        raw = self._solve(p_target, R_target, q_seed)
        elapsed = time.perf_counter() - start
        return self._finish(raw, p_target, R_target, elapsed, ignored, q_seed)

    def _solve(self, p_target: np.ndarray, R_target: Optional[np.ndarray],
               q_seed: np.ndarray) -> RawSolution:
        raise NotImplementedError

    def _seed_from_input(self, seed) -> np.ndarray:
        if seed is None:
            return self._q_mid.copy()
        try:
            values = np.asarray(seed, dtype=float).reshape(-1).tolist()
        except (TypeError, ValueError) as exc:
            raise TargetError(f'seed {seed!r} is not numeric') from exc
        if len(values) != self.chain.n:
            raise TargetError(f'seed has {len(values)} values; the chain has {self.chain.n} '
                              f'joints ({", ".join(self.chain.joint_names)})')
        if not all(math.isfinite(v) for v in values):
            raise TargetError(f'seed contains NaN or inf: {values}')
        return np.array([min(max(v, lo), hi) for v, lo, hi in
                         zip(values, self._lower_list, self._upper_list)])

    def _near_seed(self, q_list: list, q_seed: np.ndarray) -> list:
        """``q_list`` (finite, within limits) with whole turns chosen nearest ``q_seed``."""
        if not self._turn_joints:
            return q_list
        return nearest_turns(q_list, q_seed.tolist(), self._lower_list, self._upper_list,
                             self._turn_joints)

    def _finish(self, raw: RawSolution, p_target: np.ndarray, R_target: Optional[np.ndarray],
                elapsed: float, orientation_ignored: bool, q_seed: np.ndarray) -> IkResult:
        tol_p, tol_r = self._tol_p, self._tol_r
        # Plain floats: for 3-7 joints this is several times cheaper than numpy reductions.
        q_raw = raw.q.tolist() if isinstance(raw.q, np.ndarray) else \
            np.asarray(raw.q, dtype=float).tolist()
        q_list = [min(max(float(v), lo), hi) for v, lo, hi in
                  zip(q_raw, self._lower_list, self._upper_list)]
        if not math.isfinite(sum(q_list)):  # NaN/inf anywhere: a solver bug never gets out
            q_list = self._q_mid.tolist()
            raw.status, raw.message = IkStatus.MAX_ITERATIONS, 'solver produced NaN; reset'
        q_list = self._near_seed(q_list, q_seed)
        q = np.array(q_list)
        fast = self.chain.fast_kinematics
        if fast is not None:  # serial chain: FK in floats, no 4x4 array
            p, R_flat = fast.pose(q_list)
            R = [R_flat[0:3], R_flat[3:6], R_flat[6:9]]
        else:
            T = self.chain.fk(q)
            p, R = T[:3, 3].tolist(), T[:3, :3].tolist()
        tx, ty, tz = p_target.tolist()
        dx, dy, dz = p[0] - tx, p[1] - ty, p[2] - tz
        pos_err = math.sqrt(dx * dx + dy * dy + dz * dz)
        rot_err = None if R_target is None else rotation_error(R, R_target)
        reached = pos_err <= tol_p and (rot_err is None or rot_err <= tol_r)
        status = raw.status
        if reached and status is not IkStatus.DEGENERATE:
            status = IkStatus.CONVERGED
        elif not reached and status in (IkStatus.CONVERGED, IkStatus.DEGENERATE):
            status = IkStatus.MAX_ITERATIONS
        if not reached and raw.min_residual is not None and raw.min_residual > tol_p:
            status = IkStatus.UNREACHABLE
        return IkResult(
            joint_positions=q, joint_names=self._joint_names, reachable=reached,
            status=status, position_error=pos_err, orientation_error=rot_err,
            min_residual=raw.min_residual, iterations=int(raw.iterations), solve_time=elapsed,
            message=raw.message, orientation_ignored=orientation_ignored,
            history=None if raw.history is None else tuple(float(e) for e in raw.history))


# ---------------------------------------------------------------------------- input checking
def target_from_input(target_position) -> np.ndarray:
    """A (3,) finite float array, or :class:`TargetError` naming the bad value."""
    try:
        values = np.asarray(target_position, dtype=float).reshape(-1).tolist()
    except (TypeError, ValueError) as exc:
        raise TargetError(f'target position {target_position!r} is not numeric') from exc
    if len(values) != 3:
        raise TargetError(f'target position must have 3 values (x, y, z), got {len(values)}')
    x, y, z = values
    if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
        raise TargetError(f'target position contains NaN or inf: {values}')
    if max(abs(x), abs(y), abs(z)) > MAX_COORDINATE_M:
        raise TargetError(f'target position {values} is beyond {MAX_COORDINATE_M:g} m')
    return np.array(values)


def rotation_from_input(quat_xyzw) -> np.ndarray:
    """3x3 rotation of a quaternion (x, y, z, w), normalised; :class:`TargetError` if invalid."""
    try:
        values = np.asarray(quat_xyzw, dtype=float).reshape(-1).tolist()
    except (TypeError, ValueError) as exc:
        raise TargetError(f'orientation {quat_xyzw!r} is not numeric') from exc
    if len(values) != 4:
        raise TargetError(f'orientation must be a quaternion (x, y, z, w), got {len(values)} '
                          'values')
    if not all(math.isfinite(v) for v in values):
        raise TargetError(f'orientation quaternion contains NaN or inf: {values}')
    x, y, z, w = values
    norm = math.sqrt(x * x + y * y + z * z + w * w)
    if norm < 1e-6:
        raise TargetError(f'orientation quaternion {values} has zero length')
    x, y, z, w = x / norm, y / norm, z / norm, w / norm
    # The unit-quaternion rotation matrix, in floats (transforms3d.quaternions.quat2mat's formula).
    return np.array([
        [1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - w * z), 2.0 * (x * z + w * y)],
        [2.0 * (x * y + w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - w * x)],
        [2.0 * (x * z - w * y), 2.0 * (y * z + w * x), 1.0 - 2.0 * (x * x + y * y)]])


def rotation_error(R_actual, R_target) -> float:
    """Angle [rad] of the rotation taking ``R_actual`` to ``R_target`` (3x3 arrays or nested
    lists of floats)."""
    a = R_actual.tolist() if isinstance(R_actual, np.ndarray) else R_actual
    b = R_target.tolist() if isinstance(R_target, np.ndarray) else R_target
    # R = R_actual^T R_target, element by element in floats.
    R = [[a[0][i] * b[0][j] + a[1][i] * b[1][j] + a[2][i] * b[2][j] for j in range(3)]
         for i in range(3)]
    c = 0.5 * (R[0][0] + R[1][1] + R[2][2] - 1.0)
    # acos is ill-conditioned near 0; use the skew part for small angles.
    if c > 0.99:
        sx, sy, sz = R[2][1] - R[1][2], R[0][2] - R[2][0], R[1][0] - R[0][1]
        s = 0.5 * math.sqrt(sx * sx + sy * sy + sz * sz)
        return math.asin(min(1.0, s))
    return math.acos(max(-1.0, min(1.0, c)))

