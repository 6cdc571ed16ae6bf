"""``ik-solve base-placement``: where the base may stand so that the task poses are reachable.

    ik-solve base-placement --map maps/ur5e --poses task.csv --grid=-1:1:0.05,-1:1:0.05,10 --json

Poses ``x y z qx qy qz qw`` in the floor's frame (:mod:`ik_node.cli.poses_file`); base poses on
the floor grid ``xmin:xmax:step,ymin:ymax:step,yaw_step_deg`` (default ``-1:1:0.05,-1:1:0.05,
10``) at ``--height``, ranked by the share of task poses in uniformly reachable cells of the map
(then the share in mixed cells, which may go either way); with the robot's description found
(below) and no ``--no-ik``, the 20 base poses with the most task poses possibly reachable have
those in mixed cells decided by IK and are ranked by the share then reachable; the ``--verify`` best
are checked by real IK of every task pose (the robot's description from the map, when the file
it was built from is found unchanged). Exit status 0, or 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import List, Optional

from ik_node.cli.common import PROG, Parser, fail
from ik_node.errors import ConfigError, IkError

COMMAND = 'base-placement'


def parse_grid(text: str, height: float):
    """A :class:`~ik_node.capability.PlacementGrid` from ``x0:x1:dx,y0:y1:dy,yaw_step_deg``."""
    from ik_node.capability import PlacementGrid
    try:
        x, y, yaw = text.split(',')
        xr = tuple(float(v) for v in x.split(':'))
        yr = tuple(float(v) for v in y.split(':'))
        yaw_step = math.radians(float(yaw))
    except ValueError:
        raise ConfigError(f'--grid {text!r}: expected xmin:xmax:step,ymin:ymax:step,'
                          'yaw_step_deg, e.g. -1:1:0.05,-1:1:0.05,10') from None
    if len(xr) != 3 or len(yr) != 3:
        raise ConfigError(f'--grid {text!r}: each of x and y is min:max:step')
    return PlacementGrid(xr, yr, yaw_step, height)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``ik-solve base-placement``."""
    p = Parser(prog=f'{PROG} {COMMAND}', description='Rank base poses on a floor grid by the '
               'share of task poses a capability map reaches from them; verify the best by IK.')
    p.add_argument('--map', type=Path, required=True, metavar='DIR', help='capability map')
    p.add_argument('--poses', type=Path, required=True, metavar='FILE',
                   help='CSV or YAML of x y z qx qy qz qw rows in the floor\'s frame')
    p.add_argument('--grid', default='-1:1:0.05,-1:1:0.05,10',
                   metavar='X0:X1:DX,Y0:Y1:DY,YAW_DEG',
                   help='the base poses tried (write --grid=... when X0 is negative)')
    p.add_argument('--height', type=float, default=0.0, metavar='Z',
                   help='the base\'s height in the poses\' frame [m] (default: 0)')
    p.add_argument('--top', type=int, default=5, help='answers shown (default: 5)')
    p.add_argument('--verify', type=int, default=1, metavar='N',
                   help='verify the N best by IK (default: 1; 0: none)')
    p.add_argument('--no-ik', action='store_true',
                   help='rank by the map alone: no IK for task poses in mixed cells, none to '
                        'verify')
    p.add_argument('--json', action='store_true', help='print one JSON object')
    return p


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of ``ik-solve base-placement``. Returns the exit status."""
    args = build_parser().parse_args(argv)
    from ik_node.capability import base_placement, check_poses, load_map, verify_placements
    from ik_node.cli.poses_file import read_poses
    if args.top < 1 or args.verify < 0:
        fail('--top must be >= 1 and --verify >= 0')
    try:
        capability = load_map(args.map)
        poses = check_poses(read_poses(args.poses))
        grid = parse_grid(args.grid, args.height)
        from ik_node.capability.decide import map_solver
        solver, why = (None, 'no IK asked (--no-ik)') if args.no_ik else \
            map_solver(capability.meta)
        start = time.perf_counter()
        ranked = base_placement(capability, poses, grid, args.top, solver=solver)
        seconds = time.perf_counter() - start
        verified, note = [None] * len(ranked), f'not verified: {why}' if why else ''
        if args.verify:
            if solver is not None:
                shares = verify_placements(solver, poses, ranked[:args.verify], args.height,
                                           tool=capability.tool_offset)
                verified[:len(shares)] = shares
    except IkError as exc:
        fail(str(exc))
    answers = [{'x': p.x, 'y': p.y, 'yaw_deg': round(math.degrees(p.yaw), 6),
                'map_share': p.share, 'mixed_share': p.mixed, 'verified_share': v}
               for p, v in zip(ranked, verified, strict=True)]
    if args.json:
        print(json.dumps({'placements': answers, 'poses': len(poses),
                          'query_seconds': round(seconds, 4), 'note': note}))
    else:
        for a in answers:
            check = '' if a['verified_share'] is None else \
                f', IK reaches {100 * a["verified_share"]:.0f} %'
            print(f'x {a["x"]:+.3f} m  y {a["y"]:+.3f} m  yaw {a["yaw_deg"]:6.1f} deg: map '
                  f'{100 * a["map_share"]:.0f} % (+ {100 * a["mixed_share"]:.0f} % mixed)'
                  f'{check}')
        print(f'{len(poses)} poses, ranked in {seconds:.3f} s' + (f'; {note}' if note else ''))
    return 0
