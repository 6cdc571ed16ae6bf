"""The pieces of the closest-pose search: the generated Newton system against numpy and finite
differences, the stretching sweep, the descent's stationary end, and the proven reach bound."""

import math
import random
from pathlib import Path

import numpy as np
import pytest

from closest_reference import newton_system as numpy_newton_system
from ik_node import Chain
from ik_node.model.chain import chain_lengths
from ik_node.solvers.out_of_reach import closest_descent
from ik_node.solvers.numerics.budget import Budget
from ik_node.solvers.out_of_reach.closest_pose import ClosestPose, SearchLimits
from ik_node.solvers.out_of_reach.measured_reach import measure_reach
from ik_node.solvers.geometry.reach_bound import reach_bound
from ik_node.solvers.out_of_reach import tip_sample as tip_sample_module
from ik_node.solvers.out_of_reach.tip_sample import tip_sample

REPO_URDF = Path(__file__).resolve().parents[2] / 'urdf'
from reference_robots import SHARED_ROBOTS, skip_reason  # noqa: E402
CHAINS = {'planar4': (REPO_URDF / 'planar4.urdf', 'base_link', 'tip'),
          'leg3': (REPO_URDF / 'leg3.urdf', 'base_link', 'foot'),
          'arm6': (REPO_URDF / 'arm6.urdf', 'base_link', 'tool0'),
          'panda': (SHARED_ROBOTS / 'panda.urdf', 'panda_link0', 'panda_hand_tcp')}


def load(name):
    path, base, tip = CHAINS[name]
    if not path.is_file():
        pytest.skip(skip_reason(path))
    return Chain.from_urdf_file(path, base, tip)


def search_of(chain):
    fast = chain.fast_kinematics
    low, high = chain.lower.tolist(), chain.upper.tolist()
    return ClosestPose(fast.pose_jacobian, fast.position, fast.position_newton, low, high,
                       [hi - lo >= 2 * math.pi for lo, hi in zip(low, high)],
                       [j.is_prismatic for j in chain.joints], sum(chain_lengths(chain)))


def full(flat, n):
    H = np.zeros((n, n))
    k = 0
    for a in range(n):
        for b in range(a + 1):
            H[a, b] = H[b, a] = flat[k]
            k += 1
    return H


@pytest.mark.parametrize('name', sorted(CHAINS))
def test_generated_newton_system_matches_numpy_and_finite_differences(name):
    chain = load(name)
    fast = chain.fast_kinematics
    rng = np.random.default_rng(0)
    for _ in range(5):
        q = rng.uniform(-2.0, 2.0, chain.n)
        target = rng.uniform(-1.0, 1.0, 3)
        cost, H, g = fast.position_newton(target.tolist(), q.tolist())
        cost_np, H_np, g_np = numpy_newton_system(chain, target, q)
        assert cost == pytest.approx(cost_np, abs=1e-12)
        np.testing.assert_allclose(full(H, chain.n), H_np, atol=1e-12)
        np.testing.assert_allclose(g, g_np, atol=1e-12)
        np.testing.assert_allclose(fast.position(q.tolist()), chain.fk(q)[:3, 3], atol=1e-14)
        # g is minus half the gradient of the cost, H half its Hessian (= -dg/dq)
        h = 1e-6
        for k in range(chain.n):
            dq = np.zeros(chain.n)
            dq[k] = h
            up = fast.position_newton(target.tolist(), (q + dq).tolist())
            down = fast.position_newton(target.tolist(), (q - dq).tolist())
            assert -(up[0] - down[0]) / (4 * h) == pytest.approx(g[k], abs=1e-8)
            np.testing.assert_allclose(-(np.array(up[2]) - np.array(down[2])) / (2 * h),
                                       full(H, chain.n)[:, k], atol=1e-7)


