"""The jump guard's rule (ik_node/ros/outputs/jump_guard.py), without ROS: what it holds, what it
limits, and that every command stays inside the joint limits and within velocity x time.

The node's use of it over real DDS is in test_node_jump_guard.py.
"""

import math

import numpy as np
import pytest

from ik_node.config.ros_graph import graph_config_from_flat
from ik_node.errors import ConfigError
from ik_node.ros.outputs.jump_guard import JumpGuard

NAMES = ('a', 'b', 'c')
LOWER, UPPER = (-2.0, -1.0, -3.0), (2.0, 1.0, 3.0)
VELOCITY = (1.0, 2.0, math.inf)  # rad/s; the last joint has no velocity limit


def guard(mode='hold', max_step=0.5, scaling=1.0):
    return JumpGuard(NAMES, LOWER, UPPER, VELOCITY, mode, max_step, scaling)


def test_an_answer_within_the_bounds_passes_as_it_is():
    g = guard()
    assert g.check([0.0, 0.0, 0.0], now=0.0).action == 'pass'
    verdict = g.check([0.05, -0.1, 0.4], now=0.1)  # bounds 0.1, 0.2, 0.5
    assert verdict.action == 'pass' and verdict.q == [0.05, -0.1, 0.4]
    assert g.last_command == [0.05, -0.1, 0.4]


def test_hold_names_the_joint_that_would_jump_and_keeps_the_last_command():
    g = guard('hold')
    g.check([0.0, 0.0, 0.0], now=0.0)
    verdict = g.check([0.0, 0.0, 2.5], now=10.0)  # c: no velocity limit, max_step 0.5
    assert verdict.action == 'hold' and verdict.q is None
    assert verdict.joint == 'c' and verdict.move == pytest.approx(2.5)
    assert verdict.bound == pytest.approx(0.5)
    assert 'c would move 2.500 (bound 0.500)' in verdict.message
    assert g.last_command == [0.0, 0.0, 0.0]


def test_the_bound_is_velocity_times_the_time_since_the_last_command():
    g = guard('hold', max_step=10.0)
    g.check([0.0, 0.0, 0.0], now=0.0)
    held = g.check([0.3, 0.0, 0.0], now=0.2)  # a: 1 rad/s x 0.2 s = 0.2 < 0.3
    assert held.action == 'hold' and held.joint == 'a'
    assert held.bound == pytest.approx(0.2)
    # Held answers are not commands: the time keeps counting from the last command.
    assert g.check([0.3, 0.0, 0.0], now=0.3).action == 'pass'
    assert guard('hold', max_step=10.0, scaling=0.5).bounds(now=math.inf)[2] == 10.0


def test_limit_steps_toward_the_answer_along_the_straight_line_within_every_bound():
    g = guard('limit')
    g.check([0.0, 0.0, 0.0], now=0.0)
    target = np.array([1.0, -0.8, 2.0])
    bounds = g.bounds(0.1)
    assert bounds == pytest.approx([0.1, 0.2, 0.5])
    verdict = g.check(target.tolist(), now=0.1)
    assert verdict.action == 'limit' and verdict.joint == 'a'
    q = np.array(verdict.q)
    assert np.all(np.abs(q) <= np.array(bounds) + 1e-12)
    np.testing.assert_allclose(q, verdict.scale * target)  # on the line toward the answer
    assert verdict.scale == pytest.approx(0.1)
    assert 'limited' in verdict.message and 'not at the target' in verdict.message
    assert g.last_command == verdict.q


def test_every_command_is_inside_the_limits_and_within_velocity_times_time():
    rng = np.random.default_rng(0)
    for mode in ('hold', 'limit'):
        g = guard(mode, max_step=0.3)
        now, last = 0.0, None
        for _ in range(500):
            now += rng.uniform(0.001, 0.2)
            answer = rng.uniform(np.array(LOWER) - 0.1, np.array(UPPER) + 0.1)  # some outside
            bounds = g.bounds(now)
            verdict = g.check(answer.tolist(), now)
            if verdict.q is None:
                continue
            q = np.array(verdict.q)
            assert np.all(q >= LOWER) and np.all(q <= UPPER)
            if last is not None:
                assert np.all(np.abs(q - last) <= np.array(bounds) + 1e-12)
            last = q


def test_the_first_answer_is_measured_against_the_measured_state():
    g = guard('hold')
    verdict = g.check([1.5, 0.0, 0.0], now=0.0, q_measured=[0.0, 0.0, 0.0])
    assert verdict.action == 'hold' and verdict.joint == 'a'
    assert g.check([0.2, 0.0, 0.0], now=0.0, q_measured=[0.0, 0.0, 0.0]).action == 'pass'
    g.reset()
    assert g.last_command is None


def test_off_passes_everything_clipped_into_the_limits():
    g = guard('off')
    g.check([0.0, 0.0, 0.0], now=0.0)
    verdict = g.check([5.0, 0.0, 0.0], now=0.001)
    assert verdict.action == 'pass' and verdict.q == [2.0, 0.0, 0.0]


@pytest.mark.parametrize('key, value', [
    ('jump_max_step', -0.1), ('jump_max_step', 0.0), ('jump_max_step', float('nan')),
    ('jump_velocity_scaling', 0.0), ('jump_velocity_scaling', -1.0),
    ('jump_velocity_scaling', float('nan')), ('jump_velocity_scaling', 1.5)])
def test_a_misconfigured_bound_is_refused_with_its_name(key, value):
    with pytest.raises(ConfigError, match=key):
        graph_config_from_flat({key: value})


def test_jump_guard_modes_and_their_defaults_by_output():
    with pytest.raises(ConfigError, match="jump_guard 'sometimes' is not one of: hold, limit"):
        graph_config_from_flat({'jump_guard': 'sometimes'})
    assert graph_config_from_flat({'output': 'position_command'}).guard == 'hold'
    assert graph_config_from_flat({'output': 'joint_trajectory'}).guard == 'hold'
    assert graph_config_from_flat({'output': 'joint_states'}).guard == 'off'
    assert graph_config_from_flat({'output': 'joint_states', 'jump_guard': ' Limit '}).guard \
        == 'limit'
    assert graph_config_from_flat({'output': 'position_command', 'jump_guard': 'off'}).guard \
        == 'off'


@pytest.mark.parametrize('kwargs', [{'max_step': 0.0}, {'max_step': float('nan')},
                                    {'scaling': -1.0}, {'mode': 'sometimes'}])
def test_the_guard_itself_refuses_a_bad_bound(kwargs):
    with pytest.raises(ValueError):
        guard(**kwargs)
