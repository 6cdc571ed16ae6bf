"""String parameter values in the node: stored in canonical form, at start-up and at run time."""

from __future__ import annotations

import pytest
from untidy_params import FILE_TEXT



# ------------------------------------------------------------------------------------ node
@pytest.fixture
def make_node(harness):
    """Start IkNode in this process from a parameters file's text (the shared harness);
    destroyed afterwards."""
    return harness.start_from_text


def _stored(node, name):
    return node.get_parameter(name).value


def _param(name, value):
    from rclpy.parameter import Parameter
    return Parameter(name, value=value)


def test_node_stores_the_canonical_values_of_its_parameters_file(make_node):
    node = make_node(FILE_TEXT)
    assert _stored(node, 'solver') == node.config.solver == 'analytic_hip_knee'
    assert _stored(node, 'tip_link') == 'foot' and _stored(node, 'base_link') == 'base_link'
    assert _stored(node, 'urdf_file') == 'leg3.urdf'
    assert _stored(node, 'analytic_hip_knee.branch') == 'backward'
    assert _stored(node, 'damped_jacobian.method') == 'transpose'


def test_node_stores_the_canonical_value_set_at_runtime(make_node):
    node = make_node(FILE_TEXT)
    if not hasattr(node, 'add_pre_set_parameters_callback'):
        pytest.skip('rclpy without pre-set callbacks (Humble): refused instead (tested below)')
    result = node.set_parameters([_param('solver', '  Damped_Jacobian ')])[0]
    assert result.successful, result.reason
    assert _stored(node, 'solver') == node.config.solver == 'damped_jacobian'
    result = node.set_parameters_atomically([_param('tip_link', 'shin_link '),
                                             _param('damped_jacobian.method', ' DLS')])
    assert result.successful, result.reason
    assert _stored(node, 'tip_link') == 'shin_link' and node.config.tip_links == ('shin_link',)
    assert _stored(node, 'damped_jacobian.method') == 'dls'
    # A wrong case of a link name is still a wrong name: refused, nothing changes.
    result = node.set_parameters([_param('tip_link', 'Foot')])[0]
    assert not result.successful and "'Foot'" in result.reason
    assert _stored(node, 'tip_link') == 'shin_link'


def test_without_a_pre_set_callback_the_node_refuses_and_names_the_canonical_value(
        make_node, monkeypatch):
    """rclpy without pre-set callbacks (Humble) cannot rewrite a value being set: the node
    refuses it instead."""
    import rclpy.node as rclpy_node
    if hasattr(rclpy_node.Node, 'add_pre_set_parameters_callback'):
        monkeypatch.delattr(rclpy_node.Node, 'add_pre_set_parameters_callback')
    node = make_node(FILE_TEXT)
    assert _stored(node, 'solver') == 'analytic_hip_knee'  # start-up values still canonical
    result = node.set_parameters([_param('solver', ' FABRIK ')])[0]
    assert not result.successful
    assert "set 'fabrik'" in result.reason
    assert _stored(node, 'solver') == node.config.solver == 'analytic_hip_knee'
    assert node.set_parameters([_param('solver', 'fabrik')])[0].successful
    assert node.config.solver == 'fabrik'
