"""The bad-input catalogue through the real node over DDS.

One ``python -m ik_node.node`` subprocess per robot (module-scoped, unique node name, its
``/joint_states`` remapped below that name) is driven from this process with rclpy. For every
bad item the node must

* answer with an ERROR diagnostic naming the problem (bad targets) or refuse the parameter with a
  ``SetParametersResult`` reason (bad runtime parameters), or exit non-zero with a one-line
  reason and no traceback (bad start-up files);
* publish no joint state for it: every joint state after the bad input equals the previous
  solution;
* stay alive and solve the next valid target: a joint state whose FK (ik_node.Chain, computed
  here) puts the tip on that target.

Valid-but-awkward input (empty frame, another link's frame, a non-unit quaternion, singular and
out-of-reach targets, chains with continuous/prismatic joints and zero-length links) must be
solved, with a finite, in-limit joint state and an honest diagnostic. Every joint state received
from the node, at any time, is checked: names of the chain, finite, within the URDF limits.

Over 450 lines on purpose: the catalogue is one table per kind of bad input, each with the short
tests that feed it to the same module-scoped nodes; split, the nodes would start once per file.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Dict

import numpy as np
import pytest

from diagnostic_msgs.msg import DiagnosticStatus

from harness import (ARM_QS, LEG_QS, REPO, RunningNode,
                     process_env, reached_ok, values)

#: Every test here talks to ik_node in its own process (or runs a script that starts one).
pytestmark = pytest.mark.slow

TIMEOUT_S = 15.0
OK, WARN, ERROR = DiagnosticStatus.OK, DiagnosticStatus.WARN, DiagnosticStatus.ERROR
NAN, INF = float('nan'), float('inf')
# A frame outside the URDF: refused listing the links without tf2_ros (a pip install), looked up
# in TF and refused as unknown there with it (a ROS 2 install).
try:
    import tf2_ros  # noqa: F401
    UNKNOWN_FRAME_WORDS = ['no TF transform']
except ImportError:
    UNKNOWN_FRAME_WORDS = ['tool0']




@pytest.fixture(scope='module')
def leg(tmp_path_factory):
    node = RunningNode('leg3', tmp_path_factory.mktemp('leg3'))
    yield node
    node.close()


@pytest.fixture(scope='module')
def arm(tmp_path_factory):
    node = RunningNode('arm6', tmp_path_factory.mktemp('arm6'))
    yield node
    node.close()


# ------------------------------------------------------------------- bad targets: refused
# Each: (robot, how to send, frame, position, quaternion or None, words the ERROR must contain)
BAD_TARGETS = {
    'point_nan_x': ('leg3', 'point', 'base_link', [NAN, 0.0, -0.4], None, ['nan']),
    'point_inf_y': ('leg3', 'point', 'base_link', [0.1, INF, -0.4], None, ['inf']),
    'point_minus_inf_z': ('leg3', 'point', 'base_link', [0.1, 0.0, -INF], None, ['inf']),
    'point_huge_1e12': ('leg3', 'point', 'base_link', [1e12, 0.0, 0.0], None, ['beyond']),
    'point_unknown_frame': ('leg3', 'point', 'map', [0.1, 0.0, -0.4], None,
                            ['map', 'base_link']),
    'point_nan_in_a_link_frame': ('leg3', 'point', 'thigh_link', [0.0, NAN, 0.0], None,
                                  ['nan']),
    'pose_zero_quaternion': ('arm6', 'pose', 'base_link', [0.3, 0.2, 0.4], [0, 0, 0, 0],
                             ['zero']),
    'pose_nan_quaternion': ('arm6', 'pose', 'base_link', [0.3, 0.2, 0.4], [NAN, 0, 0, 1],
                            ['nan']),
    'pose_inf_quaternion': ('arm6', 'pose', 'base_link', [0.3, 0.2, 0.4], [0, INF, 0, 1],
                            ['inf']),
    'pose_nan_position': ('arm6', 'pose', 'base_link', [0.3, NAN, 0.4], [0, 0, 0, 1], ['nan']),
    'pose_huge_position': ('arm6', 'pose', 'base_link', [0.3, 0.2, -1e12], [0, 0, 0, 1],
                           ['beyond']),
    'pose_unknown_frame': ('arm6', 'pose', 'world', [0.3, 0.2, 0.4], [0, 0, 0, 1],
                           ['world', *UNKNOWN_FRAME_WORDS]),
    'pose_zero_quaternion_on_position_only_solver': ('leg3', 'pose', 'base_link',
                                                     [0.1, 0.0, -0.4], [0, 0, 0, 0], ['zero']),
}

# Distinct valid configurations to solve after each bad item (reachable by construction).
@pytest.fixture
def robots(request):
    """robot name -> the module's running node (started on first use)."""
    return {'leg3': lambda: request.getfixturevalue('leg'),
            'arm6': lambda: request.getfixturevalue('arm')}


