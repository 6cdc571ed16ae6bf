#!/usr/bin/env python3
"""Plot results.json of ``benchmarks.solvers.bench``: median solve time and success per solver.

One panel per robot and task; a bar per solver and seed kind (median solve time, log scale),
labelled with its success rate. Usage: ``python -m benchmarks.common.plot [results.json]``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

from benchmarks.common.report import _order

RESULTS_JSON = Path(__file__).resolve().parents[1] / 'results' / 'results.json'

SEED_STYLE = {'mid': dict(color='#4c72b0'), 'random': dict(color='#dd8452')}


def plot(results, png: Path) -> Path:
    """Write the figure of ``results`` (the dict of results.json) to ``png``."""
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    groups = {}
    for b in results['blocks']:
        groups.setdefault((b['robot'], b['task']), []).append(b)
    n = len(groups)
    cols = min(3, n)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.6 * rows), squeeze=False)
    budget = results['meta']['budget_ms']
    for ax, ((robot, task), blocks) in zip(axes.flat, groups.items()):
        names = _order({s for b in blocks for s in b['solvers']})
        seeds = [b['seed'] for b in blocks]
        width = 0.8 / max(1, len(seeds))
        for k, b in enumerate(blocks):
            xs, ys, labels = [], [], []
            for i, name in enumerate(names):
                s = b['solvers'].get(name)
                if s is None:
                    continue
                xs.append(i + (k - (len(seeds) - 1) / 2) * width)
                ys.append(s['median_ms'])
                labels.append(f'{s["success_pct"]:.0f}%')
            bars = ax.bar(xs, ys, width=width, label=f'{b["seed"]} seed',
                          **SEED_STYLE.get(b['seed'], {}))
            for bar, text in zip(bars, labels):
                ax.annotate(text, (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                            ha='center', va='bottom', fontsize=7, rotation=90,
                            xytext=(0, 2), textcoords='offset points')
        ax.axhline(budget, color='grey', lw=0.8, ls='--')
        ax.set_yscale('log')
        tallest = max((s['median_ms'] for b in blocks for s in b['solvers'].values()),
                      default=budget)
        ax.set_ylim(top=max(budget, tallest) * 20)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=30, ha='right', fontsize=8)
        ax.set_ylabel('median solve time [ms]')
        ax.set_title(f'{robot}, {"6D pose" if task == "6d" else "position only"} '
                     f'(label: success %)', fontsize=9)
        ax.legend(fontsize=7, loc='upper left')
    for ax in list(axes.flat)[n:]:
        ax.axis('off')
    fig.suptitle(f'IK solve time and success ({results["meta"]["n_targets"]} targets; '
                 f'dashed: {budget:g} ms budget)', fontsize=10)
    fig.tight_layout()
    png = Path(png)
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return png


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    path = Path(argv[0]) if argv else RESULTS_JSON
    results = json.loads(path.read_text())
    print(plot(results, path.with_name('solvers.png')))
    return 0


if __name__ == '__main__':
    sys.exit(main())
