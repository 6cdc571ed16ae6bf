"""The node's target flow policy: when a kept target message is handed on in its turn, and
when a subscription that is behind skips to its newest message.

A stream the solves keep up with is answered message by message and a burst or a stall of the
node is caught up with; a stream faster than the solves is not queued without end: while the
thread that drains the kept messages is busy (its own CPU time, measured over a window, so time
the machine gave to other processes does not count), a message that waited longer than
:data:`TARGET_FRESH_S` makes its subscription skip to the newest; while it is not busy, one that
waited longer than :data:`TARGET_MAX_WAIT_S`. :class:`~ik_node.ros.inputs.target_subscriptions.
TargetSubscriptions` applies it at each drain.
"""

from __future__ import annotations

import threading
import time
from typing import Optional, Tuple

#: How long a target message may wait in the node's queue [s] and still be solved in its turn
#: while the node's executor thread is busy (:data:`TARGET_BUSY_SHARE`): the node cannot keep
#: up, and skips to the newest message of a subscription whose oldest waited longer (the ones
#: between count as skipped).
TARGET_FRESH_S = 0.02
#: How long a target message may wait in the node's queue [s] and still be solved in its turn
#: while the executor thread is not busy (the wait came from a stall or a burst, which the node
#: catches up with); a full queue (:data:`TARGET_QUEUE_DEPTH`) skips to the newest at once.
TARGET_MAX_WAIT_S = 0.1
#: The executor thread counts as busy when it spent at least this share of the last
#: :data:`TARGET_LOAD_WINDOW_S` on the CPU (its own CPU time: time the machine gave to others
#: does not count).
TARGET_BUSY_SHARE = 0.9
#: The window [s] over which the executor thread's CPU share is measured.
TARGET_LOAD_WINDOW_S = 0.25


class TargetFlow:
    """How long a kept message may wait and still be handed on in its turn, from the draining
    thread's CPU share.

    Args:
        fresh_s, max_wait_s, busy_share: how long a kept message may wait while the draining
            thread is busy, and while it is not, and the CPU share that makes it busy (None:
            :data:`TARGET_FRESH_S`, :data:`TARGET_MAX_WAIT_S`, :data:`TARGET_BUSY_SHARE`, read
            when used).
    """

    def __init__(self, fresh_s: Optional[float] = None, max_wait_s: Optional[float] = None,
                 busy_share: Optional[float] = None) -> None:
        self._fresh_s, self._max_wait_s, self._busy_share = fresh_s, max_wait_s, busy_share
        # the draining thread's CPU share: (thread, window start, its CPU time then)
        self._load: Tuple[int, float, float] = (0, 0.0, 0.0)
        #: True when the draining thread spent at least the busy share of the last window on
        #: the CPU.
        self.busy = False

    def measure(self, now: float) -> None:
        """Update :attr:`busy` when a window has passed (called by the draining thread at each
        drain; a window starts again in another thread)."""
        thread, start, cpu0 = self._load
        ident = threading.get_ident()
        if ident != thread:
            self._load = (ident, now, time.thread_time())
            return
        if now - start >= TARGET_LOAD_WINDOW_S:
            cpu = time.thread_time()
            share = TARGET_BUSY_SHARE if self._busy_share is None else self._busy_share
            self.busy = cpu - cpu0 >= share * (now - start)
            self._load = (ident, now, cpu)

    def stale_before(self, now: float) -> float:
        """The monotonic time [s] before which a kept message has waited too long: its
        subscription skips to its newest."""
        if self.busy:
            wait_s = TARGET_FRESH_S if self._fresh_s is None else self._fresh_s
        else:
            wait_s = TARGET_MAX_WAIT_S if self._max_wait_s is None else self._max_wait_s
        return now - wait_s
