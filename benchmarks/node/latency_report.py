"""The analysis and the markdown of ``benchmarks.node.latency``: each phase's latencies matched
by stamp, the target checks, and the node against the relay (rclpy's floor).
"""

from __future__ import annotations

import math
from typing import Any, Dict, List

import numpy as np

from benchmarks.common import target_checks
from benchmarks.node.dds_probe import stamp_ns

TARGET_P99_MS = 3.0


def _percentiles(values: np.ndarray, prefix: str) -> Dict[str, Any]:
    if not values.size:
        return {f'{prefix}_p50_ms': None, f'{prefix}_p99_ms': None, f'{prefix}_max_ms': None}
    return {f'{prefix}_p50_ms': float(np.percentile(values, 50)),
            f'{prefix}_p99_ms': float(np.percentile(values, 99)),
            f'{prefix}_max_ms': float(values.max())}


def analyse(out_mask: np.ndarray, sent: np.ndarray, stamps: np.ndarray, received,
            answers: Dict[int, tuple], diag_pairs) -> Dict[str, Any]:
    """Match answers to targets by stamp; latency per kind of target, skipped, backlog slope.

    ``answers`` (the node's trace): target stamp [ns] -> (JointState stamp [ns], reached,
    solve time [s], status). ``received``: the recorder's (receive time, JointState stamp,
    positions). End-to-end latency = recorder receive time of the answering JointState - send
    time (monotonic clock); node side = the JointState's stamp - the target's stamp (both the
    wall clock: when the node published - when this process published).
    """
    n = len(stamps)
    receive_by_stamp = {stamp: t for t, stamp, _ in received}
    e2e = np.full(n, np.nan)
    node_side = np.full(n, np.nan)
    solve_ms = np.full(n, np.nan)
    reached = np.zeros(n, dtype=bool)
    answered = np.zeros(n, dtype=bool)
    not_received = 0
    for k, stamp in enumerate(stamps.tolist()):
        answer = answers.get(stamp)
        if answer is None:
            continue
        js_stamp, ok, solve_s, _ = answer
        answered[k], reached[k], solve_ms[k] = True, ok, solve_s * 1e3
        node_side[k] = (js_stamp - stamp) * 1e-6
        t = receive_by_stamp.get(js_stamp)
        if t is None:
            not_received += 1
        else:
            e2e[k] = (t - sent[k]) * 1e-6
    # the node's own echo in /diagnostics (the statuses its rate gate let through) must agree
    mine = set(stamps.tolist())
    checked = [(stamp_ns(t), stamp_ns(j)) for t, j in diag_pairs if ',' not in t]
    checked = [(t, j) for t, j in checked if t in mine]
    mismatched = sum(1 for t, j in checked if answers.get(t, (None,))[0] != j)
    # runs of consecutive unanswered targets: many short ones = steady overload, few long ones =
    # stalls (of the node, or of this machine)
    gaps, run = [], 0
    for ok in answered:
        if ok:
            if run:
                gaps.append(run)
            run = 0
        else:
            run += 1
    if run:
        gaps.append(run)
    out: Dict[str, Any] = {
        'sent': n, 'sent_out_of_reach': int(out_mask.sum()),
        'answered': int(answered.sum()), 'answered_out_of_reach': int((answered & out_mask).sum()),
        'not_answered': int((~answered).sum()),
        'answers_not_received': not_received,
        'reported_reached_in_reach': int((reached & ~out_mask).sum()),
        'reported_reached_out_of_reach': int((reached & out_mask).sum()),
        'diagnostics_pairs_checked': len(checked), 'diagnostics_pairs_mismatched': mismatched,
        'unanswered_runs': len(gaps), 'longest_unanswered_run': max(gaps, default=0),
        'achieved_rate_hz': (n - 1) / ((sent[-1] - sent[0]) * 1e-9) if n > 1 else None}
    timed = ~np.isnan(e2e)
    for kind, mask in (('', np.ones(n, dtype=bool)), ('in_reach_', ~out_mask),
                       ('out_of_reach_', out_mask)):
        out.update(_percentiles(e2e[timed & mask], f'{kind}latency'))
        out.update(_percentiles(node_side[answered & mask], f'{kind}node_side'))
        out.update(_percentiles(solve_ms[answered & mask], f'{kind}solve'))
    solved = answered & ~np.isnan(solve_ms)
    out['solve_mean_ms'] = float(solve_ms[solved].mean()) if solved.any() else None
    if timed.any():
        lat = e2e[timed]
        ts = (sent[timed] - sent[0]) * 1e-9
        first, last = lat[ts < 1.0], lat[ts > ts.max() - 1.0]
        out.update({
            'latency_mean_ms': float(lat.mean()),
            'backlog_slope_ms_per_s': float(np.polyfit(ts, lat, 1)[0]) if lat.size > 2 else 0.0,
            'median_first_second_ms': float(np.median(first)) if first.size else None,
            'median_last_second_ms': float(np.median(last)) if last.size else None,
        })
    return out


