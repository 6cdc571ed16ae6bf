"""Tests of demo/pictures.py: every picture is a real PNG with content, and the numbers behind
the reachability map and the step-size demonstration are what the geometry says.

The leg's geometry used here is read off urdf/leg3.urdf by hand (thigh 0.30 m, shin 0.28 m, hip
pitch joint 0.05 m below the base origin, pitch limit +-1.6 rad, knee limit +-2.6 rad), never
taken from the code under test.
"""

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ik_node import Chain, ConfigError

REPO = Path(__file__).resolve().parents[2]
#: The demo's pictures need matplotlib (python3-matplotlib): without it the module is skipped.
mpl_image = pytest.importorskip('matplotlib.image')
pictures = pytest.importorskip('demo.pictures')

PNG_SIGNATURE = b'\x89PNG\r\n\x1a\n'
THIGH_M, SHIN_M = 0.30, 0.28
HIP_PITCH_M = np.array([0.0, 0.0, -0.05])
PITCH_LIMIT, KNEE_LIMIT = 1.6, 2.6
TOL_M = 1e-5  # the solvers' default position tolerance
TAB_RED = np.array([0.839, 0.153, 0.157])
TAB_GREEN = np.array([0.173, 0.627, 0.173])



@pytest.fixture(scope='module')
def arm():
    return Chain.from_urdf_file(REPO / 'urdf' / 'planar4.urdf', 'base_link', 'tip')


@pytest.fixture(scope='module')
def grid(leg):
    """(xs, zs, residual) of the leg's x-z slice at y = 0, coarse."""
    return pictures.reachability_grid(leg, plane_y=0.0, resolution=31)


