"""``python -m ik_node.solvers.kernels warm|status``: :func:`ik_node.solvers.kernels.main`."""

import sys

from ik_node.solvers.kernels import main

sys.exit(main())
