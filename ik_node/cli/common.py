"""What every ``ik-solve`` subcommand shares: the program name, exit codes, one-line errors,
and the flat configuration of ``--config`` overlaid with the flags."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Dict, NoReturn

from ik_node.config.node_config import (DEFAULT_SOLVER, canonical_value, config_from_mapping,
                                        flatten, load_yaml, parameters_of_file, parse_scalar)
from ik_node.errors import ConfigError
from ik_node.solvers import SOLVERS

PROG = 'ik-solve'
EXIT_REACHED, EXIT_NOT_REACHED, EXIT_ERROR = 0, 1, 2
#: Subcommands, ``ik-solve <name> ...``: name -> module with ``main(argv) -> int``, imported
#: when used (``ik-solve`` with no subcommand name is ``solve``). ``target`` and ``service`` talk
#: to a running node over ROS 2: their modules are in ``ik_node.ros`` (the only package that
#: imports rclpy).
SUBCOMMANDS: Dict[str, str] = {
    'base-placement': 'ik_node.cli.base_placement',
    'capability-map': 'ik_node.cli.capability_map',
    'chains': 'ik_node.cli.chains',
    'collisions': 'ik_node.cli.collisions',
    'reach-map': 'ik_node.cli.reach_map',
    'reachable': 'ik_node.cli.reachable',
    'target': 'ik_node.ros.app.cli_target_client',
    'service': 'ik_node.ros.services.cli_client',
}


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr, exit status 2."""

    def error(self, message: str) -> NoReturn:
        fail(message)


def fail(message: str) -> NoReturn:
    """Print ``ik-solve: error: <message>`` (one line) and exit with status 2."""
    print(f'{PROG}: error: {" ".join(str(message).split())}', file=sys.stderr)
    sys.exit(EXIT_ERROR)


def flat_config(args: argparse.Namespace) -> Dict[str, Any]:
    """The flat parameter mapping of ``--config`` overlaid with the flags."""
    flat: Dict[str, Any] = {}
    if args.config:
        from ik_node.model.resources import config_path
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
        flat.pop('xacro_args', None)  # the config's arguments were for its own file
    if args.xacro_args is not None:
        flat['xacro_args'] = args.xacro_args
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
