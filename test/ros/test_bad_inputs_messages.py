"""Bad input at the message boundary of the node (ik_node.ros.inputs.targets, and the solution
check of ik_node.ros.outputs.solution_output): target frames, publishable joint vectors."""

import math
from pathlib import Path

import numpy as np
import pytest

from ik_node import Chain, TargetError

NAN = float('nan')
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope='module')
def models():
    """name -> (chain, xml) of the packaged leg."""
    xml = (REPO / 'urdf' / 'leg3.urdf').read_text()
    return {'leg3': (Chain.from_urdf_string(xml, 'base_link', 'foot'), xml)}



# ---------------------------------------------------------------------- frames (conversions)
def _conversions():
    return pytest.importorskip('ik_node.ros.inputs.targets')


def test_unknown_frame_id_raises_target_error_listing_the_links(models):
    conv = _conversions()
    chain = models['leg3'][0]
    target = conv.Target(np.array([0.1, 0.0, -0.4]), None, 'map')
    with pytest.raises(TargetError, match="'map'.*Available links: base_link"):
        conv.target_in_base(target, chain, chain.mid_configuration())


def test_empty_frame_id_means_the_base_frame(models):
    conv = _conversions()
    chain = models['leg3'][0]
    p = np.array([0.1, -0.05, -0.4])
    for frame in ('', 'base_link'):
        p_base, quat = conv.target_in_base(conv.Target(p, None, frame), chain,
                                           chain.mid_configuration())
        np.testing.assert_array_equal(p_base, p)
        assert quat is None


def test_target_in_another_link_frame_is_moved_into_the_base_frame(models):
    conv = _conversions()
    chain = models['leg3'][0]
    # hip_link sits at the base origin, turned by hip_yaw; thigh_link 0.05 m below it.
    q = np.array([0.5, 0.0, 0.0])
    p_base, _ = conv.target_in_base(conv.Target(np.array([0.1, 0.0, 0.0]), None, 'thigh_link'),
                                    chain, q)
    np.testing.assert_allclose(p_base, [0.1 * math.cos(0.5), 0.1 * math.sin(0.5), -0.05],
                               atol=1e-12)


@pytest.mark.parametrize('position,quat,words', [
    ([NAN, 0, 0], None, 'NaN'), ([0, 0, 1e12], None, 'beyond'),
    ([0.1, 0, 0], [0, 0, 0, 0], 'zero length'), ([0.1, 0, 0], [0, NAN, 0, 1], 'NaN')])
def test_message_targets_are_checked_before_the_frame_is_applied(models, position, quat,
                                                                  words):
    conv = _conversions()
    chain = models['leg3'][0]
    target = conv.Target(np.array(position, dtype=float),
                         None if quat is None else np.array(quat, dtype=float), 'thigh_link')
    with pytest.raises(TargetError, match=words):
        conv.target_in_base(target, chain, chain.mid_configuration())


def test_publishable_check_refuses_nan_and_limit_breaking_joint_vectors(models):
    out = pytest.importorskip('ik_node.ros.outputs.solution_output')
    chain = models['leg3'][0]
    with pytest.raises(TargetError, match='NaN'):
        out.check_publishable(chain, [0.0, NAN, 0.0])
    with pytest.raises(TargetError, match='hip_yaw'):
        out.check_publishable(chain, [1.3, 0.0, 0.0])   # leg3 hip_yaw limit is 1.2
    with pytest.raises(TargetError, match='3 joints'):
        out.check_publishable(chain, [0.0, 0.0])
    np.testing.assert_array_equal(out.check_publishable(chain, [1.2, -1.6, 2.6]),
                                  [1.2, -1.6, 2.6])
