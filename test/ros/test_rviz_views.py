"""rviz/<robot>.rviz: each packaged robot's view frames its reachable space, its targets' labels
and the robot, at the shipped window size (ik_node.ros.rviz.views)."""

import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from ik_node.model.chain import Chain
from ik_node.ros.rviz import markers, views

REPO = Path(__file__).resolve().parents[2]
ROBOTS = sorted(views.ROBOTS)


def chain_of(robot: str) -> Chain:
    params = yaml.safe_load((REPO / 'config' / f'{robot}.yaml').read_text())[
        'ik_node']['ros__parameters']
    return Chain.from_urdf_file(REPO / 'urdf' / params['urdf_file'], params['base_link'],
                                params.get('tip_links') or [params['tip_link']])


def view_in(path: Path) -> views.OrbitView:
    current = yaml.safe_load(path.read_text())['Visualization Manager']['Views']['Current']
    focal = current['Focal Point']
    return views.OrbitView((focal['X'], focal['Y'], focal['Z']), current['Distance'],
                           current['Pitch'], current['Yaw'])


def test_every_packaged_robot_has_a_view():
    shipped = {p.stem for p in (REPO / 'rviz').glob('*.rviz')} - {'ik'}
    launch_robots = set(yaml.safe_load('[' + (REPO / 'launch' / 'ik.launch.py').read_text()
                                       .split('ROBOTS = [', 1)[1].split(']', 1)[0] + ']'))
    assert shipped == set(ROBOTS) == launch_robots - {''}


@pytest.mark.parametrize('robot', ROBOTS)
def test_the_shipped_view_is_ik_rviz_with_the_view_computed_from_the_robots_reach(robot):
    template = (REPO / 'rviz' / 'ik.rviz').read_text()
    shipped = (REPO / 'rviz' / f'{robot}.rviz').read_text()
    assert shipped == views.with_view(template, views.robot_view(REPO, robot)), \
        'stale: python -m ik_node.ros.rviz.views writes rviz/<robot>.rviz'
    a, b = yaml.safe_load(template), yaml.safe_load(shipped)
    a['Visualization Manager'].pop('Views'), b['Visualization Manager'].pop('Views')
    assert a == b  # only the view differs


def fills(view: views.OrbitView, points: np.ndarray) -> tuple:
    """(every point inside the 3D view, the share of its height or width the points span)."""
    screen = view.project(points)
    inside = bool(np.all(np.abs(screen) <= 1.0))
    span = np.max((screen.max(axis=0) - screen.min(axis=0)) / 2.0)
    return inside, float(span)


@pytest.mark.parametrize('robot', ROBOTS)
def test_the_view_holds_the_reach_near_the_robot_and_the_labels_and_they_fill_it(robot):
    """Every sampled tip position and joint within FRAME_SHARE of a tip's reach (all of a
    planar one's), its labels below it, is on screen, spanning at least 75 % of the view's
    height or width."""
    chain = chain_of(robot)
    points = views.framed_points(chain, samples=1000, seed=7)  # not the samples of the view
    inside, span = fills(view_in(REPO / 'rviz' / f'{robot}.rviz'), points)
    assert inside and span >= 0.75, (robot, inside, span)


def test_arm6_is_framed_large_enough_to_see_its_wrist():
    """The wrist of arm6 (its last three joints to the tool) spans at least 25 px on the
    screen at rest, the whole arm at least 150 px."""
    chain = chain_of('arm6')
    view = view_in(REPO / 'rviz' / 'arm6.rviz')
    q = np.zeros(chain.n)
    frames = chain.joint_frames(q)[:, :3, 3]
    tool = chain.fk(q)[:3, 3]
    px = view.project(np.vstack([frames, tool])) * np.array(views.RENDER_PX) / 2.0
    wrist = np.linalg.norm(px[-1] - px[-4])
    arm = np.linalg.norm(px.max(axis=0) - px.min(axis=0))
    assert wrist >= 25.0 and arm >= 150.0, (wrist, arm)


@pytest.mark.parametrize('robot', ROBOTS)
def test_labels_are_at_least_4_cm_and_at_least_13_px_high_in_the_robots_view(robot):
    chain = chain_of(robot)
    view = view_in(REPO / 'rviz' / f'{robot}.rviz')
    height_m = markers.sizes_of(chain).text_height
    px = height_m / (2.0 * view.distance * math.tan(views.FIELD_OF_VIEW / 2)) * \
        views.RENDER_PX[1]
    assert height_m >= 0.04 and px >= 13.0, (robot, height_m, px)
