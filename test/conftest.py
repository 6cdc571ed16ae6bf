"""Shared test set-up.

Every pytest run talks DDS on its own domain, kept on this machine, so parallel runs (and other
ROS 2 programs) never see each other's topics. Subprocesses started by tests inherit it.
"""

import os
import random
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_ROBOTS = REPO.parent / 'shared' / 'robots'

if 'IK_NODE_TEST_KEEP_DOMAIN' not in os.environ:
    os.environ['ROS_DOMAIN_ID'] = str(random.Random(os.getpid()).randint(1, 100))
# Jazzy keeps discovery on this machine with this; Humble ignores it (the domain still isolates).
os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')


@pytest.fixture
def shared_robot():
    """Path of a reference URDF in ../shared/robots, or skip when it is absent."""
    def get(name: str) -> Path:
        path = SHARED_ROBOTS / name
        if not path.is_file():
            pytest.skip(f'reference robot {path} is not present')
        return path
    return get
