"""Events hours late, out of order and sent twice across batches, through the real topic and
validation: the lake ends as one run over the same events in order, sent once, would leave it.

Three fleets' events go onto the topic in three rounds cut by event time, the pipeline's data
stages running after each. In every round the events are shuffled; a sixth of them arrive one
or two rounds late with a Kafka timestamp 3 or 5 hours after their event time (gold's
lateness is 15 minutes, so their groups are refolded); a tenth of each earlier round's events
are sent again (a retrying agent) in a later round, hours later. A second topic gets the same
events in order, once, and one run. Every gold and recommendation table must be equal, and
silver must hold each event once.
"""
from __future__ import annotations

import random

import pytest

from pipelines import catalog
from pipelines.config import embedded_broker_groups
from pipelines.stages import DATA_STAGES, run_pipeline
from tests.support.accounting import assert_bronze_adds_up
from tests.support.fleets import busy_fleet, scale_out_then_crash, static_cooperative_restarts, with_own_ids
from tests.support.lake_snapshot import differences, snapshot
from tests.support.lakes import fresh_config

HOUR_MS = 3_600_000
ROUNDS = 3
COMPARED = (catalog.MEMBER_STATES, catalog.OWNERSHIP, catalog.HANDOFFS, catalog.EPISODES, catalog.MEMBERS,
            catalog.PROCESSED, catalog.METRICS, catalog.WHAT_IF, catalog.RECOMMENDATIONS)
# where and when a record arrived, not what it says (the two lakes' topics differ on purpose)
ARRIVAL = ("topic", "kafka_partition", "kafka_offset", "kafka_timestamp", "validate_batch")


@pytest.mark.slow
def test_late_out_of_order_and_resent_events_give_the_lake_of_one_ordered_run(spark, kafka, tmp_path):
    rng = random.Random(27)
    fleets = (scale_out_then_crash(), busy_fleet(), static_cooperative_restarts(2))
    records = sorted((r for n, fleet in enumerate(fleets) for r in with_own_ids(fleet, seed=n).keyed()),
                     key=lambda r: r[2])
    cuts = [records[len(records) * k // ROUNDS][2] for k in range(1, ROUNDS)]
    rounds: list[list[tuple]] = [[] for _ in range(ROUNDS)]
    late = resent = 0
    for key, value, t in records:
        due = sum(t >= c for c in cuts)
        if due < ROUNDS - 1 and rng.random() < 1 / 6:
            delay = rng.choice((1, 2)) if due < ROUNDS - 2 else 1
            rounds[due + delay].append((key, value, t + (3 if delay == 1 else 5) * HOUR_MS))
            late += 1
        else:
            rounds[due].append((key, value, t))
        if due < ROUNDS - 1 and rng.random() < 0.1:
            rounds[rng.randrange(due + 1, ROUNDS)].append((key, value, t + 2 * HOUR_MS))
            resent += 1
    messy = fresh_config(kafka, tmp_path / "messy", **embedded_broker_groups())
    for batch in rounds:
        rng.shuffle(batch)
        kafka.feed(messy.topic, batch)
        run_pipeline(spark, messy, DATA_STAGES, progress=lambda _m: None)
    clean = fresh_config(kafka, tmp_path / "clean", **embedded_broker_groups())
    kafka.feed(clean.topic, records)
    run_pipeline(spark, clean, DATA_STAGES, progress=lambda _m: None)

    totals = assert_bronze_adds_up(spark, messy.lake_path)
    print(f"\n{len(records)} events, {late} hours late, {resent} resent, {ROUNDS} rounds: {totals}")
    assert totals["batches"] == ROUNDS and totals["duplicates"] == resent and totals["quarantined"] == 0
    assert late > 10 and resent > 5
    events = snapshot(spark, messy.lake_path, (catalog.EVENTS,), marts=False, drop=ARRIVAL)
    assert events == snapshot(spark, clean.lake_path, (catalog.EVENTS,), marts=False, drop=ARRIVAL)
    got, want = snapshot(spark, messy.lake_path, COMPARED, marts=False), snapshot(spark, clean.lake_path, COMPARED,
                                                                                 marts=False)
    assert all(want[t.path] for t in COMPARED if t not in (catalog.WHAT_IF,)), "an empty table proves nothing"
    assert differences(got, want) == {}
