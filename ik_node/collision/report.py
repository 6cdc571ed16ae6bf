"""What a collision check finds: the pairs closer than the padding, and the closest pair."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple


@dataclass(frozen=True)
class Contact:
    """A pair closer than the padding (or the closest pair).

    Attributes:
        link_a, link_b: the two links (``link_b`` may name a world item: ``ground``, an
            obstacle's name).
        distance_m: signed distance between their hulls [m]; negative: penetration depth.
        world: ``''`` for two links, ``'ground'`` or ``'obstacle'`` when ``link_b`` names one.
    """

    link_a: str
    link_b: str
    distance_m: float
    world: str = ''

    @property
    def pair_text(self) -> str:
        """``'link_a - link_b'``, ``'link_a - obstacle name'`` or ``'link_a - ground'``."""
        if self.world == 'obstacle':
            return f'{self.link_a} - obstacle {self.link_b}'
        return f'{self.link_a} - {self.link_b}'

    def describe(self) -> str:
        """One line for a message: the pair and how deep it is in (or how far apart) [mm]:
        ``'forearm_link - obstacle table/1: 76 mm in'``."""
        mm = 1000.0 * abs(self.distance_m)
        amount = f'{mm:.1f}' if mm < 10.0 else f'{mm:.0f}'
        if self.distance_m < 0.0:
            return f'{self.pair_text}: {amount} mm in'
        if self.distance_m == 0.0:
            return f'{self.pair_text}: touching'
        return f'{self.pair_text}: {amount} mm apart'


@dataclass(frozen=True)
class CollisionReport:
    """The collision state of one configuration.

    Attributes:
        free: no checked pair (and no link against the world) is closer than the padding.
        colliding: the pairs closer than the padding, deepest first.
        closest: the closest checked pair (None when nothing is checked).
    """

    free: bool
    colliding: Tuple[Contact, ...]
    closest: Optional[Contact]

    @property
    def min_distance_m(self) -> Optional[float]:
        """Signed distance of the closest pair [m] (None when nothing is checked)."""
        return None if self.closest is None else self.closest.distance_m

    def message(self) -> str:
        """What collides, for a result's message ('' when free)."""
        if self.free:
            return ''
        return 'in collision: ' + '; '.join(c.describe() for c in self.colliding[:3])

    def colliding_text(self) -> str:
        """The deepest colliding pairs with their depths, ``'; '``-separated ('' when free)."""
        return '; '.join(c.describe() for c in self.colliding[:3])
