"""A planning group's own solver and settings in the node's MoveIt services, over DDS with the
real moveit_msgs: given in the parameters file, used by ``~/compute_ik`` for that group,
changed and refused by ``ros2 param set`` at run time, refused at start-up when bad."""

import numpy as np
import pytest
from rcl_interfaces.msg import ParameterType
from rcl_interfaces.srv import DescribeParameters, GetParameters

from moveit_client import call, moveit_msgs_on_path, plugin_request, solution_of

from harness import REPO, start_process, wait_for
from ik_node import Chain

srv = None  # moveit_msgs.srv, while this module's tests run (the fixture below)


@pytest.fixture(scope='module', autouse=True)
def moveit_srv():
    global srv
    with moveit_msgs_on_path() as module:
        srv = module
        yield


TWIN_SRDF = """<robot name="twin_arm">
  <group name="left_arm"><chain base_link="base_link" tip_link="left_hand"/></group>
  <group name="right_arm"><chain base_link="base_link" tip_link="right_hand"/></group>
  <group name="both_arms"><group name="left_arm"/><group name="right_arm"/></group>
</robot>"""


def left_request(chain, q):
    """A full pose of the left hand (FK of ``q``) for group left_arm, kinematics only."""
    request = plugin_request(srv, 'left_arm', chain.joint_names, np.zeros(chain.n), 'base_link',
                             ['left_hand'], [chain.fk(q)])
    request.ik_request.avoid_collisions = False
    return request


def test_an_overridden_group_is_answered_by_its_own_solver_and_changed_at_run_time(harness):
    # the node's solver is fabrik (positions only: a full pose is answered NO_IK_SOLUTION);
    # left_arm's own, damped_jacobian, meets it
    ik, probe = harness.start('twin_arm', tips=('left_hand', 'right_hand'),
                              robot_description_semantic=TWIN_SRDF,
                              groups={'left_arm': {'solver': 'damped_jacobian',
                                                   'timeout': 0.05}})
    assert probe.get_param('groups.left_arm.solver') == 'damped_jacobian'
    assert probe.get_param('groups.left_arm.timeout') == 0.05
    node = harness.ros.node('moveit')
    client = node.create_client(srv.GetPositionIK, f'/{ik.get_name()}/compute_ik')
    chain = Chain.from_urdf_file(REPO / 'urdf' / 'twin_arm.urdf', 'base_link', 'left_hand')
    rng = np.random.default_rng(4)
    targets = [rng.uniform(chain.lower, chain.upper) for _ in range(3)]
    for q in targets:
        response = call(node, client, left_request(chain, q))
        assert response.error_code.val == 1, response.error_code.message  # SUCCESS
        solved = solution_of(response, chain.joint_names)
        reached, target = chain.fk(solved), chain.fk(q)
        assert np.linalg.norm(reached[:3, 3] - target[:3, 3]) < 1e-4
        assert np.allclose(reached[:3, :3], target[:3, :3], atol=1e-3)

    # bad values are refused, naming them; nothing changes
    for name, value, words in (
            ('groups.left_arm.solver', 'ikfast', ('ikfast', 'fabrik')),
            ('groups.left_arm.timeout', -1.0, ('groups.left_arm.timeout', 'range')),
            ('groups.left_arm.timeout', 'fast', ('DOUBLE',)),  # rclpy's type check
            # the group's timeout is no parameter of analytic_hip_knee
            ('groups.left_arm.solver', 'analytic_hip_knee', ('analytic_hip_knee', 'timeout'))):
        result = probe.set_param(name, value)
        assert not result.successful
        assert all(w in result.reason for w in words), result.reason
    assert probe.get_param('groups.left_arm.solver') == 'damped_jacobian'
    # a group setting not given at start-up is declared when set (the next test)
    assert probe.set_param('groups.right_arm.timeout', 0.1).successful
    assert probe.get_param('groups.right_arm.timeout') == 0.1
    response = call(node, client, left_request(chain, targets[0]))
    assert response.error_code.val == 1, response.error_code.message

    # the group's solver changed to the node's fabrik: the position is reached, the
    # orientation is not met (positions only)
    result = probe.set_param('groups.left_arm.solver', ' FABRIK ')
    assert result.successful, result.reason
    assert probe.get_param('groups.left_arm.solver') == 'fabrik'
    response = wait_for('fabrik answering', lambda: (
        r := call(node, client, left_request(chain, targets[0]))).error_code.val == -31 and r)
    assert 'positions only' in response.error_code.message
    solved = solution_of(response, chain.joint_names)
    assert np.linalg.norm(chain.fk(solved)[:3, 3] - chain.fk(targets[0])[:3, 3]) < 1e-3


def declared(probe, name):
    """Whether the node has parameter ``name`` (GetParameters answers no value otherwise)."""
    request = GetParameters.Request()
    request.names = [name]
    return len(probe._call(probe.get_client, request).values) == 1


