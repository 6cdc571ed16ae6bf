"""The collision parameters of the node as the solver's collision check takes them: the SRDF
(``srdf_file`` or ``robot_description_semantic``), the ground plane (``collision.ground``,
``collision.ground_z``) and ``collision.obstacles``.

``collision.obstacles`` is text, one obstacle per ``;``-separated item, in the base frame [m]::

    NAME box X Y Z SIZE_X SIZE_Y SIZE_Z
    NAME sphere X Y Z RADIUS
    NAME cylinder X Y Z RADIUS LENGTH       (its axis along the base frame's z)
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

import numpy as np

from ik_node.errors import ConfigError

SIZES = {'box': 3, 'sphere': 1, 'cylinder': 2}


def ground_z_from(values: Dict[str, Any]) -> Optional[float]:
    """The ground plane's height [m] of ``collision.ground`` (bool) and ``collision.ground_z``
    (a number), or None when ``collision.ground`` is false (no plane).

    Raises:
        ConfigError: a height that is not a finite number.
    """
    if not values.get('collision.ground', False):
        return None
    z = values.get('collision.ground_z', 0.0)
    if isinstance(z, bool) or not isinstance(z, (int, float)) or not math.isfinite(z):
        raise ConfigError(f'collision.ground_z must be a finite height [m] in the base frame, '
                          f'got {z!r}')
    return float(z)


def obstacles_from_text(text: str) -> Tuple[Any, ...]:
    """The obstacles of ``collision.obstacles`` (see the module docstring).

    Raises:
        ConfigError: an item that is not ``NAME KIND X Y Z SIZES...`` with a known kind, the
            right number of sizes and finite numbers (the message quotes it).
    """
    from ik_node.collision import CollisionModelError, Obstacle
    out = []
    for item in text.split(';'):
        words = item.split()
        if not words:
            continue
        if len(words) < 5 or words[1] not in SIZES or len(words) != 5 + SIZES[words[1]]:
            raise ConfigError(
                f'collision.obstacles item {item.strip()!r}: expected "NAME box X Y Z SX SY SZ", '
                '"NAME sphere X Y Z RADIUS" or "NAME cylinder X Y Z RADIUS LENGTH" [m]')
        try:
            numbers = [float(w) for w in words[2:]]
        except ValueError:
            raise ConfigError(f'collision.obstacles item {item.strip()!r}: not numbers') from None
        if not all(math.isfinite(v) for v in numbers[:3]):
            raise ConfigError(f'collision.obstacles item {item.strip()!r}: position not finite')
        T = np.eye(4)
        T[:3, 3] = numbers[:3]
        try:
            out.append(Obstacle(words[0], words[1], tuple(numbers[3:]), T))
        except CollisionModelError as exc:
            raise ConfigError(f'collision.obstacles: {exc}') from None
    return tuple(out)


def srdf_text(srdf_file: str, robot_description_semantic: str) -> Optional[str]:
    """The SRDF's text: ``robot_description_semantic`` when set, else ``srdf_file``'s content,
    else None.

    Raises:
        ConfigError: the file cannot be read.
    """
    if robot_description_semantic.strip():
        return robot_description_semantic
    if not srdf_file.strip():
        return None
    try:
        return Path(srdf_file).expanduser().read_text()
    except OSError as exc:
        raise ConfigError(f'srdf_file {srdf_file!r} cannot be read: {exc.strerror}') from None


def collision_world(values: Dict[str, Any]) -> Dict[str, Any]:
    """``Solver.configure_collision`` arguments of the node's collision parameters (the SRDF
    strings, ``collision.ground``, ``collision.ground_z``, ``collision.obstacles``), or {} when
    none is set (the solver's defaults: computed pairs, no world)."""
    world = {'srdf': srdf_text(values.get('srdf_file', ''),
                               values.get('robot_description_semantic', '')),
             'ground_z': ground_z_from(values),
             'obstacles': obstacles_from_text(values.get('collision.obstacles', ''))}
    if world['srdf'] is None and world['ground_z'] is None and not world['obstacles']:
        return {}
    return world
