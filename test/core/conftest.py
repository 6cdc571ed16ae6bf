"""Fixtures of the core tests: the packaged chains several test modules solve on; the
``collision`` mark (tests that need the collision extra, skipped without it)."""

from pathlib import Path

import pytest

from ik_node import Chain
from ik_node.collision import dependencies

REPO = Path(__file__).resolve().parents[2]


def pytest_configure(config):
    config.addinivalue_line('markers', 'collision: needs the collision extra (python-fcl, '
                                       'trimesh, scipy); skipped, naming what is missing, without')


def pytest_collection_modifyitems(config, items):
    """Tests marked ``collision`` are skipped where a library of the collision extra does not
    import, with the missing names and how to install them."""
    marked = [item for item in items if item.get_closest_marker('collision')]
    missing = dependencies.missing() if marked else []
    if missing:
        skip = pytest.mark.skip(reason=f'needs {", ".join(missing)}: '
                                       f'{dependencies.INSTALL_HINT}')
        for item in marked:
            item.add_marker(skip)


@pytest.fixture(scope='module')
def leg():
    """urdf/leg3.urdf, base_link to foot."""
    return Chain.from_urdf_file(REPO / 'urdf' / 'leg3.urdf', 'base_link', 'foot')


@pytest.fixture(scope='module')
def arm6():
    """urdf/arm6.urdf, base_link to tool0."""
    return Chain.from_urdf_file(REPO / 'urdf' / 'arm6.urdf', 'base_link', 'tool0')
