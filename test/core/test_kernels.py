"""The compiled kernels load in a background thread: a solver answers on the Python path until
they are loaded, takes them from the next solve on, and stays on the Python path for good when
numba cannot serve; the path that serves is said in one line.

The loading thread's module state is replaced by a fresh one in each test (and put back), and
the kernel modules by this module, whose ``compile()`` waits for the test or fails.
"""

import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from ik_node.model.chain import Chain
from ik_node import kernels
from ik_node.solvers import make_solver
from ik_node.solvers.damped_jacobian import compiled

REPO = Path(__file__).resolve().parents[2]
ARM6 = REPO / 'urdf' / 'arm6.urdf'

#: What this module's compile() does: wait for ``release``, then fail when ``failure`` is set.
release = threading.Event()
failure = []


def compile():  # noqa: A001 - the kernel modules' entry point is named so
    release.wait(60.0)
    if failure:
        raise RuntimeError(failure[0])


@pytest.fixture
def fresh_loader(monkeypatch):
    """kernels' state as in a new process, its kernel module this one; the real kernels stay
    loaded for the solvers (compiled.available() is left as numba makes it)."""
    if not compiled.available():
        pytest.skip(kernels.serving())
    monkeypatch.setattr(kernels, '_done', threading.Event())
    monkeypatch.setattr(kernels, '_thread', None)
    monkeypatch.setattr(kernels, '_failure', '')
    monkeypatch.setattr(kernels, '_listeners', [])
    monkeypatch.setattr(kernels, 'KERNEL_MODULES', (__name__,))
    release.clear()
    failure.clear()
    yield
    release.set()
    if kernels._thread is not None:
        kernels._thread.join(60.0)


def _target(chain, seed):
    rng = np.random.default_rng(seed)
    return chain.fk(rng.uniform(chain.lower, chain.upper))[:3, 3], \
        rng.uniform(chain.lower, chain.upper)


def test_the_python_path_answers_while_the_kernels_load_then_they_serve(fresh_loader):
    chain = Chain.from_urdf_file(ARM6, 'base_link', 'tool0')
    said = []
    solver = make_solver('damped_jacobian', chain, {'timeout': 60.0})
    kernels.report(said.append)
    assert kernels._thread is None, 'building a solver does not load the kernels'
    assert said == [f'solver path: pure Python; the compiled kernels (numba '
                    f'{kernels._numba_version()}) load in the background once a solve uses '
                    'them']
    p, q = _target(chain, 1)
    result = solver.solve(p, None, q)  # answered now, on the Python path; starts the loading
    assert result.reachable and np.linalg.norm(chain.fk(result.joint_positions)[:3, 3] - p) \
        < 1e-4
    assert kernels._thread is not None and not kernels.ready()
    assert not solver._compiled.serves(False)
    assert kernels.serving() == ('solver path: pure Python while the compiled kernels (numba '
                                 f'{kernels._numba_version()}) load in the background')
    release.set()
    assert kernels.wait(60.0)
    assert solver._compiled.serves(False)
    kernels._thread.join(60.0)  # the listeners are told after the kernels are marked ready
    assert said[1:] == [f'solver path: compiled kernels (numba {kernels._numba_version()})']
    result = solver.solve(p, None, q)
    assert result.reachable


def test_a_numba_that_fails_leaves_the_python_path_serving_for_good(fresh_loader):
    failure.append('LLVM cannot compile here')
    release.set()
    chain = Chain.from_urdf_file(ARM6, 'base_link', 'tool0')
    solver = make_solver('damped_jacobian', chain, {'timeout': 60.0})
    p, q = _target(chain, 2)
    assert solver.solve(p, None, q).reachable  # starts the loading, which fails
    assert not kernels.wait(60.0)
    assert kernels.serving() == ('solver path: pure Python (numba failed: RuntimeError: LLVM '
                                 'cannot compile here)')
    assert not kernels.available() and not solver._compiled.serves(True)
    assert make_solver('damped_jacobian', chain, {})._compiled is None
    assert solver.solve(p, None, q).reachable


def test_warm_compiles_the_kernels_and_says_which_path_serves():
    out = subprocess.run([sys.executable, '-m', 'ik_node.kernels', 'warm'],
                         capture_output=True, text=True, timeout=600, cwd=REPO)
    assert out.returncode == 0, out.stderr
    if compiled.available():
        assert out.stdout.startswith('solver path: compiled kernels (numba ')
    else:
        assert out.stdout.startswith('solver path: pure Python (')


def test_ik_node_no_numba_says_the_python_path_serves():
    out = subprocess.run([sys.executable, '-m', 'ik_node.kernels', 'warm'],
                         capture_output=True, text=True, timeout=120, cwd=REPO,
                         env={**__import__('os').environ, 'IK_NODE_NO_NUMBA': '1'})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == 'solver path: pure Python (IK_NODE_NO_NUMBA is set)'


def test_a_bad_command_is_refused_with_its_usage():
    assert kernels.main(['compile']) == 2


def _helper(x):
    return x + 1.0


def _kernel_of(x):
    return _helper(x) * 2.0


def test_jitted_twice_on_one_namespace_from_two_threads_keeps_what_is_compiled():
    """The loading thread and a collision checker's thread may compile the kernel library at
    once: numba refuses to jit a function twice, so the second call keeps the first's."""
    pytest.importorskip('numba')
    # __name__: numba's cache pickles the kernel by reference to this module
    namespace = {'__name__': __name__, '_helper': _helper, '_kernel_of': _kernel_of}
    namespace['_kernel_of'] = type(_kernel_of)(_kernel_of.__code__, namespace, '_kernel_of')
    results, errors = [], []

    def compile_it():
        try:
            results.append(kernels.jitted(namespace, ('_helper',), ('_kernel_of',)))
        except Exception as exc:  # the failure this test is about
            errors.append(exc)

    threads = [threading.Thread(target=compile_it) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert hasattr(namespace['_helper'], 'py_func')
    again = kernels.jitted(namespace, ('_helper',), ('_kernel_of',))
    assert again['_kernel_of'](1.0) == 4.0
    assert all(r['_kernel_of'](2.0) == 6.0 for r in results)
