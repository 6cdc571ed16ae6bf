"""The solver base's input checks and error measures agree with transforms3d."""

import math

import numpy as np
import pytest
import transforms3d

from ik_node import TargetError
from ik_node.solvers.base import rotation_error, rotation_from_input, target_from_input


def test_rotation_from_quaternion_matches_transforms3d_with_ros_order():
    rng = np.random.default_rng(3)
    for _ in range(200):
        quat_xyzw = rng.normal(size=4) * rng.uniform(0.1, 10.0)  # not unit: normalised
        w_first = np.roll(quat_xyzw, 1) / np.linalg.norm(quat_xyzw)
        np.testing.assert_allclose(rotation_from_input(quat_xyzw),
                                   transforms3d.quaternions.quat2mat(w_first), atol=1e-12)


def test_rotation_error_is_the_angle_between_rotations_small_and_large():
    rng = np.random.default_rng(4)
    for angle in [0.0, 1e-9, 1e-5, 0.1, 1.0, 3.0, math.pi]:
        axis = rng.normal(size=3)
        R_a = transforms3d.euler.euler2mat(*rng.uniform(-3, 3, size=3))
        R_b = R_a @ transforms3d.axangles.axangle2mat(axis, angle)
        assert rotation_error(R_a, R_b) == pytest.approx(angle, abs=1e-9)


@pytest.mark.parametrize('bad', [[0, 0, 0, 0], [float('nan'), 0, 0, 1], [0, 0, 1],
                                 [float('inf'), 0, 0, 1], 'abcd'])
def test_invalid_quaternions_raise_target_error_naming_the_value(bad):
    with pytest.raises(TargetError, match='orientation|quaternion'):
        rotation_from_input(bad)


@pytest.mark.parametrize('bad', [[float('nan'), 0, 0], [0, float('inf'), 0], [1e12, 0, 0],
                                 [1, 2], 'xyz', None])
def test_invalid_positions_raise_target_error(bad):
    with pytest.raises(TargetError, match='target position'):
        target_from_input(bad)
