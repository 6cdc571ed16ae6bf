"""``~/base_placement``: task poses in, the best base poses, their shares and a floor heat map
out, over real DDS; a request the node cannot answer gets an error and the node goes on."""

import json
import math
import threading
from pathlib import Path

import numpy as np
from geometry_msgs.msg import Pose, PoseArray
from std_msgs.msg import String
from rclpy.qos import DurabilityPolicy, QoSProfile
from visualization_msgs.msg import MarkerArray

from harness import wait_for
from ik_node.capability import MapSpec, build_map
from ik_node.capability.query import Placement, task_in_base

REPO = Path(__file__).resolve().parents[2]
ARM6 = REPO / 'urdf' / 'arm6.urdf'


def _map(tmp_path):
    spec = MapSpec(ARM6.read_text(), 'base_link', 'tool0', 0.25, 4, urdf_path=str(ARM6))
    return build_map(spec, tmp_path / 'arm6_map', workers=1), tmp_path / 'arm6_map'


class Client:
    """Publishes task poses and records the node's answers."""

    def __init__(self, harness, name):
        self.node = harness.ros.node('placement_client')
        self.lock = threading.Lock()
        self.answers, self.results, self.heat = [], [], []
        ns = f'/{name}/base_placement'
        self.pub = self.node.create_publisher(PoseArray, f'{ns}/tasks', 10)
        self.node.create_subscription(String, f'{ns}/answer', self._keep(self.answers), 10)
        self.node.create_subscription(PoseArray, f'{ns}/result', self._keep(self.results), 10)
        self.node.create_subscription(
            MarkerArray, f'{ns}/heat_map', self._keep(self.heat),
            QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))

    def _keep(self, into):
        def keep(msg):
            with self.lock:
                into.append(msg)
        return keep

    def send(self, poses):
        msg = PoseArray()
        msg.header.frame_id = 'world'
        for row in poses:
            pose = Pose()
            pose.position.x, pose.position.y, pose.position.z = (float(v) for v in row[:3])
            (pose.orientation.x, pose.orientation.y, pose.orientation.z,
             pose.orientation.w) = (float(v) for v in row[3:])
            msg.poses.append(pose)
        wait_for('the node subscribed', lambda: self.pub.get_subscription_count() > 0)
        self.pub.publish(msg)

    def next_answer(self, count):
        return json.loads(wait_for('an answer', lambda: len(self.answers) > count and
                                   self.answers[count].data, self.lock))


def test_task_poses_get_ranked_base_poses_and_a_heat_map(harness, tmp_path):
    capability, folder = _map(tmp_path)
    name, ik = harness.start_alone('arm6', capability_map=str(folder))
    client = Client(harness, name)
    rows, bins = np.nonzero(capability.reached & ~capability.mixed)  # uniformly reachable
    pick = np.random.default_rng(4).choice(len(rows), 12, replace=False)
    local = np.hstack([capability.cells[rows[pick]] * capability.voxel_m,
                       capability.orientations.quats_xyzw[bins[pick]]])
    world = task_in_base(local, Placement(0.0, 0.0, 0.0, 1.0))
    world[:, :2] += [0.5, 0.25]  # the base that reaches them all stands at (0.5, 0.25)
    client.send(world)
    answer = client.next_answer(0)
    assert answer['poses'] == 12 and answer['frame_id'] == 'world'
    best = answer['placements'][0]
    assert best['map_share'] == 1.0
    assert [p['map_share'] for p in answer['placements']] == \
        sorted((p['map_share'] for p in answer['placements']), reverse=True)
    result = wait_for('a result', lambda: client.results, client.lock)[0]
    assert math.isclose(result.poses[0].position.x, best['x'], abs_tol=1e-9)
    tiles, tasks, legend = wait_for('a heat map', lambda: client.heat, client.lock)[0].markers
    assert len(tiles.points) == len(tiles.colors) == 41 * 41
    assert max(c.g for c in tiles.colors) > 0.9 and min(c.g for c in tiles.colors) < 0.1
    assert max(p.z for p in tiles.points) + tiles.scale.z / 2 < 0.0  # under the base poses
    # the task poses drawn where they are; the legend says what the colours mean and the best
    assert np.allclose([[p.x, p.y, p.z] for p in tasks.points], world[:, :3])
    assert '12 task poses' in legend.text and 'green all, red none' in legend.text
    assert f'x {best["x"]:.2f} y {best["y"]:.2f} m' in legend.text and '100 %' in legend.text
    # A bad request (a NaN) is an error answer, and the node answers the next one.
    bad = world.copy()
    bad[0, 0] = np.nan
    client.send(bad)
    assert 'pose 0' in client.next_answer(1)['error']
    client.send(world)
    assert client.next_answer(2)['placements'][0]['map_share'] == 1.0


def test_without_a_map_the_answer_says_so(harness, tmp_path):
    name, _ = harness.start_alone('arm6')
    client = Client(harness, name)
    client.send([[0.3, 0.0, 0.3, 0.0, 0.0, 0.0, 1.0]])
    assert 'capability_map' in client.next_answer(0)['error']


def test_the_map_display_shows_the_capability_maps_reach_map(harness, tmp_path):
    """With capability_map naming a folder that holds reach_map_<tip>.npz (as `ik-solve
    capability-map` writes it), ~/reachability shows that IK-verified map, not a sampled one:
    the node holds the file's voxels (its distances to the reach come from them) and draws
    points (means of neighbouring voxel centres where there are many) inside them."""
    from visualization_msgs.msg import Marker

    from ik_node import Chain
    from ik_node.cli.capability_map import as_reach_map
    from ik_node.reachability.files import save_npz
    capability, folder = _map(tmp_path)
    reach = as_reach_map(capability, Chain.from_urdf_file(ARM6, 'base_link', 'tool0'))
    save_npz(reach, folder / 'reach_map_tool0.npz')
    name, ik = harness.start_alone('arm6', capability_map=str(folder))
    client = harness.ros.node('map_client')
    arrays, lock = [], threading.Lock()

    def keep(msg):
        with lock:
            arrays.append(msg)
    client.create_subscription(MarkerArray, f'/{name}/reachability', keep, QoSProfile(
        depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
    points = wait_for('the map', lambda: [p for a in arrays[-1:] for m in a.markers
                                          if m.type == Marker.POINTS for p in m.points], lock)
    centres = reach.voxel_indices * reach.voxel_size
    low, high = centres.min(axis=0) - 1e-9, centres.max(axis=0) + 1e-9
    assert all(np.all(low <= [p.x, p.y, p.z]) and np.all([p.x, p.y, p.z] <= high)
               for p in points)
    held = ik._reach._maps['tool0']
    assert held.voxel_size == 0.25 and np.array_equal(held.voxel_indices, reach.voxel_indices)
