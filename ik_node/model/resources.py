"""Where the package's data files (URDF models, configuration files) are.

The share directory is looked up in this order:

1. the source tree this module was imported from (a checkout with ``package.xml`` beside the
   ``ik_node`` package): the data then always matches the code being run, even when an older
   copy of the package is installed too;
2. an ament (colcon or ROS) install: ``ament_index_python.get_package_share_directory``;
3. a pip install: ``<sys.prefix>/share/ik_node`` (where ``setup.py``'s ``data_files`` go).

No ROS import is needed: ``ament_index_python`` is used only if it is importable.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional, Union

from ik_node.errors import ConfigError

PACKAGE = 'ik_node'


def _source_tree() -> Optional[Path]:
    root = Path(__file__).resolve().parents[2]  # ik_node/model/resources.py -> the checkout
    return root if (root / 'package.xml').is_file() and (root / PACKAGE).is_dir() else None


def _ament_share() -> Optional[Path]:
    try:
        from ament_index_python.packages import get_package_share_directory
    except ImportError:
        return None
    try:
        return Path(get_package_share_directory(PACKAGE))
    except Exception:  # PackageNotFoundError, or a broken AMENT_PREFIX_PATH
        return None


def share_dir() -> Path:
    """The package's share directory (holds ``urdf/``, ``config/``, ``launch/``, ``rviz/``).

    Raises:
        ConfigError: no source tree, ament install or pip install of the package was found.
    """
    for candidate in (_source_tree(), _ament_share(), Path(sys.prefix) / 'share' / PACKAGE):
        if candidate is not None and candidate.is_dir():
            return candidate
    raise ConfigError(f'cannot find the share directory of {PACKAGE}: not run from a source '
                      f'tree, not found by ament_index_python, and {sys.prefix}/share/{PACKAGE} '
                      'does not exist')


def available(kind: str, suffix: str) -> List[str]:
    """File names in the share directory's ``kind`` folder ending in ``suffix``, sorted."""
    try:
        folder = share_dir() / kind
    except ConfigError:
        return []
    return sorted(p.name for p in folder.glob(f'*{suffix}')) if folder.is_dir() else []


def _find(name: Union[str, Path], kind: str, suffix: str, what: str) -> Path:
    path = Path(name).expanduser()
    if path.is_file():
        return path
    if len(path.parts) == 1:  # a bare name: look in the package
        try:
            packaged = share_dir() / kind / path.name
        except ConfigError:
            packaged = None
        if packaged is not None and packaged.is_file():
            return packaged
        if packaged is not None and not path.suffix:
            with_suffix = packaged.with_suffix(suffix)
            if with_suffix.is_file():
                return with_suffix
    names = available(kind, suffix)
    raise ConfigError(f'{what} {str(name)!r} not found (neither a file nor a name in the '
                      f"package's {kind}/ folder). Available: {', '.join(names) or 'none'}")


def urdf_path(name: Union[str, Path]) -> Path:
    """Path of a URDF: an existing file, or a bare name (``'leg3.urdf'``, ``'leg3'``) in ``urdf/``.

    Raises:
        ConfigError: not found; the message lists the packaged URDFs.
    """
    return _find(name, 'urdf', '.urdf', 'URDF file')


def config_path(name: Union[str, Path]) -> Path:
    """Path of a config YAML: an existing file, or a bare name (``'leg3'``) in ``config/``.

    Raises:
        ConfigError: not found; the message lists the packaged configs.
    """
    return _find(name, 'config', '.yaml', 'config file')