@pytest.mark.parametrize('item', list(BAD_TARGETS))
def test_bad_target_gets_an_error_diagnostic_no_joint_state_and_the_next_is_solved(robots, item):
    robot, kind, frame, position, quat, words = BAD_TARGETS[item]
    node = robots[robot]()
    k = list(BAD_TARGETS).index(item)
    qs = LEG_QS if robot == 'leg3' else ARM_QS
    node.solve_valid(qs[k])
    q_before = node.current_q()
    mark = node.mark()
    if kind == 'point':
        node.send_point(position, frame)
    else:
        node.send_pose(position, quat, frame)
    node.expect_error(mark, words)
    node.settle()
    node.expect_unchanged_since(mark, q_before)
    node.solve_valid(qs[(k + 7) % len(qs)])


# ------------------------------------------------------------ awkward targets: handled
def test_empty_frame_id_is_the_base_frame(leg):
    target = leg.chain.fk(np.array([0.4, 0.2, -0.9]))[:3, 3]
    mark = leg.mark()
    count = leg.last_solve_count()
    leg.send_point(target, frame_id='')
    leg.wait_for('the target solved in the base frame',
                 lambda: leg._reaching(target, mark[0], 1e-4))
    status = leg.next_result(mark, count)
    assert reached_ok(status)
    leg.assert_alive()


def test_target_in_another_link_frame_is_placed_by_the_current_joint_positions(leg):
    leg.solve_valid([0.5, 0.1, -0.5])
    q_now = leg.current_q()
    # A point 0.35 m below the thigh link's origin (along its z) at the current pose.
    p_link = np.array([0.05, 0.0, -0.35])
    T = leg.chain.link_transform('thigh_link', q_now)
    expected = T[:3, :3] @ p_link + T[:3, 3]
    mark = leg.mark()
    leg.send_point(p_link, frame_id='thigh_link')
    leg.wait_for('the target solved in thigh_link',
                 lambda: leg._reaching(expected, mark[0], 1e-4))
    leg.assert_alive()


def test_non_unit_quaternion_is_normalised(arm):
    import transforms3d
    q_known = np.array([0.6, -1.0, 1.2, -1.1, 1.3, 0.4])
    T = arm.chain.fk(q_known)
    w, x, y, z = transforms3d.quaternions.mat2quat(T[:3, :3])
    arm.solve_valid(q_known + 0.03)  # start near, so the 5 ms solver converges
    mark, count = arm.mark(), arm.last_solve_count()
    arm.send_pose(T[:3, 3], [5 * x, 5 * y, 5 * z, 5 * w])

    def reached():
        for m in arm.joint_states[mark[0]:]:
            Tm = arm.chain.fk(np.array(m.position))
            angle = math.acos(max(-1.0, min(1.0, (np.trace(Tm[:3, :3].T @ T[:3, :3]) - 1) / 2)))
            if np.linalg.norm(Tm[:3, 3] - T[:3, 3]) < 1e-4 and angle < 1e-3:
                return True
        return False
    arm.wait_for('the pose of the non-unit quaternion', reached)
    status = arm.next_result(mark, count)
    assert reached_ok(status)
    arm.assert_alive()


