"""The robot models in urdf/ and the configs in config/: well formed, and arm6 is the UR5 DH arm.

arm6.urdf is derived by hand from the UR5's published Denavit-Hartenberg table. These tests
recompute the standard DH forward kinematics here, independently of the URDF, and compare.

The reference UR5 (../shared/robots/ur5.urdf, from ros-industrial's ur_description via
example-robot-data; used for comparison only, never copied) has a ``base_link`` that is the DH base
frame turned by pi about z: its own side-branch link ``base`` (``base_link`` rotated by -pi about z)
is the controller's DH base. With that one fixed transform applied, its ``tool0`` pose (position
and orientation) matches arm6's to the rounding of its ``1.57079632679`` angles (about 1e-11).
"""

import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from urdf_parser_py.urdf import URDF

from ik_node import Chain

REPO = Path(__file__).resolve().parents[2]
URDF_DIR = REPO / 'urdf'
CONFIG_DIR = REPO / 'config'
from reference_robots import SHARED_ROBOTS, skip_reason  # noqa: E402
REFERENCE_UR5 = SHARED_ROBOTS / 'ur5.urdf'

ARM6 = URDF_DIR / 'arm6.urdf'
ARM6_JOINTS = ['shoulder_pan', 'shoulder_lift', 'elbow', 'wrist_1', 'wrist_2', 'wrist_3']

# UR5, standard DH, as published by Universal Robots: d [m], a [m], alpha [rad].
UR5_D = [0.089159, 0.0, 0.0, 0.10915, 0.09465, 0.0823]
UR5_A = [0.0, -0.425, -0.39225, 0.0, 0.0, 0.0]
UR5_ALPHA = [math.pi / 2, 0.0, 0.0, math.pi / 2, -math.pi / 2, 0.0]

# The reference UR5's base_link expressed in the DH base frame: a half turn about z.
T_DH_BASE_REFERENCE_BASE_LINK = np.diag([-1.0, -1.0, 1.0, 1.0])

URDF_FILES = sorted(URDF_DIR.glob('*.urdf'))
CONFIG_FILES = sorted(CONFIG_DIR.glob('*.yaml'))


def transform_from_dh(theta: float, d: float, a: float, alpha: float) -> np.ndarray:
    """Standard DH link transform Rz(theta) Tz(d) Tx(a) Rx(alpha), written out element-wise."""
    ct, st = math.cos(theta), math.sin(theta)
    ca, sa = math.cos(alpha), math.sin(alpha)
    return np.array([[ct, -st * ca, st * sa, a * ct],
                     [st, ct * ca, -ct * sa, a * st],
                     [0.0, sa, ca, d],
                     [0.0, 0.0, 0.0, 1.0]])


def ur5_dh_fk(q) -> np.ndarray:
    """T_base_flange of the UR5 from its DH table (no joint offsets)."""
    T = np.eye(4)
    for theta, d, a, alpha in zip(q, UR5_D, UR5_A, UR5_ALPHA, strict=True):
        T = T @ transform_from_dh(theta, d, a, alpha)
    return T


def parse_urdf(path: Path) -> URDF:
    return URDF.from_xml_string(path.read_text())


# ------------------------------------------------------------------------------------ arm6
def test_arm6_has_the_six_ur_joints_in_order_and_ur_limits():
    chain = Chain.from_urdf_file(ARM6, 'base_link', 'tool0')
    assert chain.joint_names == ARM6_JOINTS
    two_pi = 2 * math.pi
    np.testing.assert_allclose(chain.lower, [-two_pi, -two_pi, -math.pi, -two_pi, -two_pi, -two_pi])
    np.testing.assert_allclose(chain.upper, [two_pi, two_pi, math.pi, two_pi, two_pi, two_pi])


def test_arm6_fk_equals_ur5_dh_forward_kinematics_for_random_q():
    chain = Chain.from_urdf_file(ARM6, 'base_link', 'tool0')
    rng = np.random.default_rng(20240506)
    for _ in range(200):
        q = rng.uniform(chain.lower, chain.upper)
        np.testing.assert_allclose(chain.fk(q), ur5_dh_fk(q), atol=1e-12)


def test_arm6_at_zero_is_the_ur5_stretched_pose():
    # At q = 0 the UR arm lies along -x: x = a2 + a3, y = -(d4 + d6), z = d1 - d5.
    T = Chain.from_urdf_file(ARM6, 'base_link', 'tool0').fk(np.zeros(6))
    np.testing.assert_allclose(T[:3, 3], [-0.81725, -0.19145, -0.005491], atol=1e-12)


