"""``ik-solve reachable``: the capability map's verdict on each pose of a file.

    ik-solve reachable --map maps/ur5e --poses task.csv --json

Poses ``x y z qx qy qz qw`` in the map's base frame (:mod:`ik_node.cli.poses_file`). Prints one
verdict per pose (``--json``: one JSON object with ``reachable`` and the query time). Exit
status 0, or 2 on a bad map, poses file or pose (a NaN, a zero quaternion).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import List, Optional

from ik_node.cli.common import PROG, Parser, fail
from ik_node.errors import IkError

COMMAND = 'reachable'


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``ik-solve reachable``."""
    p = Parser(prog=f'{PROG} {COMMAND}', description='Ask a capability map whether each pose '
               'of a file is reachable.')
    p.add_argument('--map', type=Path, required=True, metavar='DIR',
                   help='capability map folder (or its capability_map.npz)')
    p.add_argument('--poses', type=Path, required=True, metavar='FILE',
                   help='CSV or YAML of x y z qx qy qz qw rows in the map\'s base frame')
    p.add_argument('--json', action='store_true', help='print one JSON object')
    return p


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of ``ik-solve reachable``. Returns the exit status."""
    args = build_parser().parse_args(argv)
    from ik_node.capability import CellLookup, load_map, reachable
    from ik_node.cli.poses_file import read_poses
    try:
        capability = load_map(args.map)
        poses = read_poses(args.poses)
        lookup = CellLookup(capability)
        start = time.perf_counter()
        verdicts = reachable(capability, poses, lookup)
        seconds = time.perf_counter() - start
    except IkError as exc:
        fail(str(exc))
    if args.json:
        print(json.dumps({'reachable': verdicts.tolist(), 'count': len(verdicts),
                          'reachable_count': int(verdicts.sum()),
                          'query_us_per_pose': round(1e6 * seconds / len(verdicts), 3),
                          'voxel_m': capability.voxel_m}))
    else:
        for i, verdict in enumerate(verdicts.tolist()):
            print(f'{i}: {"reachable" if verdict else "not reachable"}')
        print(f'{int(verdicts.sum())} of {len(verdicts)} reachable by the map')
    return 0
