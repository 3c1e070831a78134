"""Gold as a per-partition fold with a carried state: over the facts Spark cuts (each event's
share, and the runs the stage sums) it equals the per-event reference and resumes from any cut
(default suite, Spark without a broker); on the fleets below through a real topic (slow suite:
``./lens test -m slow tests/pipelines/test_gold_fold.py``), gold equals the reference and gold
from many small incremental runs (late and out-of-order events included) equals gold from one
run. The built-in scenarios get the same checks in the default suite (``tests/e2e/test_gold_slices.py``)."""
from __future__ import annotations

import json
import uuid
from collections import defaultdict

import orjson
import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType

from pipelines import catalog, lake
from pipelines.gold.facts import NEVER, facts, runs, stalls
from pipelines.gold.group_pass import group_gold
from pipelines.gold.handoffs import handoffs_of
from pipelines.gold.ownership import PartitionFold
from pipelines.gold.stage import newest_rows, not_superseded
from pipelines.stages import run_stage
from pipelines.validate import parse
from lens_scenarios.synthetic import P0, P1, Fleet
from tests.support import fleets
from tests.support.lakes import fresh_config
from tests.support.reference_ownership import group_of, ownership_intervals as reference_intervals
from tests.support.sliced_gold import assert_gold_intervals_equal_reference, assert_sliced_gold_equals


def _stalled() -> Fleet:
    """m1 stalls past max.poll.interval.ms and reports progress before it notices the loss:
    progress that is not its owner's (the fold must see the stall, decided from m1's own events)."""
    fleet = Fleet(group="stalled-app")
    m1, m2 = fleet.member("m1"), fleet.member("m2")
    m1.at(0).joins().at(500).assigned(P0, P1, generation=1).at(600).fetches(P0, 0).fetches(P1, 0)
    m1.at(10_000).processes(P0, upto=99, interval_ms=10_000).commits(P0, 80)
    m2.at(20_000).joins()
    m1.at(30_000).exceeds_poll_interval().processes(P0, upto=150, interval_ms=20_000)
    m2.at(31_000).assigned(P0, P1, generation=2).fetches(P0, 80).fetches(P1, 0)
    m1.at(32_000).loses(P0, P1).at(33_000).assigned(generation=3)
    return fleet


ROUND_MS = 300_000  # past SETTLED_AFTER_MS: a released owner's interval settles by the next round


def _rotating() -> Fleet:
    """P0 handed round by round among m1-m3 for two hours, after m0 held it once at the start and
    stayed in the group: the state must forget m0's interval, not carry every round since."""
    fleet = Fleet(group="rotating-app")
    members = [fleet.member(f"m{i}") for i in range(4)]
    for m in members:
        m.at(0).joins()
    offset = 0
    for k in range(24):
        owner, nxt = members[0 if k == 0 else 1 + k % 3], members[1 + (k + 1) % 3]
        t = 1_000 + k * ROUND_MS
        owner.at(t).assigned(P0, generation=k + 1).at(t + 10).fetches(P0, offset)
        offset += 100
        owner.at(t + 60_000).processes(P0, upto=offset - 1, interval_ms=60_000).commits(P0, offset - 20)
        owner.at(t + ROUND_MS - 100).revokes(P0, committed_in_callback=True)
        if k == 23:
            nxt.at(t + ROUND_MS).assigned(P0, generation=k + 2).at(t + ROUND_MS + 10).fetches(P0, offset)
    return fleet


FLEETS = {"rotating": _rotating(), "scale_out_crash": fleets.scale_out_then_crash(), "busy": fleets.busy_fleet(),
          "quiet": fleets.quiet_group(), "static": fleets.static_cooperative_restarts(), "stalled": _stalled(),
          **fleets.every_cause()}


def _canon(rows):
    return sorted((tuple(sorted(r.items())) for r in rows), key=repr)


def _key(row):
    return row["topic"], row["partition"], row["assign_event_id"]


@pytest.fixture(scope="module")
def cut(spark) -> dict[str, dict[str, list[list[dict]]]]:
    """Per fact source ("facts": each event's share; "runs": progress and commits summed, as the
    stage feeds the fold) and group, each partition's facts in the fold's order, cut by Spark
    from the fleets' events parsed as validation parses them."""
    values = [(json.dumps(e),) for fleet in FLEETS.values() for e in fleet.events]
    events = parse(spark.createDataFrame(values, "value string"))
    no_stalls = spark.createDataFrame([], "cluster_id string, group_id string, agent_id string")
    cut_facts = facts(events, stalls(events, no_stalls))
    sources = {"facts": cut_facts, "runs": runs(cut_facts.withColumn("before_ms", F.lit(NEVER)))}
    out: dict[str, dict[str, list[list[dict]]]] = {}
    for name, df in sources.items():
        by_partition: dict[tuple, list[dict]] = defaultdict(list)
        for row in df.collect():
            f = row.asDict()
            by_partition[(f["group_id"], f["topic"], f["partition"])].append(f)
        out[name] = defaultdict(list)
        for (group, _, _), fs in sorted(by_partition.items()):
            out[name][group].append(sorted(fs, key=lambda f: (f["event_time_ms"], f["agent_id"], f["seq"])))
    return out


