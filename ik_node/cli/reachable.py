"""``ik-solve reachable``: the capability map's verdict on each pose of a file.

    ik-solve reachable --map maps/ur5e --poses task.csv --json

Poses ``x y z qx qy qz qw`` (the tool's, when the map has a tool offset) in the map's base
frame (:mod:`ik_node.cli.poses_file`). A pose in a uniform cell of the map gets the cell's
verdict; one in a mixed cell is decided by IK (the robot's description from the map, when the
file it was built from is found unchanged), else, or with ``--no-ik``, it is uncertain. Prints
one verdict per pose (``--json``: one JSON object, ``reachable`` a list of true, false or null
for uncertain, and the query time). Exit status 0, or 2 on a bad map, poses file or pose (a
NaN, a zero quaternion).
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
    p.add_argument('--no-ik', action='store_true',
                   help='no IK for poses in mixed cells: call them uncertain')
    p.add_argument('--json', action='store_true', help='print one JSON object')
    return p


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of ``ik-solve reachable``. Returns the exit status."""
    args = build_parser().parse_args(argv)
    from ik_node.capability import CellLookup, load_map, reachable
    from ik_node.capability.decide import map_solver
    from ik_node.cli.poses_file import read_poses
    try:
        capability = load_map(args.map)
        poses = read_poses(args.poses)
        lookup = CellLookup(capability)
        solver, note = (None, 'no IK asked (--no-ik)') if args.no_ik else \
            map_solver(capability.meta)
        start = time.perf_counter()
        answer = reachable(capability, poses, lookup, solver)
        seconds = time.perf_counter() - start
    except IkError as exc:
        fail(str(exc))
    said = [None if u else bool(r) for r, u in zip(answer.reachable.tolist(),
                                                   answer.uncertain.tolist(), strict=True)]
    counts = {'count': len(said), 'reachable_count': int(answer.reachable.sum()),
              'uncertain_count': int(answer.uncertain.sum()),
              'decided_by_ik': int(answer.by_ik.sum())}
    if args.json:
        print(json.dumps({'reachable': said, **counts,
                          'query_us_per_pose': round(1e6 * seconds / max(len(said), 1), 3),
                          'voxel_m': capability.voxel_m,
                          'note': note if counts['uncertain_count'] else ''}))
    else:
        words = {True: 'reachable', False: 'not reachable', None: 'uncertain (a mixed cell)'}
        for i, verdict in enumerate(said):
            print(f'{i}: {words[verdict]}')
        print(f'{counts["reachable_count"]} of {len(said)} reachable, '
              f'{counts["uncertain_count"]} uncertain, {counts["decided_by_ik"]} decided by IK' +
              (f'; IK not used: {note}' if counts['uncertain_count'] else ''))
    return 0
