"""The queue between the target subscriptions and the solve: the newest target of each tip.

Targets can stream faster than they are solved; only the newest pending one of each tip is worth
solving, so this holds one per tip (never a backlog) and counts the ones overwritten.
"""

from __future__ import annotations

import threading
from typing import Dict, Hashable, Tuple

from ik_node.ros.inputs.targets import Target


class LatestTargets:
    """The newest pending target of every slot (a tip), never a backlog; thread-safe.

    Subscription callbacks :meth:`put`; whoever solves :meth:`take` s everything pending.
    A target overwritten before it was taken counts as skipped.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: Dict[Hashable, Target] = {}
        self._arrivals: Dict[Hashable, int] = {}  # targets put into each slot, ever
        self.skipped = 0
        #: True while a target waits to be solved (read without the lock: a plain attribute).
        self.pending = False

    def put(self, slot: Hashable, target: Target) -> None:
        """Store ``target`` as the newest of ``slot``."""
        with self._lock:
            if slot in self._pending:
                self.skipped += 1
            self._pending[slot] = target
            self._arrivals[slot] = self._arrivals.get(slot, 0) + 1
            self.pending = True

    def put_all(self, targets: Dict[Hashable, Target]) -> None:
        """Store every ``{slot: target}`` at once (the targets of one message): whoever takes
        gets all of them or none."""
        with self._lock:
            for slot, target in targets.items():
                if slot in self._pending:
                    self.skipped += 1
                self._pending[slot] = target
                self._arrivals[slot] = self._arrivals.get(slot, 0) + 1
            self.pending = bool(self._pending)

    def count_skipped(self, count: int) -> None:
        """Count ``count`` targets overwritten before they reached this queue."""
        with self._lock:
            self.skipped += count

    def arrivals(self, slots) -> Dict[Hashable, int]:
        """``{slot: how many targets were ever put into it}`` for ``slots``."""
        with self._lock:
            return {slot: self._arrivals.get(slot, 0) for slot in slots}

    def put_back(self, targets: Dict[Hashable, Target], arrivals: Dict[Hashable, int]) -> bool:
        """Store ``targets`` again (taken, to be tried once more) unless a newer target came
        into any of their slots since ``arrivals`` (:meth:`arrivals` when they were taken):
        all or none, and never one older than a target already taken. True if stored; else they
        count as skipped."""
        with self._lock:
            if any(self._arrivals.get(slot, 0) != arrivals.get(slot) for slot in targets):
                self.skipped += len(targets)
                return False
            self._pending.update(targets)
            self.pending = bool(self._pending)
            return True

    def take_counted(self) -> Tuple[Dict[Hashable, Target], Dict[Hashable, int]]:
        """:meth:`take`, with the :meth:`arrivals` of the slots taken at that moment."""
        with self._lock:
            out, self._pending = self._pending, {}
            self.pending = False
            return out, {slot: self._arrivals.get(slot, 0) for slot in out}

    def take(self) -> Dict[Hashable, Target]:
        """Every pending target (and forget them); empty when none."""
        with self._lock:
            out, self._pending = self._pending, {}
            self.pending = False
            return out