SOURCES = ("facts", "runs")
GAP_S = 10.0  # gold's episode gap in the pure tests


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("name", sorted(FLEETS))
def test_the_fold_equals_the_per_event_reference(cut, name, source):
    fleet = FLEETS[name]
    folded = []
    for fs in cut[source][fleet.group]:
        fold = PartitionFold()
        for f in fs:
            fold.feed(f)
        folded += fold.intervals
    assert folded and _canon(folded) == _canon(reference_intervals(fleet.events))


def test_a_stalled_members_progress_is_cut_as_stalled(cut):
    """m1's progress after its stall, before its loss: the one fact the fold must not take as its owner's."""
    stalled = [f for fs in cut["facts"]["stalled-app"] for f in fs if f["stalled"]]
    assert [(f["kind"], f["partition"], f["last_processed_offset"]) for f in stalled] == [("progress", 0, 150)]


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("name", sorted(FLEETS))
def test_a_fold_resumed_from_its_state_at_any_cut_ends_as_one_fold(cut, name, source):
    """Cut each partition's facts anywhere, keep the state (through JSON, as the lake keeps it),
    resume: the intervals and handoffs it gives equal one fold's, and those it no longer gives
    were already final at the cut."""
    for fs in cut[source][FLEETS[name].group]:
        whole = PartitionFold()
        for f in fs:
            whole.feed(f)
        want = {_key(r): r for r in whole.intervals}
        want_handoffs = {h["handoff_id"]: h for h in handoffs_of(whole.intervals)}
        for cut in range(len(fs) + 1):
            first = PartitionFold()
            for f in fs[:cut]:
                first.feed(f)
            state = first.state(fs[cut]["event_time_ms"] if cut < len(fs) else fs[-1]["event_time_ms"] + 1)
            final_at_cut = {_key(r): dict(r) for r in first.intervals}
            handoffs_at_cut = {h["handoff_id"]: h for h in handoffs_of(first.intervals)}
            second = PartitionFold(None if state is None else orjson.loads(orjson.dumps(state)))
            for f in fs[cut:]:
                second.feed(f)
            got = {_key(r): r for r in second.intervals}
            got_handoffs = {h["handoff_id"]: h for h in handoffs_of(second.intervals)}
            assert {k: want[k] for k in got} == got
            assert all(final_at_cut[k] == want[k] for k in want if k not in got)
            assert {k: want_handoffs[k] for k in got_handoffs} == got_handoffs
            assert all(handoffs_at_cut[k] == want_handoffs[k] for k in want_handoffs if k not in got_handoffs)


@pytest.mark.parametrize("source", SOURCES)
def test_the_state_holds_the_recent_owners_not_every_owner_since_the_start(cut, source):
    """Each round's released owner settles once the next one has read and a minute has passed:
    after 24 rounds the state holds the last owners, not m0's interval from the first round."""
    (fs,) = cut[source]["rotating-app"]
    fold = PartitionFold()
    for f in fs:
        fold.feed(f)
    end = fs[-1]["event_time_ms"] + ROUND_MS
    state = fold.state(end)
    assert len(fold.intervals) == 25
    assert state["intervals"] == fold.intervals[-2:]
    assert set(state["latest_of"]) == {fold.intervals[-1]["agent_id"]}
    # just after the last handoff its previous owner is not settled yet: kept, with its own previous owner
    assert fold.state(fs[-1]["event_time_ms"])["intervals"] == fold.intervals[-3:]


slow = pytest.mark.slow


@pytest.fixture(scope="module")
def fleets_lake(spark, kafka, tmp_path_factory):
    """Every fleet above, validated on a real topic, and gold from one run over all of it."""
    config = fresh_config(kafka, tmp_path_factory.mktemp("fold"))
    # the builders draw event ids from one seeded generator, so fleets repeat each other's ids: made unique here
    kafka.feed(config.topic, [(e["agent_id"],
                               json.dumps({**e, "event_id": uuid.uuid5(uuid.NAMESPACE_URL, name + e["event_id"]).hex}),
                               e["event_time_ms"]) for name, fleet in FLEETS.items() for e in fleet.events])
    for stage in ("ingest", "validate", "gold"):
        run_stage(spark, config, stage, progress=lambda _m: None)
    return config


@slow
def test_gold_intervals_equal_the_per_event_reference(spark, fleets_lake):
    assert_gold_intervals_equal_reference(spark, fleets_lake)


