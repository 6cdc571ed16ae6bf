"""Chain kinematics: FK against hand-derived geometry, Jacobians against finite differences,
batched and fast serial paths against the generic one, and every ChainError case."""

import math
from pathlib import Path

import numpy as np
import pytest

import transforms3d

from ik_node.model.chain import Chain
from ik_node.model.joint_motion import JointMotions
from ik_node.model.urdf_reading import motion_transform
from ik_node.errors import ChainError

from reference_robots import SHARED_ROBOTS  # noqa: E402
REPO_URDF = Path(__file__).resolve().parents[2] / 'urdf'


def _joint(name, parent, child, jtype='revolute', xyz='0 0 0', rpy='0 0 0', axis='0 0 1',
           limit='<limit lower="-2.5" upper="2.5" effort="1" velocity="1"/>', extra=''):
    axis_tag = f'<axis xyz="{axis}"/>' if axis is not None else ''
    limit_tag = limit if jtype in ('revolute', 'prismatic') else ''
    return (f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/>'
            f'<child link="{child}"/><origin xyz="{xyz}" rpy="{rpy}"/>{axis_tag}{limit_tag}'
            f'{extra}</joint>')


def _robot(links, joints):
    return ('<?xml version="1.0"?><robot name="r">' +
            ''.join(f'<link name="{k}"/>' for k in links) + ''.join(joints) + '</robot>')


# A planar arm: three joints about z, links 0.4, 0.3, 0.2 m along x.
PLANAR_LENGTHS = (0.4, 0.3, 0.2)
PLANAR3 = _robot(['base', 'l1', 'l2', 'l3', 'tip'], [
    _joint('j1', 'base', 'l1'),
    _joint('j2', 'l1', 'l2', xyz='0.4 0 0'),
    _joint('j3', 'l2', 'l3', xyz='0.3 0 0'),
    _joint('tip_fixed', 'l3', 'tip', jtype='fixed', xyz='0.2 0 0', axis=None),
])

# Prismatic, continuous, an oblique axis and rpy origins, with fixed joints in between.
MIXED = _robot(['base', 'a', 'b', 'c', 'd', 'e', 'tool'], [
    _joint('slide', 'base', 'a', jtype='prismatic', xyz='0.1 0 0.2', axis='0 0 1',
           limit='<limit lower="-0.3" upper="0.5" effort="1" velocity="1"/>'),
    _joint('spin', 'a', 'b', jtype='continuous', xyz='0 0.1 0.3', rpy='0.3 -0.2 0.5',
           axis='1 1 0'),
    _joint('bend', 'b', 'c', xyz='0.25 0 0', rpy='1.5707963267948966 0 0', axis='0 1 0'),
    _joint('fixed_mid', 'c', 'd', jtype='fixed', xyz='0 0 0.1', rpy='0 0.4 0', axis=None),
    _joint('slide2', 'd', 'e', jtype='prismatic', xyz='0.05 0 0', axis='0.2 -0.5 1',
           limit='<limit lower="0" upper="0.2" effort="1" velocity="1"/>'),
    _joint('tool_fixed', 'e', 'tool', jtype='fixed', xyz='0 0 0.15', rpy='0 0 -0.7', axis=None),
])

# A tree: a shared trunk joint then two branches, one tip each.
TREE = _robot(['base', 'trunk', 'l1', 'l2', 'tip_l', 'r1', 'r2', 'tip_r'], [
    _joint('waist', 'base', 'trunk', xyz='0 0 0.3', axis='0 0 1'),
    _joint('l_shoulder', 'trunk', 'l1', xyz='0 0.2 0', axis='0 1 0'),
    _joint('l_elbow', 'l1', 'l2', xyz='0.3 0 0', axis='0 1 0'),
    _joint('l_tip', 'l2', 'tip_l', jtype='fixed', xyz='0.25 0 0', axis=None),
    _joint('r_shoulder', 'trunk', 'r1', xyz='0 -0.2 0', axis='1 0 0'),
    _joint('r_slide', 'r1', 'r2', jtype='prismatic', xyz='0 0 -0.2', axis='0 0 -1',
           limit='<limit lower="0" upper="0.3" effort="1" velocity="1"/>'),
    _joint('r_tip', 'r2', 'tip_r', jtype='fixed', xyz='0 0 -0.1', axis=None),
])


