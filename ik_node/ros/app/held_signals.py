"""SIGINT and SIGTERM held back until the node can end cleanly: the one place the mask is set.

A node program holds both signals from its first line (before importing rclpy, which takes a
while) until its spin loop handles them with a flag (:func:`ik_node.ros.app.run.main`), and again
while it tears down. Imports only the builtin ``_signal`` module: no import time (the ``signal``
module takes milliseconds), so a program can call :func:`hold` before anything else.
"""

import _signal

#: The signals that end the node.
SIGNALS = frozenset({_signal.SIGINT, _signal.SIGTERM})


def hold() -> None:
    """Block SIGINT and SIGTERM in this thread (and the threads it starts): they stay pending."""
    _signal.pthread_sigmask(_signal.SIG_BLOCK, SIGNALS)


def release() -> None:
    """Unblock SIGINT and SIGTERM: a pending one is delivered now."""
    _signal.pthread_sigmask(_signal.SIG_UNBLOCK, SIGNALS)
