"""The rate gate of the node's statuses: a fast target stream does not flood ``/diagnostics``.

Plain Python (no ROS): the clock is passed in, so the gate is tested without waiting.
"""

from __future__ import annotations

import math
from typing import List, Optional

from diagnostic_msgs.msg import DiagnosticStatus

ERROR = DiagnosticStatus.ERROR


class StatusRateGate:
    """Rate limit for statuses while targets stream.

    A status passes at once when it is ``force`` d (first result after a change); when it is
    urgent (an ERROR, or a level different from the last one sent) and at least
    ``period / URGENT_SHARE`` has passed since the last status sent; or when ``period`` has passed.
    Otherwise the newest held-back status is kept in :attr:`held` (a held ERROR gives way only
    to a newer ERROR) for a later :meth:`flush`, which sends it after ``period / URGENT_SHARE``
    if anything urgent was held since the last one sent, else after ``period``.
    So a stream that alternates good and bad targets gets at most ``URGENT_SHARE * rate``
    statuses per second, the newest of each moment, instead of one per target.

    Args:
        rate_hz: statuses per second let through while the level stays the same [Hz].
    """

    #: how many times more often than ``rate_hz`` errors and changes of level may go out.
    URGENT_SHARE = 10

    def __init__(self, rate_hz: float) -> None:
        self.period = 1.0 / rate_hz
        self.urgent_gap = self.period / self.URGENT_SHARE
        self._last_time = -math.inf
        self._last_level: Optional[bytes] = None
        self.held = None
        self._held_urgent = False

    def offer(self, now: float, level: bytes, item, force: bool = False) -> bool:
        """True if ``item`` should go out now (then it counts as sent), else hold it.

        ``now``: a monotonic time [s].
        """
        since = now - self._last_time
        urgent = level == ERROR or level != self._last_level
        if force or since >= self.period or (urgent and since >= self.urgent_gap):
            self._sent(now, level)
            return True
        if self.held is None or self.held[0] != ERROR or level == ERROR:
            self.held, self._held_urgent = (level, item), urgent or self._held_urgent
        return False

    def flush(self, now: float) -> List:
        """The held-back item, if its time has come (then it counts as sent)."""
        if self.held is None:
            return []
        wait = self.urgent_gap if self._held_urgent else self.period
        if now - self._last_time < wait:
            return []
        level, item = self.held
        self._sent(now, level)
        return [item]

    def _sent(self, now: float, level: bytes) -> None:
        self._last_time, self._last_level, self.held = now, level, None
        self._held_urgent = False
