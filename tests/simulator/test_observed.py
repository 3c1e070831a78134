"""Rounds read from telemetry: a round whose members all reported its generation is whole; one
where a member's callback came labelled with the next generation is not, and is not replayed."""
from __future__ import annotations

from itertools import count
from typing import Any

from pipelines.simulator.observed import partition_counts, rounds_of, shows_whole_round

_clock = count(1_000)


def _event(agent: str, kind: str, generation: int, partitions: list[int], **body: Any) -> dict[str, Any]:
    return {"kind": kind, "agent_id": agent, "seq": next(_clock), "event_time_ms": next(_clock),
            "generation": generation, "member_id": f"member-{agent}", "group_instance_id": None,
            "group_protocol": "classic", "rebalance_protocol": "eager", "assignor": "range",
            "body": {"partitions": [{"topic": "orders", "partition": p} for p in partitions],
                     "incremental": False, **body}}


def _start(agent: str) -> dict[str, Any]:
    return {**_event(agent, "member_config", -1, []), "body": {"topics": ["orders"], "reason": "start"}}


def test_a_round_every_member_reported_is_whole_and_one_missing_a_member_is_not():
    events = [_start("a"), _start("b"),
              _event("a", "partitions_assigned", 1, [0, 1]), _event("b", "partitions_assigned", 1, [2, 3]),
              _event("a", "partitions_revoked", 1, [0, 1]), _event("b", "partitions_revoked", 1, [2, 3]),
              # b's generation-2 callback came after generation 3 began: labelled 3
              _event("a", "partitions_assigned", 2, [0, 1]), _event("b", "partitions_assigned", 3, [2, 3])]
    counts = partition_counts(events)
    whole = {r.generation: shows_whole_round(r, counts) for r in rounds_of(events)}
    assert whole == {1: True, 2: False, 3: False}
