"""Where the tests find the reference robots (vendors' URDFs and meshes, read in place, never
copied into the repository): the folder named by ``IK_NODE_ROBOTS_DIR``, by default
``../shared/robots`` beside the checkout. Tests that need one skip, naming the path and the
variable, when it is absent."""

import os
from pathlib import Path

import pytest

#: The environment variable naming the reference robots' folder.
ROBOTS_DIR_VARIABLE = 'IK_NODE_ROBOTS_DIR'
REPO = Path(__file__).resolve().parents[1]
SHARED_ROBOTS = Path(os.environ.get(ROBOTS_DIR_VARIABLE) or
                     REPO.parent / 'shared' / 'robots').resolve()


def skip_reason(path) -> str:
    """Why a test needing ``path`` skips."""
    return (f'reference robot {path} is not present (set {ROBOTS_DIR_VARIABLE} to the folder '
            f'of the reference robots; default ../shared/robots beside the checkout)')


def reference_robot(name: str) -> Path:
    """Path of ``name`` in the reference robots' folder, or skip the test saying why."""
    path = SHARED_ROBOTS / name
    if not path.exists():
        pytest.skip(skip_reason(path))
    return path
