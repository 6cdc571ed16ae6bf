"""``python -m ik_node.kernels warm|status``: :func:`ik_node.kernels.main`."""

import sys

from ik_node.kernels import main

sys.exit(main())