LEG_HIP_Z, LEG_REACH = -0.05, 0.58     # from urdf/leg3.urdf: hip 0.05 below base, 0.30 + 0.28


@pytest.mark.parametrize('target', [
    [0.0, 0.0, 0.0],                                   # base origin, on the yaw axis
    [0.0, 0.0, LEG_HIP_Z],                             # the hip centre
    [0.0, 0.0, LEG_HIP_Z - LEG_REACH],                 # stretched straight down
    [0.0, 0.0, LEG_HIP_Z - LEG_REACH - 0.2],           # beyond reach
    [3.0, -4.0, 100.0],                                # far beyond reach
], ids=['origin', 'hip_centre', 'stretched', 'beyond', 'far'])
def test_singular_or_unreachable_target_gets_a_finite_in_limit_answer_and_honest_status(
        leg, target):
    leg.solve_valid(LEG_QS[3])
    mark, count = leg.mark(), leg.last_solve_count()
    leg.send_point(target)
    status = leg.next_result(mark, count)
    leg.settle()
    leg.assert_alive()
    q = leg.current_q()
    error = float(np.linalg.norm(leg.chain.fk(q)[:3, 3] - np.array(target)))
    v = values(status)
    assert float(v['position_error_m']) == pytest.approx(error, rel=1e-4, abs=1e-9)
    tolerance = 1e-5   # analytic_hip_knee.position_tolerance in config/leg3.yaml
    assert v['reachable'] == str(error <= tolerance).lower()
    assert reached_ok(status) if error <= tolerance else status.level == WARN
    if target == [0.0, 0.0, LEG_HIP_Z - LEG_REACH]:  # stretched: the knee's singularity
        assert status.level == WARN and 'near a singularity' in status.message, status.message
    if error > tolerance:
        assert v['status'] != 'converged'
    leg.solve_valid(LEG_QS[4])


def test_stretched_leg_is_reached(leg):
    q = leg.solve_valid([0.0, 0.0, 0.0], tol=1e-6)
    assert np.linalg.norm(leg.chain.fk(q)[:3, 3] - [0.0, 0.0, LEG_HIP_Z - LEG_REACH]) < 1e-6


# ------------------------------------------------------------- runtime parameters: refused
BAD_PARAMS = {
    'unknown_solver': ('solver', 'magic', ['magic', 'fabrik']),
    'empty_solver': ('solver', '', ['solver']),
    'analytic_solver_on_arm6': ('solver', 'analytic_hip_knee', ['analytic_hip_knee']),
    'tolerance_negative': ('damped_jacobian.position_tolerance', -1e-3, []),
    'tolerance_zero': ('damped_jacobian.position_tolerance', 0.0, ['position_tolerance']),
    'orientation_tolerance_zero': ('damped_jacobian.orientation_tolerance', 0.0,
                                   ['orientation_tolerance']),
    'step_size_zero': ('damped_jacobian.step_size', 0.0, ['step_size']),
    'max_iterations_zero': ('damped_jacobian.max_iterations', 0, []),
    'max_iterations_double': ('damped_jacobian.max_iterations', 2.5, []),
    'damping_string': ('damped_jacobian.damping', 'lots', []),
    'timeout_nan': ('damped_jacobian.timeout', NAN, []),
    'timeout_zero': ('damped_jacobian.timeout', 0.0, ['timeout']),
    'method_unknown': ('damped_jacobian.method', 'newton', ['newton']),
    'fabrik_tolerance_negative': ('fabrik.position_tolerance', -1.0, []),
    'publish_rate_zero': ('publish_rate', 0.0, ['publish_rate']),
    'publish_rate_string': ('publish_rate', 'fast', []),
    'urdf_file_missing': ('urdf_file', '/nonexistent/robot.urdf', ['robot.urdf']),
    'tip_link_unknown': ('tip_link', 'hand', ['hand']),
    'base_link_empty': ('base_link', '', ['base_link']),
    'base_link_unknown': ('base_link', 'torso', ['torso']),
    'robot_description_malformed': ('robot_description', '<robot name="r"><link name="a">',
                                    ['malformed']),
    'jump_max_step_negative': ('jump_max_step', -0.1, ['jump_max_step']),
    'jump_max_step_zero': ('jump_max_step', 0.0, ['jump_max_step']),
    'jump_max_step_nan': ('jump_max_step', NAN, ['jump_max_step']),
    'jump_velocity_scaling_zero': ('jump_velocity_scaling', 0.0, ['jump_velocity_scaling']),
    'jump_guard_unknown': ('jump_guard', 'sometimes', ['jump_guard', 'hold', 'limit']),
    'output_topic_invalid': ('output_topic', 'no spaces allowed', []),
}


