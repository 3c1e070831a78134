"""Sequence gaps found against the runs kept per agent (``pipelines.sequences``) equal those
found against every number the agent's earlier batches brought: many agents at once, each with
its numbers in random order over four batches, with losses, late arrivals and resends; a
replayed batch gets its first attempt's gaps; pruning keeps what a replay needs."""
from __future__ import annotations

import random

from pyspark.sql import functions as F

from pipelines import catalog, lake, sequences
from pipelines.catalog import BRONZE_KEYS
from pipelines.validate import SUMMARY_DDL

SUMMARY_COLUMNS = [c for c in catalog.VALIDATION_SUMMARY.columns if c[0] != "validated_at"]

BATCHES = 4


def _reference_gaps(known: set[int], batch: list[tuple[int, int]]) -> dict[int, int]:
    """Per bronze offset, the gap before its number: the numbers missing since the highest known
    or same-batch number below it (the same number: none)."""
    out = {}
    for offset, seq in batch:
        if seq in known:
            continue
        below = [s for s in known if s < seq] + [s for o, s in batch if s < seq or (s == seq and o < offset)]
        gap = seq if not below else (0 if max(below) == seq else seq - max(below) - 1)
        if gap:
            out[offset] = gap
    return out


def _agents(rng: random.Random, count: int) -> dict[str, list[list[int]]]:
    """Per agent, the numbers each batch brings: 0..n in random batches, some never sent (lost),
    some resent in a later batch."""
    out = {}
    for a in range(count):
        n = rng.randint(1, 40)
        batches: list[list[int]] = [[] for _ in range(BATCHES)]
        for seq in range(n):
            if rng.random() < 0.1:
                continue  # lost
            batches[min(BATCHES - 1, seq * BATCHES // n + rng.choice((0, 0, 0, 1, 2)))].append(seq)
            if rng.random() < 0.05:
                batches[rng.randrange(BATCHES)].append(seq)  # resent
        out[f"agent-{a:03d}"] = batches
    return out


def test_gaps_from_kept_runs_equal_gaps_from_every_earlier_number(spark, tmp_path):
    lake_path, rng = str(tmp_path / "lake"), random.Random(11)
    agents = _agents(rng, 60)
    known: dict[str, set[int]] = {a: set() for a in agents}
    offset = 0
    for b in range(BATCHES):
        rows, want = [], {}
        for agent, batches in agents.items():
            batch = []
            for seq in batches[b]:
                batch.append((offset, seq))
                rows.append(("t", 0, offset, agent, "g", seq))
                offset += 1
            want.update(_reference_gaps(known[agent], batch))
        df = spark.createDataFrame(rows, "topic string, kafka_partition int, kafka_offset bigint, agent_id string, "
                                         "group_id string, seq bigint")
        runs = sequences.known_runs(spark, lake_path, df.select("agent_id").distinct(), b)
        for attempt in range(2 if b == 1 else 1):  # batch 1 again: a replay after a crash that had recorded it
            gaps = sequences.gaps(df.select("agent_id", "seq", *BRONZE_KEYS), runs)
            got = {r.kafka_offset: r.seq_gap for r in gaps.collect()}
            assert got == want, (b, attempt)
            sequences.record(spark, lake_path, b, df.select("agent_id", "group_id", "seq"), runs)
            runs = sequences.known_runs(spark, lake_path, df.select("agent_id").distinct(), b)
        for agent, batches in agents.items():
            known[agent].update(batches[b])
    stored = {r.agent_id: [(x.lo, x.hi) for x in r.runs] for r in lake.read(spark, lake_path, catalog.SEQUENCES)
              .groupBy("agent_id").agg(F.max_by("runs", "validate_batch").alias("runs")).collect()}
    for agent, seqs in known.items():
        assert [s for lo, hi in stored.get(agent, []) for s in range(lo, hi + 1)] == sorted(seqs), agent

    # Pruning with batches 0-2 passed (3 in flight) keeps what its replay and later batches read.
    every = spark.createDataFrame([(a,) for a in agents], "agent_id string")

    def runs_before(batch: int) -> list:
        return sorted(tuple(r) for r in sequences.known_runs(spark, lake_path, every, batch).collect())

    before = {b: runs_before(b) for b in (3, BATCHES)}
    for b in range(3):
        row = spark.createDataFrame([{**dict.fromkeys(c for c, _ in SUMMARY_COLUMNS), "validate_batch": b,
                                      "passed": True, "rule_failures": {}}], SUMMARY_DDL)
        lake.replace_where(spark, lake_path, catalog.VALIDATION_SUMMARY,
                           row.withColumn("validated_at", F.current_timestamp()), f"validate_batch = {b}")
    assert sequences.prune(spark, lake_path) > 0
    assert {b: runs_before(b) for b in before} == before
    finished = lake.read(spark, lake_path, catalog.SEQUENCES).where("validate_batch <= 2").groupBy("agent_id").count()
    assert finished.where("count > 1").count() == 0  # per agent, its latest finished row only
