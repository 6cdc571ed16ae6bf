"""A one-line progress bar with the rate and the time left, for long builds (on a terminal it
redraws the line; elsewhere it prints a line at most every ``every_s`` seconds)."""

from __future__ import annotations

import sys
import time
from typing import Optional, TextIO


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f'{seconds // 3600}h{seconds % 3600 // 60:02d}m'
    if seconds >= 60:
        return f'{seconds // 60}m{seconds % 60:02d}s'
    return f'{seconds}s'


class Progress:
    """Counts finished work of ``total`` units and shows it on ``stream``.

    Args:
        total: units to do (IK targets).
        done: units already done (resumed shards): not counted in the rate.
        label: the line's first words.
        stream: where to write (None: nowhere).
        every_s: least time between two lines when ``stream`` is not a terminal [s].
    """

    def __init__(self, total: int, done: int = 0, label: str = 'capability map',
                 stream: Optional[TextIO] = sys.stderr, every_s: float = 5.0):
        self.total, self.done, self.label, self.stream = total, done, label, stream
        self._resumed = done
        self._start = time.monotonic()
        self._last = -1e9
        self._every = every_s if stream is None or not stream.isatty() else 0.2

    def rate(self) -> float:
        """Units per second since the start (resumed units not counted)."""
        elapsed = time.monotonic() - self._start
        return (self.done - self._resumed) / elapsed if elapsed > 0 else 0.0

    def line(self) -> str:
        """The progress as one line: bar, share, count, rate and time left."""
        share = self.done / self.total if self.total else 1.0
        filled = int(round(24 * share))
        rate = self.rate()
        left = (self.total - self.done) / rate if rate > 0 else float('inf')
        eta = _duration(left) if left != float('inf') else '?'
        return (f'{self.label}: [{"#" * filled}{"." * (24 - filled)}] {100 * share:5.1f}% '
                f'{self.done:,}/{self.total:,} targets, {rate:,.0f}/s, ETA {eta}')

    def update(self, units: int) -> None:
        """``units`` more done; show the line when it is time."""
        self.done += units
        now = time.monotonic()
        if self.stream is None or (now - self._last < self._every and self.done < self.total):
            return
        self._last = now
        end = '\r' if self.stream.isatty() and self.done < self.total else '\n'
        self.stream.write(self.line() + end)
        self.stream.flush()

    def close(self) -> None:
        """End the line on a terminal."""
        if self.stream is not None and self.stream.isatty():
            self.stream.write('\n')
            self.stream.flush()
