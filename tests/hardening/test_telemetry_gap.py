"""A group rebalanced while its telemetry cluster was away, for longer than the agent's buffer
lasts: the agent counted every drop and said so (agent_health), the pipeline reports the gap
(the sequence numbers missing, per agent, in silver/agent_sequences and the
agent_telemetry_quality mart), and gold invents no handoff the members did not make.

(The host's throughput through such an outage: tests/hardening/test_outage_throughput.py, slow.)
"""
from __future__ import annotations

import polars as pl
import pytest
from pyspark.sql import functions as F

from pipelines import catalog, lake

# The shared hostile lake takes about 5 min to build: slow (./lens test -m slow tests/hardening).
pytestmark = pytest.mark.slow


def test_the_agent_reported_every_drop_and_the_pipeline_counts_the_same_gap(spark, world):
    outage, path = world.outage, world.config.lake_path
    a = outage.agents["A"]
    assert outage.dropped > 0
    health = (lake.read(spark, path, catalog.EVENTS).where((F.col("agent_id") == a) & (F.col("kind") == "agent_health"))
              .agg(F.max("agent_health.dropped_total")).first()[0])
    assert health == outage.dropped
    runs = (lake.read(spark, path, catalog.SEQUENCES).where(F.col("agent_id") == a)
            .orderBy(F.desc("validate_batch")).first()["runs"])
    received = sum(r.hi - r.lo + 1 for r in runs)
    assert max(r.hi for r in runs) + 1 - received == outage.dropped  # seq numbers from 0: each missing one a drop
    quality = pl.read_delta(f"{path}/marts/agent_telemetry_quality").filter(pl.col("agent_id") == a).to_dicts()
    assert len(quality) == 1
    assert quality[0]["sequence_gaps"] == quality[0]["telemetry_dropped"] == outage.dropped, quality[0]
    b = pl.read_delta(f"{path}/marts/agent_telemetry_quality").filter(pl.col("agent_id") == outage.agents["B"])
    assert b["sequence_gaps"].to_list() == [0] and b["telemetry_dropped"].to_list() == [0]


def test_gold_invents_no_handoff(spark, world):
    outage = world.outage
    truth = outage.true_handoffs()
    assert truth, "the members rebalanced: there were real handoffs"
    gold = {(r.partition, r.prev_agent_id, r.next_agent_id) for r in
            lake.read(spark, world.config.lake_path, catalog.HANDOFFS).where(F.col("group_id") == outage.group)
            .select("partition", "prev_agent_id", "next_agent_id").collect()}
    print(f"\ntrue handoffs {sorted(truth)}; gold's {sorted(gold)}; drops {outage.dropped}")
    assert gold <= truth
