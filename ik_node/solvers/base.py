"""The solver contract: what a solver implements, the result type and the honest wrap around a
solve.

The result types are in :mod:`~ik_node.solvers.results`, the input checks in
:mod:`~ik_node.solvers.input_checks`, the parameter specs in :mod:`~ik_node.solvers.params`, the
measure of an answer (clip, nearest turns, FK, status) in :mod:`~ik_node.solvers.measured_answer`.

A solver subclasses :class:`Solver` (its target and seed arrive as arrays, ``_solve``) or
:class:`FloatSolver` (as lists of floats, ``_solve_floats``: for a closed-form solver whose whole
solve costs a few small-array operations); both are abstract, so a class that implements
neither hook cannot be built. :meth:`Solver.solve` validates the target once, times the solve,
measures the errors by forward kinematics on the joint positions actually returned (or takes
those a compiled kernel's FK measured at exactly those joints, ``RawSolution.measured``), and
decides ``reachable`` from those measured errors, never from the solver's own belief. That wrap
runs in plain floats: it is most of a closed-form solve.

Every joint that can take an angle at two values within its limits (continuous joints, revolute
joints spanning a full turn) is returned at the value nearest the seed, whatever whole turns the
solver's own search added (wraps at a +-2 pi limit, random restarts): consecutive solves seeded
with the previous answer do not turn a joint a full turn for the same pose, unless its limits
leave no nearer value (a joint driven past its limit reappears a turn away, at the other end).

Chains with several tips take ``solve(targets={tip_link: position or (position, quat)})`` only (a
plain target would not say which tip it is for). Independent legs (no moving joint shared between
two tips' paths: a quadruped's legs from its trunk) are solved leg by leg, each with this solver on
the leg's serial chain (``compose_legs`` of the :class:`SolverParts` that
:func:`~ik_node.solvers.registry.make_solver` passes in); a tree whose tips share joints (a
trunk) is solved whole by the solvers that set ``solves_trees`` and refused at construction by
the others, with the shared joints named.
"""

from __future__ import annotations

import abc
import contextlib
import dataclasses
import math
import time
from typing import (Any, Callable, ClassVar, Dict, List, Mapping, NamedTuple, Optional, Sequence,
                    Tuple)

import numpy as np

from ik_node.model.chain import Chain, full_turn_joints, nearest_turns
from ik_node.errors import ChainError, ConfigError, TargetError
# Re-exported: other modules import the input checks, ParamSpec and the result types from here.
from ik_node.solvers.input_checks import (FLOAT64, MAX_COORDINATE_M, clip_values,  # noqa: F401
                                          rotation_error, rotation_from_input, target_from_input,
                                          target_values)
from ik_node.solvers.measured_answer import MeasuredAnswer
from ik_node.solvers.params import COMMON_PARAMS, ParamSpec
from ik_node.solvers.results import (IkResult, IkStatus, RawSolution, TipResult,  # noqa: F401
                                     honest_status, new_result)
from ik_node.solvers.trees.several_tips import (TipTarget, check_every_tip_moves,
                                                measured_tips, result_of_tips, shared_joints,
                                                shared_text, tip_targets_from_input)



class SolverParts(NamedTuple):
    """The strategies a solver is composed with; :func:`~ik_node.solvers.registry.make_solver`
    passes them (the contract names no strategy). A solver built directly gets none: it solves
    its chain as it is (no leg by leg) and checks no collision.

    Attributes:
        compose_legs: ``compose_legs(chain, make_leg_solver)``, the solver of a tree of
            independent legs built from one solver per leg
            (:class:`~ik_node.solvers.trees.legs.Legs`), or None.
        collision_hook: ``collision_hook(solver)``, what checks the solver's answers for
            collisions (:func:`~ik_node.solvers.collision_guard.collision_hook`), or None.
    """

    compose_legs: Optional[Callable[[Chain, Callable[[Chain], Any]], Any]] = None
    collision_hook: Optional[Callable[[Any], Any]] = None


