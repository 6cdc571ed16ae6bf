"""``~/target_poses``: every tip's target in one ``geometry_msgs/PoseArray``, over real DDS.

The node runs in-process on quad12 (four feet, the legs solved one by one in one solve) with the
shared harness (test/ros/harness.py). Targets are FK of joint values chosen here; the answer is
checked by FK of the JointState received, and every foot's own diagnostic status by what it
claims. Bad messages (wrong number of poses, a NaN pose, an unknown frame) are refused whole:
an ERROR naming the message's stamp and no solve.
"""

from __future__ import annotations

import threading
from typing import List

import numpy as np
import pytest

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import Pose, PoseArray

from ik_node import Chain
from harness import REPO, positions_of, values

FEET = ['FL_foot', 'FR_foot', 'RL_foot', 'RR_foot']
DJ = {'solver': 'damped_jacobian', 'damped_jacobian.timeout': 0.2, 'publish_rate': 2.0}


def quad12() -> Chain:
    return Chain.from_urdf_file(REPO / 'urdf' / 'quad12.urdf', 'base_link', FEET)


class PoseArrays:
    """Sends PoseArrays to one ik node through the probe and records every status array."""

    def __init__(self, probe):
        self.probe = probe
        self.pub = probe.node.create_publisher(PoseArray, f'/{probe.ik_name}/target_poses', 10)
        self.lock = threading.Lock()
        self.arrays: List[List[DiagnosticStatus]] = []
        probe.node.create_subscription(DiagnosticArray, f'/{probe.ik_name}/diagnostics',
                                       self._on_diag, 100)
        probe.wait_for('the target_poses subscription',
                       lambda: self.pub.get_subscription_count() > 0)

    def _on_diag(self, msg):
        with self.lock:
            self.arrays.append(list(msg.status))

    def send(self, positions, quats=None, frame='base_link') -> str:
        msg = PoseArray()
        msg.header.frame_id = frame
        for k, p in enumerate(positions):
            pose = Pose()
            pose.position.x, pose.position.y, pose.position.z = (float(v) for v in p)
            o = pose.orientation
            o.x, o.y, o.z, o.w = (0.0, 0.0, 0.0, 0.0) if quats is None else \
                (float(v) for v in quats[k])
            msg.poses.append(pose)
        self.probe.stamp(msg)
        self.pub.publish(msg)
        return self.probe.sent[-1]

    def answer(self, stamp: str) -> List[DiagnosticStatus]:
        """The status array whose first status answers ``stamp``."""
        def find():
            with self.lock:
                for array in self.arrays:
                    if stamp in values(array[0]).get('target_stamp', '').split(','):
                        return array
            return None
        return self.probe.wait_for(f'the statuses answering {stamp}', find)


def joint_state_named(probe, stamp_text: str):
    def find():
        for m in probe.joint_states:
            if f'{m.header.stamp.sec}.{m.header.stamp.nanosec:09d}' == stamp_text:
                return m
        return None
    return probe.wait_for(f'the joint state {stamp_text}', find)


def test_one_pose_array_moves_all_four_feet_with_one_joint_state_and_a_status_per_foot(
        harness):
    ik, probe = harness.start('quad12', tips=FEET, **DJ)
    poses = PoseArrays(probe)
    chain = quad12()
    rng = np.random.default_rng(1)
    for _ in range(3):
        q = chain.lower + (chain.upper - chain.lower) * (0.15 + 0.7 * rng.random(chain.n))
        T = chain.fk_tips(q)
        stamp = poses.send([T[f][:3, 3] for f in FEET])
        array = poses.answer(stamp)
        main, tips = array[0], array[1:]
        assert values(main)['reachable'] == 'true', main.message
        assert [values(s)['tip'] for s in tips] == FEET
        for status in tips:
            v = values(status)
            assert status.name == f'{probe.ik_name}: ik: {v["tip"]}'
            assert status.level == DiagnosticStatus.OK and v['reachable'] == 'true'
            assert v['target_stamp'] == stamp and v['status'] == 'converged'
        js = joint_state_named(probe, values(main)['joint_state_stamp'])
        T_out = chain.fk_tips(positions_of(js, chain.joint_names))
        for foot in FEET:
            assert np.linalg.norm(T_out[foot][:3, 3] - T[foot][:3, 3]) <= 1e-4