def test_arm6_tool0_matches_reference_ur5_after_half_turn_of_the_base():
    if not REFERENCE_UR5.is_file():
        pytest.skip(skip_reason(REFERENCE_UR5))
    ours = Chain.from_urdf_file(ARM6, 'base_link', 'tool0')
    reference = Chain.from_urdf_file(REFERENCE_UR5, 'base_link', 'tool0')
    assert reference.n == 6
    rng = np.random.default_rng(7)
    for _ in range(200):
        q = rng.uniform(ours.lower, ours.upper)
        T_reference = reference.fk(q)
        T_ours_in_reference = T_DH_BASE_REFERENCE_BASE_LINK.T @ ours.fk(q)
        # The reference writes pi/2 as 1.57079632679: agreement is to about 1e-11.
        np.testing.assert_allclose(T_ours_in_reference[:3, 3], T_reference[:3, 3], atol=1e-9)
        np.testing.assert_allclose(T_ours_in_reference[:3, :3], T_reference[:3, :3], atol=1e-9)


def test_reference_ur5_base_link_is_not_the_dh_base():
    # Guards the statement above: without the half turn the positions do not agree.
    if not REFERENCE_UR5.is_file():
        pytest.skip(skip_reason(REFERENCE_UR5))
    reference = Chain.from_urdf_file(REFERENCE_UR5, 'base_link', 'tool0')
    q = np.array([0.3, -1.0, 1.2, -0.5, 0.7, 0.1])
    assert np.linalg.norm(reference.fk(q)[:3, 3] - ur5_dh_fk(q)[:3, 3]) > 0.1


# ------------------------------------------------------------------------ every model file
def test_urdf_directory_has_the_models():
    names = {p.stem for p in URDF_FILES}
    assert {'leg3', 'planar4', 'arm6'} <= names


@pytest.mark.parametrize('path', URDF_FILES, ids=lambda p: p.name)
def test_urdf_parses_with_urdf_parser_py(path):
    robot = parse_urdf(path)
    assert robot.links, f'{path.name} has no links'
    assert robot.get_root(), f'{path.name} has no root link'


@pytest.mark.parametrize('path', URDF_FILES, ids=lambda p: p.name)
def test_every_moving_joint_has_limits_with_lower_below_upper(path):
    for joint in parse_urdf(path).joints:
        if joint.type in ('fixed', 'continuous', 'floating', 'planar'):
            continue
        assert joint.limit is not None, f'{path.name}: joint {joint.name!r} has no <limit>'
        assert joint.limit.lower is not None and joint.limit.upper is not None, \
            f'{path.name}: joint {joint.name!r} lacks lower/upper'
        assert joint.limit.lower < joint.limit.upper, \
            f'{path.name}: joint {joint.name!r} limits [{joint.limit.lower}, {joint.limit.upper}]'
        assert joint.limit.effort is not None and joint.limit.velocity is not None, \
            f'{path.name}: joint {joint.name!r} lacks effort/velocity'


@pytest.mark.parametrize('path', URDF_FILES, ids=lambda p: p.name)
def test_every_link_has_a_visual(path):
    missing = [link.name for link in parse_urdf(path).links if not link.visuals]
    assert not missing, f'{path.name}: links without <visual>: {missing}'


# ------------------------------------------------------------------------------- configs
def parameters_of(config: dict) -> dict:
    """The ros__parameters of the first node in a ROS params file."""
    for value in config.values():
        if isinstance(value, dict) and 'ros__parameters' in value:
            return value['ros__parameters']
    raise AssertionError('no <node>: ros__parameters: block')


def test_config_files_are_checked_when_present():
    if not CONFIG_FILES:
        pytest.skip(f'no config/*.yaml yet in {CONFIG_DIR}')
    assert all(p.suffix == '.yaml' for p in CONFIG_FILES)


@pytest.mark.parametrize('path', CONFIG_FILES, ids=lambda p: p.name)
def test_config_names_links_that_exist_in_its_urdf(path):
    params = parameters_of(yaml.safe_load(path.read_text()))
    urdf_path = URDF_DIR / f'{path.stem}.urdf'
    if 'urdf_file' in params and params['urdf_file']:
        urdf_path = URDF_DIR / Path(params['urdf_file']).name
    if not urdf_path.is_file():
        pytest.skip(f'{path.name} belongs to {urdf_path.name}, which is not in urdf/ yet')
    links = {link.name for link in parse_urdf(urdf_path).links}
    named = [params[key] for key in ('base_link', 'tip_link') if params.get(key)]
    tips = params.get('tip_links') or []
    named += [tips] if isinstance(tips, str) else list(tips)
    assert named, f'{path.name} names no base_link/tip_link(s)'
    unknown = [name for name in named if name not in links]
    assert not unknown, f'{path.name} names {unknown}, not links of {urdf_path.name}: {links}'


