"""A crashed owner's pace after its last tick: what the estimate of a crash handoff's duplicates and
pause takes from the owner's telemetry (``pipelines.gold.handoffs``, whose module docstring says how
the estimate is made).

By ``at_ms`` (its last tick) the owner had handed out records up to ``handed`` (a next-to-read
offset) and the log ended at ``end`` (position + lag, None if unknown). After it, the owner hands out
what the log holds at its ``capacity`` (records per ms: the fastest it was measured handing out
between two ticks) while the log grows at ``growth`` (records per ms): caught up, it hands out what is
produced; behind, as much as it can take. A pace, not a bound: an owner can stall, or take a burst
faster than any tick measured. Pure arithmetic, no Spark.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

# The emitter's linger.ms (consumer_agent.emitter.PRODUCER_DEFAULTS): a tick's event leaves the process this
# long after the tick at the soonest, so an owner whose tick reached the topic lived at least that long,
# and the tick it did not send would have left as late.
LINGER_MS = 50


@dataclass(frozen=True)
class Pace:
    """How a crashed owner went on after its last tick (the module docstring)."""

    at_ms: int
    handed: int
    end: int | None
    capacity: float | None
    growth: float | None

    def _limits(self) -> list[tuple[float, float]]:
        """(offset at ``at_ms``, records per ms) of each line the next offset cannot pass."""
        limits = []
        if self.capacity is not None:
            limits.append((float(self.handed), self.capacity))
        if self.end is not None:
            limits.append((float(self.end), self.growth or 0.0))
        elif self.growth is not None:  # the log end unknown: what is produced, as if caught up
            limits.append((float(self.handed), self.growth))
        return limits

    def handed_by(self, t_ms: float) -> float:
        """The next offset the owner would hand out at ``t_ms`` (``handed`` before ``at_ms``)."""
        d = max(0.0, t_ms - self.at_ms)
        limits = self._limits()
        return max(float(self.handed), min(a + rate * d for a, rate in limits)) if limits else float(self.handed)

    def reached_ms(self, offset: float) -> float | None:
        """When the next offset reached ``offset`` at this pace (None: never)."""
        if offset <= self.handed:
            return float(self.at_ms)
        waits = []
        for a, rate in self._limits() or [(float(self.handed), 0.0)]:
            if a >= offset:
                waits.append(0.0)
            elif rate <= 0:
                return None
            else:
                waits.append((offset - a) / rate)
        return self.at_ms + max(waits)

    def last_record_ms(self, t_ms: float, before_ms: float) -> float:
        """When the last record handed out by ``t_ms`` was handed out: at this pace if one was after the tick,
        else somewhere from ``before_ms`` (the tick before the last that counted records) to the tick."""
        handed = math.floor(self.handed_by(t_ms))
        reached = self.reached_ms(handed) if handed > self.handed else None
        return reached if reached is not None else (min(before_ms, self.at_ms) + self.at_ms) / 2.0
