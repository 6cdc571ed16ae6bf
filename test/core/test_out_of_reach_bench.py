"""The benchmarks' out-of-reach helpers: the long search's reference error and the target stream
that leaves the reachable region (no timing here)."""

import math
from pathlib import Path

import numpy as np
import pytest

from benchmarks.common import paths
from benchmarks.reach import out_of_reach
from ik_node import Chain
from ik_node.model.chain import chain_lengths

PLANAR4 = Path(__file__).resolve().parents[2] / 'urdf' / 'planar4.urdf'


@pytest.fixture(scope='module')
def planar4():
    return Chain.from_urdf_file(PLANAR4, 'base_link', 'tip')


def test_long_search_finds_the_stretched_arm_beyond_the_reach(planar4):
    reach = sum(chain_lengths(planar4))
    rng = np.random.default_rng(0)
    for angle in (0.3, -2.0, 2.9):
        target = 1.6 * np.array([math.cos(angle), math.sin(angle), 0.0])
        error, q = out_of_reach.long_search(planar4, target, 20, rng)
        assert error == pytest.approx(1.6 - reach, abs=1e-9)
        assert planar4.within_limits(q, tol=0.0)


def test_long_search_reaches_a_reachable_target(planar4):
    rng = np.random.default_rng(1)
    target = planar4.fk(np.array([0.4, -1.0, 1.2, 0.3]))[:3, 3]
    error, _ = out_of_reach.long_search(planar4, target, 20, rng)
    assert error < 1e-9


def test_half_out_of_reach_stream_leaves_the_reach_half_of_the_time(planar4):
    rate = 1000.0
    q = paths.trajectory(planar4, 4000, rate, 1.0)
    targets = planar4.fk(q)[:, :3, 3]
    stream = paths.leave_reach(planar4, targets, rate, 0.5)
    reach = sum(chain_lengths(planar4))
    beyond = np.linalg.norm(stream, axis=1) > reach  # joint1 sits at the base origin
    assert beyond.mean() == pytest.approx(0.5, abs=0.01)
    np.testing.assert_array_equal(stream[~beyond], targets[~beyond])
    np.testing.assert_array_equal(paths.leave_reach(planar4, targets, rate, 0.0),
                                  targets)