def test_a_group_setting_not_given_at_start_up_is_declared_when_set(harness):
    # no groups.* at start-up; the node's solver is fabrik (positions only)
    srdf = TWIN_SRDF.replace('</robot>', '  <group name="left_hand_eef"><link name="left_hand"/>'
                             '</group>\n</robot>')
    ik, probe = harness.start('twin_arm', tips=('left_hand', 'right_hand'),
                              robot_description_semantic=srdf)
    assert not declared(probe, 'groups.left_arm.solver')
    node = harness.ros.node('moveit')
    client = node.create_client(srv.GetPositionIK, f'/{ik.get_name()}/compute_ik')
    chain = Chain.from_urdf_file(REPO / 'urdf' / 'twin_arm.urdf', 'base_link', 'left_hand')
    target = np.random.default_rng(4).uniform(chain.lower, chain.upper)

    def answer():
        return call(node, client, left_request(chain, target))

    assert answer().error_code.val == -31  # fabrik: the orientation is not met

    # refused with the reason, as at start-up; the name stays undeclared, the node answers
    for name, value, words in (
            ('groups.nope.timeout', 0.1, ("no planning group 'nope'", 'left_arm')),
            ('groups.left_hand_eef.timeout', 0.1, ('links only',)),
            ('groups.left_arm.dampnig', 0.1, ("unknown setting 'dampnig'", 'damping')),
            ('groups.left_arm.damping', 0.1, ("'fabrik' has no parameter 'damping'",)),
            ('groups.left_arm.solver', 'ikfast', ("unknown solver 'ikfast'",)),
            ('groups.left_arm.timeout', -1.0, ('groups.left_arm.timeout', 'range')),
            ('groups.left_arm.timeout', 'fast', ('groups.left_arm.timeout', 'DOUBLE')),
            ('groups.left_arm.max_iterations', 2.5, ('INTEGER',)),
            ('groups.left_arm', 'fabrik', ('groups.<group>.<solver or parameter>',))):
        result = probe.set_param(name, value)
        assert not result.successful, name
        assert all(w in result.reason for w in words), result.reason
        assert not declared(probe, name), name
    # any other undeclared name is refused by rclpy, as before
    for name in ('dampnig', 'fabrik.dampnig', 'group.left_arm.timeout'):
        result = probe.set_param(name, 0.1)
        assert not result.successful and 'undeclared' in result.reason, (name, result.reason)
    result = probe.set_atomically(groups__right_arm__timeout=0.1, dampnig=0.1)
    assert not result.successful and 'undeclared' in result.reason, result.reason
    assert not declared(probe, 'groups.right_arm.timeout')
    result = probe.set_atomically(groups__right_arm__timeout=0.1, groups__right_arm__damping=0.1)
    assert not result.successful and "has no parameter 'damping'" in result.reason
    assert not declared(probe, 'groups.right_arm.timeout')
    assert answer().error_code.val == -31

    # a group setting first set at run time is declared and used from the next request
    result = probe.set_param('groups.left_arm.solver', 'damped_jacobian')
    assert result.successful, result.reason
    assert probe.get_param('groups.left_arm.solver') == 'damped_jacobian'
    describe = node.create_client(DescribeParameters, f'/{ik.get_name()}/describe_parameters')
    request = DescribeParameters.Request()
    request.names = ['groups.left_arm.solver']
    (descriptor,) = call(node, describe, request).descriptors
    assert descriptor.type == ParameterType.PARAMETER_STRING
    assert "planning group 'left_arm'" in descriptor.description
    response = wait_for('damped_jacobian answering', lambda: (
        r := answer()).error_code.val == 1 and r)
    reached = chain.fk(solution_of(response, chain.joint_names))
    assert np.linalg.norm(reached[:3, 3] - chain.fk(target)[:3, 3]) < 1e-4
    assert np.allclose(reached[:3, :3], chain.fk(target)[:3, :3], atol=1e-3)
    # an integer for a double is taken as the double; the declared type then holds
    result = probe.set_param('groups.left_arm.timeout', 1)
    assert result.successful, result.reason
    assert probe.get_param('groups.left_arm.timeout') == 1.0
    assert isinstance(probe.get_param('groups.left_arm.timeout'), float)
    result = probe.set_param('groups.left_arm.timeout', 'fast')
    assert not result.successful and 'DOUBLE' in result.reason, result.reason
    # the group's solver without the group's timeout is refused, both kept
    result = probe.set_param('groups.left_arm.solver', 'analytic_hip_knee')
    assert not result.successful and 'timeout' in result.reason, result.reason
    assert probe.get_param('groups.left_arm.solver') == 'damped_jacobian'
    assert answer().error_code.val == 1


@pytest.mark.slow
@pytest.mark.parametrize('groups, words', [
    ('{nope: {timeout: 0.1}}', ("no planning group 'nope'", 'left_arm')),
    ('{left_arm: {solver: ikfast}}', ("unknown solver 'ikfast'",)),
    ('{left_arm: {timout: 0.1}}', ("unknown setting 'timout'",)),
])
def test_bad_group_settings_stop_the_start_with_one_line(tmp_path, groups, words):
    bad = tmp_path / 'bad.yaml'
    srdf = TWIN_SRDF.replace('\n', ' ').replace("'", "''")
    bad.write_text('ik_node:\n  ros__parameters:\n    urdf_file: twin_arm.urdf\n'
                   '    tip_links: [left_hand, right_hand]\n    solver: fabrik\n'
                   f"    robot_description_semantic: '{srdf}'\n    groups: {groups}\n")
    proc = start_process('--params-file', str(bad))
    code = proc.wait(timeout=30)
    err = proc.communicate()[1]
    assert code == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and all(w in lines[0] for w in words), err
