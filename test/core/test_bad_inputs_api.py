"""The bad-input catalogue through the Python API and the command line.

Every item is either refused with its own specific error (naming the bad value) or, when it is
valid but awkward input (a non-unit quaternion, an empty frame, a singular target, continuous or
prismatic joints, zero-length links), handled: the answer is finite, within the joint limits, and
its status is honest (``reachable`` exactly when the FK-measured error is within tolerance).

No ROS is started here; the node-level half of the catalogue is test_bad_inputs_node.py.
"""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from urdf_limits import urdf_limits

from ik_node import (SOLVERS, Chain, ChainError, ConfigError, IkStatus, TargetError, make_solver,
                     solver_class)

REPO = Path(__file__).resolve().parents[2]
URDF_DIR = REPO / 'urdf'
LEG3 = URDF_DIR / 'leg3.urdf'
PLANAR4 = URDF_DIR / 'planar4.urdf'
ARM6 = URDF_DIR / 'arm6.urdf'
NAN, INF = float('nan'), float('inf')

# Link lengths written in the model files (read by eye from urdf/*.urdf, not from the code).
LEG3_REACH_M = 0.30 + 0.28           # thigh + shin, below the hip pitch joint at z = -0.05
LEG3_HIP_Z_M = -0.05
PLANAR4_REACH_M = 0.35 + 0.30 + 0.25 + 0.20


# ------------------------------------------------------------------------------------ helpers
def _joint(name, parent, child, jtype='revolute', xyz='0 0 0', rpy='0 0 0', axis='0 0 1',
           lower=-2.5, upper=2.5, extra=''):
    axis_tag = f'<axis xyz="{axis}"/>' if axis is not None else ''
    limit_tag = (f'<limit lower="{lower}" upper="{upper}" effort="1" velocity="1"/>'
                 if jtype in ('revolute', 'prismatic') and lower is not None else '')
    return (f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/>'
            f'<child link="{child}"/><origin xyz="{xyz}" rpy="{rpy}"/>{axis_tag}{limit_tag}'
            f'{extra}</joint>')


def _robot(links, joints):
    return ('<?xml version="1.0"?><robot name="r">' +
            ''.join(f'<link name="{k}"/>' for k in links) + ''.join(joints) + '</robot>')


def _arm3(**second_joint):
    """A 3-joint arm base -> l1 -> l2 -> l3 -> tip whose second joint takes ``second_joint``."""
    j2 = dict(name='j2', parent='l1', child='l2', xyz='0.3 0 0', axis='0 1 0')
    j2.update(second_joint)
    return _robot(['base', 'l1', 'l2', 'l3', 'tip'], [
        _joint('j1', 'base', 'l1', xyz='0 0 0.1'),
        _joint(**j2),
        _joint('j3', 'l2', 'l3', xyz='0.25 0 0', axis='0 1 0'),
        _joint('tip_fixed', 'l3', 'tip', jtype='fixed', xyz='0.2 0 0', axis=None),
    ])


def assert_honest(result, chain, xml, p_target, tolerance):
    """Finite, within the URDF limits, errors measured by FK, and ``reachable`` exactly when the
    FK error is within ``tolerance``; a miss is never labelled converged."""
    q = np.asarray(result.joint_positions, dtype=float)
    assert q.shape == (len(result.joint_names),)
    assert np.all(np.isfinite(q)), q
    lower, upper = urdf_limits(xml, result.joint_names)
    assert np.all(q >= lower - 1e-9) and np.all(q <= upper + 1e-9), (q, lower, upper)
    measured = float(np.linalg.norm(chain.fk(q)[:3, 3] - np.asarray(p_target, dtype=float)))
    assert math.isfinite(result.position_error)
    assert result.position_error == pytest.approx(measured, abs=1e-9)
    assert result.reachable == (measured <= tolerance)
    if not result.reachable:
        assert result.status is not IkStatus.CONVERGED
    else:
        assert result.status in (IkStatus.CONVERGED, IkStatus.DEGENERATE)


@pytest.fixture(scope='module')
def models():
    """name -> (chain, xml) of the three packaged robots."""
    out = {}
    for name, path, tip in (('leg3', LEG3, 'foot'), ('planar4', PLANAR4, 'tip'),
                            ('arm6', ARM6, 'tool0')):
        xml = path.read_text()
        out[name] = (Chain.from_urdf_string(xml, 'base_link', tip), xml)
    return out


def _solvers_for(chain):
    """Every registered solver that accepts ``chain`` (the analytic one refuses most chains)."""
    out = []
    for name in sorted(SOLVERS):
        try:
            out.append(make_solver(name, chain))
        except ChainError:
            continue
    return out


