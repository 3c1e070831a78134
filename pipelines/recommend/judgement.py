"""What every rule, warning and plan row shares: the group's evidence as they read it
(``Evidence``), the row each writes (``Recommendation``), whether a saving pays, and how sure
the what-if is of a price (``confidence``).

A change pays only when the what-if predicts a saving of at least ``MIN_SAVING`` of what the
group's rebalances cost now, in duplicates or in paused partition-seconds, without making the
other worse by more than ``MAX_WORSE`` (a stated trade-off excepted; ``pipelines.policy``).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from pipelines import vocabulary
from pipelines.policy import MAX_WORSE, MIN_DUPLICATES, MIN_PAUSE_S, MIN_SAVING, TOLERANCE
from pipelines.recommend import readiness
from pipelines.recommend.bounds import FIGURES, WORDS, spread
from pipelines.recommend.configuration import Config
from pipelines.recommend.what_if import WhatIf
from pipelines.simulator.cost_model import Priced


@dataclass(frozen=True)
class Recommendation:
    kind: str
    title: str
    config: Config | None  # the candidate it prices (None: a warning or the healthy verdict)
    config_change: tuple[str, ...]
    rollout: tuple[str, ...]
    evidence: tuple[str, ...]
    evidence_query: str
    confidence: str
    confidence_reason: str
    priced: Priced | None = None
    tradeoff: str | None = None
    before: Priced | None = None  # what ``priced`` saves from (None: the current configuration's replay)
    mixed_phase: Priced | None = None  # a migration step's mixed phase (``simulator.migration``)
    source: str | None = None  # where the figures it rests on came from (None: the handoffs the what-if priced)

    def __post_init__(self) -> None:
        # a rule with a new kind or confidence declares it first (the SQL tests and the CLI follow the declaration)
        if (self.kind not in vocabulary.RECOMMENDATION_KIND_NAMES
                or self.confidence not in vocabulary.CONFIDENCE_LEVELS
                or self.source not in (None, *vocabulary.FIGURE_SOURCES)):
            raise ValueError(f"undeclared recommendation kind {self.kind!r}, confidence {self.confidence!r} or "
                             f"source {self.source!r}: declare it in pipelines/vocabulary.py")


@dataclass(frozen=True)
class Evidence:
    """One group's gold rows and its what-if, as the rules read them."""

    group_id: str
    members: list[dict[str, Any]]
    handoffs: list[dict[str, Any]]
    episodes: list[dict[str, Any]]
    intervals: list[dict[str, Any]]
    what_if: WhatIf
    coverage: float | None = None  # share of the group's partition-time its instrumented members held
    instrument: Recommendation | None = None  # the advice to run the agent (``instrument``), when it holds

    def churn(self, cause: str | None = None) -> list[dict[str, Any]]:
        return [h for h in self.handoffs if h["cause"] != "start" and (cause is None or h["cause"] == cause)]

    @cached_property
    def readiness(self) -> list[readiness.Finding]:
        """The KIP-848 readiness findings of the group's members, over the topics they owned or named."""
        topics = {i["topic"] for i in self.intervals} | {
            t for m in self.members for s in m["subscriptions"] for t in s["topics"]}
        return readiness.findings(self.members, topics)


def total(handoffs: list[dict[str, Any]], figure: str) -> float:
    """The sum of a gold/handoffs figure (``pipelines.measures``: exact, else the lower bound; unknown: 0)."""
    return sum(h[figure] or 0 for h in handoffs)


def fmt(d: float, p: float) -> str:
    """Duplicates and paused partition-seconds, in words."""
    return f"{d:,.0f} duplicates and {p:,.1f} paused partition-seconds"


def pays(base: Priced, p: Priced, tradeoff_ok: bool = False) -> bool:
    """A saving of at least MIN_SAVING in one figure, and the other no more than MAX_WORSE worse."""
    dup_saved, pause_saved = base.duplicates - p.duplicates, base.pause_s - p.pause_s
    good = (dup_saved > MIN_SAVING * base.duplicates and dup_saved >= MIN_DUPLICATES) or \
           (pause_saved > MIN_SAVING * base.pause_s and pause_saved >= MIN_PAUSE_S)
    worse = dup_saved < -MAX_WORSE * max(base.duplicates, 1) or pause_saved < -MAX_WORSE * max(base.pause_s, 1)
    return good and (tradeoff_ok or not worse)


def bounds_reasons(e: Evidence) -> list[str]:
    """What makes a price rest on bounds: a measured figure whose bounds leave its midpoint (what every
    prediction is anchored to) further from the truth than a prediction may be and hold (a crash's, or a
    handoff the broker priced)."""
    wide = [s for s in (spread(e.churn(), figure) for figure, _, _ in FIGURES) if s.off > TOLERANCE]
    return [f"the measured {WORDS[s.figure][0]} it is anchored to are known only within bounds "
            f"({s.lower:{WORDS[s.figure][1]}} to {s.upper:{WORDS[s.figure][1]}}): their midpoint can be "
            f"{s.off:.0%} off" for s in wide]


def confidence(e: Evidence, config: Config) -> tuple[str, str]:
    """How sure the what-if is of ``config``'s price, and why: its model of the current configuration
    against what gold measured, how many handoffs it was fitted on, and whether the group ran the protocol."""
    f, w = e.what_if.fitted, e.what_if
    base, seen = w.replayed_baseline, w.measured
    reasons = []
    off = [abs(b - s) / s for b, s in ((base.duplicates, seen.duplicates), (base.pause_s, seen.pause_s)) if s > 0]
    if off and max(off) > TOLERANCE:
        reasons.append(f"the replay of the current configuration is {100 * max(off):.0f}% off what gold measured "
                       f"({fmt(base.duplicates, base.pause_s)} against {fmt(seen.duplicates, seen.pause_s)}; the "
                       "predictions are the replays' ratio applied to the measured figures)")
    reasons += bounds_reasons(e)
    if f.pause_observations < 5 or f.window_observations < 5:
        reasons.append(f"the cost model rests on few handoffs ({f.pause_observations} pauses, "
                       f"{f.window_observations} graceful re-deliveries)")
    now, then = w.current.setup.assignor.split(":")[0], config.setup.assignor.split(":")[0]
    if "consumer" in (now, then) and (assumed := w.broker.assumed()) is not None:
        reasons.append(assumed)
    if now != then:
        reasons.append(f"the group was never seen on group.protocol={then}: its handoff pause is assumed to be "
                       "the one measured here")
    if not reasons:
        return "high", (f"{f.pause_observations} measured handoffs fit the model, which reproduces the measured "
                        f"costs within {100 * TOLERANCE:.0f}%")
    return ("low" if len(reasons) > 1 else "medium"), "; ".join(reasons)