def test_a_foot_out_of_reach_warns_on_its_own_status_and_the_others_are_reached(harness):
    ik, probe = harness.start('quad12', tips=FEET, **DJ)
    poses = PoseArrays(probe)
    chain = quad12()
    T = chain.fk_tips(np.tile([0.0, 0.7, -1.4], 4))
    targets = [T[f][:3, 3].copy() for f in FEET]
    targets[2][2] -= 0.4  # RL_foot 0.4 m below its standing foothold: beyond the leg's reach
    array = poses.answer(poses.send(targets))
    main, tips = array[0], {values(s)['tip']: s for s in array[1:]}
    assert values(main)['reachable'] == 'false' and values(main)['status'] == 'unreachable'
    far = values(tips['RL_foot'])
    assert tips['RL_foot'].level == DiagnosticStatus.WARN and far['status'] == 'unreachable'
    assert float(far['min_residual_m']) > 0.05
    assert float(far['position_error_m']) >= float(far['min_residual_m']) - 1e-9
    for foot in ('FL_foot', 'FR_foot', 'RR_foot'):
        assert values(tips[foot])['reachable'] == 'true'
    js = joint_state_named(probe, values(main)['joint_state_stamp'])
    T_out = chain.fk_tips(positions_of(js, chain.joint_names))
    for foot in ('FL_foot', 'FR_foot', 'RR_foot'):
        assert np.linalg.norm(T_out[foot][:3, 3] - T[foot][:3, 3]) <= 1e-4


@pytest.mark.parametrize('case, words', [
    ('three poses', ['3 poses', 'FL_foot, FR_foot, RL_foot, RR_foot']),
    ('nan', ['pose 1', 'FR_foot', 'NaN']),
    ('unknown frame', ['no_such_frame']),
])
def test_a_bad_pose_array_is_refused_whole_with_a_clear_error_and_nothing_solved(
        harness, case, words):
    ik, probe = harness.start('quad12', tips=FEET, **DJ)
    poses = PoseArrays(probe)
    chain = quad12()
    T = chain.fk_tips(np.tile([0.0, 0.7, -1.4], 4))
    good = [T[f][:3, 3].copy() for f in FEET]
    stamp = poses.answer(poses.send(good))  # a solve first: the joints to keep
    before = probe.last_solve_count()
    with probe.lock:
        published = positions_of(probe.joint_states[-1], chain.joint_names)
    bad, frame = [p.copy() for p in good], 'base_link'
    if case == 'three poses':
        bad = bad[:3]
    elif case == 'nan':
        bad[1][0] = float('nan')
    else:
        frame = 'no_such_frame'
    stamp = poses.send(bad, frame=frame)
    array = poses.answer(stamp)
    assert len(array) == 1 and array[0].level == DiagnosticStatus.ERROR
    for word in words:
        assert word in array[0].message, array[0].message
    assert values(array[0])['status'] == 'error'
    # nothing solved for it: the solve count stands, the joints published stay
    mark = probe.mark()
    probe.wait_for('a steady joint state', lambda: len(probe.joint_states) > mark[0])
    assert probe.last_solve_count() == before
    with probe.lock:
        later = positions_of(probe.joint_states[-1], chain.joint_names)
    np.testing.assert_array_equal(later, published)
    # and the node goes on: the next good message is solved
    array = poses.answer(poses.send(good))
    assert values(array[0])['reachable'] == 'true'


def test_a_position_only_solver_ignores_the_orientations_and_says_so(harness):
    ik, probe = harness.start('quad12', tips=FEET, solver='fabrik', publish_rate=2.0,
                              **{'fabrik.timeout': 0.2})
    poses = PoseArrays(probe)
    chain = quad12()
    T = chain.fk_tips(np.tile([0.1, 0.6, -1.3], 4))
    array = poses.answer(poses.send([T[f][:3, 3] for f in FEET],
                                    quats=[(0.0, 0.0, 0.0, 1.0)] * 4))
    main = values(array[0])
    assert main['reachable'] == 'true' and main['orientation_ignored'] == 'true'
    assert 'orientation ignored' in array[0].message


def test_a_serial_chain_takes_a_pose_array_of_its_one_tip(harness):
    ik, probe = harness.start('leg3')
    poses = PoseArrays(probe)
    leg = Chain.from_urdf_file(REPO / 'urdf' / 'leg3.urdf', 'base_link', 'foot')
    p = leg.fk(np.array([0.3, 0.4, 0.8]))[:3, 3]
    array = poses.answer(poses.send([p]))
    assert len(array) == 1 and values(array[0])['reachable'] == 'true'
    js = joint_state_named(probe, values(array[0])['joint_state_stamp'])
    assert np.linalg.norm(leg.fk(positions_of(js, leg.joint_names))[:3, 3] - p) <= 1e-4