# A prismatic joint between revolute ones (the sweep moves it along its axis), offsets off the
# axes, lopsided limits.
SLIDER_URDF = """<?xml version="1.0"?><robot name="s">
  <link name="base"/><link name="a"/><link name="b"/><link name="c"/><link name="d"/>
  <link name="tool"/>
  <joint name="yaw" type="revolute"><parent link="base"/><child link="a"/>
    <origin xyz="0 0 0.1"/><axis xyz="0 0 1"/>
    <limit lower="-2.5" upper="1.0" effort="1" velocity="1"/></joint>
  <joint name="slide" type="prismatic"><parent link="a"/><child link="b"/>
    <origin xyz="0.05 0.02 0.1"/><axis xyz="0 0.6 0.8"/>
    <limit lower="-0.2" upper="0.3" effort="1" velocity="1"/></joint>
  <joint name="bend" type="revolute"><parent link="b"/><child link="c"/>
    <origin xyz="0.3 0 0.04"/><axis xyz="0 1 0"/>
    <limit lower="-1.5" upper="2.0" effort="1" velocity="1"/></joint>
  <joint name="wrist" type="continuous"><parent link="c"/><child link="d"/>
    <origin xyz="0.2 0.03 0"/><axis xyz="1 0 0"/></joint>
  <joint name="t" type="fixed"><parent link="d"/><child link="tool"/>
    <origin xyz="0.05 0.1 0.02"/></joint></robot>"""


@pytest.mark.slow
@pytest.mark.parametrize('name', ['slider', 'planar4', 'leg3', 'arm6', 'panda'])
@pytest.mark.parametrize('from_base', [True, False])
def test_every_joint_of_a_stretch_sweep_takes_its_best_value_when_its_turn_comes(name,
                                                                                from_base):
    # When joint k's turn comes, the joints before it in the sweep hold their final values and
    # the ones after it their start values: k's final value must be the best over a fine grid of
    # its range then (the sweep from the tip turns only the tip after one Jacobian; from the base
    # it evaluates the Jacobian for each joint: both must agree with this).
    chain = Chain.from_urdf_string(SLIDER_URDF, 'base', 'tool') if name == 'slider' else \
        load(name)
    search = search_of(chain)
    rng = np.random.default_rng(4)
    lower, upper = np.maximum(chain.lower, -3), np.minimum(chain.upper, 3)
    for _ in range(6):
        q0 = rng.uniform(lower, upper)
        target = rng.normal(size=3) * 0.6
        q = np.array(search.stretch(target.tolist(), q0.tolist(), from_base=from_base))
        assert chain.within_limits(q, tol=0.0)
        for k in range(chain.n):
            now = np.r_[q[:k], q[k], q0[k + 1:]] if from_base else np.r_[q0[:k], q[k], q[k + 1:]]
            lo, hi = max(chain.lower[k], -math.pi), min(chain.upper[k], math.pi)
            grid = np.linspace(lo, hi, 2001)
            errors = []
            for v in grid:
                now[k] = v
                errors.append(np.linalg.norm(chain.fk(now)[:3, 3] - target))
            now[k] = q[k]
            assert np.linalg.norm(chain.fk(now)[:3, 3] - target) <= min(errors) + 1e-12, k


@pytest.mark.parametrize('name', ['planar4', 'leg3', 'panda'])
def test_descent_error_never_rises_and_ends_stationary(name, monkeypatch):
    chain = load(name)
    search = search_of(chain)
    rng = np.random.default_rng(2)
    reach = sum(chain_lengths(chain))
    for _ in range(10):
        target = rng.normal(size=3) * reach
        q0 = rng.uniform(np.maximum(chain.lower, -3), np.minimum(chain.upper, 3)).tolist()
        history = []
        d = search.descend(target.tolist(), q0, Budget(3600.0), 500, 1e-9, history)
        assert np.all(np.diff([np.linalg.norm(chain.fk(np.array(q0))[:3, 3] - target)] +
                              history) <= 1e-15)
        assert d.stationary
        # Within NEWTON_DECREMENT_M of the stationary point that the same descent reaches when
        # only the strict gradient test may stop it:
        with monkeypatch.context() as m:
            m.setattr(closest_descent, 'NEWTON_DECREMENT_M', -1.0)
            polished = search.descend(target.tolist(), d.q, Budget(3600.0), 500, 1e-9)
        assert polished.stationary
        assert 0.0 <= d.error - polished.error <= 2 * closest_descent.NEWTON_DECREMENT_M
        q = np.array(polished.q)
        _, _, g = numpy_newton_system(chain, target, q)
        pressed = ((q <= chain.lower) & (g < 0.0)) | ((q >= chain.upper) & (g > 0.0))
        assert np.linalg.norm(g[~pressed]) <= 1e-6 * reach * max(polished.error, 1e-9)
        assert sorted(np.flatnonzero(pressed).tolist()) == sorted(polished.pressed)
        assert sorted(d.pressed) == sorted(polished.pressed)


