"""The reference robots' folder (vendors' URDFs and meshes, read in place): the one the tests
read, named by ``IK_NODE_ROBOTS_DIR``, by default ``../shared/robots`` beside the checkout."""

import os
from pathlib import Path

#: The environment variable naming the reference robots' folder.
ROBOTS_DIR_VARIABLE = 'IK_NODE_ROBOTS_DIR'
SHARED_ROBOTS = Path(os.environ.get(ROBOTS_DIR_VARIABLE) or
                     Path(__file__).resolve().parents[2].parent / 'shared' / 'robots')


def add_collision_prefix() -> None:
    """Put the reference robots' mesh prefix (``collision_prefix``) first on
    ``AMENT_PREFIX_PATH``, keeping what is there (e.g. a sourced moveit_msgs prefix)."""
    prefix = str(SHARED_ROBOTS / 'collision_prefix')
    paths = [p for p in os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep) if p]
    if prefix not in paths:
        os.environ['AMENT_PREFIX_PATH'] = os.pathsep.join([prefix] + paths)
