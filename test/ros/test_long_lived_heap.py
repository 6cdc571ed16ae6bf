"""The executable keeps Python's garbage collector off what the node keeps for its life.

:class:`ik_node.ros.app.run.LongLivedHeap` freezes the objects tracked after start-up and after each
long-lived addition, and gives a replaced robot model back to the collector. Run in a separate
interpreter: freezing is process-wide.
"""

import subprocess
import sys

import harness as h

SCRIPT = r'''
import gc, os, random, sys, weakref
os.environ['ROS_DOMAIN_ID'] = str(random.Random(os.getpid()).randint(150, 200))
import rclpy
from rclpy.parameter import Parameter
from ik_node.ros.app import run
from ik_node.ros.node import IkNode
run._HEAP_CHECK_PERIOD_S = 0.0  # look at every call
rclpy.init()
node = IkNode(cli_args=['--ros-args', '--params-file', sys.argv[1],
                        '-p', 'reachability_samples:=0'])
heap = run.LongLivedHeap(node)
heap.settle()
frozen = gc.get_freeze_count()
print('frozen after start-up', frozen)
made = [[] for _ in range(5000)]  # tracked objects made after start-up
heap.settle()
print('frozen again without a change', gc.get_freeze_count())
solver = node.model.solver
solver.cycle = solver  # a model held in a reference cycle: only the collector frees it
old = weakref.ref(solver)
del solver
result = node.set_parameters([Parameter('solver', value='fabrik')])[0]
assert result.successful, result.reason
assert node.model.solver is not old(), "no new solver"
heap.settle()
print('old model freed', old() is None)
print('frozen after the new model', gc.get_freeze_count())
node.destroy_node()
rclpy.try_shutdown()
'''


def test_the_start_up_heap_is_frozen_and_a_replaced_model_is_freed():
    out = subprocess.run([sys.executable, '-c', SCRIPT, str(h.REPO / 'config' / 'leg3.yaml')],
                         env=h.process_env(), cwd=h.REPO, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = dict(line.rsplit(' ', 1) for line in out.stdout.splitlines()
                 if line.startswith(('frozen', 'old')))
    # everything start-up made (imports, rclpy, the model) is out of the collector's reach
    assert int(lines['frozen after start-up']) > 10_000, out.stdout
    # no new model, kernels or map: what a stream makes is left to the collector
    assert int(lines['frozen again without a change']) < \
        int(lines['frozen after start-up']) + 5000, out.stdout
    # the model a parameter change replaced, in a reference cycle: freed only because the heap
    # was unfrozen and collected before the new model was frozen
    assert lines['old model freed'] == 'True', out.stdout
    assert int(lines['frozen after the new model']) > 10_000, out.stdout
