"""The ``ik_node`` executable's entry point: usage on --help, one line without rclpy."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          timeout=60, cwd=REPO)


def test_help_prints_usage_and_exits_zero_without_starting_ros():
    proc = run('import sys; from ik_node.ros.app.entry import main; sys.exit(main(["--help"]))')
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith('usage: ik_node') and '--params-file' in proc.stdout
    assert 'robot_description' in proc.stdout and proc.stderr == ''


def test_without_rclpy_the_executable_says_how_to_get_it_in_one_line():
    # A plain `pip install .` has no rclpy: simulate it by making the import fail.
    proc = run('import sys; sys.modules["rclpy"] = None\n'
               'from ik_node.ros.app.entry import main; sys.exit(main([]))')
    assert proc.returncode == 1
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and 'Traceback' not in proc.stderr, proc.stderr
    assert 'pip install ".[ros]"' in lines[0] and 'ROS 2' in lines[0]


def test_the_installed_console_script_is_the_entry_point():
    setup = (REPO / 'setup.py').read_text()
    assert "'ik_node = ik_node.ros.app.entry:main'" in setup
