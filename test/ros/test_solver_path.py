"""The node's solver path: it answers its first target at once, on the pure-Python path while
the compiled kernels still compile in the background (a cold numba cache), says in its log which
path serves, and exits cleanly while the compile is still at work."""

import numpy as np
import pytest

from harness import REPO, Probe, chain_of, reached_ok, start_process, stop_process

pytestmark = pytest.mark.slow


def test_the_node_answers_while_the_kernels_compile_and_logs_the_path(ros, tmp_path):
    # An empty numba cache: the kernels take many seconds to compile in the node's process.
    proc = start_process('--params-file', str(REPO / 'config' / 'arm6.yaml'),
                         env_extra={'NUMBA_CACHE_DIR': str(tmp_path)})
    try:
        probe = Probe(ros, 'ik_node')
        probe.wait_connected()
        chain = chain_of('arm6')
        for k, q in enumerate(([0.3, -0.8, 1.1, 0.2, 0.4, -0.3], [0.1, -1.0, 1.4, 0.0, 0.6, 0.2])):
            target = chain.fk(np.array(q))[:3, 3]
            mark = probe.mark()
            probe.send_point(target)
            status = probe.next_result(mark, k)
            assert reached_ok(status), status.message
            probe.joint_state_at(chain, target, mark[0], 1e-4)
    finally:
        code, out, err = stop_process(proc)
    assert code == 0, err
    assert 'Traceback' not in err
    said = [line for line in (out + err).splitlines() if 'solver path: ' in line]
    assert said, err
    # The first line: the Python path serves while the kernels compile (or for good).
    assert said[0].endswith(('load in the background once a solve uses them',
                             '(IK_NODE_NO_NUMBA is set)', '(numba is not installed)')), said
    assert len(said) <= 2 and 'Traceback' not in out
