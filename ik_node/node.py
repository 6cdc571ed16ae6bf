"""``python -m ik_node.node``: the node as a program, at the module path users' scripts name.

The node itself is :class:`ik_node.ros.node.IkNode`; this file only starts it (the one module
outside :mod:`ik_node.ros` that reaches into it, because ``-m`` needs a stable path), holding
SIGINT and SIGTERM back before the node's imports. The mask is the one of
:func:`ik_node.ros.app.held_signals.hold`, set here with the builtin ``_signal`` module before any
import: importing even that small module first (a file to read, compiled on a fresh install)
widens the moment in which a Ctrl-C interrupts the start-up with a traceback.
"""

if __name__ == '__main__':
    import _signal
    _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGINT, _signal.SIGTERM})

    import sys

    from ik_node.ros.app.run import main
    sys.exit(main())
