"""Instrument this group: the advice to run the agent on a group whose figures are the broker's bounds,
where those bounds are too wide to choose between changes and the possible saving is large.

The broker's log prices a handoff it alone saw as bounds (``pipelines/gold/broker_handoffs.py``): tight
where the protocol writes the moments down, wide where it cannot (an eager classic round's start is not
logged). A prediction is anchored to the midpoint of the measured figures; when the part only the broker saw
leaves that midpoint further from the truth than ``policy.INSTRUMENT_SPREAD`` (a prediction must hold within
the closed loop's tolerance), no change can be priced between them, and when the bounds' upper end is large
(``INSTRUMENT_MIN_DUPLICATES``, ``INSTRUMENT_MIN_PAUSE_S``), running the agent (``kinds.INSTRUMENT``) is what
to do first: its figures are exact, and the what-if can then price the changes. Pure: plain gold rows in.
"""
from __future__ import annotations

from typing import Any

from pipelines.policy import INSTRUMENT_MIN_DUPLICATES, INSTRUMENT_MIN_PAUSE_S, INSTRUMENT_SPREAD, MIN_SAVING
from pipelines.recommend.bounds import BROKER, FIGURES, WORDS, Spread, source, source_of, spread
from pipelines.recommend.evidence_queries import Q_BY_SOURCE
from pipelines.recommend.judgement import Recommendation, fmt
from pipelines.recommend.kinds import INSTRUMENT

LARGE = {"duplicates": INSTRUMENT_MIN_DUPLICATES, "pause_s": INSTRUMENT_MIN_PAUSE_S}


def too_wide(s: Spread) -> bool:
    """The part of ``s`` only the broker saw leaves its midpoint too far from the truth to price a change
    by, and its upper end is large enough for the least change that pays to be worth the agent's rollout."""
    return s.broker_off > INSTRUMENT_SPREAD and s.upper >= LARGE[s.figure]


def _bounds_line(s: Spread) -> str:
    word, spec = WORDS[s.figure]
    return (f"{word.capitalize()}: {s.lower:{spec}} to {s.upper:{spec}} (most likely {s.estimate:{spec}}), of "
            f"which the broker alone saw {s.broker_lower:{spec}} to {s.broker_upper:{spec}}: their midpoint can be "
            f"{s.broker_off:.0%} off the truth on that part alone, past the {INSTRUMENT_SPREAD:.0%} a prediction "
            "must hold within, so no change can be priced between them.")


def _coverage_line(coverage: list[dict[str, Any]]) -> str | None:
    owned = sum(c["owned_s"] or 0.0 for c in coverage)
    if owned <= 0:
        return None
    agent = sum(c["covered_s"] or 0.0 for c in coverage) / owned
    broker = sum(c.get("broker_covered_s") or 0.0 for c in coverage) / owned
    return (f"The agent saw {agent:.0%} of the group's partition-time exactly, the broker {broker:.0%} "
            "(gold/coverage).")


def instrument_advice(handoffs: list[dict[str, Any]], coverage: list[dict[str, Any]],
                      topic: str) -> Recommendation | None:
    """The advice for a group with these gold/handoffs and gold/coverage rows (its window's), or None when
    its bounds let a change be priced or what they leave open is small. ``topic``: the telemetry topic the
    agent is to send to."""
    churn = [h for h in handoffs if h["cause"] != "start"]
    spreads = [spread(churn, figure) for figure, _, _ in FIGURES]
    wide = [s for s in spreads if too_wide(s)]
    if not wide:
        return None
    seen = [h for h in churn if source(h) == BROKER]
    dup, pause = spreads
    evidence = (f"{len(seen)} of the group's {len(churn)} handoffs after it formed were seen only by the broker "
                "(gold/handoffs, source broker): priced from its log, as bounds.",
                *(_bounds_line(s) for s in wide),
                f"At the bounds' upper end its rebalances cost up to {fmt(dup.upper, pause.upper)}: a change "
                f"that pays (at least {MIN_SAVING:.0%}) would save at least "
                f"{fmt(MIN_SAVING * dup.upper, MIN_SAVING * pause.upper)} there.",
                *([line] if (line := _coverage_line(coverage)) else []))
    rollout = ("Canary: run the agent on one member for a day: its handoffs turn exact (source both in gold/handoffs) "
               "and gold/source_agreement counts any of its figures outside the broker's bounds.",
               f"Then the other members, one by one (rollout effort {INSTRUMENT.effort}: a new dependency and a "
               "rolling restart); the changes are priced on the next recommend run.",
               INSTRUMENT.rolling_back)
    return Recommendation(INSTRUMENT.name, INSTRUMENT.title, None, INSTRUMENT.settings(topic), rollout, evidence,
                          Q_BY_SOURCE, "high", "the bounds and their width are read from the broker's log; what the "
                          "group costs inside them is not known", source=source_of(churn) or BROKER)