def _image(path: Path) -> np.ndarray:
    """The PNG's pixels (rows, cols, RGB[A]) after checking it is a non-empty PNG with content."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, f'{path} is not a PNG'
    pixels = mpl_image.imread(str(path))
    assert pixels.ndim == 3 and pixels.shape[0] > 100 and pixels.shape[1] > 100
    assert float(pixels[..., :3].std()) > 0.0, f'{path} is a single flat colour'
    return pixels


def _pixels_near(pixels: np.ndarray, rgb: np.ndarray, tol: float = 0.03) -> int:
    return int(np.sum(np.all(np.abs(pixels[..., :3] - rgb) < tol, axis=-1)))


def _leg_path(leg, unreachable: bool):
    """Poses and their FK tips as targets; optionally one far target (best effort = last pose)."""
    q_list = [np.array([0.0, p, k]) for p, k in [(0.3, -0.6), (0.0, -0.9), (-0.4, -0.5)]]
    targets = [leg.fk(q)[:3, 3] for q in q_list]
    reachable = [True] * len(q_list)
    if unreachable:
        q_list.append(np.array([0.0, -0.7, 0.0]))
        targets.append(np.array([0.55, 0.0, -0.75]))  # 0.91 m from the hip pitch joint
        reachable.append(False)
    return q_list, targets, reachable


# ------------------------------------------------------------------------------ pose sequence
@pytest.mark.slow
def test_pose_sequence_writes_a_png_with_content_for_leg_and_arm(leg, arm, tmp_path):
    q_list, targets, reachable = _leg_path(leg, unreachable=True)
    pictures.plot_pose_sequence(leg, q_list, targets, reachable, 'leg', tmp_path / 'leg.png')
    _image(tmp_path / 'leg.png')
    q_arm = [np.array([0.2 * k, -0.3, 0.4, 0.1]) for k in range(4)]
    pictures.plot_pose_sequence(arm, q_arm, [arm.fk(q)[:3, 3] for q in q_arm], [True] * 4,
                                'arm', tmp_path / 'arm.png', plane='xy')
    _image(tmp_path / 'arm.png')


@pytest.mark.slow
def test_pose_sequence_draws_red_only_when_a_target_is_unreachable(leg, tmp_path):
    for unreachable in (False, True):
        q_list, targets, reachable = _leg_path(leg, unreachable)
        path = tmp_path / f'leg_{unreachable}.png'
        pictures.plot_pose_sequence(leg, q_list, targets, reachable, 'leg', path)
        pixels = _image(path)
        assert _pixels_near(pixels, TAB_GREEN) > 20  # reached targets are green dots
        assert (_pixels_near(pixels, TAB_RED) > 20) == unreachable


def test_pose_sequence_rejects_an_unknown_plane_and_mismatched_lists(leg, tmp_path):
    q_list, targets, reachable = _leg_path(leg, unreachable=False)
    with pytest.raises(ValueError, match='plane'):
        pictures.plot_pose_sequence(leg, q_list, targets, reachable, 't', tmp_path / 'a.png',
                                    plane='yz')
    with pytest.raises(ValueError, match='length'):
        pictures.plot_pose_sequence(leg, q_list, targets[:-1], reachable, 't',
                                    tmp_path / 'b.png')


# --------------------------------------------------------------------------- reachability map
def _hip_geometry(xs, zs):
    """Distance d [m] from the hip pitch joint and angle alpha [rad] from straight down."""
    X, Z = np.meshgrid(xs, zs)
    dx, dz = X - HIP_PITCH_M[0], Z - HIP_PITCH_M[2]
    return np.hypot(dx, dz), np.arctan2(np.abs(dx), -dz)


def test_reachability_grid_covers_the_annulus_with_the_requested_resolution(grid):
    xs, zs, residual = grid
    assert xs.shape == (31,) and zs.shape == (31,) and residual.shape == (31, 31)
    outer = THIGH_M + SHIN_M
    assert xs.min() < HIP_PITCH_M[0] - outer and xs.max() > HIP_PITCH_M[0] + outer
    assert zs.min() < HIP_PITCH_M[2] - outer and zs.max() > HIP_PITCH_M[2] + outer
    assert np.all(np.isfinite(residual)) and np.all(residual >= 0.0)


def test_reachability_grid_outside_the_annulus_is_the_distance_to_it(grid):
    # Only directions the hip pitch can point the straight leg along: there the nearest pose is
    # the stretched leg on the target's ray, within every limit, so any correct residual
    # (the annulus lower bound or the true constrained minimum) is d - (thigh + shin).
    xs, zs, residual = grid
    d, alpha = _hip_geometry(xs, zs)
    outer = THIGH_M + SHIN_M
    test = (d > outer + 1e-6) & (alpha < PITCH_LIMIT - 0.02)
    assert test.sum() > 50
    np.testing.assert_allclose(residual[test], d[test] - outer, rtol=0.0, atol=1e-9)


def test_reachability_grid_off_the_centre_plane_measures_from_the_hip_in_3d(leg):
    # At y = 0.2 the leg must yaw to reach; test points whose azimuth the hip yaw (+-1.2 rad,
    # or that turned by pi with the pitch mirrored) can face and whose ray the pitch allows.
    plane_y = 0.2
    xs, zs, residual = pictures.reachability_grid(leg, plane_y=plane_y, resolution=21)
    X, Z = np.meshgrid(xs, zs)
    rho = np.hypot(X, plane_y)
    d = np.hypot(rho, Z - HIP_PITCH_M[2])
    alpha = np.arctan2(rho, -(Z - HIP_PITCH_M[2]))
    azimuth = np.arctan2(plane_y, np.abs(X))  # the yaw, or the flipped yaw, that faces it
    outer = THIGH_M + SHIN_M
    test = (d > outer + 1e-6) & (alpha < PITCH_LIMIT - 0.02) & (azimuth < 1.2 - 0.02)
    assert test.sum() > 20
    np.testing.assert_allclose(residual[test], d[test] - outer, rtol=0.0, atol=1e-9)


def test_reachability_grid_is_zero_where_the_limits_allow_the_target(grid):
    xs, zs, residual = grid
    d, alpha = _hip_geometry(xs, zs)
    l1, l2 = THIGH_M, SHIN_M
    d_min = math.sqrt(l1 * l1 + l2 * l2 + 2.0 * l1 * l2 * math.cos(KNEE_LIMIT))  # knee folded
    in_shell = (d > d_min + 0.01) & (d < l1 + l2 - 0.01)
    # The thigh is off the hip-foot line by beta (law of cosines); the pitch needed is alpha -
    # beta or alpha + beta, whichever is inside the pitch limit.
    with np.errstate(invalid='ignore'):
        beta = np.arccos(np.clip((l1 * l1 + d * d - l2 * l2) / (2.0 * l1 * d), -1.0, 1.0))
    allowed = in_shell & (np.abs(alpha - beta) < PITCH_LIMIT - 0.02)
    assert allowed.sum() > 100
    assert np.all(residual[allowed] <= TOL_M)


@pytest.mark.slow
def test_reachability_map_writes_a_png_with_content(leg, tmp_path):
    pictures.plot_reachability_map(leg, tmp_path / 'reach.png', resolution=15)
    _image(tmp_path / 'reach.png')


def test_reachability_map_still_draws_without_the_solver(leg, tmp_path, monkeypatch):
    def missing(name, chain, params=None):
        raise ConfigError(f'unknown solver {name!r}')

    monkeypatch.setattr(pictures, 'make_solver', missing)
    pictures.plot_reachability_map(leg, tmp_path / 'reach.png', resolution=15)
    _image(tmp_path / 'reach.png')


# ------------------------------------------------------------------------------- convergence
@pytest.mark.slow
def test_convergence_draws_every_curve_and_the_good_solvers_converge(leg, arm, tmp_path):
    finals = pictures.plot_convergence(tmp_path / 'conv.png', leg, arm)
    _image(tmp_path / 'conv.png')
    for solver in ('analytic_hip_knee', 'fabrik', 'damped_jacobian (dls)'):
        matches = [v for k, v in finals.items() if k.startswith(solver)]
        assert len(matches) == 1, f'no curve of {solver}: {sorted(finals)}'
        assert matches[0] <= TOL_M
    steps = {verdict: [v for k, v in finals.items() if f'({verdict}' in k]
             for verdict in ('too small', 'good', 'too large')}
    assert all(len(v) == 1 for v in steps.values()), sorted(finals)
    assert steps['good'][0] <= TOL_M
    assert steps['too small'][0] > 100 * TOL_M and steps['too large'][0] > 100 * TOL_M


def test_step_sizes_show_creeping_converging_and_oscillating_descent(arm):
    histories = {}
    for verdict, eta, _ in pictures.STEP_SIZES:
        solver = pictures.make_solver('damped_jacobian', arm, {
            'method': 'transpose', 'step_size': eta, 'record_history': True,
            'max_iterations': pictures.TRANSPOSE_ITERATIONS})
        histories[verdict] = np.array(solver.solve(pictures.ARM_TARGET).history)
    small, good, large = histories['too small'], histories['good'], histories['too large']
    assert np.all(np.diff(small) <= 0.0) and small[-1] > 0.1 * small[0]  # falls, but slowly
    assert good[-1] <= TOL_M
    rises = int(np.sum(np.diff(large) > 0.0))
    assert rises >= len(large) // 4 and large[-1] > 100 * TOL_M  # overshoots again and again


@pytest.mark.slow
def test_convergence_skips_a_missing_solver_and_draws_the_rest(leg, arm, tmp_path, monkeypatch):
    real = pictures.make_solver

    def without_fabrik(name, chain, params=None):
        if name == 'fabrik':
            raise ConfigError("unknown solver 'fabrik'")
        return real(name, chain, params)

    monkeypatch.setattr(pictures, 'make_solver', without_fabrik)
    finals = pictures.plot_convergence(tmp_path / 'conv.png', leg, arm)
    _image(tmp_path / 'conv.png')
    assert not any(k.startswith('fabrik') for k in finals)
    assert any(k.startswith('damped_jacobian (dls)') for k in finals)


@pytest.mark.slow
def test_pictures_module_does_not_import_rclpy():
    code = ('import sys; sys.path.insert(0, {demo!r}); import pictures; '
            'sys.exit(1 if "rclpy" in sys.modules else 0)').format(demo=str(REPO / 'demo'))
    done = subprocess.run([sys.executable, '-c', code], cwd=REPO, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr


# ------------------------------------------------------------------ sampled reachability maps
@pytest.mark.slow
def test_sampled_reachability_picture_draws_both_maps(leg, tmp_path):
    arm6 = Chain.from_urdf_file(REPO / 'urdf' / 'arm6.urdf', 'base_link', 'tool0')
    maps = pictures.plot_sampled_reachability(leg, arm6, tmp_path / 'maps.png',
                                              leg_map=(20_000, 0.05), arm_map=(20_000, 0.2))
    _image(tmp_path / 'maps.png')
    assert maps['leg3'].position_only and not maps['arm6'].position_only
    assert maps['leg3'].samples == 20_000 and maps['arm6'].voxel_size == 0.2
    # every voxel of the leg's map is within thigh + shin of the hip pitch joint
    d = np.linalg.norm(maps['leg3'].centres - HIP_PITCH_M, axis=1)
    assert d.max() <= THIGH_M + SHIN_M + math.sqrt(3) / 2 * 0.05 + 1e-9