def test_search_stops_as_soon_as_its_rule_allows_and_counts_its_descents():
    chain = load('planar4')
    search = search_of(chain)
    target = [2.0, 0.5, 0.0]  # beyond the 1.1 m reach: every start stretches toward it
    bound = reach_bound(chain).lower_bound(target)
    seed = [0.3, 0.3, 0.3, 0.3]

    def run(bound):
        return search.search(target, seed, Budget(3600.0), SearchLimits(1000, 100, 1e-9, 1e-6),
                             bound, random.Random(0))
    # A tight proven bound: the first descent reaching it ends the search.
    tight = run(bound)
    assert (tight.stop, tight.descents) == ('proven', 1)
    # A bound that is not tight, or none: a descent from a random start must agree (the
    # stretched mid configurations, from the base and from the tip, are the 1st and 2nd starts;
    # random ones follow, and the flips of joints that ended near a limit).
    loose = run(bound - 0.01)
    unproven = run(None)
    for found in (loose, unproven):
        assert (found.stop, found.pressed) == ('confirmed', ())
        assert 3 <= found.descents <= 3 + chain.n
    for found in (tight, loose, unproven):
        assert found.error == pytest.approx(bound, abs=2 * closest_descent.NEWTON_DECREMENT_M)


def test_a_closest_pose_pressed_against_limits_needs_a_random_start_to_confirm_it():
    # A target above leg3's hip, behind the limits of its hip pitch: the closest pose presses
    # that joint against a limit, where the structured starts share a bias.
    chain = load('leg3')
    search = search_of(chain)
    target = [0.08, -0.08, 0.38]
    found = search.search(target, [0.3, 0.3, 0.3], Budget(3600.0),
                          SearchLimits(1000, 100, 1e-9, 1e-6), None, random.Random(0))
    assert found.stop == 'confirmed' and found.pressed
    assert found.descents >= 4  # the seed's, the two stretched mid configurations', a random
    best = min(search.descend(target, rng_q.tolist(), Budget(3600.0), 500, 1e-9).error
               for rng_q in np.random.default_rng(5).uniform(chain.lower, chain.upper, (40, 3)))
    assert found.error <= best + 1e-6


@pytest.mark.parametrize('name', sorted(CHAINS))
def test_reach_bound_never_exceeds_a_reached_distance(name):
    chain = load(name)
    bound = reach_bound(chain)
    rng = np.random.default_rng(3)
    lower = np.where(np.isfinite(chain.lower), chain.lower, -math.pi)
    upper = np.where(np.isfinite(chain.upper), chain.upper, math.pi)
    for _ in range(200):
        tip = chain.fk(rng.uniform(lower, upper))[:3, 3]
        target = rng.normal(size=3) * rng.uniform(0.0, 3.0)
        assert bound.lower_bound(target.tolist()) <= np.linalg.norm(tip - target) + 1e-12


