"""The node as its own process (``python -m ik_node.node --ros-args --params-file ...``), as
``ros2 run`` starts it: solves over DDS, runtime parameters, clean exit on SIGINT and SIGTERM,
one-line refusal of a bad configuration."""

from __future__ import annotations

import signal
import time

import numpy as np
import pytest

from harness import (REPO, chain_of, reached_ok, start_process, stop_process,
                     values)


#: Every test here talks to ik_node in its own process (or runs a script that starts one).
pytestmark = pytest.mark.slow

@pytest.mark.parametrize('sig', [signal.SIGINT, signal.SIGTERM], ids=['SIGINT', 'SIGTERM'])
def test_node_process_solves_switches_solver_and_exits_cleanly(probe_for, sig):
    proc = start_process('--params-file', str(REPO / 'config' / 'leg3.yaml'))
    try:
        probe = probe_for()
        probe.wait_connected()
        chain = chain_of('leg3')
        target = chain.fk(np.array([-0.4, 0.6, -1.2]))[:3, 3]
        mark = probe.mark()
        probe.send_point(target)
        status = probe.next_result(mark, 0)
        assert reached_ok(status), status.message
        assert values(status)['solver'] == 'analytic_hip_knee'
        probe.joint_state_at(chain, target, mark[0], 1e-5)

        (result,) = probe.set_params(solver='fabrik')
        assert result.successful, result.reason
        (result,) = probe.set_params(fabrik__max_iterations=0)
        assert not result.successful and 'fabrik.max_iterations' in result.reason
        target = chain.fk(np.array([0.5, -0.3, -0.7]))[:3, 3]
        mark = probe.mark()
        probe.send_point(target)
        status = probe.next_result(mark, 1)
        assert values(status)['solver'] == 'fabrik'
        probe.joint_state_at(chain, target, mark[0], 1e-3)
    finally:
        code, out, err = stop_process(proc, sig)
    assert code == 0, err
    assert 'Traceback' not in err


def test_the_single_threaded_executor_can_be_chosen_and_a_bad_choice_is_refused(probe_for):
    proc = start_process('--params-file', str(REPO / 'config' / 'leg3.yaml'),
                      env_extra={'IK_NODE_EXECUTOR': 'single'})
    try:
        probe = probe_for()
        probe.wait_connected()
        chain = chain_of('leg3')
        target = chain.fk(np.array([0.2, 0.5, -1.0]))[:3, 3]
        mark = probe.mark()
        probe.send_point(target)
        assert reached_ok(probe.next_result(mark, 0))
        probe.joint_state_at(chain, target, mark[0], 1e-5)
    finally:
        code, out, err = stop_process(proc)
    assert code == 0 and 'Traceback' not in err, err
    bad = start_process('--params-file', str(REPO / 'config' / 'leg3.yaml'),
                     env_extra={'IK_NODE_EXECUTOR': 'threads'})
    code = bad.wait(timeout=30)
    err = bad.communicate()[1]
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and 'IK_NODE_EXECUTOR' in lines[0], err


def test_bad_configuration_exits_two_with_one_line(tmp_path):
    bad = tmp_path / 'bad.yaml'
    bad.write_text('ik_node:\n  ros__parameters:\n    urdf_file: leg3.urdf\n'
                   '    tip_link: toe\n    solver: fabrik\n')
    proc = start_process('--params-file', str(bad))
    code = proc.wait(timeout=30)
    err = proc.communicate()[1]
    assert code == 2, err
    assert 'Traceback' not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and 'toe' in lines[0] and 'foot' in lines[0], err


def test_malformed_params_file_exits_two_without_traceback(tmp_path):
    bad = tmp_path / 'malformed.yaml'
    bad.write_text('ik_node:\n  ros__parameters:\n    urdf_file: [leg3.urdf\n')
    proc = start_process('--params-file', str(bad))
    code = proc.wait(timeout=30)
    err = proc.communicate()[1]
    assert code == 2
    assert 'Traceback' not in err
    assert 'ik_node: cannot start' in err and 'malformed.yaml' in err
    # One line with the reason and the line number; none of rcl's C source locations.
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert ' line ' in err and 'malformed YAML' in err and '.c:' not in err, err


def test_unknown_parameter_in_the_file_is_refused(tmp_path):
    bad = tmp_path / 'typo.yaml'
    bad.write_text('ik_node:\n  ros__parameters:\n    urdf_file: leg3.urdf\n'
                   '    tip_link: foot\n    fabrik:\n      max_iteration: 5\n')
    proc = start_process('--params-file', str(bad))
    code = proc.wait(timeout=30)
    err = proc.communicate()[1]
    assert code == 2
    assert 'fabrik.max_iteration' in err and 'fabrik.max_iterations' in err
    assert 'Traceback' not in err


