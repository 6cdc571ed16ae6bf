"""``~/base_placement``: task poses in, the best base poses, their shares and a floor heat map
out, over real DDS: the map's solver is built in the background (the status says when), the top
answer's share is what IK reaches from it (its answers FK-checked); a robot other than the map's
gets answers from the map alone, saying so; a request the node cannot answer gets an error and
the node goes on."""

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
from ik_node import Chain
from ik_node.capability import MapSpec, build_map
from ik_node.capability.decide import solver_for
from ik_node.capability.orientations import quats_from_rotations, rotations_from_quats
from ik_node.capability.placement import Placement, reached_from, task_in_base

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
        self.answers, self.results, self.heat, self.status = [], [], [], []
        ns = f'/{name}/base_placement'
        self.pub = self.node.create_publisher(PoseArray, f'{ns}/tasks', 10)
        self.node.create_subscription(String, f'{ns}/answer', self._keep(self.answers), 10)
        self.node.create_subscription(PoseArray, f'{ns}/result', self._keep(self.results), 10)
        self.node.create_subscription(
            MarkerArray, f'{ns}/heat_map', self._keep(self.heat),
            QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self.node.create_subscription(
            String, f'{ns}/status', self._keep(self.status),
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

    def ready(self):
        """The status once the map and its solver are loaded."""
        def done():
            states = [json.loads(m.data) for m in self.status]
            return next((s for s in states if s['state'] in ('ready', 'failed')), None)
        return wait_for('the map loaded', done, self.lock)

    def next_answer(self, count):
        return json.loads(wait_for('an answer', lambda: len(self.answers) > count and
                                   self.answers[count].data, self.lock))


def test_task_poses_get_ranked_base_poses_and_a_heat_map(harness, tmp_path):
    capability, folder = _map(tmp_path)
    name, ik = harness.start_alone('arm6', capability_map=str(folder))
    client = Client(harness, name)
    assert client.ready() == {'map': str(folder), 'state': 'ready', 'basis': 'ik'}
    rows, bins = np.nonzero(capability.reached & ~capability.mixed)  # uniformly reachable
    pick = np.random.default_rng(4).choice(len(rows), 12, replace=False)
    local = np.hstack([capability.cells[rows[pick]] * capability.voxel_m,
                       capability.orientations.quats_xyzw[bins[pick]]])
    world = task_in_base(local, Placement(0.0, 0.0, 0.0, 1.0))
    world[:, :2] += [0.5, 0.25]  # the base that reaches them all stands at (0.5, 0.25)
    client.send(world)
    answer = client.next_answer(0)
    assert answer['poses'] == 12 and answer['frame_id'] == 'world' and answer['basis'] == 'ik'
    best = answer['placements'][0]
    assert best['share'] == 1.0 and best['verified']
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
    assert client.next_answer(2)['placements'][0]['share'] == 1.0


def test_the_top_answers_share_is_what_ik_reaches_from_it(harness, tmp_path):
    capability, folder = _map(tmp_path)
    name, _ = harness.start_alone('arm6', capability_map=str(folder))
    client = Client(harness, name)
    assert client.ready()['basis'] == 'ik'
    # Task poses of random configurations (many in mixed cells) and a few out of reach.
    spec = MapSpec(ARM6.read_text(), 'base_link', 'tool0', 0.25, 4, urdf_path=str(ARM6))
    solver = solver_for(spec)
    chain = Chain.from_urdf_file(ARM6, 'base_link', 'tool0')
    rng = np.random.default_rng(8)
    Q = rng.uniform(chain.lower, chain.upper, size=(24, chain.n))
    T = np.array([chain.fk(q) for q in Q])
    local = np.hstack([T[:, :3, 3], quats_from_rotations(T[:, :3, :3])])
    local[:3, :3] = [[3.0, 0.0, 0.5], [0.0, -3.0, 0.2], [2.5, 2.5, 0.0]]  # beyond the reach
    world = task_in_base(local, Placement(0.0, 0.0, -0.6, 1.0))
    world[:, :2] += [0.4, -0.3]
    client.send(world)
    answer = client.next_answer(0)
    assert answer['basis'] == 'ik'
    best = answer['placements'][0]
    assert best['verified']
    top = Placement(best['x'], best['y'], math.radians(best['yaw_deg']), best['share'])
    in_base = task_in_base(world, top)
    reached = 0
    for pose, q in zip(in_base, answer['joints']):
        if q is None:
            continue
        T = chain.fk(np.array(q))  # the node's IK answer puts the tool at the task pose
        assert np.linalg.norm(T[:3, 3] - pose[:3]) <= solver.params['position_tolerance']
        R = rotations_from_quats(pose[3:])[0]
        angle = np.arccos(np.clip((np.trace(R.T @ T[:3, :3]) - 1) / 2, -1, 1))
        assert angle <= solver.params['orientation_tolerance'] + 1e-9
        assert np.all(q >= chain.lower - 1e-9) and np.all(q <= chain.upper + 1e-9)
        reached += 1
    assert best['share'] == reached / len(world)
    assert 0.5 < best['share'] < 1.0  # the poses beyond the reach are not claimed
    # Dense IK from the top answer (every task pose) reaches at least the share claimed.
    dense, _ = reached_from(solver, world, top)
    assert dense.mean() >= best['share']
    assert not dense[:3].any()


def test_a_robot_other_than_the_maps_gets_the_map_alone_saying_so(harness, tmp_path):
    capability, folder = _map(tmp_path)
    other = ARM6.read_text().replace('<robot name="', '<robot name="other_')
    assert other != ARM6.read_text()
    path = tmp_path / 'other.urdf'
    path.write_text(other)
    name, _ = harness.start_alone('arm6', capability_map=str(folder), urdf_file=str(path))
    client = Client(harness, name)
    status = client.ready()
    assert status['state'] == 'ready' and 'uniformly reachable only' in status['basis']
    rows, bins = np.nonzero(capability.reached & ~capability.mixed)
    local = np.hstack([capability.cells[rows[:5]] * capability.voxel_m,
                       capability.orientations.quats_xyzw[bins[:5]]])
    client.send(local)
    answer = client.next_answer(0)
    assert answer['basis'].startswith('uniformly reachable only: the map')
    assert answer['joints'] is None and not any(p['verified'] for p in answer['placements'])


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