@pytest.mark.slow
@pytest.mark.parametrize('name', ['planar4', 'leg3', 'arm6', 'panda'])
def test_measured_reach_range_holds_every_sampled_tip_distance(name):
    # measure_reach samples 400 configurations and refines the extremes (Newton ascents and
    # descents): the ranges must hold the distances (from the centre, from the axis, from the
    # second joint's origin) of 20 000 other random configurations, which the 400 samples alone
    # do not (their extremes fall short by up to millimetres).
    chain = load(name)
    search = search_of(chain)
    bound = reach_bound(chain)
    centre, axis = np.array(bound.centre), np.array(bound.axis)
    reach = measure_reach(search, bound)
    rng = np.random.default_rng(6)
    lower, upper = np.maximum(chain.lower, -math.pi), np.minimum(chain.upper, math.pi)
    q = rng.uniform(lower, upper, (20000, chain.n))
    frames = chain.joint_frames(q)
    offsets = (frames[:, chain.tips[0].parent] @ chain.tips[0].T_joint_tip)[:, :3, 3] - centre
    distances = np.linalg.norm(offsets, axis=1)
    from_axis = np.linalg.norm(offsets - np.outer(offsets @ axis, axis), axis=1)
    assert reach.least - 1e-9 <= distances.min() and distances.max() <= reach.largest + 1e-9
    assert reach.clearance - 1e-9 <= from_axis.min()
    # the tip's distance from the second joint's origin does not depend on the first joint
    from_second = np.linalg.norm(
        (frames[:, chain.tips[0].parent] @ chain.tips[0].T_joint_tip)[:, :3, 3] -
        frames[:, 1, :3, 3], axis=1)
    measured_second = reach.second.lower_bound(bound.second) * -1.0  # the target at the origin
    assert from_second.max() <= measured_second + 1e-9
    # and tight
    assert reach.largest - distances.max() < 0.05 and distances.min() - reach.least < 0.05
    assert from_axis.min() - reach.clearance < 0.05
    assert measured_second - from_second.max() < 0.05


def test_arm6_tip_keeps_clear_of_its_first_axis_by_the_wrist_offsets():
    # arm6 has UR5's geometry: the lateral offsets of shoulder, elbow and wrist (0.13585 -
    # 0.1197 + 0.093 = 0.10915 m) and the last link (0.0823 m) keep the tool at least
    # 0.10915 - 0.0823 = 0.02685 m from the base axis.
    chain = load('arm6')
    bound = reach_bound(chain)
    reach = measure_reach(search_of(chain), bound)
    assert reach.clearance == pytest.approx(0.10915 - 0.0823, abs=1e-9)


def test_reach_gap_is_the_distance_outside_the_measured_ranges():
    chain = load('leg3')
    search = search_of(chain)
    assert search.reach_gap([5.0, 0.0, 0.0]) == -math.inf  # nothing measured yet
    bound = reach_bound(chain)
    centre, axis = np.array(bound.centre), np.array(bound.axis)
    search.reach = reach = measure_reach(search, bound)
    inner, outer, clearance = reach.least, reach.largest, reach.clearance
    side = np.cross(axis, [1.0, 0.0, 0.0] if abs(axis[0]) < 0.9 else [0.0, 1.0, 0.0])
    side /= np.linalg.norm(side)
    for distance in (0.0, 0.5 * inner, inner, 0.5 * (inner + outer), outer, 2.0 * outer):
        for direction in (0.6 * side - 0.8 * axis, axis):
            target = centre + distance * direction
            from_axis = abs(distance * direction @ side)
            assert search.reach_gap(target.tolist()) == pytest.approx(
                max(distance - outer, inner - distance, clearance - from_axis,
                    reach.second.lower_bound(target.tolist())), abs=1e-12)


@pytest.mark.parametrize('name', ['planar4', 'panda'])
def test_tip_sample_starts_are_in_limit_configurations_nearest_first_and_spread(name):
    chain = load(name)
    sample = tip_sample(chain, samples=3000)
    np.testing.assert_allclose(sample.tips[:20], [chain.fk(q)[:3, 3] for q in sample.q[:20]],
                               atol=1e-12)
    rng = np.random.default_rng(9)
    for _ in range(5):
        target = rng.normal(size=3)
        starts = np.array(list(sample.starts(target.tolist())))
        assert len(starts) >= 1
        assert all(chain.within_limits(q, tol=0.0) for q in starts)
        distances = [np.linalg.norm(chain.fk(q)[:3, 3] - target) for q in starts]
        assert distances == sorted(distances)
        # the first is the nearest sampled tip of all
        assert distances[0] == pytest.approx(np.linalg.norm(sample.tips - target, axis=1).min())
        for i in range(len(starts)):
            for j in range(i):
                assert np.max(np.abs(starts[i] - starts[j])) > tip_sample_module.MIN_SPACING
