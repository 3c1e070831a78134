"""Gold's group pass reads each rebalance event's body once and finds the group's triggers once:
episodes and members share both (parsing the JSON bodies was most of the pass's time, and each
used to parse and classify them on its own). Pure: no Spark."""
from __future__ import annotations

import json
import sys
from collections import Counter

import orjson
import pytest

from pipelines.gold import causes, group_pass
from pipelines.gold.handoffs import handoffs_of
from tests.support.fleets import busy_fleet, every_cause
from tests.support.reference_ownership import ownership_intervals

FLEETS = {"busy": busy_fleet(), "poll_interval_exceeded": every_cause()["poll_interval_exceeded"]}


@pytest.mark.parametrize("name", sorted(FLEETS))
def test_each_body_is_parsed_once_and_the_triggers_found_once(name, monkeypatch):
    fleet = FLEETS[name]
    intervals = ownership_intervals(fleet.events)
    handoffs = handoffs_of(intervals)
    last_seen: dict[str, int] = {}
    for e in fleet.events:
        last_seen[e["agent_id"]] = max(e["event_time_ms"], last_seen.get(e["agent_id"], e["event_time_ms"]))
    events = [{**e, "body": json.dumps(e["body"])} for e in fleet.events]  # JSON text, as silver keeps bodies

    parsed: Counter[str] = Counter()
    loads = orjson.loads

    def counting_loads(text: str) -> object:
        parsed[text] += 1
        return loads(text)

    found: list[int] = []
    triggers_of = causes.triggers_of

    def counting_triggers(bodies: causes.Bodies) -> list[causes.Trigger]:
        found.append(len(bodies))
        return triggers_of(bodies)

    monkeypatch.setattr(orjson, "loads", counting_loads)
    for module in [m for n, m in sys.modules.items() if n.startswith("pipelines.")]:
        if getattr(module, "triggers_of", None) is triggers_of:  # every module that could call it
            monkeypatch.setattr(module, "triggers_of", counting_triggers)
    _, episodes, members, _, _, _ = group_pass.group_gold(events, handoffs, last_seen, gap_s=10.0, intervals=intervals)

    rebalance = [e for e in events if e["kind"] in group_pass.KINDS]
    assert episodes and members and any(e["kind"] == "client_error" for e in rebalance) == (name != "busy")
    assert parsed == Counter(e["body"] for e in rebalance)  # each once, and no other event's body
    assert found == [len(rebalance)]
