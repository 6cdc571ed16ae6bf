#!/usr/bin/env python3
"""ik_node with every answer traced, for ``benchmarks/node/latency.py``.

Runs :func:`ik_node.ros.app.run.main` with a subclass of :class:`ik_node.ros.node.IkNode` whose
``on_answered`` hook (called right after each solve's JointState is published) appends
``[target_stamp, joint_state_stamp, reachable, solve_time_s, status]`` to a list; when the node
ends (SIGTERM), the list is written as JSON to the file named by ``IK_NODE_TRACE``. The node's
``/diagnostics`` carry the same pair of stamps, but only for the statuses its rate gate lets
through (``diagnostics_rate``, 10 Hz by default): the trace has every solve.

With ``IK_NODE_PROFILE`` set, the node also runs under cProfile and writes its stats there
(``python -m pstats FILE``); the profiler slows the node, so never time a profiled run.

Usage (as the benchmark does)::

    IK_NODE_TRACE=/tmp/trace.json python -m benchmarks.node.traced --ros-args --params-file ...
"""

import json
import os
import sys

from ik_node.ros.app import held_signals

if __name__ == '__main__':  # as python -m ik_node.node: hold SIGINT/SIGTERM back until main() runs
    held_signals.hold()

from ik_node.ros.node import IkNode  # noqa: E402  (imports rclpy: after the signals are held)
from ik_node.ros.app.run import main  # noqa: E402

TRACE: list = []


class TracedNode(IkNode):
    """IkNode recording every answer (a list append per solve: ~1 µs)."""

    def on_answered(self, target_stamps: str, joint_state_stamp: str, result) -> None:
        TRACE.append((target_stamps, joint_state_stamp, bool(result.reachable),
                      float(result.solve_time), result.status.value))


def run() -> int:
    profile_path = os.environ.get('IK_NODE_PROFILE')
    if profile_path:
        import cProfile
        profiler = cProfile.Profile()
        status = profiler.runcall(main, None, TracedNode)
        profiler.dump_stats(profile_path)
    else:
        status = main(None, TracedNode)
    trace_path = os.environ.get('IK_NODE_TRACE')
    if trace_path:
        with open(trace_path, 'w') as f:
            json.dump(TRACE, f)
    return status


if __name__ == '__main__':
    sys.exit(run())
