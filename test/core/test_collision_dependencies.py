"""A collision library that is missing, or installed and failing to import, is reported with
how to install it: collision checking refuses with that message, nothing else breaks."""

import importlib

import pytest

from ik_node.collision import dependencies
from ik_node.collision.dependencies import CollisionUnavailable


def _broken(name):
    """importlib.import_module that fails for ``name`` as trimesh 5 does under numpy 1.21."""
    real = importlib.import_module

    def import_module(module, *args, **kwargs):
        if module == name:
            raise TypeError("'numpy._DTypeMeta' object is not subscriptable")
        return real(module, *args, **kwargs)
    return import_module


def _absent(name):
    real = importlib.import_module

    def import_module(module, *args, **kwargs):
        if module == name:
            raise ModuleNotFoundError(f'No module named {module!r}')
        return real(module, *args, **kwargs)
    return import_module


@pytest.mark.parametrize('make', [_broken, _absent], ids=['broken', 'absent'])
def test_an_unimportable_library_counts_as_missing_and_require_says_how_to_install(
        monkeypatch, make):
    monkeypatch.setattr(dependencies.importlib, 'import_module', make('trimesh'))
    assert 'trimesh' in dependencies.missing()
    assert not dependencies.available()
    with pytest.raises(CollisionUnavailable) as info:
        dependencies.require('trimesh')
    message = str(info.value)
    assert "'trimesh'" in message and 'python3-trimesh-pip' in message
    assert "trimesh<5" in message and 'ik_node[collision]' in message


def test_every_needed_library_names_its_rosdep_key():
    for name, how in dependencies.NEEDED.items():
        assert 'rosdep key ' in how, name
