"""The vendors' arms with collision meshes in ../shared/robots, for the collision tests: a
fixture giving their paths (skipping when absent) with the meshes' ament prefix on
``AMENT_PREFIX_PATH`` and the pair cache in a temporary folder."""

import os

import pytest

from pathlib import Path

SHARED_ROBOTS = Path(__file__).resolve().parents[3] / 'shared' / 'robots'


@pytest.fixture(scope='session')
def collision_robot(tmp_path_factory):
    """Path of a file under ../shared/robots, or skip when it is absent."""
    saved = {key: os.environ.get(key) for key in ('AMENT_PREFIX_PATH', 'IK_NODE_CACHE_DIR')}
    os.environ['AMENT_PREFIX_PATH'] = str(SHARED_ROBOTS / 'collision_prefix')
    os.environ['IK_NODE_CACHE_DIR'] = str(tmp_path_factory.mktemp('collision_pairs'))

    def get(name):
        path = SHARED_ROBOTS / name
        if not path.is_file():
            pytest.skip(f'reference robot {path} is not present')
        return path
    yield get
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
