"""Task priority on trees (urdf/twin_arm.urdf): a tip whose target is reachable is reached, a tip
proven out of reach is brought as close as that allows, and each tip's status says which.

Every error is FK of the returned joints against the target, never a copied number. The hands'
reference is a sweep of the waist (the one joint the hands share): for each waist value, whether
the right arm (shoulder yaw, shoulder pitch, elbow: the wrist does not move the hand) can put the
hand on its target (closed form, every branch), and the left hand's least error (the left arm
held straight towards the target in the plane of its shoulder yaw, which is the closest point of
its reach for a target this far, the yaw swept over its limits); every configuration the sweep
reports is checked by the chain's own FK.
"""

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from ik_node import Chain, IkStatus, make_solver

ROOT = Path(__file__).resolve().parents[2]
TWIN_ARM = ROOT / 'urdf' / 'twin_arm.urdf'
TOL = 1e-4
NO_CLOCK = {'timeout': 60.0, 'position_tolerance': TOL}
SOLVERS = ('fabrik', 'damped_jacobian')
#: Out of reach of the left hand (proven: the bound is about 2.2 m), in front of the robot.
FAR = np.array([3.0, 0.0, 0.5])
#: The left hand's error may exceed the sweep's best by this much [m].
SECONDARY_SLACK_M = 1e-3
FINGERS = ('right_finger_a', 'right_finger_b')


def twin(tips) -> Chain:
    return Chain.from_urdf_file(TWIN_ARM, 'base_link', list(tips))


class ArmGeometry:
    """The twin arm's offsets [m] and limits [rad], read from the URDF."""

    def __init__(self, chain: Chain):
        joints = {j.get('name'): j for j in ET.parse(TWIN_ARM).getroot().iter('joint')}

        def xyz(name):
            return np.array([float(v) for v in joints[name].find('origin').get('xyz').split()])
        self.waist = xyz('waist')
        self.left_shoulder = xyz('left_shoulder_yaw')
        self.right_shoulder = xyz('right_shoulder_yaw')
        self.offset = xyz('left_shoulder_pitch')[0]
        self.upper_arm, self.forearm = xyz('left_elbow')[0], xyz('left_hand_joint')[0]
        assert np.allclose(xyz('right_shoulder_pitch'), xyz('left_shoulder_pitch'))
        assert np.allclose([xyz('right_elbow')[0], xyz('right_wrist')[0]],
                           [self.upper_arm, self.forearm])
        self.limits = {n: (float(lo), float(hi))
                       for n, lo, hi in zip(chain.joint_names, chain.lower, chain.upper)}

    def shoulder(self, w: float, side: str) -> np.ndarray:
        """The shoulder yaw joint's position for waist angle ``w`` (the waist turns about z)."""
        s = self.left_shoulder if side == 'left' else self.right_shoulder
        c, si = math.cos(w), math.sin(w)
        return self.waist + np.array([c * s[0] - si * s[1], si * s[0] + c * s[1], s[2]])

    def right_arm(self, w: float, target: np.ndarray) -> list:
        """Every (yaw, pitch, elbow) within limits that puts the right hand on ``target``."""
        a, b = self.upper_arm, self.forearm
        d = target - self.shoulder(w, 'right')
        out = []
        for phi in (math.atan2(d[1], d[0]), math.atan2(d[1], d[0]) + math.pi):
            u = d[0] * math.cos(phi) + d[1] * math.sin(phi) - self.offset
            v = d[2]
            c = (u * u + v * v - a * a - b * b) / (2 * a * b)
            if abs(c) > 1.0:
                continue
            for beta in (math.acos(c), -math.acos(c)):
                alpha = math.atan2(v, u) - math.atan2(b * math.sin(beta), a + b * math.cos(beta))
                q = (self._within(phi - w, 'right_shoulder_yaw'),
                     self._within(-alpha, 'right_shoulder_pitch'),
                     self._within(-beta, 'right_elbow'))
                if None not in q:
                    out.append(q)
        return out

    def left_closest(self, w: float, target: np.ndarray, count: int = 1201):
        """``(error, yaw, pitch)``: the left hand held straight at ``target`` in the plane of
        each shoulder yaw (swept over its limits), the yaw with the least error."""
        yaw = np.linspace(*self.limits['left_shoulder_yaw'], count)
        phi = w + yaw
        d = target - self.shoulder(w, 'left')
        dx = d[0] - self.offset * np.cos(phi)
        dy = d[1] - self.offset * np.sin(phi)
        u = dx * np.cos(phi) + dy * np.sin(phi)
        off_plane = -dx * np.sin(phi) + dy * np.cos(phi)
        error = np.hypot(off_plane, np.hypot(u, d[2]) - (self.upper_arm + self.forearm))
        k = int(np.argmin(error))
        return float(error[k]), float(yaw[k]), math.atan2(-d[2], u[k])

    def _within(self, angle: float, joint: str):
        lo, hi = self.limits[joint]
        for turns in (0, -1, 1):
            value = math.remainder(angle, 2 * math.pi) + 2 * math.pi * turns
            if lo <= value <= hi:
                return value
        return None


