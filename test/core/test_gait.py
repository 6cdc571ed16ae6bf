"""The main job's trot (demo/gait.py) on quad12: diagonal feet in step, stance feet on the
ground, the footholds out of reach provably so, every other target reached by a multi-leg solve
(FK of the answer against the target)."""

from pathlib import Path

import numpy as np
import pytest

from demo import gait
from ik_node import Chain, IkStatus, make_solver

REPO = Path(__file__).resolve().parents[2]

FEET = ['FL_foot', 'FR_foot', 'RL_foot', 'RR_foot']


@pytest.fixture(scope='module')
def quad12():
    return Chain.from_urdf_file(REPO / 'urdf' / 'quad12.urdf', 'base_link', FEET)


@pytest.fixture(scope='module')
def steps(quad12):
    return gait.trot(quad12, 100, rate_hz=50.0, period_s=0.8)


def test_diagonal_feet_swing_together_and_stance_feet_stay_on_the_ground(quad12, steps):
    ground = {f: p[2] for f, p in gait.footholds(quad12).items()}
    for step in steps:
        assert step.stance['FL_foot'] == step.stance['RR_foot']
        assert step.stance['FR_foot'] == step.stance['RL_foot']
        assert step.stance['FL_foot'] != step.stance['FR_foot']
        for foot in FEET:
            if step.stance[foot] and not step.far[foot]:
                assert step.targets[foot][2] == pytest.approx(ground[foot], abs=1e-12)
            if not step.stance[foot]:
                assert step.targets[foot][2] >= ground[foot] - 1e-12


def test_a_few_footholds_are_out_of_reach_and_every_other_target_is_reached(quad12, steps):
    solver = make_solver('damped_jacobian', quad12, {'timeout': 60.0})
    far_feet = {f for step in steps for f in FEET if step.far[f]}
    assert 1 <= len(far_feet) < 4
    q = None
    for step in steps:
        result = solver.solve(targets=step.targets, seed=q)
        q = result.joint_positions
        T = quad12.fk_tips(q)
        for foot in FEET:
            tip = result.tips[foot]
            if step.far[foot]:
                assert tip.status is IkStatus.UNREACHABLE and tip.min_residual > 0.05
            else:
                assert tip.reachable, (step.t, foot, tip)
                assert np.linalg.norm(T[foot][:3, 3] - step.targets[foot]) <= 1e-5


@pytest.mark.slow
def test_the_gait_picture_is_a_png_and_refuses_mismatched_inputs(quad12, steps, tmp_path):
    pytest.importorskip('matplotlib')
    from demo import pictures
    targets = [s.targets for s in steps[:10]]
    q_list = [quad12.mid_configuration()] * 10
    reached = [{f: not s.far[f] for f in FEET} for s in steps[:10]]
    path = tmp_path / 'gait.png'
    pictures.plot_gait(quad12, targets, q_list, reached, 'quad12', path)
    assert path.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n' and path.stat().st_size > 10_000
    with pytest.raises(ValueError, match='differ in length'):
        pictures.plot_gait(quad12, targets, q_list[:5], reached, 'quad12', path)
