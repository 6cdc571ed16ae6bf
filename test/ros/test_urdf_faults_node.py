"""A faulty robot description sent to a running node over DDS: refused, the old chain kept."""

from __future__ import annotations
import pytest
from urdf_texts import ARM6_XML, DEFAULT_LIMIT_BYTES, joint, links, padded, robot



#: Every test here talks to ik_node in its own process (or runs a script that starts one).
pytestmark = pytest.mark.slow

# ------------------------------------------------------------------------ node over DDS
NODE_FAULTS = {
    'loop': (robot(links('base', 'a', 'c', 'tip'), joint('j1', 'base', 'a'),
                   joint('j2', 'c', 'tip'), joint('j3', 'tip', 'c')), ['loop']),
    'duplicate_link_names': (ARM6_XML.replace('</robot>', '<link name="tool0"/></robot>'),
                             ["'tool0'", 'unique']),
    'huge': (padded(ARM6_XML, DEFAULT_LIMIT_BYTES + 500_000), ['max_description_bytes']),
}


@pytest.fixture(scope='module')
def arm_node(tmp_path_factory):
    """An arm6 node in its own process (the harness's RunningNode), talked to over DDS."""
    pytest.importorskip('rclpy')
    from harness import RunningNode
    node = RunningNode('arm6', tmp_path_factory.mktemp('urdf_faults'))
    yield node
    node.close()


@pytest.mark.parametrize('item', list(NODE_FAULTS))
def test_node_refuses_a_faulty_robot_description_and_keeps_its_chain(arm_node, item):
    from harness import ARM_QS
    xml, words = NODE_FAULTS[item]
    k = list(NODE_FAULTS).index(item)
    arm_node.solve_valid(ARM_QS[k])
    q_before = arm_node.current_q()
    before = arm_node.get_param('robot_description')
    mark = arm_node.mark()
    result = arm_node.set_param('robot_description', xml)  # waits at most 15 s for the reply
    assert not result.successful
    for word in words:
        assert word.lower() in result.reason.lower(), result.reason
    assert arm_node.get_param('robot_description') == before
    arm_node.settle()
    arm_node.expect_unchanged_since(mark, q_before)
    arm_node.solve_valid(ARM_QS[k + 5])  # the old chain: FK of the joint state hits the target
    arm_node.assert_alive()
