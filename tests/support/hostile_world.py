"""A telemetry topic with everything that can go wrong on it at once, through the whole
pipeline and the report: the hardening tests' shared lake (tests/hardening/conftest.py).

On one topic, in two validation batches: hostile and malformed records drawn by hypothesis
(tests/support/hostile_records.py); small fleets whose group ids, hosts and client ids carry
quotes, backslashes, markup, SQL and control characters, split across the batches (so gold
replaces their rows by a quoted literal on the second run); events of the first batch sent
again in the second (cross-batch duplicates); real agents of a group named with quotes and
backslashes on the broker's SASL listener with secrets in their config; and a group that
rebalanced while its telemetry cluster was away. The first batch runs through gold, the
second through every stage (SQL marts included), then the report is written.
"""
from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lens_scenarios.synthetic import Fleet
from pipelines.config import PipelineConfig, embedded_broker_groups
from pipelines.stages import run_pipeline
from tests.support import hostile_records
from tests.support.fleets import scale_out_then_crash, with_own_ids
from tests.support.hostile_records import Case
from tests.support.outage_agent import OutageRun, run_outage
from tests.support.secret_agent import SecretRun, run_secret_agents

CASES_PER_KIND = 5  # hypothesis examples of each kind of case in the default suite (fixed seed); slow: more
# Group ids no scheduler would pick, each a fleet with a rebalance, a crash and hostile hosts and clients.
NASTY_GROUPS = (
    "quote'n\"dq\\back\\\\slash\\'",
    "'; DROP TABLE lens_marts.group_daily_costs; --",
    "<script>alert('lens')</script>",
    "ctl\x00\x01\x1b[31m\n\r\tend",
    "orders${x}${jndi:ldap://x/a}{{7*7}}%s\u202e😀",  # ${x}: Spark's variable substitution made it "orders"
)
PLAIN_GROUP = "plain-control"
REAL_GROUP = "real'agents\"\\with\\\\quotes"  # the SASL agents' consumer group (a real Kafka group)


@dataclass
class World:
    config: PipelineConfig
    cases: list[tuple[Case, tuple[int, int] | str, str]]  # each case, where the topic put it (or why not), event id
    fleets: dict[str, Fleet]
    resent: int
    secret: SecretRun
    outage: OutageRun
    results: dict[str, Any]
    report: Path
    took: dict[str, float] = field(default_factory=dict)


def _hostile_members(fleet: Fleet, n: int) -> Fleet:
    """The fleet with each agent's host and client id made hostile (consistently per agent), and
    event ids of its own (``with_own_ids``)."""
    hosts = ("<img src=x onerror=alert(1)>", "h'o\"s\\t", "host\x00\x07bell", "-- comment", "\u0000")
    agents = sorted({e["agent_id"] for e in fleet.events})
    with_own_ids(fleet, seed=1000 + n)
    for event in fleet.events:
        i = agents.index(event["agent_id"])
        if n >= 0:
            event["host"] = f"{hosts[(n + i) % len(hosts)]}#{i}"
            event["client_id"] = f"c'l\"i\\e<n>t;{i}"
    return fleet


def _halves(fleet: Fleet) -> tuple[list, list]:
    records = sorted(fleet.keyed(), key=lambda r: r[2])
    cut = len(records) // 2
    return records[:cut], records[cut:]


def build_world(spark, kafka, where: Path) -> World:
    """Play everything onto a new topic and run the pipeline and the report over it (see the
    module docstring); how long each step took is in ``took``."""
    topic = kafka.create_topic(f"world-{uuid.uuid4().hex[:8]}", partitions=2, config={"retention.ms": "-1"})
    config = PipelineConfig(bootstrap_servers=kafka.bootstrap_servers, lake_path=str(where / "lake"), topic=topic,
                            max_bad_row_fraction=1.0, **embedded_broker_groups())
    took: dict[str, float] = {}
    started = time.monotonic()
    # real agents first (their helpers read the topic back, which the hostile records would break)
    outage = run_outage(kafka, topic)
    secret = run_secret_agents(kafka, topic, REAL_GROUP)
    took["agents"] = time.monotonic() - started

    # the same timeline under each hostile name, and under a plain one (n = -1: plain hosts too) to hold them against
    fleets = {g: _hostile_members(scale_out_then_crash(group=g), n)
              for n, g in [(-1, PLAIN_GROUP), *enumerate(NASTY_GROUPS)]}
    cases = hostile_records.draw(CASES_PER_KIND)
    ids = [hostile_records.fresh_id() for _ in cases]
    first = [fleet_half for f in fleets.values() for fleet_half in _halves(f)[0]]
    second = [fleet_half for f in fleets.values() for fleet_half in _halves(f)[1]]
    resent = first[::7] + second[::11]   # sent again: across batches and within the second

    started = time.monotonic()
    split = len(cases) // 2
    kafka.deliver(topic, hostile_records.base_records())  # the agents the cases move are known first
    places = kafka.deliver(topic, [c.make(i) for c, i in zip(cases[:split], ids[:split])])
    kafka.feed(topic, first)
    run_pipeline(spark, config, ("ingest", "validate", "silver", "gold"), progress=lambda _m: None)
    took["first batch, to gold"] = time.monotonic() - started

    started = time.monotonic()
    places += kafka.deliver(topic, [c.make(i) for c, i in zip(cases[split:], ids[split:])])
    kafka.feed(topic, second + resent)
    results = run_pipeline(spark, config, progress=lambda _m: None)
    took["second batch, every stage"] = time.monotonic() - started

    from tuning_report import write_report

    started = time.monotonic()
    report = write_report(config.lake_path, where / "report", progress=lambda _m: None)
    took["report"] = time.monotonic() - started
    return World(config, list(zip(cases, places, ids)), fleets, len(resent), secret, outage, results, report, took)
