"""How wide a group's figures are: per measure, the sum of its handoffs' point figures (what surely
happened) and of their upper bounds, the part only the broker saw (``source`` broker: its log's bounds),
and how far the figures' midpoint, which predictions are anchored to, can lie from the truth.

Read by the confidence of every price (``judgement.confidence``) and by the instrument advice
(``instrument``). Pure: plain gold/handoffs rows in.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipelines.vocabulary import FIGURE_SOURCES

AGENT, BROKER, BOTH = FIGURE_SOURCES
# (measure, its upper bound, its most likely figure) as gold/handoffs names them
FIGURES = (("duplicates", "duplicates_upper", "duplicates_estimate"), ("pause_s", "pause_upper_s", "pause_estimate_s"))
WORDS = {"duplicates": ("duplicates", ",.0f"), "pause_s": ("paused partition-seconds", ",.1f")}  # said, formatted


def source(handoff: dict[str, Any]) -> str:
    """Where a handoff's figures came from; a row written before the broker source was the agent's."""
    return handoff.get("source") or AGENT


@dataclass(frozen=True)
class Spread:
    """One measure over a group's handoffs: the sums of point figures, upper bounds and most likely figures,
    and the parts of the first two only the broker saw."""

    figure: str
    lower: float
    upper: float
    estimate: float
    broker_lower: float
    broker_upper: float

    def _of_midpoint(self, width: float) -> float:
        """``width`` as a share of the figures' midpoint: the most the midpoint can be off the truth when the
        truth lies anywhere in a range that wide around it."""
        return width / (self.upper + self.lower) if self.upper + self.lower > 0 else 0.0

    @property
    def off(self) -> float:
        """How far the midpoint of [lower, upper] can be from the truth, in its own terms (0: exact)."""
        return self._of_midpoint(self.upper - self.lower)

    @property
    def broker_off(self) -> float:
        """The part of ``off`` that the handoffs only the broker saw leave (what running the agent would close)."""
        return self._of_midpoint(self.broker_upper - self.broker_lower)


def spread(handoffs: list[dict[str, Any]], figure: str) -> Spread:
    """``figure``'s spread over ``handoffs``: an unknown figure counts 0, an unknown upper bound (a pause still
    open) its point figure, an unknown estimate its point figure."""
    _, upper_name, estimate_name = next(f for f in FIGURES if f[0] == figure)
    lows = [(h[figure] or 0, h[upper_name], h.get(estimate_name), source(h) == BROKER) for h in handoffs]
    rows = [(low, low if up is None else up, low if likely is None else likely, broker)
            for low, up, likely, broker in lows]
    return Spread(figure, sum(r[0] for r in rows), sum(r[1] for r in rows), sum(r[2] for r in rows),
                  sum(r[0] for r in rows if r[3]), sum(r[1] for r in rows if r[3]))


def source_of(handoffs: list[dict[str, Any]]) -> str | None:
    """Where a set of handoffs' figures came from, as one word of ``FIGURE_SOURCES`` (None: no handoff): the
    agent's or the broker's alone, else both."""
    found = {source(h) for h in handoffs}
    if not found:
        return None
    return found.pop() if len(found) == 1 else BOTH
