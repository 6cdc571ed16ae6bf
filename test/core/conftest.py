"""Fixtures of the core tests: the packaged chains several test modules solve on."""

from pathlib import Path

import pytest

from ik_node import Chain

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope='module')
def leg():
    """urdf/leg3.urdf, base_link to foot."""
    return Chain.from_urdf_file(REPO / 'urdf' / 'leg3.urdf', 'base_link', 'foot')


@pytest.fixture(scope='module')
def arm6():
    """urdf/arm6.urdf, base_link to tool0."""
    return Chain.from_urdf_file(REPO / 'urdf' / 'arm6.urdf', 'base_link', 'tool0')