def _chains():
    """(label, chain, tip) for every robot the property tests run on."""
    out = [('planar3', Chain.from_urdf_string(PLANAR3, 'base', 'tip'), None),
           ('mixed', Chain.from_urdf_string(MIXED, 'base', 'tool'), None)]
    tree = Chain.from_urdf_string(TREE, 'base', ['tip_l', 'tip_r'])
    out += [('tree_left', tree, 'tip_l'), ('tree_right', tree, 'tip_r')]
    for name, base, tip in [('planar4.urdf', 'base_link', 'tip'), ('leg3.urdf', 'base_link',
                                                                        'foot')]:
        out.append((name, Chain.from_urdf_file(REPO_URDF / name, base, tip), None))
    for name, base, tip in [('ur5.urdf', 'base_link', 'tool0'),
                            ('panda.urdf', 'panda_link0', 'panda_hand_tcp')]:
        if (SHARED_ROBOTS / name).is_file():
            out.append((name, Chain.from_urdf_file(SHARED_ROBOTS / name, base, tip), None))
    return out


CHAINS = _chains()
CHAIN_IDS = [label for label, _, _ in CHAINS]


def _random_q(chain, rng, size=None):
    low = np.where(np.isfinite(chain.lower), chain.lower, -math.pi)
    high = np.where(np.isfinite(chain.upper), chain.upper, math.pi)
    shape = (chain.n,) if size is None else (size, chain.n)
    return rng.uniform(low, high, shape)


def _small_rotation_vector(R):
    """Rotation vector of a rotation by a small angle (error of order angle^3)."""
    return 0.5 * np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])


