"""Shared test helpers (``test/closest_reference.py``, ``test/ros/harness.py``, ...) for the
benchmarks that drive the same code paths as the tests.

The test folders are no package (pytest puts them on ``sys.path`` itself), so a benchmark loads
such a helper from its file; a helper's own plain-name imports of other test helpers
(``harness`` imports ``urdf_limits``) are loaded first, as pytest would find them.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

TEST = Path(__file__).resolve().parents[2] / 'test'
#: Where each shared test helper lives, and the helpers it imports by plain name.
HELPERS = {
    'urdf_limits': (TEST / 'urdf_limits.py', ()),
    'closest_reference': (TEST / 'closest_reference.py', ()),
    'smooth_paths': (TEST / 'core' / 'smooth_paths.py', ()),
    'harness': (TEST / 'ros' / 'harness.py', ('urdf_limits',)),
}


def load_test_helper(name: str) -> ModuleType:
    """The test helper ``name`` (one of :data:`HELPERS`), loaded once from its file.

    Raises:
        KeyError: ``name`` is not a known helper (the message lists them).
    """
    if name in sys.modules:
        return sys.modules[name]
    if name not in HELPERS:
        raise KeyError(f'no test helper {name!r}; known: {", ".join(sorted(HELPERS))}')
    path, needs = HELPERS[name]
    for needed in needs:
        load_test_helper(needed)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
