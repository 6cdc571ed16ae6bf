"""``ik-solve``: one inverse-kinematics solve from the command line, no ROS needed.

    ik-solve --urdf leg3.urdf --base base_link --tip foot --solver analytic_hip_knee \\
        --target 0.1 0.05 -0.45
    ik-solve --config arm6 --target 0.4 0.2 0.3 --orientation 1 0 0 0 --json

``--config`` (a ROS parameters file, the node's) supplies defaults that the flags override.
Exit status: 0 target reached, 1 not reached (the best effort is printed), 2 bad arguments,
configuration, URDF or target (one line on stderr).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import Any, Dict, List, NoReturn, Optional

import numpy as np

from ik_node.config import (DEFAULT_SOLVER, canonical_value, config_from_flat,
                            config_from_mapping, flatten, load_yaml, parameters_of_file,
                            parse_scalar)
from ik_node.errors import ConfigError, IkError
from ik_node.solvers import SOLVERS

PROG = 'ik-solve'
EXIT_REACHED, EXIT_NOT_REACHED, EXIT_ERROR = 0, 1, 2
#: Subcommands, ``ik-solve <name> ...``: name -> module with ``main(argv) -> int``, imported
#: when used.
SUBCOMMANDS = {
    'reach-map': 'ik_node.cli_reach',
}


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr, exit status 2."""

    def error(self, message: str) -> NoReturn:
        fail(message)


def fail(message: str) -> NoReturn:
    """Print ``ik-solve: error: <message>`` (one line) and exit with status 2."""
    print(f'{PROG}: error: {" ".join(str(message).split())}', file=sys.stderr)
    sys.exit(EXIT_ERROR)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``ik-solve``."""
    p = _Parser(prog=PROG, description='Solve inverse kinematics for one target of a URDF chain.',
                epilog='Exit status: 0 reached, 1 not reached (best effort printed), 2 error. '
                       'Subcommands (each with --help): ' + ', '.join(SUBCOMMANDS) + '.')
    p.add_argument('--config', metavar='YAML',
                   help='ik_node parameters file (path, or a name in the package config/) '
                        'giving defaults for everything below')
    p.add_argument('--urdf', metavar='FILE',
                   help='URDF file: a path, or a name in the package urdf/ (e.g. leg3.urdf)')
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


def flat_config(args: argparse.Namespace) -> Dict[str, Any]:
    """The flat parameter mapping of ``--config`` overlaid with the flags."""
    flat: Dict[str, Any] = {}
    if args.config:
        from ik_node.resources import config_path
        path = config_path(args.config)
        try:
            text = path.read_text()
        except OSError as exc:
            raise ConfigError(f'cannot read config file {str(path)!r}: {exc.strerror}') from None
        data = load_yaml(text, path.name)
        config_from_mapping(data, source=path.name)  # the file alone must be valid
        flat = flatten(parameters_of_file(data, path.name), path.name)
    if args.urdf is not None:
        flat['urdf_file'] = args.urdf
        flat.pop('robot_description', None)
    if args.base is not None:
        flat['base_link'] = args.base
    if args.tip is not None:
        flat['tip_link'] = args.tip
        flat.pop('tip_links', None)
    if args.solver is not None:
        flat['solver'] = args.solver
    solver = canonical_value('solver', flat.get('solver', DEFAULT_SOLVER))  # ' FABRIK ' too
    for item in args.param:
        key, sep, text = item.partition('=')
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f'--param {item!r}: expected KEY=VALUE, e.g. max_iterations=200')
        if key.split('.', 1)[0] not in SOLVERS:
            key = f'{solver}.{key}'
        flat[key] = parse_scalar(text)
    if not flat.get('urdf_file') and not flat.get('robot_description'):
        raise ConfigError('no robot: give --urdf FILE (or --config YAML naming urdf_file)')
    if not flat.get('tip_link') and not flat.get('tip_links'):
        raise ConfigError('no tip link: give --tip LINK (or --config YAML naming tip_link)')
    return flat


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
    if argv and argv[0] in SUBCOMMANDS:
        return importlib.import_module(SUBCOMMANDS[argv[0]]).main(argv[1:])
    args = build_parser().parse_args(argv)
    from ik_node.config import build_chain, build_solver
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
