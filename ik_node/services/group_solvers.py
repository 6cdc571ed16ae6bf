"""One solver per planning group, and the answer to one IK request with its MoveIt error code.

The services' solvers are their own: built from the node's configuration (solver, parameters,
collision world) on chains of their own, so a request never shares a solver, a chain or a
collision checker with the target stream. Each group has two, built on first use: one that
checks collisions (``avoid_collisions``) and one for kinematics only. A group's solver and
parameters are the node's, overlaid with the group's own settings (``groups.<group>.solver``,
``groups.<group>.<param>``: :mod:`ik_node.config.group_overrides`).

A request's answer (:meth:`GroupSolvers.solve`) is ``SUCCESS`` only when the measured answer is
within the solver's tolerances, within the joint limits, meets the constraints and, with
``avoid_collisions``, was checked free of collisions. Otherwise its code names the cause and
its joint positions are the closest pose found (the solver's answer: see
:mod:`ik_node.solvers.out_of_reach`).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable, Dict, Iterator, Mapping, Optional, Tuple

import numpy as np

from ik_node.config.group_overrides import GroupSettings, group_params
from ik_node.config.node_config import IkConfig
from ik_node.errors import ChainError, ConfigError
from ik_node.model.chain import Chain, full_turn_joints, nearest_turns
from ik_node.services.constraints import (FrameLookup, RobotFrames, check_supported,
                                          quat_xyzw_of, unmet)
from ik_node.services.error_codes import MoveItCode, ServiceError
from ik_node.services.groups import PlanningGroup, groups_from_srdf, with_configured_chain
from ik_node.services.requests import IkRequest
from ik_node.services.restart_seeds import NearSeeds
from ik_node.solvers import IkResult, IkStatus, make_solver
from ik_node.solvers.collision_guard import has_collision_check
from ik_node.solvers.input_checks import rotation_error, rotation_from_input

#: The solver a group takes when the configured one cannot solve its chain.
FALLBACK_SOLVER = 'damped_jacobian'
#: Most solves of one request while it is not answered SUCCESS and time is left.
MAX_ATTEMPTS = 40
#: No solve starts with less of the request's budget left than this [s].
MIN_ATTEMPT_S = 0.0005
#: The share of what is left of the request's budget a solve may take (the rest: judging the
#: answer, the reply).
BUDGET_SHARE = 0.9
#: The least budget of a request [s] (a closed-form solver has no ``timeout``).
MIN_BUDGET_S = 0.005

#: ``measured(chain) -> q or None``: the measured joint state of a chain's joints.
Measured = Callable[[Chain], Optional[np.ndarray]]


@dataclasses.dataclass(frozen=True)
class IkAnswer:
    """The answer to one IK request.

    Attributes:
        code: SUCCESS, or the code of the cause.
        state: the full robot state: the request's joints, the group's solved.
        joint_names: the group's joints, in chain order.
        q: their positions (the closest pose found when ``code`` is not SUCCESS).
        message: what happened ('' for a plain success).
        result: the solver's result of the answer.
    """

    code: MoveItCode
    state: Dict[str, float]
    joint_names: Tuple[str, ...]
    q: np.ndarray
    message: str
    result: IkResult


class GroupSolvers:
    """The groups of a robot model and a solver for each, built on first use.

    Args:
        config: the node's configuration in force (with the URDF text filled in).
        world: ``Solver.configure_collision`` arguments (SRDF, ground, obstacles) or {}.
        group_name: the configured chain's group name ('' : found in the SRDF, else
            ``manipulator``).

    Raises:
        ConfigError: a malformed SRDF. ChainError: a URDF that cannot be read.
    """

    def __init__(self, config: IkConfig, world: Mapping, group_name: str = '') -> None:
        self.config, self.world = config, dict(world)
        self.xml = config.urdf_xml()
        self._chains: Dict[str, Chain] = {}
        self._solvers: Dict[Tuple[str, bool], object] = {}
        self._near: Dict[Tuple[str, ...], NearSeeds] = {}
        self._unchecked_of: Dict[int, bool] = {}
        self._rest: Dict[str, np.ndarray] = {}
        first = Chain.from_urdf_string(self.xml, config.base_link, list(config.tip_links),
                                       config.max_description_bytes)
        self.robot = first.robot
        srdf = groups_from_srdf(self.world.get('srdf') or config.collision.get('srdf'),
                                self.robot)
        self.groups, self.default = with_configured_chain(srdf, config.base_link,
                                                          config.tip_links, group_name)
        self.refused = srdf.refused
        self._chains[self.default] = first

    # ------------------------------------------------------------------------ look-ups
    def group(self, name: str) -> PlanningGroup:
        """The group ``name`` ('' : the configured chain's).

        Raises:
            ServiceError: INVALID_GROUP_NAME, listing the groups.
        """
        group = self.groups.get(name or self.default)
        if group is None:
            why = f' ({self.refused[name]})' if name in self.refused else ''
            raise ServiceError(MoveItCode.INVALID_GROUP_NAME,
                               f'unknown group {name!r}{why}. Groups: '
                               f'{", ".join(sorted(self.groups))}')
        return group

    def chain(self, group: PlanningGroup) -> Chain:
        """The services' own chain of ``group`` (built once)."""
        chain = self._chains.get(group.name)
        if chain is None:
            try:
                chain = Chain.from_urdf_string(self.xml, group.base_link, list(group.tip_links),
                                               self.config.max_description_bytes)
            except (ChainError, ConfigError) as exc:
                raise ServiceError(MoveItCode.INVALID_GROUP_NAME,
                                   f'group {group.name!r} cannot be solved: {exc}') from None
            self._chains[group.name] = chain
        return chain

    def solver(self, group: PlanningGroup, collisions: bool):
        """The services' solver of ``group``, checking collisions or not (built once).

        Raises:
            ServiceError: INVALID_GROUP_NAME: the group's own solver cannot solve its chain.
        """
        key = (group.name, collisions)
        solver = self._solvers.get(key)
        if solver is None:
            solver = self._build(group, self.chain(group), collisions)
            self._solvers[key] = solver
        return solver

    def _build(self, group: PlanningGroup, chain: Chain, collisions: bool):
        """The group's own solver, else the node's (which gives way to :data:`FALLBACK_SOLVER`
        where it cannot solve the chain; the group's own is refused instead)."""
        settings = self.config.group_overrides.get(group.name)
        own = settings.solver if settings is not None else ''
        name = own or self.config.solver
        try:
            solver = make_solver(name, chain, self._params(name, settings, collisions))
        except (ChainError, ConfigError) as exc:
            if own:
                raise ServiceError(MoveItCode.INVALID_GROUP_NAME,
                                   f'group {group.name!r}: its solver {own!r} '
                                   f'(groups.{group.name}.solver) cannot solve it: {exc}') from None
            name = FALLBACK_SOLVER
            solver = make_solver(name, chain, self._params(name, settings, collisions))
        if collisions and self.world:
            solver.configure_collision(**self.world)
        return solver

    def _params(self, name: str, settings: Optional[GroupSettings], collisions: bool) -> Dict:
        """Solver ``name``'s parameters for a group: the node's, with the group's overrides."""
        params = group_params(settings, name, self.config.params_of(name))
        if not collisions:
            params['self_collision'] = False
        return params

    # ------------------------------------------------------------------------- solving
    def seed(self, group: PlanningGroup, state: Mapping[str, float],
             measured: Optional[Measured] = None) -> Tuple[np.ndarray, str]:
        """The seed of ``group``: the request's state by name, else the measured state, else
        the rest pose; clipped into the limits. Returns ``(q, note)``; the note names the
        joints that were clipped ('' when none)."""
        chain = self.chain(group)
        given = [state.get(name) for name in chain.joint_names]
        if None in given:  # the request does not give every joint of the group
            q = None if measured is None else measured(chain)
            if q is None:
                q = self._rest.get(group.name)
                if q is None:
                    q = self._rest[group.name] = rest_pose(chain)
            q = np.array(q, dtype=float)
            for k, value in enumerate(given):
                if value is not None:
                    q[k] = value
        else:
            q = np.array(given, dtype=float)
        clipped = chain.clip(q)
        if np.array_equal(clipped, q):
            return clipped, ''
        moved = [f'{name} {q[k]:.6g} -> {clipped[k]:.6g}'
                 for k, name in enumerate(chain.joint_names) if clipped[k] != q[k]]
        note = f'seed outside the joint limits, clipped: {", ".join(moved)}' if moved else ''
        return clipped, note

    def solve(self, request: IkRequest, measured: Optional[Measured] = None,
              lookup: Optional[FrameLookup] = None) -> IkAnswer:
        """The answer to ``request``.

        Raises:
            ServiceError: a request refused before any solve (unknown group, link or frame,
                unsupported constraints, a bad pose).
        """
        group = self.group(request.group)
        chain = self.chain(group)
        q_seed, note = self.seed(group, request.state, measured)
        state = dict(request.state)
        state.update(zip(chain.joint_names, q_seed.tolist()))
        frames = RobotFrames(self.robot, group.base_link, state, lookup)
        targets = self._targets(request, group, frames)
        check_supported(request.constraints, frames)
        unknown = [b.name for b in request.constraints.joints if b.name not in state and
                   b.name not in chain.joint_names]
        if unknown:
            raise ServiceError(MoveItCode.INVALID_GOAL_CONSTRAINTS,
                               f'joint constraint on {", ".join(unknown)}: no such joint in the '
                               'request\'s state or the group')
        solver = self.solver(group, request.avoid_collisions)
        answer = self._attempts(solver, chain, request, targets, q_seed, state, lookup)
        if note:
            answer = dataclasses.replace(
                answer, message=f'{note}; {answer.message}' if answer.message else note)
        return answer

    def _targets(self, request: IkRequest, group: PlanningGroup, frames: RobotFrames
                 ) -> Dict[str, Tuple[np.ndarray, np.ndarray]]:
        """Each goal's tip -> (position, quat_xyzw) in the group's base frame."""
        if not request.goals:
            raise ServiceError(MoveItCode.INVALID_LINK_NAME, 'no pose given')
        out: Dict[str, Tuple[np.ndarray, np.ndarray]] = {}
        for goal in request.goals:
            link = goal.link or (group.tip_links[0] if len(group.tip_links) == 1 else '')
            if link not in group.tip_links:
                raise ServiceError(MoveItCode.INVALID_LINK_NAME,
                                   f'link {goal.link!r} is not a tip of group {group.name!r}; '
                                   f'its tips: {", ".join(group.tip_links)}')
            if link in out:
                raise ServiceError(MoveItCode.INVALID_LINK_NAME,
                                   f'link {link!r} is given two poses')
            if not goal.frame or goal.frame == group.base_link:  # most requests: no change
                out[link] = (goal.position, goal.quat_xyzw)
                continue
            T = frames.T_base(goal.frame)
            R = T[:3, :3] @ rotation_from_input(goal.quat_xyzw)
            out[link] = (T[:3, :3] @ goal.position + T[:3, 3], quat_xyzw_of(R))
        return out

    def _attempts(self, solver, chain: Chain, request: IkRequest, targets, q_seed: np.ndarray,
                  state: Dict[str, float], lookup) -> IkAnswer:
        """Solve from the seed, then, while the answer is not SUCCESS, could be (see
        :func:`_worth_retrying`) and the budget lasts, from seeds near the target
        (:mod:`.restart_seeds`, within the joint constraints); the first SUCCESS, else the
        best answer."""
        near = self.near_seeds(chain)  # built once, before the request's budget starts
        budget = request.timeout_s or configured_budget(solver)
        deadline = time.monotonic() + budget
        lower, upper = _narrowed(chain, request)
        best: Optional[IkAnswer] = None
        seeds: Optional[Iterator[np.ndarray]] = None
        seed = np.clip(q_seed, lower, upper)
        for attempt in range(MAX_ATTEMPTS):
            left = deadline - time.monotonic()
            if attempt and left < MIN_ATTEMPT_S:
                break
            with solver.limited_to(max(left, 0.0) * BUDGET_SHARE):
                result = _solve(solver, chain, targets, seed)
            result = _near_seed(chain, result, q_seed)
            answer = self._judge(solver, chain, request, targets, result, state, lookup)
            if answer.code == MoveItCode.SUCCESS:
                return answer
            if best is None or _rank(answer) < _rank(best):
                best = answer
            if not _worth_retrying(answer, solver):
                break
            if seeds is None:
                seeds = near.seeds(_rotations(targets), lower, upper, np.random.default_rng(0))
            seed = next(seeds, None)
            if seed is None:
                break
        return best

    def near_seeds(self, chain: Chain) -> NearSeeds:
        """The restart seeds' sample of ``chain`` (made once)."""
        seeds = self._near.get(tuple(chain.tip_links))
        if seeds is None:
            seeds = self._near[tuple(chain.tip_links)] = NearSeeds(chain)
        return seeds

    def _judge(self, solver, chain: Chain, request: IkRequest, targets, result: IkResult,
               state: Dict[str, float], lookup) -> IkAnswer:
        q = np.asarray(result.joint_positions, dtype=float)
        full = dict(state)
        full.update(zip(chain.joint_names, q.tolist()))

        def answer(code: MoveItCode, message: str) -> IkAnswer:
            return IkAnswer(code, full, tuple(chain.joint_names), q, message, result)

        if not chain.within_limits(q):
            return answer(MoveItCode.NO_IK_SOLUTION, 'answer outside the joint limits')
        if not result.reachable:
            if result.status is IkStatus.IN_COLLISION:
                return answer(MoveItCode.GOAL_IN_COLLISION, result.message)
            if result.status is IkStatus.TIMEOUT:
                return answer(MoveItCode.TIMED_OUT, result.message)
            return answer(MoveItCode.NO_IK_SOLUTION, result.message or result.status.value)
        if result.orientation_ignored:
            tol = solver.params['orientation_tolerance']
            for tip, (_, quat) in targets.items():
                error = rotation_error(chain.fk(q, tip)[:3, :3], rotation_from_input(quat))
                if error > tol:
                    return answer(MoveItCode.NO_IK_SOLUTION,
                                  f'{tip}: orientation missed by {error:.4g} rad (this group\'s '
                                  f'solver {solver.name} solves positions only)')
        if request.constraints:
            missed = unmet(request.constraints, full,
                           RobotFrames(self.robot, chain.base_link, full, lookup))
            if missed:
                return answer(MoveItCode.GOAL_CONSTRAINTS_VIOLATED, missed)
        if request.avoid_collisions and self._unchecked(solver):
            return answer(MoveItCode.COLLISION_CHECKING_UNAVAILABLE,
                          result.message or 'collisions cannot be checked')
        return answer(MoveItCode.SUCCESS, result.message)

    def _unchecked(self, solver) -> bool:
        """True when the solver should check collisions but cannot (a library missing)."""
        unchecked = self._unchecked_of.get(id(solver))
        if unchecked is None:
            from ik_node import collision
            unchecked = collision.has_collision_geometry(solver.chain) and \
                not has_collision_check(solver)
            self._unchecked_of[id(solver)] = unchecked
        return unchecked


def rest_pose(chain: Chain) -> np.ndarray:
    """0 where within a joint's limits, else the middle of its range."""
    q = np.zeros(chain.n)
    outside = (q < chain.lower) | (q > chain.upper)
    middle = 0.5 * (chain.lower + chain.upper)
    return np.where(outside & np.isfinite(middle), middle, chain.clip(q))


def configured_budget(solver) -> float:
    """The wall time a request of ``solver`` may take as configured [s]: the solver's whole
    budget (``timeout``, plus ``collision_retry_time`` where answers are checked for
    collisions), at least :data:`MIN_BUDGET_S`."""
    return max(float(solver.budget_s), MIN_BUDGET_S)


def _worth_retrying(answer: IkAnswer, solver) -> bool:
    """False where another seed cannot help: a target proven out of reach (its lower bound
    above the tolerance), or collision checking unavailable."""
    if answer.code == MoveItCode.COLLISION_CHECKING_UNAVAILABLE:
        return False
    bound = answer.result.min_residual
    return bound is None or bound <= solver.params['position_tolerance']


def _rotations(targets) -> Dict[str, Tuple[np.ndarray, Optional[np.ndarray]]]:
    return {tip: (p, rotation_from_input(quat)) for tip, (p, quat) in targets.items()}


def _solve(solver, chain: Chain, targets, seed: np.ndarray) -> IkResult:
    if len(chain.tip_links) == 1:
        ((position, quat),) = targets.values()
        return solver.solve(position, quat, seed=seed)
    return solver.solve(targets={tip: (p, quat) for tip, (p, quat) in targets.items()},
                        seed=seed)


def _near_seed(chain: Chain, result: IkResult, q_seed: np.ndarray) -> IkResult:
    """The result with every full-turn joint at the value nearest the request's seed (an
    answer of a collision retry or a restart is nearest its own seed): the same pose, no whole
    turn a MoveIt caller did not ask for."""
    joints = full_turn_joints(chain)
    if not joints:
        return result
    q = nearest_turns(result.joint_positions.tolist(), q_seed.tolist(), chain.lower.tolist(),
                      chain.upper.tolist(), joints)
    return dataclasses.replace(result, joint_positions=np.array(q))


def _narrowed(chain: Chain, request: IkRequest) -> Tuple[np.ndarray, np.ndarray]:
    """The chain's limits narrowed by the request's joint constraints (where they overlap)."""
    lower, upper = chain.lower.copy(), chain.upper.copy()
    index = {name: k for k, name in enumerate(chain.joint_names)}
    for bound in request.constraints.joints:
        k = index.get(bound.name)
        if k is not None and bound.lower <= upper[k] and bound.upper >= lower[k]:
            lower[k], upper[k] = max(lower[k], bound.lower), min(upper[k], bound.upper)
    return lower, upper


def _rank(answer: IkAnswer) -> Tuple[float, float]:
    return (answer.result.position_error, answer.result.orientation_error or 0.0)