def _urdf_with(joint_xml: str) -> str:
    """A 2-link robot (base_link -> l1 -> tool0) whose second joint is ``joint_xml``."""
    return ('<?xml version="1.0"?><robot name="r"><link name="base_link"/><link name="l1"/>'
            '<link name="tool0"/><joint name="j1" type="revolute"><parent link="base_link"/>'
            '<child link="l1"/><axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" '
            f'velocity="1"/></joint>{joint_xml}</robot>')


def _second(jtype='revolute', axis='0 1 0', limit='lower="-1" upper="1"', extra=''):
    limit_tag = f'<limit {limit} effort="1" velocity="1"/>' if limit else ''
    return (f'<joint name="j2" type="{jtype}"><parent link="l1"/><child link="tool0"/>'
            f'<origin xyz="0.3 0 0"/><axis xyz="{axis}"/>{limit_tag}{extra}</joint>')


BAD_URDF_PARAMS = {
    'urdf_zero_length_axis': (_urdf_with(_second(axis='0 0 0')), ['axis']),
    'urdf_lower_above_upper': (_urdf_with(_second(limit='lower="1" upper="-1"')),
                               ['lower limit']),
    'urdf_mimic_joint': (_urdf_with(_second(extra='<mimic joint="j1"/>')), ['mimic']),
    'urdf_floating_joint': (_urdf_with(_second(jtype='floating', limit='')), ['floating']),
    'urdf_revolute_without_limit': (_urdf_with(_second(limit='')), ['limit']),
    'urdf_missing_tip_link': (_urdf_with('').replace('<link name="tool0"/>', ''), ['tool0']),
    'urdf_tip_not_connected': (_urdf_with(''), ['2 root links', 'tool0']),
}


@pytest.mark.parametrize('item', list(BAD_PARAMS) + list(BAD_URDF_PARAMS))
def test_bad_runtime_parameter_is_refused_with_a_reason_and_the_node_keeps_solving(arm, item):
    if item in BAD_PARAMS:
        name, value, words = BAD_PARAMS[item]
    else:
        name, (value, words) = 'robot_description', BAD_URDF_PARAMS[item]
    k = (list(BAD_PARAMS) + list(BAD_URDF_PARAMS)).index(item)
    arm.solve_valid(ARM_QS[k % len(ARM_QS)])
    arm.settle(0.1)
    q_before = arm.current_q()
    before = arm.get_param(name)
    mark = arm.mark()
    result = arm.set_param(name, value)
    assert not result.successful
    assert result.reason.strip(), 'refused without a reason'
    for word in words:
        assert word.lower() in result.reason.lower(), result.reason
    after = arm.get_param(name)
    assert after == before or (isinstance(before, float) and math.isnan(before)
                               and math.isnan(after))
    arm.settle()
    arm.expect_unchanged_since(mark, q_before)
    arm.solve_valid(ARM_QS[(k + 5) % len(ARM_QS)])


