"""The queue between the target subscriptions and the solve: the newest target of each tip.

Targets can stream faster than they are solved; only the newest pending one of each tip is worth
solving, so this holds one per tip (never a backlog) and counts the ones overwritten.
"""

from __future__ import annotations

import threading
from typing import Dict, Hashable

from ik_node.ros.messages import Target


class LatestTargets:
    """The newest pending target of every slot (a tip), never a backlog; thread-safe.

    Subscription callbacks :meth:`put`; whoever solves :meth:`take` s everything pending.
    A target overwritten before it was taken counts as skipped.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: Dict[Hashable, Target] = {}
        self.skipped = 0

    def put(self, slot: Hashable, target: Target) -> None:
        """Store ``target`` as the newest of ``slot``."""
        with self._lock:
            if slot in self._pending:
                self.skipped += 1
            self._pending[slot] = target

    def put_all(self, targets: Dict[Hashable, Target]) -> None:
        """Store every ``{slot: target}`` at once (the targets of one message): whoever takes
        gets all of them or none."""
        with self._lock:
            for slot, target in targets.items():
                if slot in self._pending:
                    self.skipped += 1
                self._pending[slot] = target

    def take(self) -> Dict[Hashable, Target]:
        """Every pending target (and forget them); empty when none."""
        with self._lock:
            out, self._pending = self._pending, {}
            return out

    @property
    def pending(self) -> bool:
        """True while a target waits to be solved."""
        return bool(self._pending)
