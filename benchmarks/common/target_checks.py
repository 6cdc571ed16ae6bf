"""A benchmark's own targets, checked against the figures of one run (no measuring here).

A check is a plain dict, as it goes into the results JSON: ``target`` (what the benchmark aims
at, in words), ``measured`` (this run's figure) and ``within`` (True, False, or None when it was
not measured).
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional


def check(target: str, measured: str, within: Optional[bool]) -> Dict[str, Any]:
    """One target with this run's figure and whether the figure is within it."""
    return {'target': target, 'measured': measured, 'within': within}


def answer(within: Optional[bool]) -> str:
    """``yes``, ``no`` or ``not measured``."""
    return 'not measured' if within is None else ('yes' if within else 'no')


def markdown(checks: Iterable[Dict[str, Any]]) -> List[str]:
    """The checks as a markdown section."""
    lines = ['## Targets of this benchmark', '', '| target | measured | within target |',
             '|---|---|---|']
    for c in checks:
        lines.append(f'| {c["target"]} | {c["measured"]} | {answer(c["within"])} |')
    return lines


def log_lines(checks: Iterable[Dict[str, Any]]) -> List[str]:
    """One line per check for the console."""
    return [f'target: {c["target"]}: {c["measured"]} (within: {answer(c["within"])})'
            for c in checks]