def test_undeclared_parameter_is_refused(arm):
    result = arm.set_param('turbo_mode', True)
    assert not result.successful and result.reason.strip()
    arm.solve_valid(ARM_QS[2])


@pytest.mark.parametrize('name', ['command_joints', 'hold_joint_names'])
def test_an_empty_name_in_a_joint_list_is_refused_with_its_index_and_the_node_keeps_solving(
        arm, name):
    arm.solve_valid(ARM_QS[11])
    arm.settle(0.1)
    q_before = arm.current_q()
    mark = arm.mark()
    joints = arm.chain.joint_names
    result = arm.set_param(name, [joints[0], '', *joints[1:]])
    assert not result.successful
    assert f'{name} has an empty name at index 1' in result.reason, result.reason
    arm.settle()
    arm.expect_unchanged_since(mark, q_before)
    # One empty name alone is how ROS spells an empty string array: accepted, as no names.
    result = arm.set_param(name, [''])
    assert result.successful, result.reason
    assert arm.get_param(name) == ['']
    arm.solve_valid(ARM_QS[12])


def test_valid_runtime_change_is_accepted_and_used(arm):
    result = arm.set_param('solver', 'fabrik')
    assert result.successful, result.reason
    try:
        # fabrik is position-only: a pose target is solved for its position.
        arm.solve_valid(ARM_QS[6], tol=2e-4)
    finally:
        assert arm.set_param('solver', 'damped_jacobian').successful
    arm.solve_valid(ARM_QS[8])


# ------------------------------------------- runtime URDFs that are valid but awkward: handled
AWKWARD_URDF = (
    '<?xml version="1.0"?><robot name="awkward">'
    '<link name="base"/><link name="s"/><link name="a"/><link name="b"/><link name="c"/>'
    '<link name="tip"/>'
    # A prismatic lift, a continuous base turn, then two joints at one point (a zero-length
    # link), then a revolute elbow; the tip is a fixed 0.25 m further.
    '<joint name="lift" type="prismatic"><parent link="base"/><child link="s"/>'
    '<axis xyz="0 0 1"/><limit lower="0" upper="0.3" effort="1" velocity="1"/></joint>'
    '<joint name="turn" type="continuous"><parent link="s"/><child link="a"/>'
    '<origin xyz="0 0 0.1"/><axis xyz="0 0 1"/></joint>'
    '<joint name="shoulder" type="revolute"><parent link="a"/><child link="b"/>'
    '<axis xyz="0 1 0"/><limit lower="-2" upper="2" effort="1" velocity="1"/></joint>'
    '<joint name="elbow" type="revolute"><parent link="b"/><child link="c"/>'
    '<origin xyz="0.3 0 0"/><axis xyz="0 1 0"/><limit lower="-2.5" upper="2.5" effort="1" '
    'velocity="1"/></joint>'
    '<joint name="tip_fixed" type="fixed"><parent link="c"/><child link="tip"/>'
    '<origin xyz="0.25 0 0"/></joint></robot>')


@pytest.fixture
def awkward(tmp_path):
    """A planar4 node switched at runtime to a chain with prismatic, continuous, zero-length."""
    node = RunningNode('planar4', tmp_path, solver='damped_jacobian')
    try:
        yield node
    finally:
        node.close()


