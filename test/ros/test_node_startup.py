"""The node's start-up: what its first answer does not need waits until after it.

The reachability map and the RViz view are computed in the background from the first answer on
(or :data:`ik_node.ros.model_lifecycle.STARTUP_GRACE_S` after start-up without a target); the
collision and the map modules, and importlib.metadata, are not imported by the node's modules.
"""

import subprocess
import sys

import numpy as np

import harness as h
import ik_node.ros.model_lifecycle as model_lifecycle


def test_the_map_and_the_view_wait_for_the_first_answer(harness, monkeypatch):
    monkeypatch.setattr(model_lifecycle, 'STARTUP_GRACE_S', 120.0)
    ik, probe = harness.start('arm6', reachability_samples=2000)
    assert ik._reach._worker is None and not ik._reach.ready
    assert ik._markers.view is None
    chain = h.chain_of('arm6')
    mark = probe.mark()
    probe.send_point(chain.fk(np.array([0.3, -0.8, 1.1, 0.2, 0.4, -0.3]))[:3, 3])
    probe.next_status(mark, what='the first answer')
    probe.wait_for('the reachability map', lambda: ik._reach.ready, timeout=60.0)
    probe.wait_for('the RViz view', lambda: ik._markers.view, timeout=60.0)


def test_without_a_target_the_map_and_the_view_start_after_the_grace(harness, monkeypatch):
    monkeypatch.setattr(model_lifecycle, 'STARTUP_GRACE_S', 0.2)
    ik, probe = harness.start('arm6', reachability_samples=2000)
    probe.wait_for('the reachability map', lambda: ik._reach.ready, timeout=60.0)
    probe.wait_for('the RViz view', lambda: ik._markers.view, timeout=60.0)
    assert probe.last_solve_count() == 0


def test_the_node_modules_leave_collision_maps_and_metadata_unimported():
    code = ('import sys, ik_node.ros.node, ik_node.ros.app.run, ik_node.ros.app.entry; '
            'print(" ".join(m for m in sys.modules if m.startswith(('
            '"ik_node.collision", "ik_node.reachability", "ik_node.ros.rviz.map_markers", '
            '"importlib.metadata"))))')
    out = subprocess.run([sys.executable, '-c', code], env=h.process_env(), cwd=h.REPO,
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == []


#: Starts the map's worker in a fresh interpreter, the map's modules unloaded each round, and
#: prints every module of ik_node its thread (``reachability_map``) imported: a module imported
#: there while the node's thread imports another of the same package can deadlock on the import
#: locks.
WORKER_IMPORTS = '''
import sys, threading, time
import rclpy
import ik_node.ros.rviz as rviz_package
from ik_node import Chain
from ik_node.ros.rviz.reach_map_output import ReachabilityMaps
imported = []
sys.addaudithook(lambda event, args: event == 'import' and
                 imported.append((threading.current_thread().name, args[0])))
rclpy.init()
node = rclpy.create_node('map_worker_imports')
chain = Chain.from_urdf_file('urdf/leg3.urdf', 'base_link', 'foot')
for _ in range(6):
    for name in [m for m in sys.modules if m.startswith(('ik_node.reachability',
                                                         'ik_node.ros.rviz.map_markers'))]:
        del sys.modules[name]
    for package, attribute in ((sys.modules['ik_node'], 'reachability'),
                               (rviz_package, 'map_markers')):
        if hasattr(package, attribute):
            delattr(package, attribute)
    maps = ReachabilityMaps(node, lambda publisher, msg: publisher.publish(msg))
    maps.start(chain, 300, 0.05)
    end = time.monotonic() + 30.0
    while not maps.ready and time.monotonic() < end:
        time.sleep(0.01)
    maps.stop()
    print('ready' if maps.ready else 'not ready')
print(' '.join(m for thread, m in imported
               if thread == 'reachability_map' and m.startswith('ik_node')) or '-')
'''


def test_the_map_worker_imports_nothing_the_node_thread_may_import_at_once():
    out = subprocess.run([sys.executable, '-c', WORKER_IMPORTS], env=h.process_env(),
                         cwd=h.REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.split('\n')
    assert lines[:6] == ['ready'] * 6, out.stdout + out.stderr[-2000:]
    assert lines[6] == '-'
