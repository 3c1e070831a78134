"""What the figures mean, in sentences: the headline per group and the terms the page uses."""
from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from tuning_report.figures import cause_label

# Explained where the page first uses them.
TERMS = {
    "episode": "a rebalance episode: the rebalances of a group close together in time, with what triggered them "
               "(a restart, a crash, a new member, ...)",
    "handoff": "one partition moving from the member that let it go to the one that took it; while records wait "
               "for the new owner the partition is paused, and records the old owner processed but did not commit "
               "are read again (duplicates)",
    "eager": "the classic protocol's eager rebalance: every member gives up every partition, then the group "
             "reassigns them all (range, roundrobin)",
    "cooperative": "KIP-429's cooperative rebalance: only the partitions that move are revoked; the rest keep "
                   "being read (cooperative-sticky)",
    "KIP-848": "Kafka's newer consumer protocol (group.protocol=consumer): the broker assigns, member by member, "
               "with no group-wide stop",
    "sources": "Every group on the cluster appears, whatever its members run: where a member runs the agent its "
               "figures are exact (its own telemetry); where it does not, the broker's own log (__consumer_offsets) "
               "prices its handoffs as bounds, tight where the protocol times the moments (KIP-848) and wide where "
               "it cannot (an eager classic round's start is not logged). Where both saw a handoff the agent's "
               "figure wins and the broker's bounds must contain it.",
    "most likely": "Beside a range, the most likely figure (120 to 180, most likely 150) is an estimate, "
                   "not a bound: after a crash, the crashed member's measured pace taken up to a death as likely at "
                   "any moment after its last report; for a handoff only the broker saw, the moment its log told "
                   "the owner to let go; the ownership charts mark the most likely pause with a tick.",
}


# Where a figure came from (pipelines.vocabulary.FIGURE_SOURCES), in the page's words: the fleet table's
# "seen by" column and a recommendation's "priced from".
SOURCE_WORDS = {"agent": "agent (exact)", "broker": "broker (bounds)", "both": "agent + broker"}


@dataclass(frozen=True)
class Headline:
    """A group's totals over the report's window, bounded where gold bounds them."""

    rebalances: int
    duplicates: int
    duplicates_upper: int
    pause_s: float
    pause_upper_s: float
    records: int
    last_day_change: int | None
    coverage: float | None  # share of the partition-time members with the agent held (None: unknown)
    broker_coverage: float | None = None  # share the broker's log showed (None: no broker source, or unknown)

    @classmethod
    def of(cls, daily: pl.DataFrame) -> "Headline":
        daily = daily.sort("day")
        change = daily["duplicates_change"][-1] if daily.height > 1 else None
        owned = daily["owned_s"].sum() or 0
        broker = daily["broker_covered_s"].sum() if "broker_covered_s" in daily.columns else None
        return cls(rebalances=int(daily["rebalances"].sum() or 0), duplicates=int(daily["duplicates"].sum() or 0),
                   duplicates_upper=int(daily["duplicates_upper"].sum() or 0),
                   pause_s=float(daily["pause_s"].sum() or 0.0),
                   pause_upper_s=float(daily["pause_upper_s"].sum() or 0.0),
                   records=int(daily["records_processed"].sum() or 0),
                   last_day_change=None if change is None else int(change),
                   coverage=float(daily["covered_s"].sum() / owned) if owned else None,
                   broker_coverage=float(broker / owned) if owned and broker else None)


def share(value: float | None) -> str:
    """A share as a percentage ("n/a" when unknown)."""
    return "n/a" if value is None else f"{100 * value:.0f}%"


def bounded(lower: float, upper: float, spec: str = ",.0f", estimate: float | None = None) -> str:
    """A figure, or its range when it is known only within bounds, with the most likely figure (gold's
    estimate, never a bound) when there is one."""
    if upper is None or abs(upper - lower) < 1e-9:
        return format(lower, spec)
    likely = f" (most likely {estimate:{spec}})" if isinstance(estimate, int | float) else ""
    return f"{lower:{spec}} to {upper:{spec}}{likely}"


def headline_sentence(h: Headline, causes: pl.DataFrame) -> str:
    """One sentence: what the group's rebalances cost and where most of it came from."""
    if h.rebalances == 0 and h.duplicates == 0:
        return "No rebalance cost anything in this window."
    worst = causes.filter(pl.col("cause") != "start").sort("duplicates", "pause_s", descending=True)
    share = ""
    if worst.height and h.duplicates:
        top = worst.row(0, named=True)
        share = (f" Most of it came from {cause_label(top['cause'])} "
                 f"({top['duplicates'] / h.duplicates:.0%} of the duplicates).")
    rate = f" ({h.duplicates / h.records:.2%} of the records processed)" if h.records else ""
    return (f"Partitions waited {bounded(h.pause_s, h.pause_upper_s, ',.1f')} partition-seconds for a new owner "
            f"and {bounded(h.duplicates, h.duplicates_upper)} records were processed twice{rate}.{share}")