# ---------------------------------------------------------------- targets: refused, each named
BAD_TARGETS = {
    'nan_x': ([NAN, 0.0, -0.4], None, 'NaN'),
    'inf_y': ([0.1, INF, -0.4], None, 'inf'),
    'minus_inf_z': ([0.1, 0.0, -INF], None, 'inf'),
    'huge_1e12': ([1e12, 0.0, 0.0], None, 'beyond'),
    'two_coordinates': ([0.1, 0.2], None, '3 values'),
    'not_numeric': (['a', 'b', 'c'], None, 'not numeric'),
    'zero_quaternion': ([0.1, 0.0, -0.4], [0.0, 0.0, 0.0, 0.0], 'zero length'),
    'nan_quaternion': ([0.1, 0.0, -0.4], [NAN, 0.0, 0.0, 1.0], 'NaN'),
    'inf_quaternion': ([0.1, 0.0, -0.4], [0.0, INF, 0.0, 1.0], 'inf'),
    'three_value_quaternion': ([0.1, 0.0, -0.4], [0.0, 0.0, 1.0], 'quaternion'),
}


@pytest.mark.parametrize('solver', sorted(SOLVERS))
@pytest.mark.parametrize('item', sorted(BAD_TARGETS))
def test_bad_target_raises_target_error_naming_the_problem(models, solver, item):
    chain = models['leg3'][0]
    position, quat, words = BAD_TARGETS[item]
    with pytest.raises(TargetError, match=words):
        make_solver(solver, chain).solve(position, quat)


@pytest.mark.parametrize('solver', sorted(SOLVERS))
def test_a_refused_target_leaves_the_solver_usable(models, solver):
    chain, xml = models['leg3']
    s = make_solver(solver, chain)
    for position, quat, _ in BAD_TARGETS.values():
        with pytest.raises(TargetError):
            s.solve(position, quat)
    q_known = np.array([0.3, 0.4, -0.8])
    p = chain.fk(q_known)[:3, 3]
    result = s.solve(p)
    tol = s.params['position_tolerance']
    assert_honest(result, chain, xml, p, tol)


@pytest.mark.parametrize('seed,words', [([NAN, 0.0, 0.0], 'NaN'), ([0.0, INF, 0.0], 'inf'),
                                        ([0.0, 0.0], '3 joints'), ([0.0] * 4, '3 joints')])
@pytest.mark.parametrize('solver', sorted(SOLVERS))
def test_bad_seed_raises_target_error(models, solver, seed, words):
    with pytest.raises(TargetError, match=words):
        make_solver(solver, models['leg3'][0]).solve([0.1, 0.0, -0.4], seed=seed)


@pytest.mark.parametrize('solver', sorted(SOLVERS))
def test_seed_outside_the_limits_is_clipped_not_refused(models, solver):
    chain, xml = models['leg3']
    s = make_solver(solver, chain)
    p = chain.fk(np.array([0.2, -0.3, 0.9]))[:3, 3]
    result = s.solve(p, seed=[50.0, -50.0, 50.0])
    assert_honest(result, chain, xml, p, s.params['position_tolerance'])


def test_fabrik_targets_mapping_refuses_unknown_tip_and_mixed_arguments(models):
    chain = models['planar4'][0]
    s = make_solver('fabrik', chain)
    with pytest.raises(TargetError, match='no_such_tip'):
        s.solve(targets={'no_such_tip': [0.5, 0.0, 0.0]})
    with pytest.raises(TargetError, match='not also pass'):
        s.solve([0.5, 0.0, 0.0], targets={'tip': [0.5, 0.0, 0.0]})
    with pytest.raises(TargetError, match='NaN'):
        s.solve(targets={'tip': [NAN, 0.0, 0.0]})
    with pytest.raises(TargetError):
        s.solve(targets={})


# ------------------------------------------------------------ targets: valid, must be handled
def test_non_unit_quaternion_is_normalised_to_the_same_answer(models):
    chain, xml = models['arm6']
    q_known = np.array([0.4, -1.1, 1.3, -0.9, 1.2, 0.3])
    T = chain.fk(q_known)
    w, x, y, z = __import__('transforms3d').quaternions.mat2quat(T[:3, :3])
    unit = np.array([x, y, z, w])
    s = make_solver('damped_jacobian', chain, {'timeout': 0.5, 'restart_seed': 3})
    a = s.solve(T[:3, 3], unit, seed=q_known + 0.05)
    b = s.solve(T[:3, 3], 7.5 * unit, seed=q_known + 0.05)
    np.testing.assert_allclose(a.joint_positions, b.joint_positions, atol=1e-9)
    assert a.reachable and b.reachable
    assert b.orientation_error == pytest.approx(a.orientation_error, abs=1e-9)


def test_tiny_but_nonzero_quaternion_is_normalised_not_refused(models):
    chain = models['arm6'][0]
    result = make_solver('damped_jacobian', chain).solve([0.3, 0.2, 0.4], [0, 0, 0, 1e-3])
    assert np.all(np.isfinite(result.joint_positions))


