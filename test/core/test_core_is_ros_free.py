"""The core (chain, solvers, config, CLI, reachability, quality) never imports rclpy: it runs on
machines without ROS."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_core_config_cli_and_a_solve_leave_rclpy_unimported():
    script = textwrap.dedent('''
        import sys
        import ik_node, ik_node.config.node_config, ik_node.cli, ik_node.model.resources
        import ik_node.reachability, ik_node.model.quality, ik_node.cli.reach_map
        from ik_node.solvers import SOLVERS, make_solver
        import ik_node.solvers.damped_jacobian.solver, ik_node.solvers.fabrik.solver
        import ik_node.solvers.hip_knee.solver
        assert set(SOLVERS) >= {'analytic_hip_knee', 'fabrik', 'damped_jacobian'}, SOLVERS
        config = ik_node.config.node_config.load_config('leg3')
        chain = ik_node.config.node_config.build_chain(config)
        for name in sorted(SOLVERS):
            solver = make_solver(name, chain)
            if 'timeout' in solver.params:  # a budget no loaded machine runs out of
                solver = make_solver(name, chain, {'timeout': 60.0})
            result = solver.solve([0.1, 0.05, -0.45])
            assert result.reachable, (name, result)
        assert ik_node.cli.main(['--config', 'leg3', '--target', '0.1', '0.05', '-0.45']) == 0
        reach_map = ik_node.reachability.build_reachability_map(chain, samples=2000)
        assert len(reach_map) > 0
        assert ik_node.model.quality.solution_quality(chain, chain.mid_configuration()).tip_link
        loaded = sorted(m for m in list(sys.modules)  # (the kernels' thread imports too)
                        if m.split('.')[0] in ('rclpy', 'rcl_interfaces'))
        print('ROS:', loaded)
        assert not loaded, loaded
    ''')
    proc = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True,
                          timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'ROS: []' in proc.stdout


def test_only_the_node_and_its_ros_side_import_rclpy():
    importers = sorted(p.relative_to(REPO).as_posix() for p in (REPO / 'ik_node').rglob('*.py')
                       if 'import rclpy' in p.read_text() or 'from rclpy' in p.read_text())
    assert importers, 'the node imports rclpy somewhere'
    assert all(p.startswith('ik_node/ros/') for p in importers), \
        importers


def test_ik_solve_target_is_dispatched_by_name_and_its_help_needs_no_rclpy():
    # The subcommand's module lives in ik_node/ros (it talks to the node over DDS); ik-solve
    # names it in a table and imports it only when used, and rclpy only once it sends.
    script = textwrap.dedent('''
        import contextlib, io, sys
        import ik_node.cli
        from ik_node.cli.common import SUBCOMMANDS
        assert SUBCOMMANDS['target'] == 'ik_node.ros.app.cli_target_client'
        assert 'ik_node.ros.app.cli_target_client' not in sys.modules
        with contextlib.redirect_stdout(io.StringIO()) as out:
            try:
                ik_node.cli.main(['target', '--help'])
            except SystemExit as exc:
                assert exc.code == 0
        assert '--point' in out.getvalue() and '--node' in out.getvalue()
        loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'rclpy')
        print('ROS:', loaded)
    ''')
    proc = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True,
                          timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'ROS: []' in proc.stdout
