"""Parameters set as a ROS user types them: ``ros2 param set /ik_node NAME TEXT`` reads TEXT as
YAML (``0.0`` a double, ``1`` an integer, ``true`` a bool, ``off`` a bool too) and calls the
node's ``set_parameters`` service with the value so typed. Here the same: the text through
``yaml.safe_load``, the typed value to the real parameter service from another node.
"""

from __future__ import annotations

import yaml


from rclpy.parameter import Parameter
from rcl_interfaces.srv import SetParameters


def typed_as_ros2_param_set(name: str, text: str) -> Parameter:
    """The parameter ``ros2 param set`` sends for ``text`` (ros2param reads it as YAML)."""
    value = yaml.safe_load(text)
    if isinstance(value, list) and not value:
        return Parameter(name, Parameter.Type.STRING_ARRAY, [])
    return Parameter(name, value=value)


def set_typed(probe, name: str, text: str):
    """``ros2 param set /<node> name text`` through the node's parameter service."""
    request = SetParameters.Request()
    request.parameters = [typed_as_ros2_param_set(name, text).to_parameter_msg()]
    return probe._call(probe.set_client, request).results[0]


def test_the_ground_plane_is_set_with_a_double_and_a_bool_as_typed(harness, collision_robot):
    path = collision_robot('ur5e.urdf')
    ik, probe = harness.start('arm6', urdf_file=str(path), base_link='base_link',
                              tip_link='tool0', solver='damped_jacobian')
    for name, text in (('collision.ground_z', '-0.02'), ('collision.ground', 'true')):
        result = set_typed(probe, name, text)
        assert result.successful, (name, text, result.reason)
    probe.wait_for('the plane in force', lambda: ik.model.solver._collision.checker.world
                   .ground_z == -0.02)
    assert probe.get_param('collision.ground_z') == -0.02
    result = set_typed(probe, 'collision.ground_z', '0')  # an integer, as typed
    assert result.successful, result.reason
    probe.wait_for('the plane moved', lambda: ik.model.solver._collision.checker.world
                   .ground_z == 0.0)
    assert set_typed(probe, 'collision.ground', 'false').successful
    probe.wait_for('no plane', lambda: ik.model.solver._collision.checker.world
                   .ground_z is None)
    bad = set_typed(probe, 'collision.ground_z', 'low')
    assert not bad.successful and 'DOUBLE' in bad.reason  # rclpy's type check: the type named


def user_text(value) -> str:
    """How a user types ``value`` after ``ros2 param set /node NAME``."""
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, (list, tuple)):
        return '[' + ', '.join(user_text(v) for v in value) + ']'
    return str(value)


def test_every_parameter_takes_its_own_value_typed_as_a_user_types_it(harness):
    ik, probe = harness.start('arm6')
    failed = {}
    for name in ik._params.names:
        value = ik._params.value(name)
        if value is None or value == '' or value == []:
            continue  # nothing a user would type back
        text = user_text(value)
        result = set_typed(probe, name, text)
        if not result.successful:
            failed[name] = (text, result.reason)
    assert not failed, failed
