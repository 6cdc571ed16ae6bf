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

    A status passes when it is ERROR, or ``force`` d (first result after a change), or its level
    differs from the last one sent, or ``1 / rate`` seconds have passed since the last one.
    The newest held-back status is kept in :attr:`held` for a later :meth:`flush`.

    Args:
        rate_hz: statuses per second let through while the level stays the same [Hz].
    """

    def __init__(self, rate_hz: float) -> None:
        self.period = 1.0 / rate_hz
        self._last_time = -math.inf
        self._last_level: Optional[bytes] = None
        self.held = None

    def offer(self, now: float, level: bytes, item, force: bool = False) -> bool:
        """True if ``item`` should go out now (then it counts as sent), else hold it.

        ``now``: a monotonic time [s].
        """
        if force or level == ERROR or level != self._last_level \
                or now - self._last_time >= self.period:
            self._sent(now, level)
            return True
        self.held = (level, item)
        return False

    def flush(self, now: float) -> List:
        """The held-back item, if its time has come (then it counts as sent)."""
        if self.held is None or now - self._last_time < self.period:
            return []
        level, item = self.held
        self._sent(now, level)
        return [item]

    def _sent(self, now: float, level: bytes) -> None:
        self._last_time, self._last_level, self.held = now, level, None
