"""The ``ik_node`` executable's entry point: usage and a missing rclpy answered in plain words.

Imports no ROS package itself, so a plain ``pip install .`` (without the ROS 2 wheels) gets one
line saying how to get rclpy instead of a traceback.
"""

from __future__ import annotations

import importlib
import sys
from typing import List, Optional

from ik_node.ros.app import held_signals

# Held back until the node can end cleanly: ik_node.ros.app.run.main delivers them once it spins.
held_signals.hold()

USAGE = """\
usage: ik_node [--ros-args --params-file FILE | -p NAME:=VALUE ...]

Live inverse kinematics: subscribes to ~/target_pose (geometry_msgs/PoseStamped) and
~/target_point (geometry_msgs/PointStamped), publishes the solution (sensor_msgs/JointState on
joint_states by default, or ros2_control commands), /diagnostics and ~/markers.

The robot comes from the parameters robot_description (URDF XML) or urdf_file (a .urdf/.xacro
path or a packaged name: leg3, planar4, arm6, twin_arm); with neither, from the
robot_description topic. Examples:

  ros2 run ik_node ik_node --ros-args --params-file config/leg3.yaml
  ik_node --ros-args -p urdf_file:=arm6.urdf -p base_link:=base_link -p tip_link:=tool0
  ros2 launch ik_node ik.launch.py robot:=leg3

Every parameter, with its range and unit: docs/parameters.md, or `ros2 param describe`.
"""


def main(args: Optional[List[str]] = None) -> int:
    """Run the node; ``--help`` prints usage; without rclpy, one line saying how to get it."""
    argv = sys.argv[1:] if args is None else list(args)
    ros_args = argv[argv.index('--ros-args'):] if '--ros-args' in argv else []
    own = argv[:len(argv) - len(ros_args)]
    if any(a in ('-h', '--help') for a in own):
        print(USAGE, end='')
        return 0
    held_signals.hold()
    try:
        importlib.import_module('rclpy')
    except ImportError as exc:
        print(f'ik_node: rclpy is not importable ({exc}). Source a ROS 2 install (Humble or '
              'Jazzy), or install the ROS 2 wheels: pip install "ik_node[ros]" '
              '(from a checkout: pip install ".[ros]").', file=sys.stderr)
        return 1
    from ik_node.ros.app import run
    return run.main(None if args is None else [sys.argv[0], *argv])


if __name__ == '__main__':
    sys.exit(main())
