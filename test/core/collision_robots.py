"""The vendors' arms with collision meshes among the reference robots (``reference_robots``:
``IK_NODE_ROBOTS_DIR``), for the collision tests: a fixture giving their paths (skipping when
absent) with the meshes' ament prefix on ``AMENT_PREFIX_PATH`` and the pair cache in a temporary
folder, both for the module that uses it only (restored after it, as monkeypatch restores)."""

import math
import os

import numpy as np
import pytest
import transforms3d

from ik_node import Chain

from reference_robots import SHARED_ROBOTS, reference_robot


@pytest.fixture(scope='session')
def collision_cache_dir(tmp_path_factory):
    """One pair-table cache folder for the whole run (the tables are made once)."""
    return tmp_path_factory.mktemp('collision_pairs')


@pytest.fixture(scope='module')
def collision_robot(collision_cache_dir):
    """Path of a file among the reference robots, or skip when it is absent; the meshes'
    prefix first on ``AMENT_PREFIX_PATH`` while the module runs."""
    prefix = str(SHARED_ROBOTS / 'collision_prefix')
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv('AMENT_PREFIX_PATH', os.pathsep.join(
            p for p in (prefix, os.environ.get('AMENT_PREFIX_PATH', '')) if p))
        patch.setenv('IK_NODE_CACHE_DIR', str(collision_cache_dir))
        yield reference_robot


#: The vendors' arms with meshes: name -> (base link, tip link).
ROBOTS = {'ur5e': ('base_link', 'tool0'), 'fr3': ('fr3_link0', 'fr3_hand_tcp')}


def chain_of(collision_robot, name):
    base, tip = ROBOTS[name]
    return Chain.from_urdf_file(collision_robot(f'{name}.urdf'), base, tip)


def free_targets(chain, checker, rng, count):
    """``(q, position, quat_xyzw)`` of random collision-free configurations."""
    out = []
    lower = np.maximum(chain.lower, -math.pi)
    upper = np.minimum(chain.upper, math.pi)
    while len(out) < count:
        q = rng.uniform(lower, upper)
        if not checker.is_free(q):
            continue
        T = chain.fk(q)
        w, x, y, z = transforms3d.quaternions.mat2quat(T[:3, :3])
        out.append((q, T[:3, 3].copy(), (x, y, z, w)))
    return out
