"""``ik-solve`` (no subcommand): one inverse-kinematics solve from the command line, no ROS needed.

    ik-solve --urdf leg3.urdf --base base_link --tip foot --solver analytic_hip_knee \\
        --target 0.1 0.05 -0.45
    ik-solve --config arm6 --target 0.4 0.2 0.3 --orientation 1 0 0 0 --json
    ik-solve chains --urdf robot.urdf.xacro --xacro-args "prefix:=left_"   (ik_node.cli.chains)

``--config`` (a ROS parameters file, the node's) supplies defaults that the flags override.
Exit status: 0 target reached, 1 not reached (the best effort is printed), 2 bad arguments,
configuration, URDF or target (one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import List, Optional

import numpy as np

from ik_node.cli.common import (EXIT_NOT_REACHED, EXIT_REACHED, PROG, SUBCOMMANDS, Parser, fail,
                                flat_config)
from ik_node.config.node_config import DEFAULT_SOLVER, config_from_flat
from ik_node.errors import ConfigError, IkError
from ik_node.solvers import SOLVERS

def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``ik-solve``."""
    p = Parser(prog=PROG, description='Solve inverse kinematics for one target of a URDF chain.',
                epilog='Exit status: 0 reached, 1 not reached (best effort printed), 2 error. '
                       'Subcommands (each with --help): ' + ', '.join(SUBCOMMANDS) + '.')
    p.add_argument('--config', metavar='YAML',
                   help='ik_node parameters file (path, or a name in the package config/) '
                        'giving defaults for everything below')
    p.add_argument('--urdf', metavar='FILE',
                   help='URDF file: a path, or a name in the package urdf/ (e.g. leg3.urdf); '
                        'a .xacro file is expanded')
    p.add_argument('--xacro-args', metavar='"KEY:=VALUE ..."',
                   help='arguments of a .xacro --urdf file, e.g. "prefix:=left_"')
    p.add_argument('--base', metavar='LINK', help='base link (default: base_link)')
    p.add_argument('--tip', metavar='LINK', help='tip link')
    p.add_argument('--solver', metavar='NAME',
                   help=f'one of: {", ".join(sorted(SOLVERS))} (default: {DEFAULT_SOLVER})')
    p.add_argument('--param', metavar='KEY=VALUE', action='append', default=[],
                   help='solver parameter, repeatable; KEY is a parameter of the solver (or '
                        'solver.param); VALUE is read as YAML (1e-4, true, forward)')
    p.add_argument('--target', metavar=('X', 'Y', 'Z'), nargs=3, type=float, required=True,
                   help='tip position in the base frame [m]')
    p.add_argument('--orientation', metavar=('QX', 'QY', 'QZ', 'QW'), nargs=4, type=float,
                   help='tip orientation quaternion (x, y, z, w), base frame')
    p.add_argument('--seed', metavar='Q', nargs='+', type=float,
                   help='start joint positions [rad or m], one per joint (default: mid range)')
    p.add_argument('--json', action='store_true', help='print one JSON object (result fields)')
    return p


def human_lines(result, config, chain) -> List[str]:
    """The result as aligned ``name  value`` lines."""
    def num(v: Optional[float], unit: str) -> str:
        return '-' if v is None else f'{v:.6g} {unit}'

    tip = chain.fk(result.joint_positions)[:3, 3]
    joints = ' '.join(f'{n}={v:.6f}' for n, v in zip(result.joint_names, result.joint_positions))
    rows = [
        ('solver', f'{config.solver} ({config.urdf_file or "robot_description"}: '
                   f'{config.base_link} -> {config.tip_link})'),
        ('reachable', f'{"yes" if result.reachable else "no"} ({result.status.value})'),
        ('joints', joints),
        ('tip position', ' '.join(f'{v:.6f}' for v in tip) + ' m'),
        ('position error', num(result.position_error, 'm')),
        ('orientation error', 'ignored (position-only solver)' if result.orientation_ignored
         else num(result.orientation_error, 'rad')),
        ('min residual', num(result.min_residual, 'm')),
        ('iterations', str(result.iterations)),
        ('solve time', f'{result.solve_time * 1e3:.3f} ms'),
    ]
    if result.message:
        rows.append(('message', result.message))
    width = max(len(k) for k, _ in rows)
    return [f'{k:<{width}}  {v}' for k, v in rows]


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of ``ik-solve``. Returns the exit status (0 reached, 1 not, 2 error)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    from ik_node.config.node_config import build_chain, build_solver
    try:
        config = config_from_flat(flat_config(args), source='command line')
        if config.branched:
            raise ConfigError(f'the configuration names several tips ({", ".join(config.tip_links)}'
                              '); ik-solve solves for one: give --tip LINK')
        chain = build_chain(config)
        solver = build_solver(config, chain)
        seed = None if args.seed is None else np.array(args.seed)
        result = solver.solve(np.array(args.target), args.orientation, seed)
    except IkError as exc:
        fail(str(exc))
    if args.json:
        print(json.dumps(result.as_dict()))
    else:
        print('\n'.join(human_lines(result, config, chain)))
    return EXIT_REACHED if result.reachable else EXIT_NOT_REACHED


if __name__ == '__main__':
    sys.exit(main())
