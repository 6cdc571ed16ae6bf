"""``ik-solve``: inverse kinematics from the command line, no ROS needed.

    ik-solve --config leg3 --target 0.1 0.05 -0.45          one solve (:mod:`ik_node.cli.solve`)
    ik-solve chains --urdf robot.urdf                        what a description offers
    ik-solve reach-map --config arm6 --out maps              a sampled reachability map
    ik-solve capability-map --urdf F --tip T --voxel 0.05 --out DIR   an IK-verified map
    ik-solve reachable --map DIR --poses FILE                 the map's verdict per pose
    ik-solve base-placement --map DIR --poses FILE            where the base may stand
    ik-solve target --point 0.2 0.1 -0.45                     one target to the running node
    ik-solve service --point 0.4 0.1 0.3                      the running node's ~/compute_ik

Each subcommand is a module with ``main(argv) -> int``, imported only when it is used.
"""

import importlib
import os
import sys
from typing import List, Optional

from ik_node.cli.common import SUBCOMMANDS


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of ``ik-solve``: a subcommand's ``main``, or one solve. Returns the exit
    status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        if argv and argv[0] in SUBCOMMANDS:
            return importlib.import_module(SUBCOMMANDS[argv[0]]).main(argv[1:])
        return importlib.import_module('ik_node.cli.solve').main(argv)
    except BrokenPipeError:  # `ik-solve ... | head`: the reader left; no traceback
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's flush at exit must not raise again
        return 1


__all__ = ['main']