def test_branched_node_process_takes_one_target_per_tip(probe_for):
    if not (REPO / 'urdf' / 'twin_arm.urdf').is_file() or \
            not (REPO / 'config' / 'twin_arm.yaml').is_file():
        pytest.skip('urdf/twin_arm.urdf or config/twin_arm.yaml not there yet')
    from ik_node import Chain
    chain = Chain.from_urdf_file(REPO / 'urdf' / 'twin_arm.urdf', 'base_link',
                                 ['left_hand', 'right_hand'])
    proc = start_process('--params-file', str(REPO / 'config' / 'twin_arm.yaml'))
    try:
        probe = probe_for(tips=('left_hand', 'right_hand'))
        probe.wait_connected()
        rng = np.random.default_rng(3)
        q_true = chain.lower + (chain.upper - chain.lower) * (0.3 + 0.4 * rng.random(chain.n))
        tip_targets = {tip: T[:3, 3] for tip, T in chain.fk_tips(q_true).items()}

        mark = probe.mark()
        probe.send_point(tip_targets['left_hand'], tip='left_hand')
        status = probe.next_result(mark, 0)
        v = values(status)
        assert v['left_hand.reachable'] == 'true', (status.message, v)
        assert 'right_hand.reachable' not in v  # no target for it yet

        mark = probe.mark()
        probe.send_point(tip_targets['right_hand'], tip='right_hand')
        status = probe.next_result(mark, 1)
        v = values(status)
        assert v['left_hand.reachable'] == 'true' and v['right_hand.reachable'] == 'true', v

        def both_reached():
            for m in probe.joint_states[mark[0]:]:
                if not set(chain.joint_names) <= set(m.name):
                    continue
                index = {n: i for i, n in enumerate(m.name)}
                tips = chain.fk_tips(np.array([m.position[index[n]] for n in chain.joint_names]))
                if all(np.linalg.norm(tips[t][:3, 3] - tip_targets[t]) < 1e-3 for t in tip_targets):
                    return m
            return None
        probe.wait_for('both hands on their targets', both_reached)
        # One target sphere per tip, in the order of tip_links, at that tip's target.
        arrays = probe.wait_for('per-tip target markers', lambda: next(
            (a for a in reversed(probe.marker_arrays)
             if {10, 11} <= {m.id for m in a.markers}), None))
        by_id = {m.id: m for m in arrays.markers}
        for k, tip in enumerate(['left_hand', 'right_hand']):
            p = by_id[10 + k].pose.position
            assert np.allclose([p.x, p.y, p.z], tip_targets[tip]), tip
    finally:
        code, out, err = stop_process(proc)
    assert code == 0 and 'Traceback' not in err, err


@pytest.mark.parametrize('sig', [signal.SIGINT, signal.SIGTERM], ids=['SIGINT', 'SIGTERM'])
def test_signal_while_targets_stream_exits_cleanly(probe_for, sig):
    proc = start_process('--params-file', str(REPO / 'config' / 'planar4.yaml'))
    k = 0
    try:
        probe = probe_for()
        probe.wait_connected()
        mark = probe.mark()
        for k in range(300):  # about 1 kHz, so solves and publishing are under way
            probe.send_point([0.5 + 0.2 * np.cos(k / 30), 0.2 * np.sin(k / 30), 0.0])
            if k == 150:
                proc.send_signal(sig)
            time.sleep(0.001)
        assert len(probe.joint_states) > mark[0]  # it was solving when the signal came
    finally:
        code, out, err = stop_process(proc, sig, send=proc.poll() is None and k < 150)
    assert code == 0, err
    assert 'Traceback' not in err, err


@pytest.mark.parametrize('delay_s', [0.0, 0.05, 0.15, 0.3, 0.5, 0.8, 1.2])
def test_a_signal_at_any_moment_of_start_up_ends_the_node_cleanly(delay_s):
    """SIGINT while rclpy, the executor or the node is still being built: exit 0, no traceback
    and no 'Exception ignored' from a half-built executor (seen: RCLError 'failed to create
    guard_condition', then AttributeError '_sigint_gc')."""
    proc = start_process('--params-file', str(REPO / 'config' / 'arm6.yaml'))
    time.sleep(delay_s)
    status, out, err = stop_process(proc, signal.SIGINT)
    if status != 0:
        # Only Python's own start-up (site and .pth files, before any ik_node code runs) may
        # still be interrupted: as for every Python program, by the default handler.
        assert status == -signal.SIGINT or 'KeyboardInterrupt' in err, (status, err)
        assert '/ik_node/' not in err and 'rclpy' not in err, err
    assert 'Exception ignored' not in err, err
    assert status != 0 or 'Traceback' not in err, err