@pytest.mark.parametrize('robot,target', [
    ('leg3', [0.0, 0.0, 0.0]),                                   # base origin, on the yaw axis
    ('leg3', [0.0, 0.0, LEG3_HIP_Z_M]),                          # the hip centre itself
    ('leg3', [0.0, 0.0, LEG3_HIP_Z_M - LEG3_REACH_M]),           # stretched straight down
    ('leg3', [0.0, 0.0, LEG3_HIP_Z_M - LEG3_REACH_M - 0.1]),     # beyond the stretched leg
    ('planar4', [0.0, 0.0, 0.0]),                                # the first joint
    ('planar4', [PLANAR4_REACH_M, 0.0, 0.0]),                    # stretched along x
    ('planar4', [PLANAR4_REACH_M + 0.5, 0.0, 0.0]),              # beyond the stretched arm
    ('arm6', [0.0, 0.0, 0.0]),                                   # base origin
    ('arm6', [0.0, 0.0, 0.089159]),                              # on the shoulder axis
])
def test_singular_target_gets_a_finite_in_limit_answer_with_an_honest_status(models, robot,
                                                                           target):
    chain, xml = models[robot]
    solvers = _solvers_for(chain)
    assert solvers
    for s in solvers:
        result = s.solve(target)
        assert_honest(result, chain, xml, target, s.params['position_tolerance'])


def test_analytic_solver_reaches_the_stretched_leg_exactly(models):
    chain, xml = models['leg3']
    target = [0.0, 0.0, LEG3_HIP_Z_M - LEG3_REACH_M]
    result = make_solver('analytic_hip_knee', chain).solve(target)
    assert result.reachable
    assert_honest(result, chain, xml, target, 1e-5)


@pytest.mark.parametrize('beyond_m', [0.1, 10.0, 1e5])
def test_analytic_solver_reports_the_miss_of_a_target_beyond_the_stretched_leg(models, beyond_m):
    chain, xml = models['leg3']
    target = [0.0, 0.0, LEG3_HIP_Z_M - LEG3_REACH_M - beyond_m]
    result = make_solver('analytic_hip_knee', chain).solve(target)
    assert not result.reachable
    assert result.status is IkStatus.UNREACHABLE
    assert result.min_residual == pytest.approx(beyond_m, rel=1e-9)
    assert_honest(result, chain, xml, target, 1e-5)


# ------------------------------------------------------------------------- solver parameters
BAD_PARAMS = [
    ('damped_jacobian', {'position_tolerance': 0.0}, 'position_tolerance'),
    ('damped_jacobian', {'position_tolerance': -1e-3}, 'position_tolerance'),
    ('fabrik', {'position_tolerance': -1.0}, 'position_tolerance'),
    ('analytic_hip_knee', {'position_tolerance': 0}, 'position_tolerance'),
    ('damped_jacobian', {'orientation_tolerance': -0.1}, 'orientation_tolerance'),
    ('damped_jacobian', {'orientation_tolerance': 0.0}, 'orientation_tolerance'),
    ('damped_jacobian', {'step_size': 0.0}, 'step_size'),
    ('damped_jacobian', {'step_size': -0.5}, 'step_size'),
    ('damped_jacobian', {'max_iterations': 0}, 'max_iterations'),
    ('fabrik', {'max_iterations': 0}, 'max_iterations'),
    ('damped_jacobian', {'max_iterations': 2.5}, 'whole number'),
    ('damped_jacobian', {'max_iterations': '100'}, 'number'),
    ('damped_jacobian', {'damping': 'lots'}, 'number'),
    ('damped_jacobian', {'damping': True}, 'number'),
    ('damped_jacobian', {'damping': 0.0}, 'damping'),
    ('damped_jacobian', {'timeout': NAN}, 'finite'),
    ('damped_jacobian', {'timeout': 0.0}, 'timeout'),
    ('damped_jacobian', {'timeout': INF}, 'finite'),
    ('damped_jacobian', {'method': 'newton'}, 'dls'),
    ('damped_jacobian', {'method': 3}, 'string'),
    ('damped_jacobian', {'record_history': 'yes'}, 'true or false'),
    ('damped_jacobian', {'no_such_param': 1}, 'Valid parameters'),
    ('analytic_hip_knee', {'branch': 'sideways'}, 'forward'),
    ('fabrik', {'weights': [1.0, -1.0]}, 'weights'),
    ('fabrik', {'weights': 'heavy'}, 'weights'),
    ('fabrik', {'stall_iterations': 0}, 'stall_iterations'),
]


@pytest.mark.parametrize('solver,params,words', BAD_PARAMS,
                         ids=[f'{s}-{next(iter(p))}={next(iter(p.values()))!r}'
                              for s, p, _ in BAD_PARAMS])
