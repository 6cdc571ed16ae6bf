"""``main()`` of the ``ik_node`` executable: start, spin, and end cleanly on any signal."""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
import time
from typing import List, Optional

import rclpy
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.signals import SignalHandlerOptions

from ik_node.errors import IkError
from ik_node.ros.app import held_signals

_SPIN_PERIOD_S = 0.1
#: How often the spin loop looks whether the node made new long-lived objects [s].
_HEAP_CHECK_PERIOD_S = 1.0


#: Environment variable that picks the executor: ``events`` (the default where rclpy has it)
#: or ``single``.
EXECUTOR_ENV = 'IK_NODE_EXECUTOR'


def make_executor():
    """rclpy's EventsExecutor where this rclpy has it (``rclpy.experimental``, Jazzy 7.1.4 and
    later), else a SingleThreadedExecutor; ``IK_NODE_EXECUTOR=single`` picks the latter anyway.

    The events executor waits for work in C++; the single-threaded one rebuilds a wait set of
    every entity (subscriptions, services, timers, QoS event handlers) in Python on each wake-up,
    which at 1 kHz of targets cost the node about as much as a reachable 6D solve. The events
    executor is still "experimental" in rclpy (e.g. rclpy before ros2/rclpy#1718 crashes when
    an async task raises with one node registered; the node runs no async tasks), hence the
    switch.
    """
    choice = os.environ.get(EXECUTOR_ENV, 'events').strip().lower()
    if choice not in ('events', 'single'):
        raise IkError(f'{EXECUTOR_ENV}={choice!r}: expected "events" or "single"')
    if choice == 'single':
        return SingleThreadedExecutor()
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:  # Humble, Iron, early Jazzy
        return SingleThreadedExecutor()
    return EventsExecutor()


class LongLivedHeap:
    """Keeps Python's garbage collector off the objects the node keeps for its life.

    A full collection walks every tracked object: after start-up the node process tracks
    ~50 000 of them (imports, the model, the reachability map), ~140 000 with the compiled
    kernels loaded, and a full collection then stops the node for 15-70 ms, a stall of any
    stream of targets. Whenever the node's :meth:`~ik_node.ros.node.IkNode.long_lived_mark`
    changes (looked at most once every :data:`_HEAP_CHECK_PERIOD_S`), everything tracked is
    moved out of the collector's reach (``gc.freeze``), so a full collection walks only what
    was made since. A new robot model first unfreezes and collects (what of the model it
    replaces lives in reference cycles is freed only by the collector): a full collection
    once, at a model change. Only the executable does this: a node embedded in another
    process leaves that process's collector alone.
    """

    def __init__(self, node) -> None:
        self._mark = getattr(node, 'long_lived_mark', None)  # None: a node without (a relay)
        self._seen: Optional[tuple] = None
        self._next = 0.0

    def settle(self) -> None:
        """Freeze what the node made since the last call, if anything (cheap when not due)."""
        now = time.monotonic()
        if now < self._next or self._mark is None:
            return
        self._next = now + _HEAP_CHECK_PERIOD_S
        mark = self._mark()
        seen, self._seen = self._seen, mark
        new_model = seen is not None and mark[0] is not seen[0]  # by identity: a new model
        if seen is not None and not new_model and mark[1:] == seen[1:]:
            return
        mark = seen = None  # no reference to the model replaced
        if new_model and gc.get_freeze_count():
            gc.unfreeze()  # the model replaced: freed by this collection
            gc.collect()
        gc.freeze()


def main(args: Optional[List[str]] = None, node_class: Optional[type] = None) -> int:
    """Entry point of the ``ik_node`` executable. Returns the exit status.

    ``args``: the command line (None: ``sys.argv``). ``node_class``: the node to run,
    :class:`ik_node.ros.node.IkNode` (None) or a subclass (the latency benchmark's traced node).

    SIGINT and SIGTERM end the node cleanly at any moment: they are held back while rclpy, the
    executor and the node are built and torn down, and handled by a flag the spin loop checks
    (rclpy's own signal handler is off: it shuts the context down from another thread, which
    raced with the node's teardown and crashed it).
    """
    held_signals.hold()
    if node_class is None:
        from ik_node.ros.node import IkNode
        node_class = IkNode
    stop = threading.Event()
    for sig in held_signals.SIGNALS:
        signal.signal(sig, lambda *_: stop.set())
    bad = _bad_params_file(sys.argv if args is None else args)
    if bad:
        print(f'ik_node: cannot start: {bad}', file=sys.stderr)
        return 2
    try:
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    except Exception as exc:  # rcl refuses the arguments, e.g. a malformed --params-file
        print(f'ik_node: cannot start: {_one_line(exc)}', file=sys.stderr)
        return 2
    node = executor = None
    status = 0
    try:
        executor = make_executor()
        node = node_class()
        executor.add_node(node)
        heap = LongLivedHeap(node)
        held_signals.release()
        while not stop.is_set() and rclpy.ok():
            executor.spin_once(timeout_sec=_SPIN_PERIOD_S)
            heap.settle()
    except ExternalShutdownException:
        pass
    except IkError as exc:
        print(f'ik_node: {exc}', file=sys.stderr)
        status = 2
    except ParameterException as exc:
        print(f'ik_node: bad parameter: {exc}', file=sys.stderr)
        status = 2
    finally:
        held_signals.hold()
        if executor is not None:
            executor.shutdown(timeout_sec=1.0)
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return status


def _bad_params_file(argv: List[str]) -> str:
    """Why a ``--params-file`` given after ``--ros-args`` cannot be read as YAML ('' if all
    can), checked before rcl parses it (rcl logs C source locations over two lines)."""
    from ik_node.config.node_config import load_yaml
    from ik_node.errors import ConfigError
    argv = list(argv)
    files = [argv[i + 1] for i, a in enumerate(argv[:-1])
             if a == '--params-file' and '--ros-args' in argv[:i]]
    for name in files:
        try:
            text = open(name, encoding='utf-8').read()
        except OSError as exc:
            return f'cannot read params file {name!r}: {exc.strerror}'
        except UnicodeDecodeError:
            return f'params file {name!r} is not UTF-8 text'
        try:
            load_yaml(text, name)
        except ConfigError as exc:
            return str(exc)
    return ''


def _one_line(exc: BaseException) -> str:
    """rcl's messages carry C source locations on later lines; keep the reason."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    keep = [ln for ln in lines if not ln.startswith(('at ', '/')) and '.c:' not in ln
            and '.cpp:' not in ln]
    text = ' '.join(keep or lines[:1])
    return text.split(', at ')[0]


if __name__ == '__main__':
    sys.exit(main())