def _ms(p: Dict[str, Any], key: str, digits: int = 2) -> str:
    return '-' if p.get(key) is None else f'{p[key]:.{digits}f}'


def phase_line(name: str, p: Dict[str, Any]) -> str:
    return (f'[{name} {p["rate_hz"]:g} Hz, {p["out_of_reach_share"]:g} out] sent {p["sent"]} '
            f'answered {p["answered"]} e2e p50/p99 {_ms(p, "latency_p50_ms")}/'
            f'{_ms(p, "latency_p99_ms")} ms (in reach {_ms(p, "in_reach_latency_p50_ms")}/'
            f'{_ms(p, "in_reach_latency_p99_ms")}, out {_ms(p, "out_of_reach_latency_p50_ms")}/'
            f'{_ms(p, "out_of_reach_latency_p99_ms")}) node side p99 '
            f'{_ms(p, "node_side_p99_ms")} solve p99 in/out {_ms(p, "in_reach_solve_p99_ms")}/'
            f'{_ms(p, "out_of_reach_solve_p99_ms")} ms cpu {p["node_cpu_pct"]:.0f}% '
            f'({_ms(p, "node_cpu_ms_per_answer")} ms/answer; recorder '
            f'{p.get("recorder_cpu_pct", float("nan")):.0f}%, publisher '
            f'{p.get("publisher_cpu_pct", float("nan")):.0f}%) '
            f'steal {p.get("steal_pct", float("nan")):.1f}% '
            f'skipped(node) {p["skipped_reported_by_node"]} slope '
            f'{_ms(p, "backlog_slope_ms_per_s", 3)} ms/s load {p["load_avg_1min"]:.1f}')


