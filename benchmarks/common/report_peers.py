"""results.json -> the compiled peers' section of results.md and its target checks.

damped_jacobian against OptIK (``optik``) and TRAC-IK (``tracik``) in the TRAC-IK task (6D,
1e-5 m and 1e-5 rad, 5 ms), both seeds, interleaved target by target. No measuring here.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from benchmarks.common.target_checks import check

OURS = 'damped_jacobian'
COMPILED = ('optik', 'tracik')
#: The six reference arms the targets are checked on (the shipped arm6 is reported beside them).
TARGET_ROBOTS = ('ur5', 'ur10', 'panda', 'iiwa14', 'jaco2', 'baxter')


def _cells(results) -> List[Dict[str, Any]]:
    """TRAC-IK task blocks in which damped_jacobian and at least one compiled peer ran."""
    return [b for b in results['blocks'] if b['task'] == 'tracik' and OURS in b['solvers'] and
            any(p in b['solvers'] for p in COMPILED)]


def _ratio(s: Dict[str, Any], peer: Optional[Dict[str, Any]], key: str) -> Optional[float]:
    if peer is None or not peer.get(key):
        return None
    return s[key] / peer[key]


def _f(value: Optional[float], digits: int = 3, suffix: str = '') -> str:
    return '-' if value is None else f'{value:.{digits}f}{suffix}'


def peers_markdown(results) -> List[str]:
    """The table of damped_jacobian, OptIK and TRAC-IK per robot and seed."""
    cells = _cells(results)
    if not cells:
        return []
    lines = [
        '## Against the compiled solvers: OptIK and TRAC-IK (TRAC-IK protocol, both seeds)', '',
        'One run, interleaved target by target (the order of the solvers rotates). 6D targets '
        'from random in-limit joint vectors; seed: the mid-limit configuration (TRAC-IK\'s '
        'protocol) or a random configuration. Success = position error < 1e-5 m and rotation '
        'error < 1e-5 rad by ik_node\'s FK on the returned joints, every joint within its '
        'limits, solve time <= 5 ms. **Time** of a call = the lesser of its wall time and its '
        'process CPU time: wall time counts what the shared machine took from the process, CPU '
        'time counts every thread of the process (TRAC-IK starts two per solve). Medians and 95th '
        'percentiles over all solves, failures included. Ratios '
        'are damped_jacobian\'s figure over the peer\'s in the same block.', '',
        '**failed, preempted** = failed solves whose wall time passed 5 ms while their CPU time '
        'did not (the process was off the CPU and the solver\'s wall-clock timeout ended it).', '',
        '| robot | seed | solver | success % | failed, preempted | within 1 ms % | median ms | '
        'p95 ms | median wall ms | median CPU ms | median / OptIK | p95 / OptIK | '
        'median / TRAC-IK |',
        '|---|---|---|---|---|---|---|---|---|---|---|---|---|']
    for b in cells:
        optik, tracik = b['solvers'].get('optik'), b['solvers'].get('tracik')
        for name in (OURS,) + COMPILED:
            s = b['solvers'].get(name)
            if s is None:
                continue
            ours = name == OURS
            lines.append(
                f'| {b["robot"]} | {b["seed"]} | {name} | {s["success_pct"]:.1f} | '
                f'{s.get("failed_preempted", "-")} | '
                f'{s["success_within_1ms_pct"]:.1f} | {s["median_ms"]:.3f} | '
                f'{s["p95_ms"]:.3f} | {_f(s.get("median_wall_ms"))} | '
                f'{_f(s.get("median_cpu_ms"))} | '
                f'{_f(_ratio(s, optik, "median_ms"), 2, "x") if ours else ""} | '
                f'{_f(_ratio(s, optik, "p95_ms"), 2, "x") if ours else ""} | '
                f'{_f(_ratio(s, tracik, "median_ms"), 2, "x") if ours else ""} |')
    skipped = {}
    for b in cells:
        skipped.update({k: v for k, v in b['skipped'].items() if k in COMPILED})
    for name, why in sorted(skipped.items()):
        lines.append(f'\n- {name} not run on some robots: {why}')
    return lines + ['']


def peer_checks(results) -> List[Dict[str, Any]]:
    """The targets over the six reference arms, both seeds (within only if every cell is)."""
    cells = [b for b in _cells(results) if b['robot'] in TARGET_ROBOTS]
    checks: List[Tuple[str, str, Any]] = [
        ('damped_jacobian 6D median <= 0.8x OptIK\'s (each arm and seed)', 'optik',
         lambda s, p: (s['median_ms'] / p['median_ms'], 0.8, 'x')),
        ('damped_jacobian 6D p95 <= OptIK\'s p95 (each arm and seed)', 'optik',
         lambda s, p: (s['p95_ms'] / p['p95_ms'], 1.0, 'x')),
        ('damped_jacobian 6D median <= 0.5x TRAC-IK\'s (each arm and seed)', 'tracik',
         lambda s, p: (s['median_ms'] / p['median_ms'], 0.5, 'x')),
        ('damped_jacobian success >= 99.9 % (each arm and seed)', None,
         lambda s, p: (-s['success_pct'], -99.9, ' %')),
        ('damped_jacobian success within 1 ms >= 99.5 % (each arm and seed)', None,
         lambda s, p: (-s['success_within_1ms_pct'], -99.5, ' %')),
    ]
    out = []
    for target, peer_name, measure in checks:
        values = []
        for b in cells:
            s = b['solvers'][OURS]
            peer = b['solvers'].get(peer_name) if peer_name else None
            if peer_name and peer is None:
                continue
            value, limit, unit = measure(s, peer)
            values.append((value, limit, unit, f'{b["robot"]}/{b["seed"]}'))
        if not values:
            out.append(check(target, 'not run', None))
            continue
        met = [v for v in values if v[0] <= v[1]]
        worst = max(values, key=lambda v: v[0])
        shown = abs(worst[0])
        text = (f'within in {len(met)} of {len(values)} cells; worst {worst[3]} '
                f'{shown:.2f}{worst[2]}')
        if len(values) < 2 * len(TARGET_ROBOTS):
            text += f' ({len(values)} of {2 * len(TARGET_ROBOTS)} cells run)'
        out.append(check(target, text, len(met) == len(values)))
    return out
