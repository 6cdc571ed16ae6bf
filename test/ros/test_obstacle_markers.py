"""~/obstacles markers become the collision check's obstacles, or are refused saying which
marker and why (plain functions: no node started)."""

import pytest
from visualization_msgs.msg import Marker

from ik_node.ros.solving.obstacles import obstacle_from_marker


def marker(kind, scale=(0.2, 0.2, 0.2), frame='', w=1.0):
    m = Marker()
    m.ns, m.id, m.type = 'o', 3, kind
    m.header.frame_id = frame
    m.scale.x, m.scale.y, m.scale.z = scale
    m.pose.position.x = 0.5
    m.pose.orientation.w = w
    return m


def test_cube_sphere_and_cylinder_markers_are_obstacles_of_their_sizes():
    box = obstacle_from_marker(marker(Marker.CUBE, (0.1, 0.2, 0.3)), 'base_link')
    assert (box.name, box.kind, box.size) == ('o/3', 'box', (0.1, 0.2, 0.3))
    assert box.T_base_obstacle[0, 3] == 0.5
    assert obstacle_from_marker(marker(Marker.SPHERE), 'base_link').size == (0.1,)
    assert obstacle_from_marker(marker(Marker.CYLINDER, (0.2, 0.2, 1.0)),
                                'base_link').size == (0.1, 1.0)


@pytest.mark.parametrize('bad, match', [(marker(Marker.ARROW), 'not CUBE'),
                                        (marker(Marker.CUBE, frame='world'), 'base frame'),
                                        (marker(Marker.CUBE, w=0.0), 'unit quaternion'),
                                        (marker(Marker.CUBE, (0.1, 0.0, 0.1)), 'sizes > 0'),
                                        (marker(Marker.SPHERE, (float('nan'),) * 3), 'finite')])
def test_a_bad_marker_is_refused_naming_it(bad, match):
    with pytest.raises(ValueError, match=match):
        obstacle_from_marker(bad, 'base_link')


def test_colliding_links_are_drawn_as_their_hulls_and_deleted_when_free(collision_robot):
    import numpy as np
    from ik_node import Chain, make_solver
    from ik_node.ros.rviz.markers import COLLISION_ID, collision_marker
    from ik_node.solvers.collision_guard import collision_outputs
    pytest.importorskip('fcl')
    chain = Chain.from_urdf_file(collision_robot('ur5e.urdf'), 'base_link', 'tool0')
    solver = make_solver('damped_jacobian', chain)
    folded = np.array([0.0, -1.57, 2.9, 0.0, 0.0, 0.0])
    values, triangles = collision_outputs(solver, folded)
    assert float(values['min_distance_m']) < 0.0 and 'upper_arm_link' in values['colliding_links']
    drawn = collision_marker('base_link', None, triangles)
    assert drawn.id == COLLISION_ID and drawn.type == Marker.TRIANGLE_LIST
    assert len(drawn.points) == 3 * len(triangles) > 0
    values, triangles = collision_outputs(solver, np.array([0.0, -1.57, 0.0, -1.57, 0.0, 0.0]))
    assert values['colliding_links'] == '' and triangles is None
    assert collision_marker('base_link', None, None).action == Marker.DELETE