def markdown(results) -> str:
    m = results['meta']
    lines = ['# ik_node latency: target published -> /joint_states received', '',
             f'Run {m["date"]}: `{m["command"]}`  ', f'Python {m["python"]}; {m["machine"]}  ',
             *([f'{m["label"]}  '] if m.get('label') else []), '',
             'Every answer is matched to its target by stamp: each target carries a unique '
             'header stamp (the wall-clock send time); the node, run with a trace of every '
             'solve (benchmarks/node/traced.py), records the pair (target_stamp, '
             'joint_state_stamp) that its /diagnostics carry for the statuses they publish, and '
             'the recorder receives the JointState with that stamp. **e2e**: send time in this '
             'process just before publish -> receive time in a separate recorder process, in '
             'its callback (system monotonic clock; rclpy dispatch on both sides included; the '
             'recorder spins the executor the node uses, the EventsExecutor where rclpy has it). '
             '**node side**: the target\'s stamp -> the stamp of the JointState answering it '
             '(both wall clock), i.e. without the delivery to the recorder. **solve**: the '
             'solver\'s own solve time for the answered targets. **in reach / out**: targets of '
             'the smooth path / the same pushed beyond the reach (`--out-of-reach` share of '
             'every 2 s). "answered" counts targets whose solution was published; the others '
             'were superseded by a newer target before the node got to them (it solves the '
             'newest only); "skipped (node)" is the node\'s own count from /diagnostics; gaps: '
             'runs of consecutive unanswered targets (many short ones = steady overload, a long '
             'one = a stall). Backlog slope: a line fitted to e2e latency against send time '
             '(about 0 = no backlog). CPU ms / answer: the node\'s CPU time over the phase per '
             'answered target. Harness CPU %: the recorder process / this publishing process '
             '(the three share the 2 cores). Steal: CPU time the hypervisor gave to other '
             'VMs during the phase, share of all CPUs\' time (/proc/stat). Load: 1-minute load '
             'average of the shared 2-core machine at the end of the phase.', '',
             '| config | solver | target | run | rate Hz | out share | achieved Hz | sent | '
             'answered (out) | gaps (longest) | skipped (node) | e2e p50 / p99 ms | '
             'in reach p50 / p99 | out of reach p50 / p99 | e2e max ms | node side p50 / p99 | '
             'solve p99 in / out | slope ms/s | node CPU % | CPU ms / answer | harness CPU % | '
             'steal % | load |',
             '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|'
             '---|']
    for r in results['configs']:
        if 'error' in r:
            lines.append(f'| {r["config"]} | error: {r["error"]} |')
            continue
        for p in r['phases']:
            def f(k, d=2, p=p):
                return _ms(p, k, d)

            def pair(a, b, p=p):
                return f'{_ms(p, a)} / {_ms(p, b)}'
            lines.append(
                f'| {r["config"]} | {r["solver"]} | {r["target"]} | {r["run"]} | '
                f'{p["rate_hz"]:g} | {p["out_of_reach_share"]:g} | {f("achieved_rate_hz", 0)} | '
                f'{p["sent"]} | {p["answered"]} ({p["answered_out_of_reach"]}) | '
                f'{p["unanswered_runs"]} ({p["longest_unanswered_run"]}) | '
                f'{p["skipped_reported_by_node"]} | '
                f'{pair("latency_p50_ms", "latency_p99_ms")} | '
                f'{pair("in_reach_latency_p50_ms", "in_reach_latency_p99_ms")} | '
                f'{pair("out_of_reach_latency_p50_ms", "out_of_reach_latency_p99_ms")} | '
                f'{f("latency_max_ms")} | {pair("node_side_p50_ms", "node_side_p99_ms")} | '
                f'{pair("in_reach_solve_p99_ms", "out_of_reach_solve_p99_ms")} | '
                f'{f("backlog_slope_ms_per_s", 3)} | {f("node_cpu_pct", 0)} | '
                f'{f("node_cpu_ms_per_answer")} | {f("recorder_cpu_pct", 0)} / '
                f'{f("publisher_cpu_pct", 0)} | {f("steal_pct", 1)} | '
                f'{f("load_avg_1min", 1)} |')
    if results.get('against_relay'):
        lines += [''] + relay_markdown(results['against_relay'])
    lines += [''] + target_checks.markdown(results['target_checks'])
    return '\n'.join(lines) + '\n'


