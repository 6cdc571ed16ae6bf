"""The benchmark's adapters of OptIK and TRAC-IK: their workarounds, with and without the peers.

The workarounds that need no peer (panics turned into failed solves, the URDF copy without
continuous joints) always run; the adapters themselves only where ``optik-py`` or ``pytracik``
is installed (optional benchmark peers, never needed by CI). Every answer is checked by FK here.
"""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import transforms3d

from benchmarks.solvers import compiled_peers, peers
from benchmarks.solvers.peers import Robot, Target
from ik_node.model.chain import Chain


class _FakePanic(BaseException):
    """Stands for pyo3's PanicException, which derives from BaseException."""


def _robot(path: Path, base: str, tip: str) -> Robot:
    urdf = peers.parse_urdf(path)
    return Robot(path.stem, path, base, tip, Chain.from_urdf_file(path, base, tip), urdf,
                 peers.urdf_joint_path(urdf, base, tip))


def _target(chain, q) -> Target:
    T = chain.fk(q)
    w, x, y, z = transforms3d.quaternions.mat2quat(T[:3, :3])
    return Target(T, T[:3, 3].copy(), np.array([x, y, z, w]))


def test_a_panic_becomes_a_peer_failure_that_except_exception_catches():
    def panics():
        raise _FakePanic('seed joint position outside of joint limits')
    with pytest.raises(compiled_peers.PeerPanic, match='outside of joint limits'):
        compiled_peers._call_catching_panics(panics)
    try:
        compiled_peers._call_catching_panics(panics)
    except Exception:  # what the harness catches
        pass


def test_keyboard_interrupt_and_exceptions_pass_through_unchanged():
    def interrupted():
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        compiled_peers._call_catching_panics(interrupted)

    def fails():
        raise ValueError('bad')
    with pytest.raises(ValueError, match='bad'):
        compiled_peers._call_catching_panics(fails)


def test_the_urdf_copy_has_no_continuous_joint_and_the_same_kinematics(shared_robot):
    robot = _robot(shared_robot('kinova_j2s6s200.urdf'), 'j2s6s200_link_base',
                   'j2s6s200_end_effector')
    assert any(uj.type == 'continuous' for uj in robot.path)
    copy = compiled_peers.OptikAdapter._urdf_copy(robot)
    chain = Chain.from_urdf_file(Path(copy.name), robot.base, robot.tip)
    assert [j.type for j in chain.joints].count('continuous') == 0
    for lo, hi, original in zip(chain.lower, chain.upper, robot.chain.joints):
        if original.type == 'continuous':
            assert (lo, hi) == pytest.approx((-2 * np.pi, 2 * np.pi))
    rng = np.random.default_rng(2)
    for _ in range(5):
        q = rng.uniform(-np.pi, np.pi, chain.n)
        np.testing.assert_allclose(chain.fk(q), robot.chain.fk(q), atol=1e-12)


needs_optik = pytest.mark.skipif(importlib.util.find_spec('optik') is None,
                                 reason='optik-py is not installed (optional benchmark peer)')
needs_tracik = pytest.mark.skipif(importlib.util.find_spec('pytracik') is None,
                                  reason='pytracik is not installed (optional benchmark peer)')


def _solves(adapter, robot, seeds, targets):
    solved = 0
    for q_seed, target in zip(seeds, targets):
        q = adapter.joints(adapter.solve(*adapter.prepare(target, q_seed)))
        if not np.all(np.isfinite(q)):
            continue
        T = robot.chain.fk(q)
        solved += bool(np.linalg.norm(T[:3, 3] - target.position) < 1e-5 and
                       peers.rotation_error_rad(T[:3, :3], target.T[:3, :3]) < 1e-5 and
                       np.all(q >= robot.chain.lower - 1e-9) and
                       np.all(q <= robot.chain.upper + 1e-9))
    return solved


def _cases(robot, count, seed):
    chain = robot.chain
    rng = np.random.default_rng(seed)
    lo = np.where(np.isfinite(chain.lower), chain.lower, -np.pi)
    hi = np.where(np.isfinite(chain.upper), chain.upper, np.pi)
    targets = [_target(chain, rng.uniform(lo, hi)) for _ in range(count)]
    # seeds: the mid configuration and one just outside the limits (OptIK panics on it)
    seeds = [chain.mid_configuration() if k % 2 else np.where(np.isfinite(chain.upper),
                                                              chain.upper + 1e-9, 0.0)
             for k in range(count)]
    return seeds, targets


@needs_optik
def test_optik_solves_baxter_from_its_arm_mount_and_jaco2_continuous_joints(shared_robot):
    for path, base, tip in (('baxter.urdf', 'base', 'right_hand_link'),
                            ('kinova_j2s6s200.urdf', 'j2s6s200_link_base',
                             'j2s6s200_end_effector')):
        robot = _robot(shared_robot(path), base, tip)
        adapter = compiled_peers.OptikAdapter(robot, '6d', 0.05)  # its FK checked at build
        seeds, targets = _cases(robot, 10, 1)
        assert _solves(adapter, robot, seeds, targets) >= 9


@needs_tracik
def test_tracik_reads_pandas_limits_and_solves_within_them(shared_robot):
    robot = _robot(shared_robot('panda.urdf'), 'panda_link0', 'panda_hand_tcp')
    adapter = compiled_peers.TracIkAdapter(robot, '6d', 0.05)  # limits and FK checked at build
    seeds, targets = _cases(robot, 10, 1)
    seeds = [np.clip(q, robot.chain.lower, robot.chain.upper) for q in seeds]
    assert _solves(adapter, robot, seeds, targets) >= 9