def test_chain_with_prismatic_continuous_and_zero_length_links_works_at_runtime(awkward):
    node = awkward
    node.use_chain(AWKWARD_URDF, 'base', 'tip')
    mark = node.mark()
    result = node.set_atomically(robot_description=AWKWARD_URDF, urdf_file='', base_link='base',
                                 tip_link='tip')
    assert result.successful, result.reason
    node.wait_for('joint states of the new chain', lambda: any(
        list(m.name) == node.chain.joint_names for m in node.joint_states[mark[0]:]))
    for q_known in ([0.1, 2.5, 0.4, -0.8], [0.25, -3.0, -0.3, 1.1], [0.0, 7.0, 0.9, -1.5]):
        node.solve_valid(q_known)
    # A point the prismatic lift cannot reach: best effort, finite, in limits, WARN.
    mark, count = node.mark(), node.last_solve_count()
    node.send_point([0.0, 0.0, 5.0])
    status = node.next_result(mark, count)
    assert status.level == WARN and values(status)['reachable'] == 'false'
    node.settle()
    node.assert_alive()


def test_chain_without_moving_joints_does_not_kill_the_node(awkward):
    """A chain the node accepts but a solver may choke on: an ERROR or an honest answer."""
    node = awkward
    fixed_only = ('<?xml version="1.0"?><robot name="f"><link name="base"/><link name="tip"/>'
                  '<joint name="f" type="fixed"><parent link="base"/><child link="tip"/>'
                  '<origin xyz="0.1 0 0"/></joint></robot>')
    planar4 = node.xml
    node.use_chain(fixed_only, 'base', 'tip')
    result = node.set_atomically(robot_description=fixed_only, urdf_file='', base_link='base',
                                 tip_link='tip')
    node.assert_alive()
    for solver in ('damped_jacobian', 'fabrik'):
        if not result.successful:
            break
        if not node.set_param('solver', solver).successful:
            continue
        mark = node.mark()
        node.send_point([0.5, 0.0, 0.0])
        status = node.next_result_or_error(mark, node.last_solve_count())
        if status.level != ERROR:
            assert values(status)['reachable'] == 'false'
        node.settle()
        node.assert_alive()
    # Back to a normal chain: the node must still solve.
    node.use_chain(planar4, 'base_link', 'tip')
    assert node.set_atomically(robot_description='', urdf_file='planar4.urdf',
                               base_link='base_link', tip_link='tip').successful
    node.solve_valid([0.3, -0.5, 0.8, 0.2])


# ------------------------------------------------------- a solver that raises inside the node
# The real node, with one extra solver registered before it starts: damped_jacobian, except that
# it raises for targets with x > 0.5 m and returns NaN for x < -0.5 m (a solver bug, injected).
FAULTY_NODE = """
import math, sys
import numpy as np
from ik_node.solvers import register
from ik_node.solvers.damped_jacobian.solver import DampedJacobianSolver

@register
class FaultySolver(DampedJacobianSolver):
    name = 'faulty_test'

    def _solve(self, p_target, R_target, q_seed):
        if p_target[0] > 0.5:
            raise RuntimeError('injected fault at x = %g' % p_target[0])
        raw = super()._solve(p_target, R_target, q_seed)
        if p_target[0] < -0.5:
            raw.q = np.full(self.chain.n, math.nan)
        return raw

from ik_node.ros.app.run import main
sys.exit(main())
"""


@pytest.fixture
def faulty(tmp_path):
    node = RunningNode('planar4', tmp_path, solver='faulty_test',
                       python_args=['-c', FAULTY_NODE])
    try:
        yield node
    finally:
        node.close()


def test_solver_exception_is_an_error_diagnostic_and_the_node_keeps_solving(faulty):
    node = faulty
    for q_known in ([1.2, 0.3, 0.2, 0.1], [1.3, 0.2, -0.3, 0.4], [1.0, 0.5, 0.3, -0.2]):
        node.solve_valid(q_known)  # tip at |x| < 0.5 m: the solver works
        q_before = node.current_q()
        mark = node.mark()
        node.send_point([0.8, q_known[0] / 10, 0.0])
        node.expect_error(mark, ['faulty_test', 'RuntimeError', 'injected fault'])
        node.settle()
        node.expect_unchanged_since(mark, q_before)
    node.solve_valid([1.4, -0.3, 0.2, 0.3])


