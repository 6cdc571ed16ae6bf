"""A fresh process's first answer that needs a collision retry: what the check needs is built
with the solver, so that answer is reached collision-free within its budget, and it is the
answer the same target gets again.

On the vendors' UR5e with its meshes (the reference robots, see ``collision_robots``).
"""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import transforms3d

from ik_node import Chain, make_solver
from ik_node.collision import checker_for

REPO = Path(__file__).resolve().parents[2]

#: Run in a fresh interpreter: build the checked solver, solve each target twice, print results.
CHILD = '''
import json, sys
from ik_node import Chain, make_solver
path, targets = sys.argv[1], json.loads(sys.argv[2])
chain = Chain.from_urdf_file(path, 'base_link', 'tool0')
solver = make_solver('damped_jacobian', chain)
out = []
for position, quat, seed in targets:
    for _ in range(2):
        r = solver.solve(position, quat, seed)
        out.append([r.status.value, r.reachable, list(r.joint_positions), r.message])
print(json.dumps(out))
'''


def targets_needing_a_retry(chain, count=2, seed=5):
    """Poses of collision-free configurations whose unchecked answer (from a random seed)
    collides: ``[(position, quat_xyzw, seed), ...]``."""
    checker = checker_for(chain)
    unchecked = make_solver('damped_jacobian', chain, {'self_collision': False})
    rng = np.random.default_rng(seed)
    low, high = np.maximum(chain.lower, -math.pi), np.minimum(chain.upper, math.pi)
    found = []
    for _ in range(2000):
        q = rng.uniform(low, high)
        q_seed = rng.uniform(low, high)
        if not checker.is_free(q):
            continue
        T = chain.fk(q)
        w, x, y, z = transforms3d.quaternions.mat2quat(T[:3, :3])
        quat = [float(x), float(y), float(z), float(w)]
        answer = unchecked.solve(T[:3, 3], quat, q_seed)
        if answer.reachable and not checker.is_free(answer.joint_positions):
            found.append((T[:3, 3].tolist(), quat, q_seed.tolist()))
            if len(found) == count:
                return found
    pytest.fail(f'no target needing a retry among 2000 (seed {seed})')


#: Fresh processes tried before the test fails. A solve's budget is wall time (5 ms): on a busy
#: machine the scheduler can take it from either solve of one process, and that process's two
#: answers then differ by chance; something built inside the first solve's budget makes them
#: differ in every process.
ATTEMPTS = 5


def first_answer_faults(chain, path, targets):
    """Solve ``targets`` twice each in a fresh process: what is wrong with its answers (empty
    when every first answer is reached collision-free and repeated exactly)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO), os.environ.get('PYTHONPATH', '')]))
    done = subprocess.run([sys.executable, '-c', CHILD, str(path), json.dumps(targets)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    answers = json.loads(done.stdout.strip().splitlines()[-1])
    checker = checker_for(chain)
    faults = []
    for k, (position, quat, _) in enumerate(targets):
        first, second = answers[2 * k], answers[2 * k + 1]
        status, reachable, q, message = first
        T = chain.fk(q)
        x, y, z, w = quat
        R = transforms3d.quaternions.quat2mat((w, x, y, z))
        if not (reachable and status == 'converged' and checker.is_free(q)
                and np.linalg.norm(T[:3, 3] - position) < 1e-4
                and np.allclose(T[:3, :3], R, atol=1e-3)):
            faults.append(f'target {k}: first answer {status}, free {checker.is_free(q)}: '
                          f'{message}')
        elif not (second[0] == status and second[1] and np.allclose(second[2], q, atol=1e-9)):
            faults.append(f'target {k}: second answer differs: {second[0]}: {second[3]}')
    return faults


@pytest.mark.slow
def test_a_fresh_processs_first_retry_is_reached_collision_free_and_repeats(collision_robot):
    path = collision_robot('ur5e.urdf')
    chain = Chain.from_urdf_file(path, 'base_link', 'tool0')
    targets = targets_needing_a_retry(chain)
    attempts = []
    for _ in range(ATTEMPTS):
        attempts.append(first_answer_faults(chain, path, targets))
        if not attempts[-1]:
            return
    pytest.fail(f'in {ATTEMPTS} fresh processes: {attempts}')
