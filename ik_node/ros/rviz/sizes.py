"""Marker sizes that follow the robot: one :class:`Sizes` per chain (no rclpy)."""

from __future__ import annotations

from dataclasses import dataclass

from ik_node.model.chain import Chain, chain_lengths


@dataclass(frozen=True)
class Sizes:
    """Marker sizes [m] for a robot of reach ``reach_m`` (the sum of its link lengths).

    Each is a share of the reach bounded on both sides, so a leg and an arm both read well.
    """

    reach_m: float = 1.0

    def _share(self, share: float, low: float, high: float) -> float:
        return float(min(max(share * self.reach_m, low), high))

    @property
    def target_radius(self) -> float:
        return self._share(0.025, 0.012, 0.03)

    @property
    def line_width(self) -> float:
        return self._share(0.008, 0.004, 0.01)

    @property
    def ring_radius(self) -> float:
        """Wider than the packaged robots' joint housings, so a ring shows around them."""
        return self._share(0.075, 0.04, 0.075)

    @property
    def text_height(self) -> float:
        """At least 0.04 m: legible (about 30 px) in the robot's shipped RViz view."""
        return self._share(0.06, 0.04, 0.06)

    @property
    def axes_length(self) -> float:
        """Shorter than the inner end of the interactive marker's move arrows."""
        return self._share(0.1, 0.06, 0.1)

    @property
    def handle_scale(self) -> float:
        """The interactive target's scale (its arrows reach about this far from it): small
        enough that the handles do not hide the wrist they sit on."""
        return self._share(0.22, 0.15, 0.22)


def sizes_of(chain: Chain) -> Sizes:
    """The :class:`Sizes` of a chain: its longest tip's sum of link lengths (1 m without)."""
    reach = max((sum(chain_lengths(chain, tip)) for tip in chain.tip_links), default=0.0)
    return Sizes(reach if reach > 0.0 else 1.0)


#: The sizes of a robot of 1 m reach (a default argument).
DEFAULT_SIZES = Sizes()
