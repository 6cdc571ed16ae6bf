"""The compiled kernels: loaded by numba in a background thread, never in a solve.

numba is an install requirement of ik_node (docs/speed.md). The kernels live in modules of
the solvers (:data:`KERNEL_MODULES`: :mod:`ik_node.solvers.damped_jacobian.compiled`,
:mod:`ik_node.solvers.hip_knee.compiled`, fabrik's runs in
:mod:`ik_node.solvers.fabrik.compiled`...), each with a ``compile()`` that compiles its
functions, or loads them from numba's cache on disk (``cache=True``), and runs each once. What
they share is written once in the kernel library beside this loader: forward kinematics and its
Jacobian (:mod:`~ik_node.kernels.fk`), the planar angle helpers
(:mod:`~ik_node.kernels.planar`) and the small linear algebra
(:mod:`~ik_node.kernels.linalg`), compiled in place before the modules that call them
(as a solver's own helper modules are, e.g. :mod:`ik_node.solvers.fabrik.compiled_passes`).
The collision check's kernel (:mod:`ik_node.collision.kernel`) places its joints by the same
:mod:`~ik_node.kernels.fk` and is compiled by this loader's :func:`jitted` too, but when a
checker is made, not in the background (:data:`WARMED_WITH_A_MODEL`).
numba's cache checks a kernel's own file only: after editing the library or a helper module,
remove the callers' cached files (``__pycache__/*.nbi``, ``*.nbc``) or run ``warm`` from a clean
checkout.

The first solve that could use a kernel calls :func:`start` before its budget starts (not the
solver's construction: importing numba would slow down a node's start-up): one daemon thread
then, after :data:`LOADING_DELAY_S` (that solve and its answer go first), imports numba and
compiles or loads every kernel module, while the pure-Python path answers; a solver asks
:func:`ready` per solve and takes the compiled path once it is true. Importing and compiling
hold the GIL most of the time: while they run, the switch interval is
:data:`LOADING_SWITCH_INTERVAL_S`, so a solve waits at most about that for the GIL each time it
asks. Both paths give the same answers (``test/core/test_compiled_descent.py``).

The pure-Python path serves for good where ``IK_NODE_NO_NUMBA`` is set (to anything but
``0``), numba is not installed, or it fails to import or to compile; :func:`serving` says which
path serves and why, in one line (the node logs it: :func:`report`).

``python -m ik_node.kernels warm`` compiles every kernel into numba's cache (a pip or
colcon install, or the Quick start, runs it once), so a node start only loads them (about
0.2-1 s of CPU time in the background thread).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import threading
import time
from typing import Callable, List, Optional, Tuple

#: The modules holding kernels; each has ``compile()`` (compile or load, then run once).
KERNEL_MODULES = ('ik_node.solvers.damped_jacobian.compiled',
                  'ik_node.solvers.out_of_reach.compiled_reach',
                  'ik_node.solvers.hip_knee.compiled',
                  'ik_node.solvers.hip_knee.compiled_nearest',
                  'ik_node.solvers.fabrik.compiled',
                  'ik_node.solvers.fabrik.compiled_tree',
                  'ik_node.solvers.out_of_reach.compiled_search')
#: Packages whose kernels load with a model of theirs, not in the background (the collision
#: check's, with a checker): ``warm`` runs their ``warm()`` too. Named, not imported: this
#: library sits below them.
WARMED_WITH_A_MODEL = ('ik_node.collision',)
#: The interpreter's switch interval [s] while the kernels load: importing numba and compiling
#: hold the GIL, and a solve on the Python path waits up to this for it each time it asks
#: (Python's default, 5 ms, is a whole solve's budget: damped_jacobian's default timeout).
LOADING_SWITCH_INTERVAL_S = 0.0005
#: The loading thread waits this long [s] before it imports numba: the solve that started it
#: (and the answer it publishes) run without it.
LOADING_DELAY_S = 0.1

_lock = threading.Lock()
_jit_lock = threading.RLock()
_done = threading.Event()
_thread: Optional[threading.Thread] = None
_failure = ''  # why numba cannot serve, once it failed
_listeners: List[Callable[[str], None]] = []


def available() -> bool:
    """Whether the compiled path may serve: numba is installed, not turned off by
    ``IK_NODE_NO_NUMBA`` and has not failed in this process. Imports nothing."""
    if os.environ.get('IK_NODE_NO_NUMBA', '') not in ('', '0') or _failure:
        return False
    return importlib.util.find_spec('numba') is not None


def ready() -> bool:
    """Whether the compiled kernels are loaded and serve (never blocks)."""
    return _done.is_set() and not _failure


def start() -> None:
    """Load every kernel in a background thread (once per process) where numba is available;
    returns at once."""
    global _thread
    if _thread is not None or not available():
        return
    with _lock:
        if _thread is None:
            _thread = threading.Thread(target=_load, name='ik_node kernels', daemon=True)
            _thread.start()


def wait(timeout: Optional[float] = None) -> bool:
    """Start loading the kernels if needed and wait for them (at most ``timeout`` [s]; None:
    until loaded). Returns :func:`ready`. For tests, benchmarks and :func:`warm`: a solver
    never waits."""
    start()
    if _thread is not None:
        _done.wait(timeout)
    return ready()


def _load() -> None:
    """The background thread: compile or load every kernel module, with a short switch
    interval meanwhile (:data:`LOADING_SWITCH_INTERVAL_S`)."""
    global _failure
    time.sleep(LOADING_DELAY_S)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(min(interval, LOADING_SWITCH_INTERVAL_S))
    try:
        for name in KERNEL_MODULES:
            importlib.import_module(name).compile()
    except Exception as exc:  # a numba that cannot serve here: the Python path serves
        _failure = f'{type(exc).__name__}: {exc}'.splitlines()[0][:300]
    finally:
        sys.setswitchinterval(interval)
    _done.set()
    with _lock:
        listeners = list(_listeners)
        _listeners.clear()
    for listener in listeners:
        try:
            listener(serving())
        except Exception:  # a listener gone (its node shut down) is not an error
            pass


def jitted(namespace: dict, helpers: Tuple[str, ...], kernel_names: Tuple[str, ...],
           inlined: Tuple[str, ...] = ()) -> dict:
    """A kernel module's functions compiled by ``numba.njit(cache=True, nogil=True)``: its
    helpers first, replaced in ``namespace`` (the module's globals) so that the functions
    calling them see the compiled ones, then its kernels, returned by name. The helpers named
    in ``inlined`` are replaced by ``numba.njit(nogil=True, inline='always')`` instead: numba
    writes them into each caller (no call, whose arguments' reference counts cost more than a
    small helper's work). For a module's ``compile()``, in the loading thread, and the collision
    check's kernel (with its checker). Calling it again on the same namespace (two threads
    compiling one library module) keeps what is compiled."""
    import numba
    jit = numba.njit(cache=True, nogil=True)
    inline = numba.njit(nogil=True, inline='always')
    with _jit_lock:  # the loading thread and a collision checker's may compile fk at once
        for name in helpers:
            if not _is_jitted(namespace[name]):
                namespace[name] = (inline if name in inlined else jit)(namespace[name])
        return {name: namespace[name] if _is_jitted(namespace[name]) else jit(namespace[name])
                for name in kernel_names}


def _is_jitted(function) -> bool:
    """Whether ``function`` is numba's already (a dispatcher keeps the Python one)."""
    return hasattr(function, 'py_func')


def serving() -> str:
    """Which path serves the solvers, and why, in one line."""
    if os.environ.get('IK_NODE_NO_NUMBA', '') not in ('', '0'):
        return 'solver path: pure Python (IK_NODE_NO_NUMBA is set)'
    if _failure:
        return f'solver path: pure Python (numba failed: {_failure})'
    if importlib.util.find_spec('numba') is None:
        return 'solver path: pure Python (numba is not installed)'
    version = _numba_version()
    if ready():
        return f'solver path: compiled kernels (numba {version})'
    if _thread is None:
        return (f'solver path: pure Python; the compiled kernels (numba {version}) load in '
                'the background once a solve uses them')
    return (f'solver path: pure Python while the compiled kernels (numba {version}) load in '
            'the background')


def report(log: Callable[[str], None]) -> None:
    """``log(serving())`` now and, until the kernels are loaded, once more when they serve
    (or fail), from the loading thread."""
    with _lock:
        if available() and not _done.is_set():
            _listeners.append(log)
    log(serving())


def _numba_version() -> str:
    """numba's version from the name of its metadata folder beside the package
    (``numba-0.58.1.dist-info`` or ``.egg-info``), else from :mod:`importlib.metadata` (whose
    import costs more than the rest of this module: the node logs this line at start-up)."""
    try:
        spec = importlib.util.find_spec('numba')
        for location in (spec.submodule_search_locations or []) if spec else []:
            for info in sorted(os.listdir(os.path.dirname(location))):
                name, _, rest = info.partition('-')
                if name.lower() == 'numba' and rest.endswith(('.dist-info', '.egg-info')):
                    return rest.rsplit('.', 1)[0].split('-')[0]
    except OSError:
        pass
    try:
        from importlib.metadata import version
        return version('numba')
    except Exception:  # metadata missing (a system package without it)
        return '?'


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m ik_node.kernels warm``: compile every kernel into numba's cache and
    say which path serves; ``status``: only say it. Exit status 0 either way (the pure-Python
    path is complete)."""
    args = sys.argv[1:] if argv is None else argv
    if args not in (['warm'], ['status']):
        print('usage: python -m ik_node.kernels warm|status', file=sys.stderr)
        return 2
    if args == ['warm']:
        wait()
        if ready():  # the collision check's kernel too (it loads with a checker, not here)
            for name in WARMED_WITH_A_MODEL:
                importlib.import_module(name).warm()
    print(serving())
    return 0
