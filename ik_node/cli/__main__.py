"""``python -m ik_node.cli``: the same as ``ik-solve``."""

import sys

from ik_node.cli import main

sys.exit(main())