def test_bad_solver_parameter_raises_config_error_naming_it(models, solver, params, words):
    with pytest.raises(ConfigError, match=words):
        make_solver(solver, models['leg3'][0], params)
    with pytest.raises(ConfigError, match=words):
        solver_class(solver).validate_params(params)


def test_fabrik_weights_of_the_wrong_length_name_the_tips(models):
    with pytest.raises(ConfigError, match='tip'):
        make_solver('fabrik', models['leg3'][0], {'weights': [1.0, 2.0]})


@pytest.mark.parametrize('name', ['nope', '', 'FABRIK', None, 5])
def test_unknown_solver_name_lists_the_available_ones(models, name):
    with pytest.raises(ConfigError, match='Available solvers: ' + ', '.join(sorted(SOLVERS))):
        make_solver(name, models['leg3'][0])


@pytest.mark.parametrize('robot', ['arm6', 'planar4'])
def test_analytic_solver_refuses_a_chain_it_cannot_solve_and_says_what_it_expects(models, robot):
    with pytest.raises(ChainError, match='expected a leg of 3 revolute joints'):
        make_solver('analytic_hip_knee', models[robot][0])


# -------------------------------------------------------------------------------- URDF models
BAD_URDFS = {
    'missing_base_link': (_arm3(), 'nowhere', 'tip', 'Available links'),
    'missing_tip_link': (_arm3(), 'base', 'nowhere', 'nowhere'),
    'no_path_tip_above_base': (_arm3(), 'l2', 'l1', 'no path'),
    'floating_joint': (_arm3(jtype='floating'), 'base', 'tip', 'floating'),
    'planar_joint': (_arm3(jtype='planar'), 'base', 'tip', 'planar'),
    'lower_above_upper': (_arm3(lower=1.0, upper=-1.0), 'base', 'tip', 'lower limit 1.0'),
    'zero_length_axis': (_arm3(axis='0 0 0'), 'base', 'tip', 'axis'),
    'nan_axis': (_arm3(axis='nan 0 1'), 'base', 'tip', 'axis'),
    'nan_limit': (_arm3(lower='nan', upper=1.0), 'base', 'tip', 'limit'),
    'revolute_without_limit': (_arm3(lower=None), 'base', 'tip', 'no <limit>'),
    'mimic_joint': (_arm3(extra='<mimic joint="j1" multiplier="1"/>'), 'base', 'tip', 'mimic'),
    'malformed_xml': ('<robot name="r"><link name="a"></robot', 'a', 'a', 'malformed'),
    'not_a_robot': ('<html><body/></html>', 'base', 'tip', 'malformed'),
    'empty_text': ('', 'base', 'tip', 'empty'),
    'whitespace_text': ('   \n', 'base', 'tip', 'empty'),
    'joint_to_unknown_parent': (_robot(['base', 'tip'], [
        _joint('j', 'ghost', 'tip')]), 'base', 'tip', 'no path'),
    'no_tip_given': (_arm3(), 'base', [], 'no tip'),
}


@pytest.mark.parametrize('item', sorted(BAD_URDFS))
def test_bad_urdf_raises_chain_error_naming_the_problem(item):
    xml, base, tip, words = BAD_URDFS[item]
    with pytest.raises(ChainError, match=words):
        Chain.from_urdf_string(xml, base, tip)


def test_missing_urdf_file_raises_chain_error_with_the_path(tmp_path):
    path = tmp_path / 'absent.urdf'
    with pytest.raises(ChainError, match='absent.urdf'):
        Chain.from_urdf_file(path, 'base', 'tip')


def test_directory_given_as_urdf_file_raises_chain_error(tmp_path):
    with pytest.raises(ChainError):
        Chain.from_urdf_file(tmp_path, 'base', 'tip')


def _check_solvable_chain(xml, base, tip, q_known, solvers=('damped_jacobian', 'fabrik')):
    """Every named solver gives an honest, finite, in-limit answer for FK(q_known)."""
    chain = Chain.from_urdf_string(xml, base, tip)
    p = chain.fk(np.asarray(q_known, dtype=float))[:3, 3]
    results = {}
    for name in solvers:
        s = make_solver(name, chain, {'position_tolerance': 1e-4})
        result = s.solve(p)
        assert_honest(result, chain, xml, p, 1e-4)
        results[name] = result
    return chain, results


def test_continuous_joints_make_a_working_chain_with_unbounded_limits():
    xml = _robot(['base', 'l1', 'l2', 'tip'], [
        _joint('spin1', 'base', 'l1', jtype='continuous', xyz='0 0 0.1'),
        _joint('spin2', 'l1', 'l2', jtype='continuous', xyz='0.3 0 0', axis='0 1 0'),
        _joint('tip_fixed', 'l2', 'tip', jtype='fixed', xyz='0.25 0 0', axis=None),
    ])
    chain, results = _check_solvable_chain(xml, 'base', 'tip', [2.9, -2.0])
    assert np.all(np.isinf(chain.lower)) and np.all(np.isinf(chain.upper))
    assert results['damped_jacobian'].reachable