# ---------------------------------------------------------------------- hand-derived geometry
def test_planar_arm_at_zero_reaches_the_sum_of_link_lengths_along_x():
    chain = Chain.from_urdf_string(PLANAR3, 'base', 'tip')
    T = chain.fk(np.zeros(3))
    np.testing.assert_allclose(T[:3, 3], [sum(PLANAR_LENGTHS), 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(T[:3, :3], np.eye(3), atol=1e-12)


def test_planar_arm_first_joint_at_90_degrees_points_the_arm_along_y():
    chain = Chain.from_urdf_string(PLANAR3, 'base', 'tip')
    T = chain.fk(np.array([math.pi / 2, 0.0, 0.0]))
    np.testing.assert_allclose(T[:3, 3], [0.0, sum(PLANAR_LENGTHS), 0.0], atol=1e-12)
    np.testing.assert_allclose(T[:3, :3], [[0, -1, 0], [1, 0, 0], [0, 0, 1]], atol=1e-12)


def test_planar_arm_elbow_at_90_degrees_bends_the_forearm_along_y():
    chain = Chain.from_urdf_string(PLANAR3, 'base', 'tip')
    T = chain.fk(np.array([0.0, math.pi / 2, 0.0]))
    np.testing.assert_allclose(T[:3, 3], [0.4, 0.5, 0.0], atol=1e-12)


def test_planar_arm_joint_frames_sit_at_the_joint_origins():
    chain = Chain.from_urdf_string(PLANAR3, 'base', 'tip')
    frames = chain.joint_frames(np.array([math.pi / 2, -math.pi / 2, 0.0]))
    np.testing.assert_allclose(frames[:, :3, 3], [[0, 0, 0], [0, 0.4, 0], [0.3, 0.4, 0]],
                               atol=1e-12)


def test_prismatic_joint_moves_the_tip_along_its_axis_by_q():
    chain = Chain.from_urdf_string(MIXED, 'base', 'tool')
    q = np.array([0.1, 0.4, -0.3, 0.05])
    dq = np.array([0.2, 0.0, 0.0, 0.0])
    # The first joint slides along base z, so the whole arm moves by 0.2 m along z.
    np.testing.assert_allclose(chain.fk(q + dq)[:3, 3] - chain.fk(q)[:3, 3], [0, 0, 0.2],
                               atol=1e-12)


def test_continuous_joint_has_infinite_limits_and_prismatic_keeps_its_own():
    chain = Chain.from_urdf_string(MIXED, 'base', 'tool')
    assert chain.joint_names == ['slide', 'spin', 'bend', 'slide2']
    assert chain.lower[1] == -math.inf and chain.upper[1] == math.inf
    assert (chain.lower[0], chain.upper[0]) == (-0.3, 0.5)


def test_full_turn_of_a_continuous_joint_gives_the_same_pose():
    chain = Chain.from_urdf_string(MIXED, 'base', 'tool')
    q = np.array([0.1, 0.4, -0.3, 0.05])
    np.testing.assert_allclose(chain.fk(q + [0, 2 * math.pi, 0, 0]), chain.fk(q), atol=1e-12)


# ------------------------------------------------------------------------- Jacobian and FK
@pytest.mark.parametrize('label,chain,tip', CHAINS, ids=CHAIN_IDS)
def test_jacobian_matches_central_finite_differences(label, chain, tip):
    rng = np.random.default_rng(7)
    h = 1e-6
    for _ in range(10):
        q = _random_q(chain, rng)
        J = chain.jacobian(q, tip)
        T = chain.fk(q, tip)
        J_fd = np.zeros((6, chain.n))
        for i in range(chain.n):
            dq = np.zeros(chain.n)
            dq[i] = h
            T_plus, T_minus = chain.fk(q + dq, tip), chain.fk(q - dq, tip)
            J_fd[:3, i] = (T_plus[:3, 3] - T_minus[:3, 3]) / (2 * h)
            J_fd[3:, i] = (_small_rotation_vector(T_plus[:3, :3] @ T[:3, :3].T) -
                           _small_rotation_vector(T_minus[:3, :3] @ T[:3, :3].T)) / (2 * h)
        np.testing.assert_allclose(J, J_fd, atol=1e-6)


@pytest.mark.parametrize('label,chain,tip', CHAINS, ids=CHAIN_IDS)
def test_batched_fk_and_frames_equal_per_sample_results(label, chain, tip):
    rng = np.random.default_rng(11)
    Q = _random_q(chain, rng, size=6).reshape(2, 3, chain.n)
    T_batch = chain.fk(Q, tip)
    frames_batch = chain.joint_frames(Q)
    assert T_batch.shape == (2, 3, 4, 4)
    for a in range(2):
        for b in range(3):
            np.testing.assert_allclose(T_batch[a, b], chain.fk(Q[a, b], tip), atol=1e-12)
            np.testing.assert_allclose(frames_batch[a, b], chain.joint_frames(Q[a, b]),
                                       atol=1e-12)


@pytest.mark.parametrize('label,chain,tip', CHAINS, ids=CHAIN_IDS)
def test_fk_and_jacobian_equal_the_generic_frame_computation(label, chain, tip):
    # Serial chains take a generated fast path; it must agree with the joint-frame product.
    rng = np.random.default_rng(3)
    k = chain.tip_index(tip)
    for _ in range(20):
        q = _random_q(chain, rng)
        frames = chain.joint_frames(q)
        T = chain._tip_from_frames(frames, k)
        np.testing.assert_allclose(chain.fk(q, tip), T, atol=1e-12)
        np.testing.assert_allclose(chain.jacobian(q, tip),
                                   chain.jacobian_from_frames(frames, T[:3, 3], k), atol=1e-12)


@pytest.mark.parametrize('label,chain,tip', CHAINS, ids=CHAIN_IDS)
def test_generated_pose_normal_equations_equal_numpy_ones(label, chain, tip):
    # pose_normal fuses the 6D error and J^T W J, J^T W e into one generated function.
    fast = chain.fast_kinematics
    if fast is None or tip is not None:
        pytest.skip('no generated kinematics for a tree')
    rng = np.random.default_rng(11)
    w2 = 0.3 ** 2
    W = np.diag([1.0, 1.0, 1.0, w2, w2, w2])
    lower_triangle = [(a, b) for a in range(chain.n) for b in range(a + 1)]
    for trial in range(20):
        q = _random_q(chain, rng)
        T_target = chain.fk(_random_q(chain, rng))
        if trial < 3:  # targets half a turn (and nearly) away from the tip rotation
            angle = math.pi - [0.0, 1e-4, 1e-2][trial]
            axis = rng.normal(size=3)
            T_target[:3, :3] = _rotation(axis / np.linalg.norm(axis), angle) @ chain.fk(q)[:3, :3]
        target = tuple(T_target[:3, 3]) + tuple(T_target[:3, :3].ravel())
        cost, position_error, angle, H, g = fast.pose_normal(target, w2, (-1.0, -1.0),
                                                             q.tolist())
        T = chain.fk(q)
        J = chain.jacobian(q)
        R_error = T_target[:3, :3] @ T[:3, :3].T
        expected_angle = math.acos(np.clip(0.5 * (np.trace(R_error) - 1.0), -1.0, 1.0))
        omega = _rotation_vector(R_error, expected_angle)
        e = np.concatenate([T_target[:3, 3] - T[:3, 3], omega])
        assert position_error == pytest.approx(np.linalg.norm(e[:3]), abs=1e-12)
        assert angle == pytest.approx(expected_angle, abs=1e-7)
        assert cost == pytest.approx(position_error ** 2 + w2 * angle ** 2, abs=1e-12)
        H_expected = J.T @ W @ J
        np.testing.assert_allclose(H, [H_expected[a, b] for a, b in lower_triangle], atol=1e-12)
        np.testing.assert_allclose(g, J.T @ W @ e, atol=1e-6 if trial < 3 else 1e-12)

        # Within the tolerances no step follows: the normal equations are not built.
        tolerances = (position_error, angle)
        assert fast.pose_normal(target, w2, tolerances, q.tolist())[3:] == (None, None)
        assert fast.pose_normal(target, w2, (0.99 * position_error, angle), q.tolist())[3] \
            is not None



@pytest.mark.parametrize('label,chain,tip', CHAINS, ids=CHAIN_IDS)
def test_generated_position_residual_equals_fk_and_jacobian(label, chain, tip):
    fast = chain.fast_kinematics
    if fast is None or tip is not None:
        pytest.skip('no generated kinematics for a tree')
    rng = np.random.default_rng(12)
    for _ in range(20):
        q = _random_q(chain, rng)
        target = tuple(chain.fk(_random_q(chain, rng))[:3, 3])
        cost, error, angle, J, e = fast.position_residual(target, -1.0, q.tolist())
        e_expected = np.array(target) - chain.fk(q)[:3, 3]
        np.testing.assert_allclose(e, e_expected, atol=1e-12)
        assert error == pytest.approx(np.linalg.norm(e_expected), abs=1e-12)
        assert cost == pytest.approx(error ** 2, abs=1e-12) and angle == 0.0
        np.testing.assert_allclose(J, chain.jacobian(q)[:3], atol=1e-12)
        assert fast.position_residual(target, error, q.tolist())[3:] == (None, None)


@pytest.mark.parametrize('label,chain,tip', CHAINS, ids=CHAIN_IDS)
def test_generated_code_assigns_each_expression_once(label, chain, tip):
    fast = chain.fast_kinematics
    if fast is None or tip is not None:
        pytest.skip('no generated kinematics for a tree')
    for function in fast.source.split('\n\n'):
        assigned = [line.split(' = ', 1)[1] for line in function.splitlines()
                    if line.startswith('    v') and ' = ' in line]
        assert len(assigned) == len(set(assigned)), function.splitlines()[0]

def _rotation(axis, angle):
    K = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return np.eye(3) + math.sin(angle) * K + (1.0 - math.cos(angle)) * K @ K


def _rotation_vector(R, angle):
    """Rotation vector of R by the eigenvector of eigenvalue 1, signed by the skew part."""
    values, vectors = np.linalg.eig(R)
    axis = np.real(vectors[:, np.argmin(np.abs(values - 1.0))])
    skew = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    if axis @ skew < 0.0:
        axis = -axis
    return axis / np.linalg.norm(axis) * angle


@pytest.mark.parametrize('label,chain,tip', CHAINS, ids=CHAIN_IDS)
def test_fk_rotation_is_orthonormal(label, chain, tip):
    rng = np.random.default_rng(5)
    for _ in range(10):
        R = chain.fk(_random_q(chain, rng), tip)[:3, :3]
        np.testing.assert_allclose(R @ R.T, np.eye(3), atol=1e-12)
        assert np.linalg.det(R) == pytest.approx(1.0, abs=1e-12)


def test_serial_chain_has_a_fast_path_and_a_tree_does_not():
    assert Chain.from_urdf_string(PLANAR3, 'base', 'tip').fast_kinematics is not None
    assert Chain.from_urdf_string(TREE, 'base', ['tip_l', 'tip_r']).fast_kinematics is None


def test_fk_accepts_a_list_and_rejects_a_wrong_length():
    chain = Chain.from_urdf_string(PLANAR3, 'base', 'tip')
    np.testing.assert_allclose(chain.fk([0.0, 0.0, 0.0])[:3, 3], [0.9, 0, 0], atol=1e-12)
    with pytest.raises(ValueError, match=r'\(4,\)'):
        chain.fk(np.zeros(4))


def test_fk_of_nonfinite_q_is_nan_not_an_exception():
    chain = Chain.from_urdf_string(PLANAR3, 'base', 'tip')
    with np.errstate(invalid='ignore'):
        assert np.isnan(chain.fk(np.array([math.inf, 0.0, 0.0]))[:3, 3]).all()


def test_tree_jacobian_has_zero_columns_for_the_other_branch():
    tree = Chain.from_urdf_string(TREE, 'base', ['tip_l', 'tip_r'])
    q = np.array([0.3, 0.2, -0.4, 0.5, 0.1])
    left = tree.joints_of_tip('tip_l')
    right = tree.joints_of_tip('tip_r')
    assert [tree.joint_names[i] for i in left] == ['waist', 'l_shoulder', 'l_elbow']
    assert [tree.joint_names[i] for i in right] == ['waist', 'r_shoulder', 'r_slide']
    J_left = tree.jacobian(q, 'tip_l')
    assert np.all(J_left[:, [i for i in range(tree.n) if i not in left]] == 0.0)
    assert set(tree.fk_tips(q)) == {'tip_l', 'tip_r'}


def test_tree_prismatic_branch_moves_its_tip_down_by_q():
    tree = Chain.from_urdf_string(TREE, 'base', ['tip_l', 'tip_r'])
    q = np.zeros(tree.n)
    q_slid = q.copy()
    q_slid[tree.joint_names.index('r_slide')] = 0.25
    np.testing.assert_allclose(tree.fk(q_slid, 'tip_r')[:3, 3] - tree.fk(q, 'tip_r')[:3, 3],
                               [0, 0, -0.25], atol=1e-12)
    np.testing.assert_allclose(tree.fk(q, 'tip_r')[:3, 3], [0, -0.2, 0.3 - 0.2 - 0.1],
                               atol=1e-12)


def test_link_transform_of_the_tip_equals_fk_and_of_the_base_is_identity():
    chain = Chain.from_urdf_string(MIXED, 'base', 'tool')
    q = np.array([0.1, 0.4, -0.3, 0.05])
    np.testing.assert_allclose(chain.link_transform('tool', q), chain.fk(q), atol=1e-12)
    np.testing.assert_allclose(chain.link_transform('base', q), np.eye(4), atol=1e-12)


def test_link_transform_of_an_intermediate_link_sits_at_its_joint():
    chain = Chain.from_urdf_string(PLANAR3, 'base', 'tip')
    T = chain.link_transform('l3', np.array([math.pi / 2, 0.0, 0.0]))
    np.testing.assert_allclose(T[:3, 3], [0.0, 0.7, 0.0], atol=1e-12)


def test_a_joints_motion_is_the_axis_angle_rotation_or_the_slide_along_its_axis():
    # One formula (JointMotions) for a chain's joints and for any URDF joint's motion, checked
    # against transforms3d's axis-angle rotation and by hand for the slide.
    rng = np.random.default_rng(2)
    axes = rng.normal(size=(4, 3))
    axes /= np.linalg.norm(axes, axis=1)[:, None]
    motions = JointMotions(axes, [False, True, False, True])
    q = rng.uniform(-3.0, 3.0, (6, 4))
    M = motions(q)
    assert M.shape == (6, 4, 4, 4)
    for k in range(6):
        for i in range(4):
            expected = np.eye(4)
            if i % 2:
                expected[:3, 3] = axes[i] * q[k, i]
            else:
                expected[:3, :3] = transforms3d.axangles.axangle2mat(axes[i], q[k, i])
            np.testing.assert_allclose(M[k, i], expected, atol=1e-12)


def test_a_urdf_joints_motion_is_the_chains():
    chain = Chain.from_urdf_string(MIXED, 'base', 'tool')
    joints = {uj.name: uj for uj in chain._robot.joints}
    q = np.array([0.2, -1.1, 0.7, 0.15])
    local = chain.local_transforms(q)
    for i, joint in enumerate(chain.joints):
        np.testing.assert_array_equal(motion_transform(joints[joint.name], q[i]),
                                      JointMotions(joint.axis, [joint.is_prismatic])([q[i]])[0])
        assert np.allclose(local[i], joint.T_parent_joint @ motion_transform(joints[joint.name],
                                                                              q[i]), atol=1e-15)
    np.testing.assert_array_equal(motion_transform(joints['fixed_mid'], 0.3), np.eye(4))


def test_link_transform_of_an_unknown_frame_lists_the_links():
    chain = Chain.from_urdf_string(PLANAR3, 'base', 'tip')
    with pytest.raises(ChainError, match=r"'nowhere'.*Available links: base, l1"):
        chain.link_transform('nowhere', np.zeros(3))


def test_limits_clip_and_mid_configuration():
    chain = Chain.from_urdf_string(MIXED, 'base', 'tool')
    np.testing.assert_allclose(chain.mid_configuration(), [0.1, 0.0, 0.0, 0.1])
    clipped = chain.clip(np.array([9.0, 100.0, -9.0, -1.0]))
    np.testing.assert_allclose(clipped, [0.5, 100.0, -2.5, 0.0])
    assert chain.within_limits(clipped)
    assert not chain.within_limits(np.array([0.6, 0.0, 0.0, 0.0]))


# ------------------------------------------------------------------------------ ChainError
def test_missing_base_link_is_named_and_available_links_listed():
    with pytest.raises(ChainError, match=r"base link 'nope' .*Available links: base, l1, l2"):
        Chain.from_urdf_string(PLANAR3, 'nope', 'tip')


def test_missing_tip_link_is_named():
    with pytest.raises(ChainError, match=r"tip link 'hand' is not in the URDF"):
        Chain.from_urdf_string(PLANAR3, 'base', 'hand')


def test_tip_that_is_not_below_the_base_has_no_path():
    with pytest.raises(ChainError, match=r"no path from base link 'l2' to tip link 'l1'"):
        Chain.from_urdf_string(PLANAR3, 'l2', 'l1')


@pytest.mark.parametrize('jtype', ['floating', 'planar'])
def test_floating_or_planar_joint_on_the_path_is_refused_by_type(jtype):
    xml = _robot(['base', 'a', 'tip'], [
        _joint('j1', 'base', 'a'),
        _joint('free', 'a', 'tip', jtype=jtype, limit=''),
    ])
    with pytest.raises(ChainError, match=rf"'free' has type '{jtype}'"):
        Chain.from_urdf_string(xml, 'base', 'tip')


def test_lower_limit_above_upper_names_both_values():
    xml = _robot(['base', 'tip'], [
        _joint('j1', 'base', 'tip',
               limit='<limit lower="1.5" upper="-0.5" effort="1" velocity="1"/>')])
    with pytest.raises(ChainError, match=r"'j1' has lower limit 1.5 > upper limit -0.5"):
        Chain.from_urdf_string(xml, 'base', 'tip')


def test_zero_length_axis_is_refused_with_the_axis():
    xml = _robot(['base', 'tip'], [_joint('j1', 'base', 'tip', axis='0 0 0')])
    with pytest.raises(ChainError, match=r"'j1' has axis \[0.0, 0.0, 0.0\]"):
        Chain.from_urdf_string(xml, 'base', 'tip')


def test_malformed_xml_is_a_chain_error():
    with pytest.raises(ChainError, match='malformed URDF XML'):
        Chain.from_urdf_string('<robot name="r"><link name="a"></robot>', 'a', 'a')


def test_empty_urdf_is_a_chain_error():
    with pytest.raises(ChainError, match='URDF is empty'):
        Chain.from_urdf_string('   ', 'a', 'a')


def test_mimic_joint_on_the_path_names_the_joint_it_mimics():
    xml = _robot(['base', 'a', 'tip'], [
        _joint('j1', 'base', 'a'),
        _joint('j2', 'a', 'tip', extra='<mimic joint="j1" multiplier="1"/>'),
    ])
    with pytest.raises(ChainError, match=r"'j2' mimics 'j1'"):
        Chain.from_urdf_string(xml, 'base', 'tip')


def test_missing_urdf_file_names_the_path(tmp_path):
    path = tmp_path / 'absent.urdf'
    with pytest.raises(ChainError, match='absent.urdf'):
        Chain.from_urdf_file(path, 'base', 'tip')


def test_revolute_joint_without_limit_is_refused():
    xml = _robot(['base', 'tip'], [_joint('j1', 'base', 'tip', limit='')])
    with pytest.raises(ChainError, match=r"revolute joint 'j1' has no <limit>"):
        Chain.from_urdf_string(xml, 'base', 'tip')


def test_unknown_tip_name_in_fk_lists_the_tips():
    tree = Chain.from_urdf_string(TREE, 'base', ['tip_l', 'tip_r'])
    with pytest.raises(ChainError, match=r"'l2' is not a tip of this chain. Tips: tip_l, tip_r"):
        tree.fk(np.zeros(tree.n), 'l2')