def test_solver_nan_output_never_reaches_joint_states(faulty):
    node = faulty
    node.solve_valid([1.2, 0.3, 0.2, 0.1])
    mark, count = node.mark(), node.last_solve_count()
    node.send_point([-0.7, 0.2, 0.0])
    status = node.next_result_or_error(mark, count)
    node.settle()
    node.assert_alive()  # every joint state finite and within limits
    if status.level != ERROR:
        assert values(status)['reachable'] == 'false'
    node.solve_valid([1.1, 0.4, -0.4, 0.5])


# ----------------------------------------------------------------------- start-up: refused
def _startup_cases(tmp: Path) -> Dict[str, tuple]:
    def wrapped(body: str) -> str:
        return 'ik_node:\n  ros__parameters:\n' + ''.join(f'    {ln}\n' for ln in body.split('\n'))

    base = 'urdf_file: leg3.urdf\nbase_link: base_link\ntip_link: foot'
    zero_axis = tmp / 'zero_axis.urdf'
    zero_axis.write_text(_urdf_with(_second(axis='0 0 0')))
    return {
        'malformed_yaml': ('ik_node:\n  ros__parameters:\n    solver: [fabrik\n', ['param']),
        'wrong_type': (wrapped(base + '\npublish_rate: fast'), ['publish_rate']),
        'unknown_solver': (wrapped(base + '\nsolver: magic'), ['magic']),
        'unknown_key': (wrapped(base + '\nturbo: true'), ['turbo']),
        'negative_tolerance': (wrapped(base + '\nfabrik:\n  position_tolerance: -1.0'),
                               ['position_tolerance']),
        'zero_step_size': (wrapped(base + '\ndamped_jacobian:\n  step_size: 0.0'),
                           ['step_size']),
        'zero_max_iterations': (wrapped(base + '\nfabrik:\n  max_iterations: 0'),
                                ['max_iterations']),
        'missing_urdf': (wrapped('urdf_file: /nonexistent/x.urdf\ntip_link: foot'), ['x.urdf']),
        'missing_tip': (wrapped('urdf_file: leg3.urdf\ntip_link: hand'), ['hand']),
        'zero_axis_urdf': (wrapped(f'urdf_file: {zero_axis}\nbase_link: base_link\n'
                                   'tip_link: tool0'), ['axis']),
        'analytic_on_arm': (wrapped('urdf_file: arm6.urdf\ntip_link: tool0\n'
                                    'solver: analytic_hip_knee'), ['analytic_hip_knee']),
        'zero_jump_max_step': (wrapped(base + '\noutput: position_command\njump_max_step: 0.0'),
                               ['jump_max_step']),
    }


STARTUP_ITEMS = ['malformed_yaml', 'wrong_type', 'unknown_solver', 'unknown_key',
                 'negative_tolerance', 'zero_step_size', 'zero_max_iterations', 'missing_urdf',
                 'missing_tip', 'zero_axis_urdf', 'analytic_on_arm', 'zero_jump_max_step']


def test_startup_item_list_covers_every_case(tmp_path):
    assert sorted(STARTUP_ITEMS) == sorted(_startup_cases(tmp_path))


@pytest.mark.parametrize('item', STARTUP_ITEMS)
def test_bad_startup_file_exits_nonzero_with_a_one_line_reason(tmp_path, item):
    text, words = _startup_cases(tmp_path)[item]
    path = tmp_path / 'params.yaml'
    path.write_text(text)
    proc = subprocess.run([sys.executable, '-m', 'ik_node.node', '--ros-args',
                           '--params-file', str(path)],
                          capture_output=True, text=True, timeout=60, env=process_env(),
                          cwd=REPO)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert 'Traceback' not in out, out
    for word in words:
        assert word.lower() in out.lower(), out
