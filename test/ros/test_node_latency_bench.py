"""Smoke test of the node latency benchmark: a short half-out-of-reach run matches every answer
to its target by stamp (the traced node's pairs agree with /diagnostics), for targets in reach
and out of reach, and runs the relay beside the node, compared phase by phase. No timing is
asserted (the machine is shared)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH = [sys.executable, '-m', 'benchmarks.node.latency']

#: Every test here talks to ik_node in its own process (or runs a script that starts one).
pytestmark = pytest.mark.slow


def test_short_half_out_of_reach_run_times_answers_in_and_out_of_reach(tmp_path):
    proc = subprocess.run(
        [*BENCH, '--configs', 'leg3', '--rates', '200', '--duration', '2',
         '--warmup-rate', '50', '--out-of-reach', '0.5', '--out', str(tmp_path)],
        capture_output=True, text=True, timeout=180, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads((tmp_path / 'node_latency.json').read_text())
    [config] = [r for r in results['configs'] if r['solver'] != 'relay']
    [relay] = [r for r in results['configs'] if r['solver'] == 'relay']
    [phase] = config['phases']
    [floor] = relay['phases']
    # the relay answers the same stream, every answer matched by stamp through its trace
    assert floor['sent'] == 400 and floor['answered'] > 0 and floor['answers_not_received'] == 0
    [row] = results['against_relay']
    assert row['node_cpu_ms_per_answer'] > 0 and row['relay_cpu_ms_per_answer'] > 0
    assert row['cpu_ratio'] == pytest.approx(row['node_cpu_ms_per_answer'] /
                                             row['relay_cpu_ms_per_answer'])
    assert row['solve_mean_ms'] > 0
    assert phase['sent'] == 400 and phase['sent_out_of_reach'] == 200
    assert phase['answered_out_of_reach'] > 0 and phase['answered'] > phase['answered_out_of_reach']
    assert phase['reported_reached_out_of_reach'] == 0  # pushed beyond the summed bone lengths
    assert phase['diagnostics_pairs_checked'] > 0 and phase['diagnostics_pairs_mismatched'] == 0
    assert phase['answers_not_received'] == 0
    for kind in ('', 'in_reach_', 'out_of_reach_'):
        assert phase[f'{kind}latency_p99_ms'] is not None
        assert phase[f'{kind}node_side_p50_ms'] > 0.0
    assert (tmp_path / 'trace_leg3_node.json').is_file()
    assert (tmp_path / 'trace_leg3_relay.json').is_file()
    text = (tmp_path / 'node_latency.md').read_text()
    assert '| leg3 | analytic_hip_knee |' in text and '| leg3 | relay |' in text
    assert 'The node against the relay' in text
