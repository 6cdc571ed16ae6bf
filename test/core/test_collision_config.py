"""The node's collision parameters: ground plane, obstacles and SRDF parsed or refused with the
reason, and handed to the solver's check."""

import pytest

from ik_node.config.collision_world import (collision_world, ground_z_from,
                                            obstacles_from_text, srdf_text)
from ik_node.errors import ConfigError


def test_an_empty_world_is_the_default():
    assert collision_world({}) == {}
    assert ground_z_from({'collision.ground_z': 0.3}) is None  # collision.ground false


def test_ground_and_obstacles_are_parsed_in_the_base_frame():
    world = collision_world({'collision.ground': True, 'collision.ground_z': -0.01,
                             'collision.obstacles': 'wall box 0.6 0 0.3 0.05 1 1; '
                                                    'ball sphere 0.3 0.3 0.5 0.05;'
                                                    'post cylinder 0 0.5 0 0.04 1.2'})
    assert world['ground_z'] == -0.01 and world['srdf'] is None
    wall, ball, post = world['obstacles']
    assert (wall.name, wall.kind, wall.size) == ('wall', 'box', (0.05, 1.0, 1.0))
    assert ball.T_base_obstacle[:3, 3].tolist() == [0.3, 0.3, 0.5]
    assert post.size == (0.04, 1.2)


@pytest.mark.parametrize('text, match', [('wall cone 1 2 3 4', 'expected'),
                                         ('ball sphere 0 0 0', 'expected'),
                                         ('ball sphere 0 0 x 1', 'not numbers'),
                                         ('ball sphere 0 0 nan 1', 'not finite'),
                                         ('ball sphere 0 0 0 -1', 'sizes > 0')])
def test_a_bad_obstacle_item_is_refused_quoting_it(text, match):
    with pytest.raises(ConfigError, match=match):
        obstacles_from_text(text)


@pytest.mark.parametrize('z', ['low', float('inf'), float('nan'), True])
def test_a_bad_ground_height_is_refused(z):
    with pytest.raises(ConfigError, match='ground_z'):
        ground_z_from({'collision.ground': True, 'collision.ground_z': z})


def test_the_srdf_text_parameter_wins_over_the_file_and_a_missing_file_is_refused(tmp_path):
    path = tmp_path / 'r.srdf'
    path.write_text('<robot name="r"/>')
    assert srdf_text(str(path), '') == '<robot name="r"/>'
    assert srdf_text(str(path), '<robot name="s"/>') == '<robot name="s"/>'
    with pytest.raises(ConfigError, match='gone.srdf'):
        srdf_text(str(tmp_path / 'gone.srdf'), '')