def test_prismatic_joint_makes_a_working_chain_and_stays_within_its_limits():
    xml = _robot(['base', 'slider', 'l1', 'l2', 'tip'], [
        _joint('slide', 'base', 'slider', jtype='prismatic', axis='0 0 1', lower=0.0, upper=0.4),
        _joint('j1', 'slider', 'l1', xyz='0 0 0.1'),
        _joint('j2', 'l1', 'l2', xyz='0.3 0 0', axis='0 1 0'),
        _joint('tip_fixed', 'l2', 'tip', jtype='fixed', xyz='0.25 0 0', axis=None),
    ])
    _, results = _check_solvable_chain(xml, 'base', 'tip', [0.33, 0.7, -0.6],
                                       solvers=('damped_jacobian',))
    assert results['damped_jacobian'].reachable
    # And a target far above the slider's range: best effort, honest, still within limits.
    chain = Chain.from_urdf_string(xml, 'base', 'tip')
    for name in ('damped_jacobian',):  # fabrik refuses prismatic joints (test_fabrik.py)
        result = make_solver(name, chain).solve([0.0, 0.0, 3.0])
        assert_honest(result, chain, xml, [0.0, 0.0, 3.0], 1e-5)
        assert not result.reachable


def test_zero_length_links_make_a_working_chain():
    # j1 and j2 share an origin (a 2-axis shoulder) and j4 sits on the tip: zero-length links.
    xml = _robot(['base', 'l1', 'l2', 'l3', 'l4', 'tip'], [
        _joint('j1', 'base', 'l1', axis='0 0 1'),
        _joint('j2', 'l1', 'l2', axis='0 1 0'),
        _joint('j3', 'l2', 'l3', xyz='0.4 0 0', axis='0 1 0'),
        _joint('j4', 'l3', 'l4', xyz='0.3 0 0', axis='1 0 0'),
        _joint('tip_fixed', 'l4', 'tip', jtype='fixed', axis=None),
    ])
    _, results = _check_solvable_chain(xml, 'base', 'tip', [0.5, -0.4, 1.0, 0.7])
    assert results['damped_jacobian'].reachable


def test_mimic_joint_off_the_ik_path_is_accepted():
    xml = _robot(['base', 'l1', 'l2', 'tip', 'finger'], [
        _joint('j1', 'base', 'l1', xyz='0 0 0.1'),
        _joint('j2', 'l1', 'l2', xyz='0.3 0 0', axis='0 1 0'),
        _joint('tip_fixed', 'l2', 'tip', jtype='fixed', xyz='0.25 0 0', axis=None),
        _joint('finger_joint', 'l2', 'finger', extra='<mimic joint="j2" multiplier="1"/>'),
    ])
    chain, _ = _check_solvable_chain(xml, 'base', 'tip', [0.4, -0.9])
    assert chain.joint_names == ['j1', 'j2']


def test_all_fixed_chain_has_no_joints_to_solve_and_still_answers_honestly():
    xml = _robot(['base', 'tip'], [_joint('f', 'base', 'tip', jtype='fixed', xyz='0.1 0 0',
                                          axis=None)])
    try:
        chain = Chain.from_urdf_string(xml, 'base', 'tip')
    except ChainError:
        return  # refusing a chain without moving joints is a fine answer too
    for name in ('damped_jacobian', 'fabrik'):
        try:
            s = make_solver(name, chain)
        except (ChainError, ConfigError):
            continue
        result = s.solve([0.1, 0.0, 0.0])
        assert result.reachable
        result = s.solve([0.5, 0.0, 0.0])
        assert not result.reachable and result.position_error == pytest.approx(0.4)


# ------------------------------------------------------------------------------- config files
def _config_module():
    return pytest.importorskip('ik_node.config.node_config')


GOOD_CONFIG = {'urdf_file': str(LEG3), 'base_link': 'base_link', 'tip_link': 'foot',
               'solver': 'analytic_hip_knee'}