# ------------------------------------------------------------------------------------ quad12
QUAD12 = URDF_DIR / 'quad12.urdf'
QUAD12_FEET = ('FL_foot', 'FR_foot', 'RL_foot', 'RR_foot')


def quad12_leg(foot: str) -> Chain:
    return Chain.from_urdf_file(QUAD12, 'base_link', foot)


@pytest.mark.parametrize('foot', QUAD12_FEET)
def test_quad12_legs_are_abduction_about_x_then_pitch_and_knee_about_y(foot):
    leg = foot.split('_')[0]
    chain = quad12_leg(foot)
    assert chain.joint_names == [f'{leg}_hip_abduction', f'{leg}_hip_pitch', f'{leg}_knee']
    frames = chain.joint_frames(np.zeros(3))
    axes = [frames[i, :3, :3] @ joint.axis for i, joint in enumerate(chain.joints)]
    np.testing.assert_allclose(axes, [[1, 0, 0], [0, 1, 0], [0, 1, 0]], atol=1e-12)
    assert np.all(chain.lower < 0.0) and np.all(chain.lower < chain.upper)
    assert chain.upper[2] < 0.0  # the knee bends one way only (backward)


@pytest.mark.parametrize('foot', QUAD12_FEET)
def test_quad12_feet_are_offset_from_the_abduction_axis_and_placed_by_their_corner(foot):
    chain = quad12_leg(foot)
    sx = 1.0 if foot[0] == 'F' else -1.0
    sy = 1.0 if foot[1] == 'L' else -1.0
    abduction = chain.joint_frames(np.zeros(3))[0, :3, 3]
    assert np.sign(abduction[0]) == sx and np.sign(abduction[1]) == sy
    rng = np.random.default_rng(23)
    for _ in range(50):  # the lateral hip offset: the foot never comes nearer the axis
        p = chain.fk(rng.uniform(chain.lower, chain.upper))[:3, 3]
        assert math.hypot(p[1] - abduction[1], p[2] - abduction[2]) >= 0.08 - 1e-12
    p0 = chain.fk(np.zeros(3))[:3, 3]
    np.testing.assert_allclose(p0 - abduction, [sx * 0.03, sy * 0.08, -0.45], atol=1e-12)


def test_quad12_tree_has_the_four_legs_and_no_shared_moving_joint():
    tree = Chain.from_urdf_file(QUAD12, 'base_link', list(QUAD12_FEET))
    assert tree.n == 12 and tree.tip_links == list(QUAD12_FEET)
    used = [set(tree.joints_of_tip(foot)) for foot in QUAD12_FEET]
    assert all(len(joints) == 3 for joints in used)
    assert len(set().union(*used)) == 12


def test_quad12_config_names_the_four_feet():
    params = parameters_of(yaml.safe_load((CONFIG_DIR / 'quad12.yaml').read_text()))
    assert params['urdf_file'] == 'quad12.urdf' and params['base_link'] == 'base_link'
    assert params['tip_links'] == list(QUAD12_FEET)
    assert 'analytic_hip_knee' in params


def test_quad12_config_builds_its_solver_on_the_tree():
    from ik_node.config.launch_plan import plan_from_arguments
    plan = plan_from_arguments({'robot': 'quad12', 'rviz': 'false'}, REPO)
    assert plan.ik_node_parameters['tip_links'] == list(QUAD12_FEET)
    assert plan.robot_description == QUAD12.read_text()


@pytest.mark.parametrize('foot', QUAD12_FEET)
def test_quad12_leg_config_solves_each_leg_in_closed_form(foot):
    from ik_node.config.launch_plan import plan_from_arguments
    from ik_node import make_solver
    plan = plan_from_arguments({'params_file': str(CONFIG_DIR / 'quad12_leg.yaml'),
                                'tip_link': foot, 'rviz': 'false'}, REPO)
    params = plan.ik_node_parameters
    assert params['solver'] == 'analytic_hip_knee' and params['tip_link'] == foot
    chain = quad12_leg(foot)
    solver = make_solver('analytic_hip_knee', chain)
    rng = np.random.default_rng(4)
    for _ in range(20):
        target = chain.fk(rng.uniform(chain.lower, chain.upper))[:3, 3]
        result = solver.solve(target)
        assert np.linalg.norm(chain.fk(result.joint_positions)[:3, 3] - target) <= 1e-9
