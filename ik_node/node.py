"""``python -m ik_node.node``: the node as a program, at the module path users' scripts name.

The node itself is :class:`ik_node.ros.node.IkNode`; this file only starts it (the one module
outside :mod:`ik_node.ros` that reaches into it, because ``-m`` needs a stable path), holding
SIGINT and SIGTERM back (:mod:`ik_node.ros.held_signals`) before the node's imports.
"""

if __name__ == '__main__':
    from ik_node.ros import held_signals
    held_signals.hold()

    import sys

    from ik_node.ros.node import main
    sys.exit(main())
