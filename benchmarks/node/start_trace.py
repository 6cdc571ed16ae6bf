#!/usr/bin/env python3
"""``python -m ik_node.node`` with the moments of its start-up written out, for
``first_answer.py --breakdown``.

Starts the node as :mod:`ik_node.node` does (SIGINT and SIGTERM held before any import, then
:func:`ik_node.ros.app.run.main`), with a subclass of :class:`ik_node.ros.node.IkNode` that notes
when each step of the start-up ends. Each moment is one line on stderr,
``start_trace <name> <time.time()>``, written when it happens:

* ``interpreter``: this script's first line runs (Python and ``site`` are up);
* ``imports``: ``ik_node.ros.node`` and ``ik_node.ros.app.run`` are imported (rclpy, numpy, the
  node's modules);
* ``construct``: the node's constructor starts (``rclpy.init`` and the executor are done);
* ``constructed``: the constructor returned (parameters, publishers, subscriptions, the robot
  model with its solver);
* ``first_target``: the first target reaches the node's subscription callback;
* ``first_answer``: the first solve's JointState is published.

With ``IK_NODE_START_PROFILE=FILE`` the node's construction and first solve run under cProfile
(stats written to FILE at the first answer; ``python -m pstats FILE``); never time such a run.
"""

import time

_T0 = time.time()

if __name__ == '__main__':
    import _signal
    _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGINT, _signal.SIGTERM})

import os  # noqa: E402
import sys  # noqa: E402


def note(name: str, at: float = 0.0) -> None:
    print(f'start_trace {name} {at or time.time():.6f}', file=sys.stderr, flush=True)


note('interpreter', _T0)
from ik_node.ros.node import IkNode  # noqa: E402
from ik_node.ros.app.run import main  # noqa: E402

note('imports')
_PROFILE = os.environ.get('IK_NODE_START_PROFILE')
_profiler = None
if _PROFILE:
    import cProfile
    _profiler = cProfile.Profile()


class StartTracedNode(IkNode):
    """IkNode noting the end of its construction, its first target and its first answer."""

    _seen_target = False
    _seen_answer = False

    def __init__(self, *args, **kwargs) -> None:
        note('construct')
        if _profiler is not None:
            _profiler.enable()
        super().__init__(*args, **kwargs)
        note('constructed')

    def on_target_kept(self) -> None:  # the target subscriptions' callback calls it first
        if not self._seen_target:
            self._seen_target = True
            note('first_target')

    def on_answered(self, target_stamps: str, joint_state_stamp: str, result) -> None:
        if not self._seen_answer:
            self._seen_answer = True
            note('first_answer')
            if _profiler is not None:
                _profiler.disable()
                _profiler.dump_stats(_PROFILE)


if __name__ == '__main__':
    sys.exit(main(None, StartTracedNode))
