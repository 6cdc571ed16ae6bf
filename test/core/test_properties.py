"""Properties of every solver over random chains and random targets (hypothesis).

Chains are generated as URDF text: 2 to 8 joints (revolute, continuous, prismatic), random axes,
offsets, rotations and limits. The checks use this file's own forward kinematics, written from
the generated numbers (not :meth:`ik_node.Chain.fk`), so a wrong URDF reading or a wrong FK in
the package would show too:

* no solver raises on valid input;
* the joint positions are finite and within the generated limits;
* the reported position (and orientation) error equals the error measured by FK;
* ``reachable`` is exactly "measured error within tolerance", and a proven ``min_residual`` never
  exceeds the measured error;
* the analytic solver says "reachable" exactly when the target lies in the annulus
  ``|l1 - l2| <= r <= l1 + l2`` (2-link planar chains and legs with non-binding limits).

Runs are bounded (``max_examples`` per property, no deadline, no example database) to keep this
file well under a minute.
"""

import math
from dataclasses import dataclass
from typing import List, Optional, Tuple

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ik_node import Chain, ChainError, IkStatus, make_solver

SETTINGS = dict(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
PI = math.pi


# ------------------------------------------------------------------ independent kinematics
def rotation_about(axis, angle: float) -> np.ndarray:
    """Rodrigues' formula for a unit ``axis``."""
    x, y, z = axis
    c, s, t = math.cos(angle), math.sin(angle), 1.0 - math.cos(angle)
    return np.array([[c + x * x * t, x * y * t - z * s, x * z * t + y * s],
                     [y * x * t + z * s, c + y * y * t, y * z * t - x * s],
                     [z * x * t - y * s, z * y * t + x * s, c + z * z * t]])


def rotation_from_rpy(rpy) -> np.ndarray:
    """URDF rpy: fixed-axis roll about x, then pitch about y, then yaw about z."""
    r, p, y = rpy
    return (rotation_about((0, 0, 1), y) @ rotation_about((0, 1, 0), p) @
            rotation_about((1, 0, 0), r))


def homogeneous(R: np.ndarray, p) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, p
    return T


@dataclass(frozen=True)
class GenJoint:
    type: str                       # revolute | continuous | prismatic
    xyz: Tuple[float, float, float]
    rpy: Tuple[float, float, float]
    axis: Tuple[float, float, float]
    lower: float
    upper: float


@dataclass(frozen=True)
class GenChain:
    joints: Tuple[GenJoint, ...]
    tip_xyz: Tuple[float, float, float]
    tip_rpy: Tuple[float, float, float]

    @property
    def n(self) -> int:
        return len(self.joints)

    def urdf(self) -> str:
        links = ['base'] + [f'l{i}' for i in range(self.n)] + ['tip']
        parts = ['<?xml version="1.0"?><robot name="random">']
        parts += [f'<link name="{k}"/>' for k in links]
        for i, j in enumerate(self.joints):
            limit = ''
            if j.type != 'continuous':
                limit = (f'<limit lower="{j.lower!r}" upper="{j.upper!r}" effort="1" '
                         'velocity="1"/>')
            parts.append(
                f'<joint name="j{i}" type="{j.type}"><parent link="{links[i]}"/>'
                f'<child link="{links[i + 1]}"/><origin xyz="{_v(j.xyz)}" rpy="{_v(j.rpy)}"/>'
                f'<axis xyz="{_v(j.axis)}"/>{limit}</joint>')
        parts.append(f'<joint name="tip_fixed" type="fixed"><parent link="l{self.n - 1}"/>'
                     f'<child link="tip"/><origin xyz="{_v(self.tip_xyz)}" '
                     f'rpy="{_v(self.tip_rpy)}"/></joint></robot>')
        return ''.join(parts)

    def chain(self) -> Chain:
        return Chain.from_urdf_string(self.urdf(), 'base', 'tip')

    @property
    def lower(self) -> np.ndarray:
        return np.array([-math.inf if j.type == 'continuous' else j.lower for j in self.joints])

    @property
    def upper(self) -> np.ndarray:
        return np.array([math.inf if j.type == 'continuous' else j.upper for j in self.joints])

    def fk(self, q) -> np.ndarray:
        """T_base_tip, from the generated numbers alone."""
        T = np.eye(4)
        for j, qi in zip(self.joints, q, strict=True):
            axis = np.array(j.axis) / np.linalg.norm(j.axis)
            T = T @ homogeneous(rotation_from_rpy(j.rpy), j.xyz)
            if j.type == 'prismatic':
                T = T @ homogeneous(np.eye(3), axis * qi)
            else:
                T = T @ homogeneous(rotation_about(axis, qi), (0.0, 0.0, 0.0))
        return T @ homogeneous(rotation_from_rpy(self.tip_rpy), self.tip_xyz)

    def within_limits(self, q, slack: float = 1e-9) -> bool:
        q = np.asarray(q)
        return bool(np.all(q >= self.lower - slack) and np.all(q <= self.upper + slack))


def _v(values) -> str:
    return ' '.join(repr(float(v)) for v in values)


def rotation_angle(R_a: np.ndarray, R_b: np.ndarray) -> float:
    """Angle [rad] of the rotation between two rotation matrices."""
    c = (np.trace(R_a.T @ R_b) - 1.0) / 2.0
    return math.acos(max(-1.0, min(1.0, c)))


def rotation_from_quat_xyzw(quat) -> np.ndarray:
    x, y, z, w = np.asarray(quat, dtype=float) / np.linalg.norm(quat)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


# ------------------------------------------------------------------------------ strategies
coordinate = st.floats(-0.4, 0.4, allow_nan=False, allow_infinity=False)
angle = st.floats(-PI, PI, allow_nan=False, allow_infinity=False)
CANONICAL_AXES = [(1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0), (0.0, 0.0, -1.0)]


@st.composite
def axes(draw):
    if draw(st.booleans()):
        return draw(st.sampled_from(CANONICAL_AXES))
    v = draw(st.tuples(*[st.floats(-1.0, 1.0, allow_nan=False)] * 3))
    assume(math.sqrt(sum(c * c for c in v)) > 0.2)
    return v


@st.composite
def offsets(draw):
    """A joint origin: often a plain offset, sometimes zero (a zero-length link)."""
    kind = draw(st.sampled_from(['zero', 'axis_aligned', 'free', 'free']))
    if kind == 'zero':
        return (0.0, 0.0, 0.0)
    if kind == 'axis_aligned':
        k = draw(st.integers(0, 2))
        v = [0.0, 0.0, 0.0]
        v[k] = draw(st.floats(0.05, 0.4))
        return tuple(v)
    return draw(st.tuples(coordinate, coordinate, coordinate))


@st.composite
def gen_joints(draw, allow_prismatic=True):
    types = ['revolute'] * 6 + ['continuous'] + (['prismatic'] if allow_prismatic else [])
    jtype = draw(st.sampled_from(types))
    rpy = draw(st.tuples(angle, angle, angle)) if draw(st.booleans()) else (0.0, 0.0, 0.0)
    if jtype == 'prismatic':
        lower = draw(st.floats(-0.3, 0.0))
        upper = draw(st.floats(lower + 0.01, 0.3))
    elif jtype == 'revolute':
        lower = draw(st.floats(-PI, PI - 0.05))
        upper = draw(st.floats(lower + 0.05, PI))
    else:
        lower = upper = 0.0
    return GenJoint(jtype, draw(offsets()), rpy, draw(axes()), lower, upper)


@st.composite
def gen_chains(draw, min_joints=2, max_joints=8, allow_prismatic=True):
    n = draw(st.integers(min_joints, max_joints))
    joints = tuple(draw(gen_joints(allow_prismatic)) for _ in range(n))
    tip_rpy = draw(st.tuples(angle, angle, angle)) if draw(st.booleans()) else (0.0, 0.0, 0.0)
    return GenChain(joints, draw(offsets()), tip_rpy)


@st.composite
def configurations(draw, gen: GenChain):
    """A joint vector within the generated limits (continuous joints: within +-2 pi)."""
    q = []
    for j in gen.joints:
        lo, hi = (-2 * PI, 2 * PI) if j.type == 'continuous' else (j.lower, j.upper)
        q.append(draw(st.floats(lo, hi)))
    return np.array(q)


@st.composite
def chains_and_targets(draw, allow_prismatic=True):
    """A chain and a target: FK of a random configuration (reachable) or a random point."""
    gen = draw(gen_chains(allow_prismatic=allow_prismatic))
    if draw(st.booleans()):
        target = gen.fk(draw(configurations(gen)))[:3, 3]
    else:
        target = np.array(draw(st.tuples(*[st.floats(-2.0, 2.0)] * 3)))
    seed = draw(configurations(gen)) if draw(st.booleans()) else None
    return gen, target, seed


# -------------------------------------------------------------------------------- checking
def check_honest(gen: GenChain, result, p_target, tol_p: float,
                 quat=None, tol_r: Optional[float] = None) -> None:
    q = np.asarray(result.joint_positions, dtype=float)
    assert q.shape == (gen.n,)
    assert np.all(np.isfinite(q)), q
    assert gen.within_limits(q), (q, gen.lower, gen.upper)
    T = gen.fk(q)
    measured = float(np.linalg.norm(T[:3, 3] - p_target))
    assert result.position_error == pytest.approx(measured, rel=1e-6, abs=1e-9)
    reached = measured <= tol_p
    if quat is not None and result.orientation_error is not None:
        rot = rotation_angle(T[:3, :3], rotation_from_quat_xyzw(quat))
        assert result.orientation_error == pytest.approx(rot, abs=2e-6)
        reached = reached and rot <= tol_r
        # Compare only away from the boundary, where round-off could flip the verdict.
        if abs(rot - tol_r) > 1e-7 and abs(measured - tol_p) > 1e-9:
            assert result.reachable == reached
    elif abs(measured - tol_p) > 1e-9:
        assert result.reachable == reached
    if result.reachable:
        assert result.status in (IkStatus.CONVERGED, IkStatus.DEGENERATE)
    else:
        assert result.status is not IkStatus.CONVERGED
    if result.min_residual is not None:  # a proven lower bound of the error
        assert result.min_residual <= measured + 1e-9, (result.min_residual, measured)


SOLVER_CONFIGS: List[Tuple[str, dict]] = [
    ('damped_jacobian', {'timeout': 0.003}),
    ('damped_jacobian', {'method': 'transpose', 'max_iterations': 50, 'step_size': 0.5}),
    ('fabrik', {'max_iterations': 50}),
    ('analytic_hip_knee', {}),
]


# ------------------------------------------------------------------------------ properties
@pytest.mark.slow
@settings(max_examples=80, **SETTINGS)
@given(chains_and_targets())
def test_no_solver_raises_and_every_answer_is_finite_in_limits_and_honest(case):
    gen, target, seed = case
    chain = gen.chain()
    assert chain.n == gen.n
    for name, params in SOLVER_CONFIGS:
        try:
            solver = make_solver(name, chain, params)
        except ChainError as exc:
            # the analytic solver picks its chains; fabrik refuses prismatic joints, naming them
            assert name == 'analytic_hip_knee' or (
                name == 'fabrik' and 'prismatic' in str(exc) and
                any(j.type == 'prismatic' for j in gen.joints)), exc
            continue
        result = solver.solve(target, seed=seed)
        check_honest(gen, result, target, solver.params['position_tolerance'])


@pytest.mark.slow
@settings(max_examples=60, **SETTINGS)
@given(chains_and_targets(allow_prismatic=False),
       st.tuples(*[st.floats(-1.0, 1.0)] * 4).filter(
           lambda v: math.sqrt(sum(c * c for c in v)) > 1e-3),
       st.floats(0.1, 10.0))
def test_orientation_errors_are_measured_on_the_normalised_quaternion(case, quat, scale):
    gen, target, seed = case
    chain = gen.chain()
    quat = tuple(scale * c for c in quat)  # not a unit quaternion: it must be normalised
    for name, params in SOLVER_CONFIGS[:2]:
        solver = make_solver(name, chain, params)
        result = solver.solve(target, quat, seed=seed)
        assert result.orientation_error is not None
        check_honest(gen, result, target, solver.params['position_tolerance'], quat,
                     solver.params['orientation_tolerance'])


@pytest.mark.slow
@settings(max_examples=60, **SETTINGS)
@given(chains_and_targets(allow_prismatic=False))
def test_fabrik_targets_mapping_answers_like_the_single_target_call(case):
    gen, target, seed = case
    solver = make_solver('fabrik', gen.chain(), {'max_iterations': 50})
    result = solver.solve(targets={'tip': target}, seed=seed)
    check_honest(gen, result, target, solver.params['position_tolerance'])
    assert result.tips['tip'].position_error == pytest.approx(result.position_error)


# ------------------------------------------------------------------ analytic vs the annulus
@dataclass(frozen=True)
class Planar2:
    """A 2-link planar chain with both axes along the first joint's z, turned by ``base_rpy``."""

    base_xyz: Tuple[float, float, float]
    base_rpy: Tuple[float, float, float]
    l1: float
    l2: float
    phi1: float      # direction of the first link in the plane [rad]
    phi2: float      # direction of the tip offset [rad]
    z2: float        # offsets along the axes (move the plane, keep it planar) [m]
    z_tip: float
    flip_knee: bool  # second axis along -z
    continuous: bool

    def gen(self) -> GenChain:
        limit = (-PI, PI)
        jtype = 'continuous' if self.continuous else 'revolute'
        j1 = GenJoint(jtype, self.base_xyz, self.base_rpy, (0.0, 0.0, 1.0), *limit)
        j2 = GenJoint(jtype, (self.l1 * math.cos(self.phi1), self.l1 * math.sin(self.phi1),
                              self.z2), (0.0, 0.0, 0.0),
                      (0.0, 0.0, -1.0 if self.flip_knee else 1.0), *limit)
        return GenChain((j1, j2), (self.l2 * math.cos(self.phi2), self.l2 * math.sin(self.phi2),
                                   self.z_tip), (0.0, 0.0, 0.0))

    def plane_point(self, r: float, theta: float, off_plane: float) -> np.ndarray:
        """Point at radius ``r``, angle ``theta`` about the first axis, ``off_plane`` above the
        tip's plane."""
        R0 = rotation_from_rpy(self.base_rpy)
        local = (r * math.cos(theta), r * math.sin(theta), self.z2 + self.z_tip + off_plane)
        return np.array(self.base_xyz) + R0 @ np.array(local)


planar2 = st.builds(
    Planar2, st.tuples(coordinate, coordinate, coordinate), st.tuples(angle, angle, angle),
    st.floats(0.05, 0.6), st.floats(0.05, 0.6), angle, angle, st.floats(-0.2, 0.2),
    st.floats(-0.2, 0.2), st.booleans(), st.booleans())


@pytest.mark.slow
@settings(max_examples=100, **SETTINGS)
@given(planar2, st.floats(0.0, 1.6), angle, st.sampled_from([0.0, 0.0, 0.0, 1e-3, -0.05]),
       st.sampled_from(['closest', 'forward', 'backward']))
def test_analytic_planar_reachability_is_the_annulus(p2, stretch, theta, off_plane, branch):
    inner, outer = abs(p2.l1 - p2.l2), p2.l1 + p2.l2
    r = stretch * outer
    # Stay off the annulus boundary, where round-off decides.
    assume(min(abs(r - inner), abs(r - outer)) > 1e-6)
    target = p2.plane_point(r, theta, off_plane)
    gen = p2.gen()
    solver = make_solver('analytic_hip_knee', gen.chain(), {'branch': branch})
    result = solver.solve(target)
    check_honest(gen, result, target, solver.params['position_tolerance'])
    in_annulus = inner <= r <= outer
    assert result.reachable == (in_annulus and off_plane == 0.0)
    if not result.reachable:
        assert result.status is IkStatus.UNREACHABLE
        gap = max(r - outer, inner - r, 0.0)
        assert result.min_residual == pytest.approx(math.hypot(gap, off_plane), abs=1e-9)


@dataclass(frozen=True)
class Leg3:
    """Hip yaw about z at ``base_xyz`` (turned by ``base_rpy``), hip pitch about y ``hip_drop``
    below it, knee about +-y; thigh and shin in the pitch plane at angles ``a1``, ``a2``."""

    base_xyz: Tuple[float, float, float]
    base_rpy: Tuple[float, float, float]
    hip_drop: float
    l1: float
    l2: float
    a1: float
    a2: float
    flip_knee: bool

    def gen(self, limits=None) -> GenChain:
        limits = limits or [(-PI, PI)] * 3
        yaw = GenJoint('revolute', self.base_xyz, self.base_rpy, (0.0, 0.0, 1.0), *limits[0])
        pitch = GenJoint('revolute', (0.0, 0.0, -self.hip_drop), (0.0, 0.0, 0.0),
                         (0.0, 1.0, 0.0), *limits[1])
        knee = GenJoint('revolute', (self.l1 * math.sin(self.a1), 0.0,
                                     -self.l1 * math.cos(self.a1)), (0.0, 0.0, 0.0),
                        (0.0, -1.0 if self.flip_knee else 1.0, 0.0), *limits[2])
        return GenChain((yaw, pitch, knee), (self.l2 * math.sin(self.a2), 0.0,
                                             -self.l2 * math.cos(self.a2)), (0.0, 0.0, 0.0))

    def hip_centre(self) -> np.ndarray:
        R0 = rotation_from_rpy(self.base_rpy)
        return np.array(self.base_xyz) + R0 @ np.array([0.0, 0.0, -self.hip_drop])


legs = st.builds(Leg3, st.tuples(coordinate, coordinate, coordinate),
                 st.tuples(angle, angle, angle), st.floats(0.0, 0.2), st.floats(0.05, 0.5),
                 st.floats(0.05, 0.5), angle, angle, st.booleans())


def unit_vectors():
    return st.tuples(*[st.floats(-1.0, 1.0)] * 3).filter(
        lambda v: math.sqrt(sum(c * c for c in v)) > 0.1).map(
        lambda v: np.array(v) / np.linalg.norm(v))


@pytest.mark.slow
@settings(max_examples=100, **SETTINGS)
@given(legs, unit_vectors(), st.floats(0.0, 1.5))
def test_analytic_leg_reachability_is_the_annulus_about_the_hip(leg, direction, stretch):
    inner, outer = abs(leg.l1 - leg.l2), leg.l1 + leg.l2
    r = stretch * outer
    assume(min(abs(r - inner), abs(r - outer)) > 1e-6)
    target = leg.hip_centre() + r * direction
    gen = leg.gen()
    solver = make_solver('analytic_hip_knee', gen.chain())
    result = solver.solve(target)
    check_honest(gen, result, target, solver.params['position_tolerance'])
    assert result.reachable == (inner <= r <= outer)
    if not result.reachable:
        assert result.status is IkStatus.UNREACHABLE
        assert result.min_residual == pytest.approx(max(r - outer, inner - r), abs=1e-9)


@st.composite
def limit_triples(draw):
    out = []
    for _ in range(3):
        lower = draw(st.floats(-PI, PI - 0.05))
        out.append((lower, draw(st.floats(lower + 0.05, PI))))
    return out


@pytest.mark.slow
@settings(max_examples=80, **SETTINGS)
@given(legs, limit_triples(), st.tuples(*[st.floats(-1.2, 1.2)] * 3))
def test_analytic_leg_with_binding_limits_stays_in_limits_and_honest(leg, limits, offset):
    gen = leg.gen(limits)
    target = leg.hip_centre() + np.array(offset)
    solver = make_solver('analytic_hip_knee', gen.chain())
    result = solver.solve(target)
    check_honest(gen, result, target, solver.params['position_tolerance'])
    # A configuration reached by FK within the limits is always found by the exact solver.
    q_inside = np.array([0.5 * (lo + hi) for lo, hi in limits])
    p_inside = gen.fk(q_inside)[:3, 3]
    inside = solver.solve(p_inside)
    check_honest(gen, inside, p_inside, solver.params['position_tolerance'])
    assert inside.reachable
