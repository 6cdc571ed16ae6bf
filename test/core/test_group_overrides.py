"""A planning group's own solver and parameters in the MoveIt services
(``groups.<group>.solver``, ``groups.<group>.<param>``; ik_node.config.group_overrides): read
from nested YAML blocks or dotted names, refused when unknown or bad, and used by the group's
solver (answers checked by forward kinematics against the target)."""

import numpy as np
import pytest
import yaml

from ik_node import Chain
from ik_node.config.group_overrides import GroupSettings
from ik_node.config.node_config import config_from_flat, config_from_mapping
from ik_node.errors import ConfigError
from ik_node.services.constraints import quat_xyzw_of
from ik_node.services.error_codes import MoveItCode, ServiceError
from ik_node.services.group_solvers import GroupSolvers, configured_budget
from ik_node.services.requests import IkRequest, PoseGoal

TWIN_SRDF = """<robot name="twin_arm">
  <group name="left_arm"><chain base_link="base_link" tip_link="left_hand"/></group>
  <group name="right_arm"><chain base_link="base_link" tip_link="right_hand"/></group>
  <group name="both_arms"><group name="left_arm"/><group name="right_arm"/></group>
  <group name="gripper"><link name="right_finger_a"/></group>
</robot>"""

BASE = {'urdf_file': 'twin_arm.urdf', 'base_link': 'base_link',
        'tip_links': ['left_hand', 'right_hand'], 'solver': 'fabrik',
        'fabrik': {'timeout': 0.05, 'max_iterations': 300},
        'robot_description_semantic': TWIN_SRDF}


def twin(groups=None, **extra):
    """The twin arm's configuration (node solver fabrik) with ``groups`` as its groups block."""
    data = {**BASE, **extra}
    if groups is not None:
        data['groups'] = groups
    return config_from_mapping({'ik_node': {'ros__parameters': data}})


# ---------------------------------------------------------------------------------- parsing
def test_a_nested_groups_block_and_dotted_names_give_the_same_settings():
    nested = yaml.safe_load("""
    groups:
      left_arm: {solver: ' Damped_Jacobian ', timeout: 0.02, method: DLS}
      both_arms:
        max_iterations: 50
    """)['groups']
    a = twin(nested)
    b = twin(**{'groups.left_arm.solver': 'damped_jacobian', 'groups.left_arm.timeout': 0.02,
                'groups.left_arm.method': 'dls', 'groups.both_arms.max_iterations': 50})
    expected = {'left_arm': GroupSettings('damped_jacobian', {'timeout': 0.02,
                                                              'method': 'dls'}),
                'both_arms': GroupSettings('', {'max_iterations': 50})}
    assert a.group_overrides == expected and b.group_overrides == expected
    # ROS's flat parameter names, as the node reads them back (and as ros2 param set gives them)
    flat = {'urdf_file': 'twin_arm.urdf', 'tip_links': ['left_hand', 'right_hand'],
            'robot_description_semantic': TWIN_SRDF, 'groups.right_arm.timeout': 1}
    assert config_from_flat(flat).group_overrides == {
        'right_arm': GroupSettings('', {'timeout': 1.0})}


def test_without_groups_there_are_no_overrides():
    assert twin().group_overrides == {}


@pytest.mark.parametrize('groups, words', [
    ({'left_arm': {'solver': 'ikfast'}}, ["groups.left_arm.solver", "unknown solver 'ikfast'",
                                          'damped_jacobian, fabrik']),
    ({'left_arm': {'timout': 0.1}}, ["groups.left_arm.timout", "unknown setting 'timout'",
                                     'timeout']),
    ({'left_arm': {'method': 'dls'}}, ["groups.left_arm.method", "solver 'fabrik'",
                                       "no parameter 'method'"]),
    ({'left_arm': {'timeout': -1.0}}, ['groups.left_arm.timeout', 'out of range']),
    ({'left_arm': {'timeout': 'fast'}}, ['groups.left_arm.timeout', 'number']),
    ({'left_arm': {'solver': 'damped_jacobian', 'method': 'newton'}},
     ['groups.left_arm.method', 'not one of']),
    ({'left_arm': {'timeout': {'a': 1}}}, ['groups.left_arm.timeout', 'not a mapping']),
    ({'left_arm': 3}, ['groups.left_arm', 'groups.<group>.<solver or parameter>']),
    ({'left': {'timeout': 0.1}}, ["no planning group 'left'", 'both_arms, left_arm',
                                  'manipulator, right_arm']),
    ({'gripper': {'timeout': 0.1}}, ["'gripper'", 'links only']),
])
def test_bad_group_settings_are_refused_naming_them(groups, words):
    with pytest.raises(ConfigError) as info:
        twin(groups)
    for word in words:
        assert word in str(info.value), str(info.value)


