"""The Ray path on a real local cluster of two nodes: the same map, byte for byte, as this
machine's process pool.

Loopback only: the cluster, the driver and every Ray process run inside a network namespace of
their own with only ``lo`` up (``unshare --net``), and in a PID namespace of their own
(``--pid --fork --mount-proc``), so ``ray stop`` there sees only this test's processes and all
of them end with it. Skipped, saying why, where Ray is not installed or namespaces cannot be made
(not root, no ``unshare``)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from ik_node.capability import MapSpec, build_map, storage

from reference_robots import SHARED_ROBOTS, skip_reason

REPO = Path(__file__).resolve().parents[2]
UR5E = SHARED_ROBOTS / 'ur5e.urdf'
PORT = 26379
ARGS = ('--voxel', '0.25', '--orientations', '4', '--rolls', '2', '--shard-cells', '25')


def _can_unshare() -> str:
    """'' where a network and PID namespace can be made here, else why not."""
    if shutil.which('unshare') is None or shutil.which('ip') is None:
        return 'unshare or ip (util-linux, iproute2) is not installed'
    proc = subprocess.run(['unshare', '--net', '--pid', '--fork', '--mount-proc', 'true'],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return f'cannot make network namespaces here: {proc.stderr.strip()[:200]}'
    return ''


@pytest.mark.slow
def test_a_two_node_ray_cluster_builds_the_same_map_as_the_local_pool(tmp_path):
    pytest.importorskip('ray', reason='Ray is not installed (pip install "ik_node[scale]")')
    why = _can_unshare()
    if why:
        pytest.skip(why)
    if not UR5E.is_file():
        pytest.skip(skip_reason(UR5E))
    ray = str(Path(sys.executable).with_name('ray'))
    out = tmp_path / 'ray_map'
    # Ray's sockets live under its temp dir: a short path (AF_UNIX paths hold 107 bytes).
    ray_temp = tempfile.mkdtemp(prefix='ikray', dir='/tmp')
    script = f'''
        set -e
        ip link set lo up
        export RAY_USAGE_STATS_ENABLED=0
        {ray} start --head --port {PORT} --node-ip-address 127.0.0.1 --num-cpus 1 \\
            --include-dashboard false --disable-usage-stats --temp-dir {ray_temp} >&2
        {ray} start --address 127.0.0.1:{PORT} --node-ip-address 127.0.0.1 --num-cpus 1 \\
            --disable-usage-stats >&2
        {sys.executable} -c "
import json, ray
ray.init(address='127.0.0.1:{PORT}', log_to_driver=False)
print(json.dumps([[n['NodeManagerAddress'], n['Alive']] for n in ray.nodes()]))
ray.shutdown()"
        RAY_ADDRESS=127.0.0.1:{PORT} {sys.executable} -m ik_node.cli capability-map \\
            --urdf {UR5E} --base base_link --tip tool0 {' '.join(ARGS)} --out {out} \\
            --no-progress --json
        {ray} stop --force >&2 || true
    '''
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop('RAY_ADDRESS', None)
    try:
        proc = subprocess.run(['unshare', '--net', '--pid', '--fork', '--mount-proc', 'bash',
                               '-c', script], capture_output=True, text=True, timeout=900,
                              env=env, cwd=REPO)
    finally:
        shutil.rmtree(ray_temp, ignore_errors=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    nodes = json.loads(lines[-2])
    assert nodes == [['127.0.0.1', True], ['127.0.0.1', True]]
    summary = json.loads(lines[-1])
    assert summary['targets'] == summary['cells'] * 8
    spec = MapSpec(UR5E.read_text(), 'base_link', 'tool0', 0.25, 4, rolls=2, shard_cells=25,
                   urdf_path=str(UR5E))
    local = build_map(spec, tmp_path / 'local', workers=1)
    assert (out / storage.MAP_FILE).read_bytes() == \
        (tmp_path / 'local' / storage.MAP_FILE).read_bytes()
    assert local.reached.any()