BAD_CONFIG_TEXTS = {
    'malformed_yaml_unclosed_bracket': ('ik_node:\n  ros__parameters:\n    solver: [fabrik\n',
                                        'malformed YAML'),
    'malformed_yaml_bad_indent': ('ik_node:\n  ros__parameters:\n    solver: fabrik\n'
                                  '   base_link: x\n', 'malformed YAML'),
    'malformed_yaml_tab': ('ik_node:\n\tros__parameters: {}\n', 'malformed YAML'),
    'empty_file': ('', 'empty'),
    'a_list_not_a_mapping': ('- solver\n- fabrik\n', 'mapping'),
    'unknown_key': ('urdf_file: leg3.urdf\ntip_link: foot\nturbo: true\n', 'turbo'),
    'unknown_solver': ('urdf_file: leg3.urdf\ntip_link: foot\nsolver: magic\n',
                       'unknown solver'),
    'publish_rate_wrong_type': ('urdf_file: leg3.urdf\ntip_link: foot\npublish_rate: fast\n',
                                'publish_rate'),
    'publish_rate_negative': ('urdf_file: leg3.urdf\ntip_link: foot\npublish_rate: -5.0\n',
                              'publish_rate'),
    'solver_param_wrong_type': ('urdf_file: leg3.urdf\ntip_link: foot\n'
                                'damped_jacobian: {damping: lots}\n', 'damping'),
    'zero_step_size': ('urdf_file: leg3.urdf\ntip_link: foot\n'
                       'damped_jacobian: {step_size: 0.0}\n', 'step_size'),
    'negative_tolerance': ('urdf_file: leg3.urdf\ntip_link: foot\n'
                           'fabrik: {position_tolerance: -1.0e-4}\n', 'position_tolerance'),
    'zero_max_iterations': ('urdf_file: leg3.urdf\ntip_link: foot\n'
                            'fabrik: {max_iterations: 0}\n', 'max_iterations'),
    'unknown_solver_param': ('urdf_file: leg3.urdf\ntip_link: foot\n'
                             'fabrik: {speed: 3}\n', 'speed'),
    'base_link_wrong_type': ('urdf_file: leg3.urdf\ntip_link: foot\nbase_link: 5\n',
                             'base_link'),
    'no_tip_link': ('urdf_file: leg3.urdf\n', 'tip'),
    'no_robot_model': ('tip_link: foot\n', 'urdf_file'),
    'both_urdf_sources': ('urdf_file: leg3.urdf\nrobot_description: "<robot/>"\n'
                          'tip_link: foot\n', 'not both'),
    'other_node_only': ('other_node:\n  ros__parameters:\n    tip_link: foot\n', 'other_node'),
}


@pytest.mark.parametrize('item', sorted(BAD_CONFIG_TEXTS))
def test_bad_config_file_raises_config_error_naming_the_problem(tmp_path, item):
    config = _config_module()
    text, words = BAD_CONFIG_TEXTS[item]
    path = tmp_path / f'{item}.yaml'
    path.write_text(text)
    with pytest.raises(ConfigError, match=words):
        config.load_config(path)


def test_malformed_yaml_error_gives_the_line(tmp_path):
    config = _config_module()
    path = tmp_path / 'broken.yaml'
    path.write_text('ik_node:\n  ros__parameters:\n    solver: fabrik\n    base_link: [\n')
    with pytest.raises(ConfigError, match=r'broken\.yaml line \d'):
        config.load_config(path)


def test_missing_config_file_raises_config_error(tmp_path):
    config = _config_module()
    with pytest.raises(ConfigError, match='no_such_config'):
        config.load_config(tmp_path / 'no_such_config.yaml')


def test_config_naming_a_missing_urdf_fails_when_the_chain_is_built(tmp_path):
    config = _config_module()
    cfg = config.config_from_flat({**GOOD_CONFIG, 'urdf_file': str(tmp_path / 'gone.urdf')})
    with pytest.raises((ConfigError, ChainError), match='gone.urdf'):
        config.build_chain(cfg)


def test_config_with_a_tip_not_in_the_urdf_fails_when_the_chain_is_built():
    config = _config_module()
    cfg = config.config_from_flat({**GOOD_CONFIG, 'tip_link': 'hand'})
    with pytest.raises(ChainError, match='hand'):
        config.build_chain(cfg)


def test_a_good_config_still_builds_a_working_solver():
    config = _config_module()
    cfg = config.config_from_flat(GOOD_CONFIG)
    chain = config.build_chain(cfg)
    solver = config.build_solver(cfg, chain)
    target = chain.fk(np.array([0.1, 0.5, -1.0]))[:3, 3]
    assert solver.solve(target).reachable


# ------------------------------------------------------------------------------------ the CLI
# Exit status of ik-solve (its documented contract): 0 reached, 1 not reached, 2 bad input.
EXIT_BAD_INPUT = 2


