"""Task poses from a file for ``ik-solve reachable`` and ``ik-solve base-placement``: a CSV (or
whitespace-separated) table of ``x y z qx qy qz qw`` rows, with an optional header line, or a
YAML list of such rows (or of mappings with those keys)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ik_node.errors import ConfigError

KEYS = ('x', 'y', 'z', 'qx', 'qy', 'qz', 'qw')


def read_poses(path: Path) -> np.ndarray:
    """(N, 7) float poses from ``path`` (not yet checked for NaN: the queries do that).

    Raises:
        ConfigError: the file is missing, unreadable, or not such a table.
    """
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ConfigError(f'cannot read poses file {str(path)!r}: {exc.strerror}') from None
    if Path(path).suffix.lower() in ('.yaml', '.yml'):
        from ik_node.config.files import load_yaml
        data = load_yaml(text, str(path))
        if isinstance(data, dict) and 'poses' in data:
            data = data['poses']
        if not isinstance(data, list):
            raise ConfigError(f'{path}: expected a list of poses [x, y, z, qx, qy, qz, qw]')
        rows = [[row[k] for k in KEYS] if isinstance(row, dict) else row for row in data]
    else:
        rows = []
        for number, line in enumerate(text.splitlines(), 1):
            fields = line.replace(',', ' ').split()
            if not fields or fields[0].startswith('#'):
                continue
            if number == 1 and fields[0].lower() == 'x':
                continue  # a header
            rows.append(fields)
    try:
        poses = np.array(rows, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f'{path}: poses must be rows of 7 numbers x y z qx qy qz qw '
                          f'({exc})') from None
    if poses.ndim != 2 or poses.shape[1] != 7 or not len(poses):
        raise ConfigError(f'{path}: expected rows of 7 numbers x y z qx qy qz qw, got shape '
                          f'{poses.shape}')
    return poses