def checks(results) -> List[Dict[str, Any]]:
    """p99 <= 3 ms at 1 kHz, no growing backlog: medians over the runs of each config."""
    by_config: Dict[tuple, List[Dict[str, Any]]] = {}
    for r in results['configs']:
        if r.get('solver') == 'relay':
            continue
        for p in r.get('phases', []):
            if p['rate_hz'] == 1000:
                by_config.setdefault((r['config'], r['solver'], p['out_of_reach_share']),
                                     []).append(p)
    out = []
    for (config, solver, share), phases in by_config.items():
        target = (f'{config} ({solver}) at 1 kHz, {share:g} of the stream out of reach: p99 <= '
                  f'{TARGET_P99_MS:g} ms over all answers, no growing backlog (median of '
                  f'{len(phases)} run{"s" if len(phases) > 1 else ""})')
        done = [p for p in phases if p.get('latency_p99_ms') is not None]
        if not done:
            out.append(target_checks.check(target, 'no answers', False))
            continue

        def median(key, done=done):
            values = [p[key] for p in done if p.get(key) is not None]
            return float(np.median(values)) if values else math.nan
        p99, slope = median('latency_p99_ms'), median('backlog_slope_ms_per_s')
        # "no backlog": latency may not climb by more than 1 ms over the phase
        within = p99 <= TARGET_P99_MS and abs(slope) * done[0]['duration_s'] < 1.0
        out.append(target_checks.check(target, (
            f'e2e p99 {p99:.2f} ms (in reach {median("in_reach_latency_p99_ms"):.2f}, out of '
            f'reach {median("out_of_reach_latency_p99_ms"):.2f}; node side '
            f'{median("node_side_p99_ms"):.2f}), slope {slope:.3f} ms/s'), within))
    return out


#: Node CPU per answer may exceed the relay's plus the solve time by this much [ms].
CPU_OVER_FLOOR_MS = 0.05
#: e2e p99 target [ms] in phases whose steal stays below STEAL_LIMIT_PCT.
FLOOR_P99_MS = 1.0
STEAL_LIMIT_PCT = 1.0


def against_relay(results) -> List[Dict[str, Any]]:
    """Every node phase beside the relay's phase of the same run, config and rate: CPU per
    answer, e2e latency, answered share and steal, and the node's CPU per answer above the
    relay's and the solve's."""
    relays = {(r['config'], r['run']): {p['rate_hz']: p for p in r['phases']}
              for r in results['configs'] if r.get('solver') == 'relay' and 'error' not in r}
    out = []
    for r in results['configs']:
        if r.get('solver') == 'relay' or 'error' in r:
            continue
        floors = relays.get((r['config'], r['run']), {})
        for p in r['phases']:
            f = floors.get(p['rate_hz'])
            if f is None:
                continue

            def ratio(key, p=p, f=f):
                a, b = p.get(key), f.get(key)
                return a / b if a is not None and b else None
            cpu, floor_cpu, solve = (p.get('node_cpu_ms_per_answer'),
                                     f.get('node_cpu_ms_per_answer'), p.get('solve_mean_ms'))
            out.append({
                'config': r['config'], 'solver': r['solver'], 'target': r['target'],
                'run': r['run'], 'rate_hz': p['rate_hz'],
                'out_of_reach_share': p['out_of_reach_share'],
                'node_cpu_ms_per_answer': cpu, 'relay_cpu_ms_per_answer': floor_cpu,
                'cpu_ratio': ratio('node_cpu_ms_per_answer'), 'solve_mean_ms': solve,
                'cpu_over_floor_ms': None if None in (cpu, floor_cpu, solve) else
                cpu - floor_cpu - solve,
                'latency_p50_ms': p.get('latency_p50_ms'),
                'relay_latency_p50_ms': f.get('latency_p50_ms'),
                'latency_p50_ratio': ratio('latency_p50_ms'),
                'latency_p99_ms': p.get('latency_p99_ms'),
                'relay_latency_p99_ms': f.get('latency_p99_ms'),
                'latency_p99_ratio': ratio('latency_p99_ms'),
                'sent': p['sent'], 'answered': p['answered'], 'relay_sent': f['sent'],
                'relay_answered': f['answered'], 'steal_pct': p.get('steal_pct'),
                'relay_steal_pct': f.get('steal_pct'), 'load_avg_1min': p.get('load_avg_1min')})
    return out


def _joined(values, digits: int = 2) -> str:
    return ', '.join(f'{v:.{digits}f}' for v in values)


