"""The closest-pose search's compiled descents and sweeps (numba) against the Python ones.

The kernels must take the Python methods' steps: the same Newton systems, damping, joints
pressed against a limit sitting out, stationarity tests and minimum test, and the same
stretch sweep; only the order of some sums differs, so the ends agree to round-off. Compared
from random starts toward targets beyond the reach and inside it, on arms of 4, 6 and 7 joints
and a leg. Iteration caps end these descents, never the clock. Where numba cannot serve these
tests skip, except the one showing that the Python methods then serve.
"""

import math
from pathlib import Path

import numpy as np
import pytest

from ik_node import Chain, make_solver
from ik_node.model.chain import chain_lengths
from ik_node import kernels
from ik_node.solvers.numerics.budget import Budget
from ik_node.solvers.out_of_reach import closest_descent, compiled_search
from ik_node.solvers.out_of_reach import tip_sample as tip_sample_module
from ik_node.solvers.out_of_reach.closest_pose import ClosestPose, SearchLimits
from ik_node.solvers.out_of_reach.tip_sample import tip_sample

REPO_URDF = Path(__file__).resolve().parents[2] / 'urdf'
from reference_robots import SHARED_ROBOTS, skip_reason  # noqa: E402
CHAINS = {'planar4': (REPO_URDF / 'planar4.urdf', 'base_link', 'tip'),
          'leg3': (REPO_URDF / 'leg3.urdf', 'base_link', 'foot'),
          'arm6': (REPO_URDF / 'arm6.urdf', 'base_link', 'tool0'),
          'panda': (SHARED_ROBOTS / 'panda.urdf', 'panda_link0', 'panda_hand_tcp'),
          'ur5': (SHARED_ROBOTS / 'ur5.urdf', 'base_link', 'tool0')}
UNLIMITED = Budget(math.inf)


@pytest.fixture(scope='module')
def loaded():
    if not compiled_search.available() or not kernels.wait():
        pytest.skip(kernels.serving())


def load(name):
    path, base, tip = CHAINS[name]
    if not path.is_file():
        pytest.skip(skip_reason(path))
    return Chain.from_urdf_file(path, base, tip)


def search_of(chain):
    fast = chain.fast_kinematics
    low, high = chain.lower.tolist(), chain.upper.tolist()
    search = ClosestPose(fast.pose_jacobian, fast.position, fast.position_newton, low, high,
                         [hi - lo >= 2 * math.pi for lo, hi in zip(low, high)],
                         [j.is_prismatic for j in chain.joints], sum(chain_lengths(chain)))
    search.use_compiled(chain)
    return search


def cases(chain, count, seed):
    """(target, start): targets beyond the reach (a random direction, 1.5 reaches out) and
    inside it (the tip of a random configuration, moved a little)."""
    rng = np.random.default_rng(seed)
    low = np.where(np.isfinite(chain.lower), chain.lower, -np.pi)
    high = np.where(np.isfinite(chain.upper), chain.upper, np.pi)
    reach = sum(chain_lengths(chain))
    out = []
    for k in range(count):
        if k % 2:
            d = rng.normal(size=3)
            target = 1.5 * reach * d / np.linalg.norm(d)
        else:
            target = chain.fk(rng.uniform(low, high))[:3, 3] + rng.normal(scale=0.05, size=3)
        out.append((target.tolist(), rng.uniform(low, high).tolist()))
    return out


def test_the_kernels_constants_are_the_python_searchs():
    assert compiled_search.LAMBDA_START == closest_descent._LAMBDA_START
    assert compiled_search.LAMBDA_MIN == closest_descent._LAMBDA_MIN
    assert compiled_search.LAMBDA_MAX == closest_descent._LAMBDA_MAX
    assert compiled_search.LAMBDA_DOWN == closest_descent._LAMBDA_DOWN
    assert compiled_search.LAMBDA_UP == closest_descent._LAMBDA_UP
    assert compiled_search.NEWTON_DECREMENT_M == closest_descent.NEWTON_DECREMENT_M
    assert compiled_search.MINIMUM_DAMPING == closest_descent._MINIMUM_DAMPING


@pytest.mark.parametrize('name', sorted(CHAINS))
def test_a_compiled_sweep_is_the_python_sweep(name, loaded):
    chain = load(name)
    search = search_of(chain)
    for target, q in cases(chain, 20, 1):
        for from_base in (True, False):
            np.testing.assert_allclose(search.kernel.stretch(np.array(target), q, from_base),
                                       search.stretch(target, q, from_base), atol=1e-9)


@pytest.mark.parametrize('name', sorted(CHAINS))
def test_a_compiled_descent_ends_where_the_python_descent_ends(name, loaded):
    chain = load(name)
    search = search_of(chain)
    kernel = search.kernel
    agree = 0
    all_cases = cases(chain, 30, 2)
    for target, q in all_cases:
        python = search.descend(target, q, UNLIMITED, 500, 1e-6)
        compiled = search._descend_compiled(kernel, np.array(target), target, q, UNLIMITED, 500,
                                            1e-6)
        assert python.stationary and compiled.stationary
        assert chain.within_limits(np.array(compiled.q), tol=0.0)
        # The compiled end is where it says: its error measured by FK.
        assert compiled.error == pytest.approx(
            np.linalg.norm(chain.fk(np.array(compiled.q))[:3, 3] - target), abs=1e-12)
        if abs(python.error - compiled.error) <= 1e-9 and \
                np.max(np.abs(np.subtract(python.q, compiled.q))) <= 1e-6:
            assert compiled.pressed == python.pressed
            assert compiled.minimum == python.minimum
            assert abs(compiled.iterations - python.iterations) <= 1
            agree += 1
    # Round-off may tip a damping decision the other way on a long, flat descent; the ends
    # agree on nearly every start.
    assert agree >= len(all_cases) - 1, agree


@pytest.mark.parametrize('name', ['panda', 'planar4'])
def test_the_compiled_nearest_sample_starts_are_the_python_ones(name, loaded):
    chain = load(name)
    sample = tip_sample(chain, samples=3000)
    rng = np.random.default_rng(4)
    for _ in range(10):
        target = rng.normal(size=3)
        np.testing.assert_array_equal(
            compiled_search.CompiledSearch.nearest(sample, target, tip_sample_module.CANDIDATES,
                                                   tip_sample_module.MIN_SPACING),
            list(sample.starts(target.tolist())))


@pytest.mark.parametrize('name', ['panda', 'ur5', 'planar4'])
def test_a_compiled_search_finds_what_the_python_search_finds(name, loaded):
    chain = load(name)
    search = search_of(chain)
    limits = SearchLimits(5000, 1000, 5e-6, 1e-5)
    for target, q in cases(chain, 10, 3)[1::2]:  # the targets beyond the reach
        compiled = search.search(target, q, Budget(math.inf), limits, None)
        python = search.search(target, q, Budget(math.inf), limits, None, history=[])
        assert compiled.stop == python.stop
        assert compiled.error == pytest.approx(python.error, abs=1e-5)


def test_the_python_descents_serve_where_numba_cannot(monkeypatch):
    chain = load('panda')
    monkeypatch.setattr(compiled_search, 'available', lambda: False)
    solver = make_solver('damped_jacobian', chain, {'timeout': 30.0})
    assert solver._closest.kernel is None
    result = solver.solve([2.0, 0.0, 0.5])
    assert not result.reachable and chain.within_limits(result.joint_positions, tol=0.0)
