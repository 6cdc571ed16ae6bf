"""``python -m ik_node.node``: the node as a program, at the module path users' scripts name.

The node itself is :class:`ik_node.ros.node.IkNode`; this file only starts it (the one module
outside :mod:`ik_node.ros` that reaches into it, because ``-m`` needs a stable path).
"""

if __name__ == '__main__':  # hold Ctrl-C back until the node can end cleanly (as ik_node.ros.node)
    import _signal  # the builtin C module: no import time (the `signal` module takes ~ms)
    _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGINT, _signal.SIGTERM})

    import sys

    from ik_node.ros.node import main
    sys.exit(main())
