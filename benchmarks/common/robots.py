"""The reference robots' folder (vendors' URDFs and meshes, read in place): the one the tests
read, named by ``IK_NODE_ROBOTS_DIR``, by default ``../shared/robots`` beside the checkout."""

import os
from pathlib import Path

#: The environment variable naming the reference robots' folder.
ROBOTS_DIR_VARIABLE = 'IK_NODE_ROBOTS_DIR'
SHARED_ROBOTS = Path(os.environ.get(ROBOTS_DIR_VARIABLE) or
                     Path(__file__).resolve().parents[2].parent / 'shared' / 'robots')
