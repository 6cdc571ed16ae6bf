"""Smoke test of the legs benchmark: a --quick run on quad12 writes sane results.

Timings are never asserted (the machine is shared): only that the harness runs, rates every
solver on the leg, and writes its target checks and the all-feet section.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_quick_legs_benchmark_rates_every_solver_on_a_quad12_leg(tmp_path):
    proc = subprocess.run([sys.executable, '-m', 'benchmarks.legs.bench', '--quick', '--out',
                           str(tmp_path)], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads((tmp_path / 'legs.json').read_text())
    assert (tmp_path / 'legs.md').read_text().startswith('# ik_node legs benchmark')
    assert [(leg['robot'], leg['foot']) for leg in results['legs']] == [('quad12', 'FL_foot')]
    leg = results['legs'][0]
    assert set(leg['in_reach']) == {'analytic_hip_knee', 'damped_jacobian', 'fabrik'}
    for row in leg['in_reach'].values():
        assert 0.0 <= row['exact_pct'] <= 100.0 and 0.0 <= row['success_pct'] <= 100.0
        assert row['n'] == 30 and row['median_us'] > 0.0
    analytic = leg['in_reach']['analytic_hip_knee']
    assert analytic['back_to_back_us'] > 0.0 and analytic['back_to_back_best_round_us'] > 0.0
    assert leg['out_of_reach']['targets'] >= 1
    assert 0.0 <= leg['out_of_reach']['analytic_hip_knee']['closest_pct'] <= 100.0
    assert set(results['all_feet']['quad12']) == {'analytic_hip_knee', 'damped_jacobian',
                                                   'fabrik'}
    assert len(results['target_checks']) == 3


def test_unknown_robot_is_refused_with_the_valid_names(tmp_path):
    proc = subprocess.run([sys.executable, '-m', 'benchmarks.legs.bench', '--quick', '--robots',
                           'spot', '--out', str(tmp_path)], capture_output=True, text=True,
                          timeout=60, cwd=REPO)
    assert proc.returncode == 2
    assert 'spot' in proc.stderr and 'quad12' in proc.stderr