@slow
@pytest.mark.timeout(1800)  # 7 gold runs: 10 min on 2 cores the full suite shared, past the default 600 s
def test_many_small_runs_with_late_events_give_one_runs_gold(spark, fleets_lake, tmp_path):
    """The fleets' events in 7 slices by time, some of each slice held back one or two slices
    (out of order, and later than the 2 s of lateness gold folds again), gold after each; the rotating
    fleet's group is written from its horizon on in the later runs."""
    assert_sliced_gold_equals(spark, fleets_lake, tmp_path, slices=7, horizons=True)


@slow
def test_gold_keeps_a_fold_state_per_partition_and_per_group(spark, fleets_lake):
    states = lake.read(spark, fleets_lake.lake_path, catalog.FOLD_STATE)
    per_group = states.where(F.col("topic").isNull())
    assert per_group.count() == len({f.group for f in FLEETS.values()})
    assert states.where(F.col("topic").isNotNull() & F.col("tail").isNull()).count() == 0



def _frame(spark, rows: list[dict], table: catalog.Table):
    """``rows`` as a DataFrame of ``table``'s schema (the pure pass's whole numbers in its double columns)."""
    fields = table.schema().fields
    return spark.createDataFrame([tuple(float(r[f.name])
                                        if isinstance(f.dataType, DoubleType) and r.get(f.name) is not None
                                        else r.get(f.name) for f in fields) for r in rows], table.schema())



def _late_owner_between() -> tuple[Fleet, str]:
    """P0 goes m1 -> m3 -> m2, m3 committing nothing; without m3, gold has m1 -> m2 (m2 starts
    where m1 committed)."""
    fleet = Fleet(group="late-owner")
    m1, m2, m3 = (fleet.member(f"m{i}") for i in (1, 2, 3))
    m1.at(0).joins().at(500).assigned(P0, generation=1).fetches(P0, 0)
    m1.at(5_000).processes(P0, upto=49, interval_ms=4_000).commits(P0, 50).revokes(P0)
    m3.at(5_500).joins().at(6_000).assigned(P0, generation=2).fetches(P0, 50)
    m3.at(8_000).processes(P0, upto=79, interval_ms=2_000).revokes(P0)
    m2.at(8_500).joins().at(9_000).assigned(P0, generation=3).fetches(P0, 50)
    return fleet, m3.agent_id


def _late_first_owner() -> tuple[Fleet, str]:
    """m1 holds P1 from the first round, m3 P0 until m2 takes it; without m3, P0 came to m2
    from an unseen owner (first seen in a later round than its topic)."""
    fleet = Fleet(group="late-first")
    m1, m2, m3 = (fleet.member(f"m{i}") for i in (1, 2, 3))
    m1.at(0).joins().at(500).assigned(P1, generation=1).fetches(P1, 0)
    m3.at(0).joins().at(500).assigned(P0, generation=1).fetches(P0, 0)
    m3.at(8_000).processes(P0, upto=79, interval_ms=7_000).commits(P0, 80).revokes(P0)
    m2.at(8_500).joins().at(9_000).assigned(P0, generation=2).fetches(P0, 80)
    return fleet, m3.agent_id


@pytest.mark.parametrize("planted", (_late_owner_between, _late_first_owner))
def test_a_late_owners_events_replace_the_stored_handoffs_they_disprove(spark, planted):
    """m3's events arrive after gold stored P0's handoffs without it, within the lateness (the
    run folds on from its state): the handoffs of one run over all the events replace every
    stored one m3 disproves, a seen pair's or an unseen owner's part
    (tests/hardening/test_late_duplicates.py found such stale ones end to end)."""
    fleet, late = planted()
    stored = group_of([e for e in fleet.events if e["agent_id"] != late], GAP_S)[1]
    want = group_of(fleet.events, GAP_S)[1]
    assert {h["handoff_id"] for h in stored}.isdisjoint(h["handoff_id"] for h in want), "the case is planted"
    intervals = reference_intervals(fleet.events)
    kept = newest_rows(not_superseded(_frame(spark, stored, catalog.HANDOFFS),
                                      _frame(spark, intervals, catalog.OWNERSHIP)),
                       _frame(spark, handoffs_of(intervals), catalog.HANDOFFS), ["handoff_id"])
    last_seen = {e["agent_id"]: e["event_time_ms"] for e in sorted(fleet.events, key=lambda e: e["event_time_ms"])}
    got = group_gold(fleet.events, [r.asDict() for r in kept.collect()], last_seen, GAP_S, intervals)[0]
    assert sorted((h["handoff_id"], h["unseen_owner"]) for h in got) == sorted(
        (h["handoff_id"], h["unseen_owner"]) for h in want)
    # the stored rows carry the broker source's columns too (null: no broker here), which the agent path leaves out
    agent_columns = set(want[0])
    assert {k: v for h in got for k, v in h.items() if k not in agent_columns and v is not None} == {}
    assert _canon({k: v for k, v in h.items() if k in agent_columns} for h in got) == _canon(want)
