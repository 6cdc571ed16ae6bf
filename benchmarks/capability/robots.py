"""Where the benchmarks find the reference robots: the folder ``IK_NODE_ROBOTS_DIR`` names, by
default ../shared/robots beside the checkout, with the collision meshes' ament prefix."""

from pathlib import Path

from benchmarks.common.robots import SHARED_ROBOTS, add_collision_prefix


def robot_path(name: str) -> Path:
    """``<robots>/<name>.urdf``, with its meshes' prefix on ``AMENT_PREFIX_PATH``."""
    add_collision_prefix()
    path = SHARED_ROBOTS / f'{name}.urdf'
    if not path.is_file():
        raise SystemExit(f'reference robot {path} is not present')
    return path