def run_cli(*args, timeout=60):
    env = dict(os.environ)
    env['PYTHONPATH'] = str(REPO) + os.pathsep + env.get('PYTHONPATH', '')
    return subprocess.run([sys.executable, '-m', 'ik_node.cli', *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, cwd=REPO, env=env)


LEG_ARGS = ('--urdf', LEG3, '--base', 'base_link', '--tip', 'foot')
ARM_ARGS = ('--urdf', ARM6, '--base', 'base_link', '--tip', 'tool0')


def _bad_cli_cases(tmp):
    broken_yaml = tmp / 'broken.yaml'
    broken_yaml.write_text('ik_node:\n  ros__parameters:\n    solver: [fabrik\n')
    bad_type_yaml = tmp / 'bad_type.yaml'
    bad_type_yaml.write_text('ik_node:\n  ros__parameters:\n    publish_rate: fast\n')
    zero_axis = tmp / 'zero_axis.urdf'
    zero_axis.write_text(_arm3(axis='0 0 0'))
    inverted = tmp / 'inverted.urdf'
    inverted.write_text(_arm3(lower=1.0, upper=-1.0))
    mimic = tmp / 'mimic.urdf'
    mimic.write_text(_arm3(extra='<mimic joint="j1" multiplier="1"/>'))
    floating = tmp / 'floating.urdf'
    floating.write_text(_arm3(jtype='floating'))
    garbage = tmp / 'garbage.urdf'
    garbage.write_text('<robot name="r"><link name="a"></robot')
    solver = ('--solver', 'damped_jacobian')
    return {
        'nan_target': ((*LEG_ARGS, *solver, '--target', 'nan', '0', '-0.4'), 'nan'),
        'inf_target': ((*LEG_ARGS, *solver, '--target', '0', 'inf', '-0.4'), 'inf'),
        'huge_target': ((*LEG_ARGS, *solver, '--target', '1e12', '0', '0'), 'target'),
        'two_coordinates': ((*LEG_ARGS, *solver, '--target', '0.1', '0.2'), 'target'),
        'word_coordinate': ((*LEG_ARGS, *solver, '--target', 'x', '0', '0'), 'x'),
        'zero_quaternion': ((*ARM_ARGS, *solver, '--target', '0.3', '0.2', '0.4',
                             '--orientation', '0', '0', '0', '0'), 'zero'),
        'nan_quaternion': ((*ARM_ARGS, *solver, '--target', '0.3', '0.2', '0.4',
                            '--orientation', 'nan', '0', '0', '1'), 'nan'),
        'unknown_solver': ((*LEG_ARGS, '--solver', 'magic', '--target', '0.1', '0', '-0.4'),
                           'magic'),
        'zero_step_size': ((*LEG_ARGS, *solver, '--param', 'step_size=0',
                            '--target', '0.1', '0', '-0.4'), 'step_size'),
        'negative_tolerance': ((*LEG_ARGS, *solver, '--param', 'position_tolerance=-1e-3',
                                '--target', '0.1', '0', '-0.4'), 'position_tolerance'),
        'zero_max_iterations': ((*LEG_ARGS, *solver, '--param', 'max_iterations=0',
                                 '--target', '0.1', '0', '-0.4'), 'max_iterations'),
        'param_wrong_type': ((*LEG_ARGS, *solver, '--param', 'damping=lots',
                              '--target', '0.1', '0', '-0.4'), 'damping'),
        'param_without_equals': ((*LEG_ARGS, *solver, '--param', 'damping',
                                  '--target', '0.1', '0', '-0.4'), 'damping'),
        'unknown_param': ((*LEG_ARGS, *solver, '--param', 'speed=3',
                           '--target', '0.1', '0', '-0.4'), 'speed'),
        'malformed_yaml': (('--config', broken_yaml, '--target', '0.1', '0', '-0.4'), 'YAML'),
        'config_wrong_type': (('--config', bad_type_yaml, *LEG_ARGS,
                               '--target', '0.1', '0', '-0.4'), 'publish_rate'),
        'missing_config': (('--config', tmp / 'absent.yaml', '--target', '0.1', '0', '-0.4'),
                           'absent'),
        'missing_urdf': (('--urdf', tmp / 'absent.urdf', '--base', 'base_link', '--tip', 'foot',
                          *solver, '--target', '0.1', '0', '-0.4'), 'absent'),
        'malformed_urdf': (('--urdf', garbage, '--base', 'a', '--tip', 'a', *solver,
                            '--target', '0.1', '0', '0'), 'malformed'),
        'missing_tip_link': (('--urdf', LEG3, '--base', 'base_link', '--tip', 'hand', *solver,
                              '--target', '0.1', '0', '-0.4'), 'hand'),
        'missing_base_link': (('--urdf', LEG3, '--base', 'torso', '--tip', 'foot', *solver,
                               '--target', '0.1', '0', '-0.4'), 'torso'),
        'no_path': (('--urdf', LEG3, '--base', 'foot', '--tip', 'base_link', *solver,
                     '--target', '0.1', '0', '-0.4'), 'no path'),
        'zero_axis_urdf': (('--urdf', zero_axis, '--base', 'base', '--tip', 'tip', *solver,
                            '--target', '0.3', '0', '0'), 'axis'),
        'lower_above_upper_urdf': (('--urdf', inverted, '--base', 'base', '--tip', 'tip',
                                    *solver, '--target', '0.3', '0', '0'), 'lower limit'),
        'mimic_urdf': (('--urdf', mimic, '--base', 'base', '--tip', 'tip', *solver,
                        '--target', '0.3', '0', '0'), 'mimic'),
        'floating_urdf': (('--urdf', floating, '--base', 'base', '--tip', 'tip', *solver,
                           '--target', '0.3', '0', '0'), 'floating'),
        'analytic_on_arm': ((*ARM_ARGS, '--solver', 'analytic_hip_knee',
                             '--target', '0.3', '0.2', '0.4'), 'analytic_hip_knee'),
        'nan_seed': ((*LEG_ARGS, *solver, '--target', '0.1', '0', '-0.4',
                      '--seed', 'nan', '0', '0'), 'seed'),
        'short_seed': ((*LEG_ARGS, *solver, '--target', '0.1', '0', '-0.4',
                        '--seed', '0', '0'), 'seed'),
    }


CLI_CASE_NAMES = [
    'nan_target', 'inf_target', 'huge_target', 'two_coordinates', 'word_coordinate',
    'zero_quaternion', 'nan_quaternion', 'unknown_solver', 'zero_step_size',
    'negative_tolerance', 'zero_max_iterations', 'param_wrong_type', 'param_without_equals',
    'unknown_param', 'malformed_yaml', 'config_wrong_type', 'missing_config', 'missing_urdf',
    'malformed_urdf', 'missing_tip_link', 'missing_base_link', 'no_path', 'zero_axis_urdf',
    'lower_above_upper_urdf', 'mimic_urdf', 'floating_urdf', 'analytic_on_arm', 'nan_seed',
    'short_seed']


@pytest.fixture(scope='module')
def cli_cases(tmp_path_factory):
    return _bad_cli_cases(tmp_path_factory.mktemp('cli'))


def test_cli_case_list_covers_every_case(tmp_path):
    assert sorted(CLI_CASE_NAMES) == sorted(_bad_cli_cases(tmp_path))


@pytest.mark.slow
@pytest.mark.parametrize('item', CLI_CASE_NAMES)
def test_cli_bad_input_exits_nonzero_with_a_one_line_reason(cli_cases, item):
    args, words = cli_cases[item]
    proc = run_cli(*args)
    assert proc.returncode == EXIT_BAD_INPUT, (proc.stdout, proc.stderr)
    assert 'Traceback' not in proc.stderr, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert lines, 'no reason on stderr'
    # argparse prints usage then one error line; our own errors are exactly one line.
    reason = lines[-1]
    assert len([ln for ln in lines if not ln.startswith(('usage:', ' '))]) == 1, lines
    assert words.lower() in reason.lower(), reason
    assert not any(math.isnan(v) for v in _numbers_in(proc.stdout))


def _numbers_in(text):
    out = []
    for token in text.replace(',', ' ').replace('[', ' ').replace(']', ' ').split():
        try:
            out.append(float(token))
        except ValueError:
            pass
    return out


def _cli_json(*args):
    proc = run_cli(*args, '--json')
    assert 'Traceback' not in proc.stderr
    out = json.loads(proc.stdout)
    assert proc.returncode == (0 if out['reachable'] else 1), proc.stderr
    return out


@pytest.mark.slow
def test_cli_non_unit_quaternion_is_normalised(models):
    chain = models['arm6'][0]
    q_known = np.array([0.4, -1.1, 1.3, -0.9, 1.2, 0.3])
    T = chain.fk(q_known)
    w, x, y, z = __import__('transforms3d').quaternions.mat2quat(T[:3, :3])
    common = (*ARM_ARGS, '--solver', 'damped_jacobian', '--param', 'timeout=0.5',
              '--target', *T[:3, 3], '--seed', *(q_known + 0.05))
    unit = _cli_json(*common, '--orientation', x, y, z, w)
    scaled = _cli_json(*common, '--orientation', 4 * x, 4 * y, 4 * z, 4 * w)
    assert unit['reachable'] and scaled['reachable']
    np.testing.assert_allclose(unit['joint_positions'], scaled['joint_positions'], atol=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize('target', [[0.0, 0.0, 0.0], [0.0, 0.0, LEG3_HIP_Z_M - LEG3_REACH_M],
                                    [0.0, 0.0, -5.0]])
def test_cli_singular_or_unreachable_target_is_answered_honestly(models, target):
    chain, xml = models['leg3']
    out = _cli_json(*LEG_ARGS, '--solver', 'analytic_hip_knee', '--target', *target)
    q = np.array(out['joint_positions'])
    assert np.all(np.isfinite(q))
    lower, upper = urdf_limits(xml, out['joint_names'])
    assert np.all(q >= lower - 1e-9) and np.all(q <= upper + 1e-9)
    error = float(np.linalg.norm(chain.fk(q)[:3, 3] - target))
    assert out['position_error'] == pytest.approx(error, abs=1e-9)
    assert out['reachable'] == (error <= 1e-5)
