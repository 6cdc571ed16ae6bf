"""The README's main job runs end to end: real node process, separate client, one line a target."""

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ik_node import Chain

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / 'demo'))


#: Every test here talks to ik_node in its own process (or runs a script that starts one).
pytestmark = pytest.mark.slow


def test_main_job_answers_every_target_and_reports_reachability_honestly(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(REPO / 'demo' / 'main_job.py'), '--targets', '6', '--gait-steps',
         '12', '--no-pictures', '--out', str(tmp_path), '--domain-id',
         os.environ['ROS_DOMAIN_ID']],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'Traceback' not in proc.stderr
    rows = [line for line in proc.stdout.splitlines() if re.match(r'\s*\d+\s+[+-]\d', line)]
    assert len(rows) == 12, proc.stdout  # 6 targets x 2 robots, one line each

    import main_job  # the path generator the job used, to check the verdicts against geometry
    leg = Chain.from_urdf_file(REPO / 'urdf' / 'leg3.urdf', 'base_link', 'foot')
    hip = leg.joint_frames(np.zeros(3))[1, :3, 3]
    for row, target in zip(rows[:6], main_job.target_path('leg3', 6)):
        reachable = row.split()[4] if ',' in row else None
        distance = np.linalg.norm(target - hip)
        assert reachable == ('false' if distance > 0.58 + 1e-9 else 'true'), row


    # quad12's trot: one line per PoseArray, a mark per foot; a foothold in the hole (out of
    # reach on purpose) is never reported reached
    gait_rows = [line for line in proc.stdout.splitlines()
                 if re.match(r'\s*\d+\s+\d+\.\d\d\s+(ok|--)', line)]
    assert len(gait_rows) == 12, proc.stdout
    marks = [m for row in gait_rows for m in re.findall(r'(ok|--)( hole)?', row)]
    assert len(marks) == 12 * 4
    assert not any(m == ('ok', ' hole') for m in marks), proc.stdout
    assert any(hole for _, hole in marks), 'the trot stepped into no hole'
    on_path = [ok for ok, hole in marks if not hole]
    assert on_path.count('ok') >= 0.8 * len(on_path), proc.stdout
