"""Where the benchmarks find the reference robots: ../shared/robots beside the checkout, with
the collision meshes' ament prefix."""

import os
from pathlib import Path

SHARED_ROBOTS = Path(__file__).resolve().parents[3] / 'shared' / 'robots'


def robot_path(name: str) -> Path:
    """``../shared/robots/<name>.urdf``, with ``AMENT_PREFIX_PATH`` set for its meshes."""
    os.environ.setdefault('AMENT_PREFIX_PATH', str(SHARED_ROBOTS / 'collision_prefix'))
    path = SHARED_ROBOTS / f'{name}.urdf'
    if not path.is_file():
        raise SystemExit(f'reference robot {path} is not present')
    return path