def test_the_configured_chain_is_a_group_by_its_name():
    # no SRDF: the node's chain is 'manipulator', or its group_name
    assert twin({'manipulator': {'timeout': 0.01}}, robot_description_semantic='') \
        .group_overrides['manipulator'].params == {'timeout': 0.01}
    assert set(twin({'hands': {'timeout': 0.01}}, robot_description_semantic='',
                    group_name='hands').group_overrides) == {'hands'}
    with pytest.raises(ConfigError, match="no planning group 'manipulator'. Groups: hands"):
        twin({'manipulator': {'timeout': 0.01}}, robot_description_semantic='',
             group_name='hands')


def test_a_change_of_the_nodes_solver_is_checked_against_the_groups_settings():
    # 'restarts' is a parameter of fabrik and damped_jacobian, 'polish_iterations' of fabrik
    # only: with the node's solver damped_jacobian, a group without its own solver refuses it
    twin({'left_arm': {'polish_iterations': 3}})
    with pytest.raises(ConfigError, match="solver 'damped_jacobian' has no parameter "
                                          "'polish_iterations'"):
        twin({'left_arm': {'polish_iterations': 3}}, solver='damped_jacobian')


# ------------------------------------------------------------------------------- solving
def twin_chain(tips):
    config = twin()
    return Chain.from_urdf_string(config.urdf_xml(), 'base_link', list(tips))


def pose_request(group, chain, q, timeout_s=0.0):
    goals = []
    for tip in chain.tip_links:
        T = chain.fk(q, tip)
        goals.append(PoseGoal(tip, '', (0, 0), T[:3, 3], quat_xyzw_of(T[:3, :3])))
    return IkRequest(group, {}, tuple(goals), timeout_s=timeout_s)


def test_an_overridden_group_is_solved_by_its_own_solver_and_settings():
    config = twin({'left_arm': {'solver': 'damped_jacobian', 'timeout': 0.02,
                                'position_tolerance': 1e-6}})
    solvers = GroupSolvers(config, config.collision)
    left = solvers.solver(solvers.group('left_arm'), False)
    assert left.name == 'damped_jacobian'
    assert left.params['timeout'] == pytest.approx(0.02)
    assert left.params['position_tolerance'] == pytest.approx(1e-6)
    assert configured_budget(left) == pytest.approx(0.02)
    # the node's other damped_jacobian parameters stay the node's
    assert left.params['damping'] == config.params_of('damped_jacobian')['damping']
    # a group without settings: the node's solver and parameters
    right = solvers.solver(solvers.group('right_arm'), False)
    assert right.name == 'fabrik' and right.params == {**config.params_of('fabrik'),
                                                       'self_collision': False}
    chain = twin_chain(['left_hand'])
    rng = np.random.default_rng(5)
    for _ in range(8):
        q = rng.uniform(chain.lower, chain.upper)
        answer = solvers.solve(pose_request('left_arm', chain, q))
        # damped_jacobian meets the pose, orientation included
        assert answer.code == MoveItCode.SUCCESS, answer.message
        assert answer.result.position_error <= 1e-6
        T = chain.fk(q)
        reached = chain.fk(answer.q)
        assert np.linalg.norm(reached[:3, 3] - T[:3, 3]) < 1e-6
        assert chain.within_limits(answer.q)


def test_a_group_of_groups_takes_its_own_solver_for_both_tips():
    config = twin({'both_arms': {'solver': 'damped_jacobian', 'timeout': 0.1}})
    solvers = GroupSolvers(config, config.collision)
    both = solvers.solver(solvers.group('both_arms'), True)
    assert both.name == 'damped_jacobian' and both.params['timeout'] == pytest.approx(0.1)
    chain = twin_chain(['left_hand', 'right_hand'])
    q = np.random.default_rng(1).uniform(chain.lower, chain.upper) * 0.5
    answer = solvers.solve(pose_request('both_arms', chain, q, timeout_s=1.0))
    for tip in chain.tip_links:
        error = np.linalg.norm(chain.fk(answer.q, tip)[:3, 3] - chain.fk(q, tip)[:3, 3])
        assert error < 1e-4, (answer.code, answer.message)


def test_a_groups_own_solver_that_cannot_solve_it_is_refused_not_replaced():
    config = twin({'left_arm': {'solver': 'analytic_hip_knee'}})
    solvers = GroupSolvers(config, config.collision)
    chain = twin_chain(['left_hand'])
    with pytest.raises(ServiceError, match='analytic_hip_knee') as info:
        solvers.solve(pose_request('left_arm', chain, np.zeros(chain.n)))
    assert info.value.code == MoveItCode.INVALID_GROUP_NAME
    # the node's analytic_hip_knee gives way to damped_jacobian, with the group's settings
    config = twin({'left_arm': {'max_iterations': 77}}, solver='analytic_hip_knee')
    solvers = GroupSolvers(config, config.collision)
    left = solvers.solver(solvers.group('left_arm'), False)
    assert left.name == 'damped_jacobian' and left.params['max_iterations'] == 77