def relay_checks(rows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """At 1 kHz, per config: CPU per answer <= relay's + solve + CPU_OVER_FLOOR_MS (median
    over runs); no target dropped (leg3, arm6: every run); e2e p99 <= FLOOR_P99_MS in every
    phase whose steal stays below STEAL_LIMIT_PCT."""
    by_config: Dict[str, List[Dict[str, Any]]] = {}
    for row in rows:
        if row['rate_hz'] == 1000:
            by_config.setdefault(row['config'], []).append(row)
    out = []
    for config, group in by_config.items():
        over = [g['cpu_over_floor_ms'] for g in group if g['cpu_over_floor_ms'] is not None]
        if over:
            median = float(np.median(over))
            out.append(target_checks.check(
                f'{config} at 1 kHz: node CPU per answer <= the relay\'s + solve + '
                f'{CPU_OVER_FLOOR_MS:g} ms (median of {len(over)} run{"s" * (len(over) > 1)})',
                f'node - relay - solve {median * 1e3:.0f} µs (runs: '
                f'{", ".join(f"{v * 1e3:.0f}" for v in over)} µs; CPU ratio to the relay '
                f'{_joined(g["cpu_ratio"] for g in group if g["cpu_ratio"])})',
                median <= CPU_OVER_FLOOR_MS))
        if config in ('leg3', 'arm6'):
            dropped = [g['sent'] - g['answered'] for g in group]
            out.append(target_checks.check(
                f'{config} at 1 kHz: no target dropped (every run)',
                f'unanswered per run: {", ".join(str(d) for d in dropped)} of '
                f'{group[0]["sent"]}', all(d == 0 for d in dropped)))
        calm = [g for g in group if g['steal_pct'] is not None and
                g['steal_pct'] < STEAL_LIMIT_PCT and g['latency_p99_ms'] is not None]
        out.append(target_checks.check(
            f'{config} at 1 kHz: e2e p99 <= {FLOOR_P99_MS:g} ms where steal < '
            f'{STEAL_LIMIT_PCT:g} %',
            'no phase with steal below the limit' if not calm else
            f'p99 {_joined(g["latency_p99_ms"] for g in calm)} ms (steal '
            f'{_joined((g["steal_pct"] for g in calm), 1)} %)',
            None if not calm else all(g['latency_p99_ms'] <= FLOOR_P99_MS for g in calm)))
    return out


def relay_markdown(rows: List[Dict[str, Any]]) -> List[str]:
    """The node against the relay of the same run, as a markdown section."""
    lines = ['## The node against the relay (same run, same executor, QoS and message types)',
             '', 'relay: benchmarks/node/relay.py answers every target message with one '
             'JointState (the names the node publishes), no solve. **CPU over floor**: node CPU '
             'per answer - relay CPU per answer - the mean solve time of the answered targets.',
             '', '| config | run | rate Hz | node / relay CPU ms per answer | CPU ratio | '
             'solve mean ms | CPU over floor ms | e2e p50 node / relay ms | p50 ratio | '
             'e2e p99 node / relay ms | p99 ratio | answered node / relay of sent | '
             'steal node / relay % | load |', '|---|---|---|---|---|---|---|---|---|---|---|---|'
             '---|---|']

    def f(v, d=3):
        return '-' if v is None else f'{v:.{d}f}'
    for g in rows:
        lines.append(
            f'| {g["config"]} | {g["run"]} | {g["rate_hz"]:g} | '
            f'{f(g["node_cpu_ms_per_answer"])} / {f(g["relay_cpu_ms_per_answer"])} | '
            f'{f(g["cpu_ratio"], 2)} | {f(g["solve_mean_ms"])} | {f(g["cpu_over_floor_ms"])} | '
            f'{f(g["latency_p50_ms"], 2)} / {f(g["relay_latency_p50_ms"], 2)} | '
            f'{f(g["latency_p50_ratio"], 2)} | {f(g["latency_p99_ms"], 2)} / '
            f'{f(g["relay_latency_p99_ms"], 2)} | {f(g["latency_p99_ratio"], 2)} | '
            f'{g["answered"]} / {g["relay_answered"]} of {g["sent"]} | '
            f'{f(g["steal_pct"], 1)} / {f(g["relay_steal_pct"], 1)} | '
            f'{f(g["load_avg_1min"], 1)} |')
    return lines