class Solver(MeasuredAnswer, abc.ABC):
    """The contract of a solver: what a subclass declares, what it implements, what it may add.

    Declares (class attributes):
        name: the registry name, the value of the ``solver`` parameter.
        PARAMS: its own :class:`ParamSpec` by parameter name; the common ones
            (:data:`~ik_node.solvers.params.COMMON_PARAMS`) are added to them.
        supports_orientation: False for a position-only solver (an orientation given to it is
            ignored, and the result says so).
        solves_trees: True for a solver that solves a tree whose tips share joints (it then
            implements ``_solve_tree``); PER_TIP_PARAMS: its parameters holding one value per
            tip (checked against the tips, left out of each independent leg's solver).

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
        node's envelope marker when present; ``_solve_tree(targets, q_seed) -> RawSolution``
        (with ``solves_trees``): every tip's target of a tree with a trunk at once.

    Chains with several tips: independent legs are solved leg by leg by instances of the same
    class on each leg's serial chain (their ``check_chain`` sees the leg, never the tree); the
    tree itself reaches ``check_chain`` only when its tips share joints.

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
    #: True for solvers that solve a tree whose tips share moving joints (``_solve_tree``).
    solves_trees: ClassVar[bool] = False
    #: Parameters with one value per tip (left out of each leg's own solver).
    PER_TIP_PARAMS: ClassVar[Tuple[str, ...]] = ()

    def __init__(self, chain: Chain, params: Optional[Mapping[str, Any]] = None,
                 parts: Optional[SolverParts] = None):
        self.chain = chain
        #: The strategies this solver is composed with (:class:`SolverParts`).
        self.parts = parts = SolverParts() if parts is None else parts
        self.params = self.validate_params(params)
        check_every_tip_moves(chain)
        self._several_tips = len(chain.tip_links) > 1
        self._tip_index = {tip: k for k, tip in enumerate(chain.tip_links)}
        for key in self.PER_TIP_PARAMS:
            values = self.params[key]
            if values and len(values) != len(chain.tip_links):
                raise ConfigError(f'parameter {key!r} has {len(values)} values {list(values)}; '
                                  f'the chain has {len(chain.tip_links)} tips, in this order: '
                                  f'{", ".join(chain.tip_links)}')
        #: Independent legs solved one by one (``parts.compose_legs``), or None (one tip, a
        #: tree with a trunk, or no ``compose_legs``).
        self.legs = None
        if self._several_tips:
            shared = shared_joints(chain)
            if not shared and parts.compose_legs is not None:
                leg_params = {k: v for k, v in self.params.items()
                              if k not in self.PER_TIP_PARAMS}
                leg_params['self_collision'] = False  # the whole robot is checked, not a leg
                self.legs = parts.compose_legs(
                    chain, lambda leg: type(self)(leg, leg_params, parts=parts))
            elif not self.solves_trees and not shared:
                raise ChainError(f'{self.name} solves independent legs leg by leg, composed by '
                                 'make_solver: build it with make_solver')
            elif not self.solves_trees:
                raise ChainError(
                    f'{self.name} solves several tips only as independent legs (no moving '
                    f'joint shared between two tips), but {shared_text(shared)}: use a solver '
                    'for trees (damped_jacobian, fabrik) or one tip')
        if self.legs is None:
            self.check_chain(chain)
        self._q_mid = chain.mid_configuration()
        self._lower_list = chain.lower.tolist()
        self._upper_list = chain.upper.tolist()
        # Limits so small that every sum of values within them is finite: a value _clip keeps
        # is then finite, and only a NaN (_clip's None) needs the reset.
        self._bounded = float(np.sum(np.abs(chain.lower)) + np.sum(np.abs(chain.upper))) < 1e300
        self._shape = (chain.n,)
        self._fast_kinematics = chain.fast_kinematics  # None for a tree
        self._takes_floats = _defined_last(type(self), ('_solve_floats', '_solve')) == \
            '_solve_floats'
        self._joint_names = tuple(chain.joint_names)
        self._turn_joints = full_turn_joints(chain)
        self._plane = None if self._several_tips else chain.motion_plane()
        self._tol_p = self.params['position_tolerance']
        self._tol_r = self.params['orientation_tolerance']
        #: Answers within tolerance are reachable only when collision-free (collision_guard).
        self._collision = self._collision_check()

    def _collision_check(self):
        """What checks this solver's answers for collisions (``parts.collision_hook``), or None."""
        hook = self.parts.collision_hook
        return None if hook is None else hook(self)

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

    def configure_collision(self, srdf: Optional[str] = None, ground_z: Optional[float] = None,
                            obstacles: Sequence[Any] = ()) -> None:
        """The pairs and the world of the collision check (:mod:`ik_node.solvers.collision_guard`):
        an SRDF's text whose ``<disable_collisions>`` picks the pairs (None: computed), the
        ground plane's height in the base frame [m] (None: none), and
        :class:`ik_node.collision.Obstacle` s. Raises :class:`ConfigError` for bad ones."""
        self.collision_world = {'srdf': srdf, 'ground_z': ground_z,
                                'obstacles': tuple(obstacles)}
        self._collision = self._collision_check()

    # --------------------------------------------------------------------------- the budget
    @property
    def budget_s(self) -> float:
        """The wall time one solve may take as configured [s]: ``timeout`` (0 for a solver
        without one) or, where answers are checked for collisions, the check's whole budget
        (``timeout`` + ``collision_retry_time``)."""
        timeout = float(self.params.get('timeout') or 0.0)
        guard_s = getattr(self._collision, 'budget_s', None)
        return timeout if guard_s is None else max(timeout, float(guard_s))

    @contextlib.contextmanager
    def limited_to(self, seconds: float, descent_share: float = 0.5):
        """Within the block, every solve ends within ``seconds`` [s] (collision retries
        included): ``timeout`` is ``descent_share`` of it where answers are checked for
        collisions (the rest is left for the retries), all of it otherwise. Restored after."""
        guard = self._collision
        guarded = getattr(guard, 'budget_s', None) is not None
        saved = (self.params.get('timeout'), guard.budget_s if guarded else None)
        if 'timeout' in self.params:
            self.params['timeout'] = max(seconds * (descent_share if guarded else 1.0), 1e-6)
        if guarded:
            guard.budget_s = float(seconds)
        try:
            yield self
        finally:
            if 'timeout' in self.params:
                self.params['timeout'] = saved[0]
            if guarded:
                guard.budget_s = saved[1]

    # ------------------------------------------------------------------------------ solving
    def solve(self, target_position=None, target_orientation=None, seed=None, *,
              targets: Optional[Mapping[str, Any]] = None) -> IkResult:
        """Solve for a tip position [m] (base frame) and optional orientation (x, y, z, w), or
        for several tips at once.

        Args:
            target_position: (3,) tip position in the base frame [m] (a chain with one tip).
            target_orientation: unit quaternion (x, y, z, w), or None for position only. It is
                normalised; a zero or non-finite quaternion raises :class:`TargetError`.
            seed: (n,) start configuration, clipped into the limits; None = the mid configuration.
                The result's continuous and full-turn joints are the values nearest it.
            targets: ``{tip_link: position}`` or ``{tip_link: (position, quat_xyzw)}`` for any
                subset of ``chain.tip_links`` (instead of ``target_position``); tips without a
                target keep their joints (a leg) or their configuration relative to their
                branch (a tree).

        Returns:
            An :class:`IkResult` whose errors are measured by FK on the returned joint positions;
            with ``targets`` its ``tips`` holds each targeted tip's result.

        Raises:
            TargetError: a plain target on a chain with several tips (the message names them),
                both or neither of ``target_position`` and ``targets``, an unknown tip, a NaN,
                infinite or badly shaped position, quaternion or seed.
        """
        if targets is not None:
            return self._solve_targets(targets, target_position, target_orientation, seed)
        if self._several_tips:
            raise TargetError(f'this chain has {len(self.chain.tip_links)} tips '
                              f'({", ".join(self.chain.tip_links)}): a target must name its '
                              'tip, solve(targets={tip_link: position or (position, '
                              'quat_xyzw)})')
        if target_position is None:
            raise TargetError('give a target_position or targets={tip_link: position}')
        p_list = target_values(target_position)
        R_target = None
        if target_orientation is not None:
            R_target = rotation_from_input(target_orientation)
        return self._solve_values(p_list, R_target, self._seed_values(seed))

    def _solve_values(self, p_list: List[float], R_target: Optional[np.ndarray],
                      q_seed_list: List[float]) -> IkResult:
        """:meth:`solve` on inputs already checked: the position as 3 floats [m], the rotation
        (3x3) or None, the seed as n floats within the limits. Each leg of
        :class:`~ik_node.solvers.trees.legs.Legs` takes the same two steps,
        :meth:`_raw_solution` then :meth:`_measured`, without the result object."""
        ignored = R_target is not None and not self.supports_orientation
        if ignored:
            R_target = None
        start = time.perf_counter()
        raw = self._raw_solution(p_list, R_target, q_seed_list)
        elapsed = time.perf_counter() - start
        result = self._finish(raw, p_list, R_target, elapsed, ignored, q_seed_list)
        if self._collision is None:
            return result
        return self._collision.values(self, result, p_list, R_target, q_seed_list, start)

    def _raw_solution(self, p_list: List[float], R_target: Optional[np.ndarray],
                      q_seed_list: List[float]) -> RawSolution:
        """The solver's own answer to checked inputs (``R_target`` None for a position-only
        solver), before :meth:`_measured`: ``_solve_floats`` on the lists, or ``_solve`` on
        arrays."""
        if self._takes_floats:
            return self._solve_floats(p_list, R_target, q_seed_list)
        return self._solve(np.array(p_list), R_target, np.array(q_seed_list))

    def _solve_targets(self, targets, target_position, target_orientation, seed) -> IkResult:
        """``solve(targets=...)``: one tip, independent legs, or a tree solved whole."""
        if target_position is not None or target_orientation is not None:
            raise TargetError('targets= takes every tip\'s target: do not also pass '
                              'target_position or target_orientation')
        parsed = tip_targets_from_input(targets, self.chain.tip_links, self._tip_index)
        q_seed = self._seed_values(seed)
        if self._collision is not None and self._several_tips:
            return self._collision.targets(self, parsed, q_seed)
        return self._solve_parsed(parsed, q_seed)

    def _solve_parsed(self, parsed: Sequence[TipTarget], q_seed: List[float]) -> IkResult:
        """:meth:`_solve_targets` on checked targets and seed, for a chain with several tips
        or one."""
        if not self._several_tips:
            target = parsed[0]
            result = self.solve(target.position, target.quat_xyzw, q_seed)
            return dataclasses.replace(result, tips={target.link: TipResult(
                result.reachable, result.position_error, result.min_residual, result.status,
                result.orientation_error, result.message, result.best_found)})
        if self.legs is not None:
            return self.legs.solve(parsed, q_seed, self.params.get('timeout'))
        ignored = not self.supports_orientation and any(t.R is not None for t in parsed)
        if ignored:
            parsed = tuple(t._replace(quat_xyzw=None, R=None) for t in parsed)  # NamedTuples
        start = time.perf_counter()
        raw = self._solve_tree(parsed, np.array(q_seed))
        elapsed = time.perf_counter() - start
        return self._finish_tips(raw, parsed, elapsed, ignored, q_seed)

    def _solve_tree(self, targets: Sequence[TipTarget], q_seed: np.ndarray) -> RawSolution:
        """The solve of a tree whose tips share joints (solvers with ``solves_trees``): every
        target of ``targets`` at once from ``q_seed`` (within the limits). Errors are measured
        afterwards; ``tip_residuals`` carries each tip's proven bound."""
        raise NotImplementedError(f'{type(self).__name__} does not solve trees')

    def _finish_tips(self, raw: RawSolution, targets: Sequence[TipTarget], elapsed: float,
                     orientation_ignored: bool, q_seed: List[float]) -> IkResult:
        """The result of a tree solve: joints clipped and turned nearest the seed, then every
        targeted tip's errors measured by FK on exactly those joints, and its own status:
        converged when reached, unreachable when its proven bound exceeds the tolerance, else
        the solve's reason to stop (``max_iterations`` when the solve claimed more)."""
        q_list = clip_values(np.asarray(raw.q, dtype=float).reshape(-1).tolist(),
                             self._lower_list, self._upper_list)
        if q_list is None or not math.isfinite(sum(q_list)):  # a solver bug never gets out
            q_list = self._q_mid.tolist()
            raw.status, raw.message = IkStatus.MAX_ITERATIONS, 'solver produced NaN; reset'
        if self._turn_joints:  # whole turns nearest the seed
            q_list = nearest_turns(q_list, q_seed, self._lower_list, self._upper_list,
                                   self._turn_joints)
        q = np.array(q_list, FLOAT64)
        tips = measured_tips(self.chain.fk_tips(q), targets, raw, self._tol_p, self._tol_r)
        history = None if raw.history is None else tuple(float(e) for e in raw.history)
        return result_of_tips(q, self._joint_names, tips, raw.iterations, elapsed, raw.message,
                              orientation_ignored, history)

    # solve() calls the hook its most derived class defines (_solve_floats if a class defines
    # both), so a subclass of a FloatSolver may override _solve and call super(): FloatSolver's
    # _solve converts and calls _solve_floats.
    @abc.abstractmethod
    def _solve(self, p_target: np.ndarray, R_target: Optional[np.ndarray],
               q_seed: np.ndarray) -> RawSolution:
        """The solve proper: target position (3,) [m], rotation (3, 3) or None, seed (n,),
        both within the checks of :meth:`solve`. Errors are measured afterwards."""

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
        return clip_values(values, self._lower_list, self._upper_list)



class FloatSolver(Solver):
    """A solver that works in plain floats: it implements :meth:`_solve_floats`, and
    :meth:`Solver.solve` hands it the target position and the seed as lists (no round trip
    through small arrays, which for a closed-form solve would cost about as much as the solve)."""

    @abc.abstractmethod
    def _solve_floats(self, p_target: List[float], R_target: Optional[np.ndarray],
                      q_seed: List[float]) -> RawSolution:
        """:meth:`Solver._solve` with the target position and the seed as lists of floats. The
        lists are read, never changed: :meth:`Solver._measured` uses the same seed afterwards."""

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
