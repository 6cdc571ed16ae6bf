"""The optional libraries collision checking needs, imported on first use.

trimesh loads meshes (STL, OBJ; Collada through pycollada) and computes convex hulls (with
scipy's qhull); python-fcl (FCL's Python binding) is the narrow phase (GJK/EPA between convex
hulls and primitives, BVH between raw meshes). Without them every other part of ik_node works;
collision checking then says what to install instead of failing later. A library that is
installed but fails to import (trimesh 5 needs numpy >= 1.22; Humble's numpy is 1.21) counts as
missing, with its error and the fix.
"""

from __future__ import annotations

import importlib
from typing import List

from ik_node.errors import ConfigError

#: module -> how to install it (pip name, rosdep key).
NEEDED = {
    'trimesh': "pip install trimesh (rosdep key python3-trimesh-pip); with numpy < 1.22: "
               "pip install 'trimesh<5'",
    'scipy': "pip install scipy (rosdep key python3-scipy)",
    'fcl': "pip install python-fcl (rosdep key python-fcl-pip)",
}
INSTALL_HINT = "pip install 'ik_node[collision]' (trimesh, scipy, python-fcl, pycollada)"


class CollisionUnavailable(ConfigError):
    """Collision checking was asked for, but a library it needs is not installed."""


def missing() -> List[str]:
    """The modules of :data:`NEEDED` that cannot be imported."""
    out = []
    for name in NEEDED:
        try:
            importlib.import_module(name)
        except Exception:  # not installed, or installed and broken (ImportError, TypeError, ...)
            out.append(name)
    return out


def available() -> bool:
    """True when every library collision checking needs is importable."""
    return not missing()


def require(name: str):
    """Import ``name`` (one of :data:`NEEDED`), or raise :class:`CollisionUnavailable` saying
    how to install it."""
    try:
        return importlib.import_module(name)
    except Exception as exc:  # not installed, or installed and broken (ImportError, TypeError, ...)
        raise CollisionUnavailable(
            f'collision checking needs the Python module {name!r} ({NEEDED.get(name, name)}): '
            f'{exc}. Install the extra: {INSTALL_HINT}') from None
