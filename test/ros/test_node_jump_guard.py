"""The jump guard in the running node, over DDS with the node in its own process: a target whose
answer lies far from the last command is held (position_command, the default) or limited
(joint_trajectory with ``jump_guard: limit``, its point still timed by the URDF velocity
limits), and the diagnostics say which joint would jump and by how much.

The node runs as its own process with the harness's graph probe (test/ros/harness.py).
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from harness import UR5, robot_params, start_node, stop, values, write_params

from diagnostic_msgs.msg import DiagnosticStatus
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

from ik_node import Chain

#: Every test here starts ik_node as its own process.
pytestmark = pytest.mark.slow

Q_NEAR = np.array([0.3, -1.2, 1.4, -0.6, 0.8, 0.4])
# The same arm turned 2.5 rad about the base: every solution of its pose is far from Q_NEAR's.
Q_FAR = Q_NEAR + np.array([2.5, 0.0, 0.0, 0.0, 0.0, 0.0])
#: A time budget no loaded machine runs out of: the far answer is the solver's converged one, not
#: a timed-out best that a busy CPU would make (whose nearest joint differs).
SOLVE_IN_TIME = {'timeout': 1.0}


def ur5(shared_robot) -> Chain:
    return Chain.from_urdf_file(shared_robot(UR5[0]), UR5[1], UR5[2])


def test_a_far_answer_is_held_and_the_diagnostics_name_the_joint(graph, shared_robot,  # noqa: F811
                                                                 tmp_path):
    params = write_params(tmp_path, 'ur5', robot_params(shared_robot, UR5,
                                                        output='position_command',
                                                        damped_jacobian=SOLVE_IN_TIME))
    chain = ur5(shared_robot)
    commands = graph.listen(Float64MultiArray, '/forward_position_controller/commands')
    diags = graph.diagnostics('ik_node')
    proc = start_node(params)
    try:
        graph.wait_for('the node', lambda: diags, procs=[proc])
        # The first answer has no command before it (and no measured state): it passes.
        key = graph.send_pose('/ik_node/target_pose', UR5[1], chain.fk(Q_NEAR))
        assert values(graph.answer(diags, key, procs=[proc]))['jump_guard'] == 'pass'
        first = np.array(graph.wait_for('a command', lambda: commands)[-1].data)
        # A small step passes too (once velocity x time since the first command exceeds it).
        time.sleep(0.3)
        key = graph.send_pose('/ik_node/target_pose', UR5[1],
                              chain.fk(Q_NEAR + 0.02))
        assert values(graph.answer(diags, key, procs=[proc]))['jump_guard'] == 'pass'
        last = np.array(graph.wait_for('a second command', lambda: commands[1:])[-1].data)
        assert np.abs(last - first).max() < 0.5
        # The far target: its answer is held, nothing is commanded.
        n_before = len(commands)
        key = graph.send_pose('/ik_node/target_pose', UR5[1], chain.fk(Q_FAR))
        status = graph.answer(diags, key, procs=[proc])
        v = values(status)
        assert status.level == DiagnosticStatus.ERROR, (status.message, v)
        assert v['jump_guard'] == 'hold' and v['jump_joint'] == 'shoulder_pan_joint', v
        assert float(v['jump_move']) > float(v['jump_bound']), v
        assert float(v['jump_bound']) <= 0.5 + 1e-9
        assert 'jump guard: held the last command: shoulder_pan_joint would move' in \
            status.message
        assert v['reachable'] == 'true'  # the solve itself reached the target
        # Nothing was commanded for it: the next command on the topic answers the next target.
        key = graph.send_pose('/ik_node/target_pose', UR5[1], chain.fk(Q_NEAR + 0.04))
        assert values(graph.answer(diags, key, procs=[proc]))['jump_guard'] == 'pass'
        after = np.array(graph.wait_for('the next command',
                                        lambda: commands[n_before:])[0].data)
        assert np.linalg.norm(chain.fk(after)[:3, 3] - chain.fk(Q_NEAR + 0.04)[:3, 3]) < 1e-4
    finally:
        stop(proc)


def test_limit_mode_steps_toward_a_far_answer_and_the_trajectory_keeps_its_velocity_timing(
        graph, shared_robot, tmp_path):  # noqa: F811
    params = write_params(tmp_path, 'ur5', robot_params(
        shared_robot, UR5, output='joint_trajectory', jump_guard='limit', jump_max_step=0.3,
        trajectory_velocity_scaling=0.5, damped_jacobian=SOLVE_IN_TIME))
    chain = ur5(shared_robot)
    trajectories = graph.listen(JointTrajectory, '/joint_trajectory_controller/joint_trajectory')
    diags = graph.diagnostics('ik_node')
    proc = start_node(params)
    velocity = {j.name: j.limit.velocity for j in chain.robot.joints if j.limit}

    def positions(msg) -> np.ndarray:
        by_name = dict(zip(msg.joint_names, msg.points[0].positions))
        return np.array([by_name[n] for n in chain.joint_names])

    try:
        graph.wait_for('the node', lambda: diags, procs=[proc])
        key = graph.send_pose('/ik_node/target_pose', UR5[1], chain.fk(Q_NEAR))
        graph.answer(diags, key, procs=[proc])
        q_last = positions(graph.wait_for('a trajectory', lambda: trajectories)[-1])
        time.sleep(0.5)  # velocity x time above jump_max_step: the 0.3 rad bound decides
        key = graph.send_pose('/ik_node/target_pose', UR5[1], chain.fk(Q_FAR))
        status = graph.answer(diags, key, procs=[proc])
        v = values(status)
        assert status.level == DiagnosticStatus.WARN, (status.message, v)
        assert v['jump_guard'] == 'limit' and v['jump_joint'] == 'shoulder_pan_joint', v
        assert 'jump guard: limited' in status.message
        msg = graph.wait_for('a limited trajectory', lambda: trajectories[1:])[-1]
        q = positions(msg)
        step = np.abs(q - q_last)
        assert step.max() == pytest.approx(0.3, abs=1e-9)  # the worst joint moves its bound
        assert chain.within_limits(q)
        # time_from_start: the slowest joint at half its URDF velocity limit, from the last
        # command (no measured state) to the limited point.
        expected = max(step[i] / (0.5 * velocity[n]) for i, n in enumerate(chain.joint_names))
        point = msg.points[0]
        t = point.time_from_start.sec + 1e-9 * point.time_from_start.nanosec
        assert t == pytest.approx(max(expected, 0.02), rel=1e-6, abs=1e-6)
    finally:
        stop(proc)
