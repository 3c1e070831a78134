"""A group's protocol phases: when all its live members ran the classic protocol, all KIP-848's
consumer protocol, or both at once (``mixed``), from each member process's ``group_protocol``
(gold/members: one row per agent, and a member restarted on the other protocol is a new agent).

This is the broker's view of a migration (Kafka 4.2, ``group.consumer.migration.policy``
bidirectional, the default): the first consumer-protocol member to join a non-empty classic
group converts it, and the group goes back to classic when the last consumer-protocol member
leaves while classic ones remain. In between, every classic member follows the consumer group's
epochs (observed: docs/measured.md, "The KIP-848 migration"), so the mixed phase is where a
migration costs what neither protocol costs alone. A span with no live member has no phase.

A member is live from ``joined_ms`` to ``left_ms``; a crashed one to its last sign of life
(``last_seen_ms``); one that has not left, to the end of what gold has seen (``None``: open).
Pure: Spark's Python workers import it.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from consumer_agent.contract import GROUP_PROTOCOLS
from pipelines.vocabulary import MIXED_PHASE

CLASSIC, CONSUMER = GROUP_PROTOCOLS


@dataclass(frozen=True)
class Phase:
    """One span of a group's protocol phase; ``end_ms`` None: it goes on."""

    phase: str
    start_ms: int
    end_ms: int | None


def _live(m: dict[str, Any]) -> tuple[int, int | None]:
    end = m["left_ms"] if m["left_ms"] is not None else (m["last_seen_ms"] if m["crashed"] else None)
    return m["joined_ms"], end


def _phase_of(live: Counter[str]) -> str | None:
    if live[CLASSIC] and live[CONSUMER]:
        return MIXED_PHASE
    if live[CLASSIC] or live[CONSUMER]:
        return CLASSIC if live[CLASSIC] else CONSUMER
    return None


def protocol_phases(members: Iterable[dict[str, Any]]) -> list[Phase]:
    """The group's phases in time order, one span per phase until it changes (the joins and
    leaves of one instant taken together). Members without a known ``group_protocol`` or join
    time (an agent that never reported its configuration) are left out: the phase is what the
    instrumented members show."""
    steps: dict[int, Counter[str]] = defaultdict(Counter)
    for m in members:
        if m.get("group_protocol") in (CLASSIC, CONSUMER) and m.get("joined_ms") is not None:
            start, end = _live(m)
            steps[start][m["group_protocol"]] += 1
            if end is not None:
                steps[max(end, start)][m["group_protocol"]] -= 1
    live: Counter[str] = Counter()
    spans: list[Phase] = []
    for at in sorted(steps):
        live.update(steps[at])
        now = _phase_of(live)
        if spans and spans[-1].end_ms is None:
            if spans[-1].phase == now:
                continue
            spans[-1] = replace(spans[-1], end_ms=at)
        if now is not None:
            spans.append(Phase(now, at, None))
    return spans


def transitions(phases: list[Phase]) -> list[tuple[int, str, str]]:
    """(at_ms, from, to) where one phase follows another without a gap: ``classic`` -> ``mixed``
    is the online conversion, ``mixed`` -> ``consumer`` the migration done, ``consumer`` ->
    ``mixed`` a rollback begun, ``mixed`` -> ``classic`` the group converted back."""
    return [(b.start_ms, a.phase, b.phase) for a, b in zip(phases, phases[1:]) if a.end_ms == b.start_ms]