def best_left_error(chain: Chain, geometry: ArmGeometry, p_right: np.ndarray,
                    steps: int = 3001):
    """The least left-hand error over waist values for which the right hand reaches
    ``p_right``, and its configuration (checked by FK)."""
    names = chain.joint_names
    best, best_q = math.inf, None
    for w in np.linspace(*geometry.limits['waist'], steps):
        arms = geometry.right_arm(w, p_right)
        if not arms:
            continue
        error, yaw, pitch = geometry.left_closest(w, FAR)
        if error < best:
            q = np.zeros(chain.n)
            q[names.index('waist')] = w
            q[names.index('left_shoulder_yaw')] = yaw
            q[names.index('left_shoulder_pitch')] = pitch
            for name, value in zip(('right_shoulder_yaw', 'right_shoulder_pitch', 'right_elbow'),
                                   arms[0]):
                q[names.index(name)] = value
            best, best_q = error, q
    T = chain.fk_tips(best_q)
    assert chain.within_limits(best_q)
    assert np.linalg.norm(T['right_hand'][:3, 3] - p_right) < 1e-9
    assert np.linalg.norm(T['left_hand'][:3, 3] - FAR) == pytest.approx(best, abs=1e-9)
    return best, best_q


@pytest.mark.slow
@pytest.mark.parametrize('name', SOLVERS)
def test_a_reachable_hand_is_reached_and_the_far_hand_is_as_close_as_that_allows(name):
    chain = twin(['left_hand', 'right_hand'])
    geometry = ArmGeometry(chain)
    solver = make_solver(name, chain, NO_CLOCK)
    right_arm = [chain.joint_names.index(n) for n in ('right_shoulder_yaw',
                                                      'right_shoulder_pitch', 'right_elbow')]
    rng = np.random.default_rng(1)
    for _ in range(30):
        q_made = rng.uniform(chain.lower, chain.upper)
        p_right = chain.fk(q_made, 'right_hand')[:3, 3]
        # The sweep's closed form finds the configuration that made the target.
        assert any(np.allclose(arm, q_made[right_arm], atol=1e-9)
                   for arm in geometry.right_arm(float(q_made[0]), p_right))
        result = solver.solve(targets={'left_hand': FAR, 'right_hand': p_right})
        q = result.joint_positions
        assert np.all(np.isfinite(q)) and chain.within_limits(q)
        T = chain.fk_tips(q)
        assert np.linalg.norm(T['right_hand'][:3, 3] - p_right) <= TOL
        assert result.tips['right_hand'].status is IkStatus.CONVERGED
        left = result.tips['left_hand']
        assert left.status is IkStatus.UNREACHABLE and left.min_residual > 2.0
        left_error = np.linalg.norm(T['left_hand'][:3, 3] - FAR)
        assert left_error >= left.min_residual
        best, _ = best_left_error(chain, geometry, p_right)
        assert left_error <= best + SECONDARY_SLACK_M
        assert result.status is IkStatus.UNREACHABLE and 'left_hand' in result.message


@pytest.mark.parametrize('name', SOLVERS)
def test_both_fingers_are_reached_while_the_far_hand_stays_unreachable(name):
    chain = twin(['left_hand', *FINGERS])
    geometry = ArmGeometry(chain)
    solver = make_solver(name, chain, NO_CLOCK)
    rng = np.random.default_rng(3)
    no_worse = 0
    for _ in range(30):
        q_made = rng.uniform(chain.lower, chain.upper)
        T_made = chain.fk_tips(q_made)
        targets = {'left_hand': FAR, **{f: T_made[f][:3, 3] for f in FINGERS}}
        result = solver.solve(targets=targets)
        q = result.joint_positions
        assert np.all(np.isfinite(q)) and chain.within_limits(q)
        T = chain.fk_tips(q)
        for finger in FINGERS:
            assert np.linalg.norm(T[finger][:3, 3] - targets[finger]) <= TOL
            assert result.tips[finger].status is IkStatus.CONVERGED
        assert result.tips['left_hand'].status is IkStatus.UNREACHABLE
        # The configuration that made the fingers' targets, its left arm then turned straight
        # at the far target, keeps the fingers on target. The phase is a local search (from the
        # solver's answer and random starts, until two agree): it may settle on another
        # self-motion of the right arm. Measured: 29 of 30 no worse for both solvers.
        made, _, _ = geometry.left_closest(float(q_made[0]), FAR)
        no_worse += np.linalg.norm(T['left_hand'][:3, 3] - FAR) <= made + SECONDARY_SLACK_M
    assert no_worse >= 28
