"""The config-change kinds are declared once (``pipelines.recommend.kinds``): the what-if's grid,
the rules, the staged plan and the report follow the declaration, so a kind declared with its
simulator effect (and its name in the vocabulary) is priced, recommended, planned and reported
without another edit."""
from __future__ import annotations

from datetime import date
from typing import Any

import polars as pl
import pytest

from pipelines import vocabulary
from pipelines.recommend import kinds
from pipelines.recommend.configuration import Config
from pipelines.recommend.kinds import ChangeKind, Effect
from pipelines.recommend.recommendations import RULES
from pipelines.simulator.replay import Setup
from tests.support.fleets import scale_out_then_crash
from tests.support.recommending import recommend_fleet
from tuning_report.marts import Fleet
from tuning_report.page import render

RANGE = Config(Setup("classic:range", False, 45_000, 300_000), False)
OTHERS = {"assignor": "consumer:uniform", "static": True, "session_timeout_ms": 10_000,
          "max_poll_interval_ms": 600_000, "commit_on_revoke": True}


def test_every_rerun_checked_config_change_is_a_declared_kind_with_one_setting_of_its_own():
    names = [k.name for k in kinds.KINDS]
    assert len(set(names)) == len(names) and set(RULES) <= set(names)
    assert set(names) == set(vocabulary.VERIFIABLE_KINDS) - set(vocabulary.PLAN_KINDS)
    assert [k.name for k in kinds.in_order()] == [n for n in vocabulary.RECOMMENDATION_KIND_NAMES if n in names]
    assert {k.setting for k in kinds.KINDS} == set(OTHERS)
    for kind in kinds.KINDS:
        moved = RANGE.having(**{kind.setting: OTHERS[kind.setting]})
        assert [k.name for k in kinds.moving(RANGE, moved)] == [kind.name]
        assert kinds.changes(RANGE, moved) == kind.lines(RANGE, moved) != []
        assert kind.toward(RANGE, moved) == moved and kind.effort >= 1


def _closes_on_shutdown(value: bool, members: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The planted kind's effect: a member that closes its consumer before its process ends leaves
    the group then, where a crashed one keeps its partitions until its session times out."""
    if not value:
        return members
    return [{**m, "crashed": False, "left_ms": m["last_seen_ms"], "leave_cause": "scale_in"} if m["crashed"] else m
            for m in members]


CLOSE_LINE = "# call consumer.close() before the process exits (a SIGTERM handler)"
PLANTED = ChangeKind(
    "close_on_shutdown", ("close_on_shutdown",), 1, lambda config: "Close the consumer before the process exits",
    lambda source, config: "close the consumer on shutdown",
    lambda a, b: [CLOSE_LINE] if a.value("close_on_shutdown") != b.value("close_on_shutdown") else [],
    Effect(lambda basis, at: (False, True), now=lambda members: False, replayed=_closes_on_shutdown))


@pytest.fixture
def planted(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kind as a contributor would add it: its name in the vocabulary, its entry with its effect."""
    declared = vocabulary.RecommendationKind(PLANTED.name, "close the consumer on shutdown", False)
    monkeypatch.setattr(vocabulary, "RECOMMENDATION_KINDS", (*vocabulary.RECOMMENDATION_KINDS, declared))
    monkeypatch.setattr(vocabulary, "RECOMMENDATION_KIND_NAMES", (*vocabulary.RECOMMENDATION_KIND_NAMES, PLANTED.name))
    monkeypatch.setattr(kinds, "KINDS", (*kinds.KINDS, PLANTED))


def _report(rows: list[dict[str, Any]]) -> str:
    """The report's page over one group whose open recommendations are ``rows`` (the marts it reads
    besides, empty but for a day of costs)."""
    key = {"cluster_id": rows[0]["cluster_id"], "group_id": rows[0]["group_id"]}
    daily = pl.DataFrame([{**key, "day": date(2026, 11, 25), "rebalances": 3, "duplicates": 50, "duplicates_upper": 80,
                           "pause_s": 70.0, "pause_upper_s": 90.0, "records_processed": 400,
                           "duplicates_change": None, "covered_s": 1.0, "owned_s": 1.0}])

    def empty(**columns: Any) -> pl.DataFrame:
        return pl.DataFrame(schema={"cluster_id": pl.String, "group_id": pl.String, **columns})

    fleet = Fleet({"group_daily_costs": daily, "open_recommendations": pl.DataFrame(rows),
                   "group_cause_costs": empty(cause=pl.String, duplicates=pl.Int64, pause_s=pl.Float64),
                   "rebalance_episodes": empty(cause=pl.String, duplicates=pl.Int64, pause_s=pl.Float64),
                   "episode_handoffs": empty(), "group_protocol_phases": empty(), "config_comparison": empty(),
                   "member_costs": empty(cost_rank=pl.Int64),
                   "host_costs": empty(duplicates=pl.Int64, pause_s=pl.Float64),
                   "recommendation_checks": empty(verified_at=pl.Datetime)})
    return render(fleet, "t", "all the data in the lake")


def test_a_planted_kind_is_priced_recommended_planned_and_reported_from_its_declaration(planted):
    """scale_out_then_crash: m2 crashed and its partition waited out the 45 s session timeout. The
    planted kind's effect replays the crash as a leave, so the what-if prices it; it pays, so its
    rule is the what-if's own, and it is the first step of the plan to the configuration that saves
    the most; the report shows both rows as the recommend stage wrote them."""
    what_if, found = recommend_fleet(scale_out_then_crash())
    closing = [w for w in what_if if w["config"].endswith("close_on_shutdown=True")]
    assert closing and len(closing) == len(what_if) // 2  # the grid doubled: each configuration, closing or not
    assert next(w for w in what_if if w["is_current"])["config"].endswith("close_on_shutdown=False")

    own = next(r for r in found if r["kind"] == PLANTED.name)
    assert own["title"] == "Close the consumer before the process exits" and own["config_change"] == [CLOSE_LINE]
    assert own["predicted_pause_saved_s"] > 0 and "Replayed with " + CLOSE_LINE in own["evidence"][1]
    assert own["rollout"][0].startswith("Canary: apply it to one member") and own["rollout"][-1].startswith("Roll back")

    step = next(r for r in found if r["kind"] == "plan_step" and r["config_change"] == [CLOSE_LINE])
    assert step["title"].endswith(": close the consumer on shutdown") and step["title"].startswith("Step 1 of ")
    assert f"for a rollout effort of {PLANTED.effort} " in step["evidence"][0]

    page = _report([r for r in found if r["kind"] != "healthy"])
    for row in (own, step):
        assert row["title"] in page
    assert CLOSE_LINE in page


def test_a_kind_the_vocabulary_does_not_declare_is_refused_by_name(monkeypatch):
    monkeypatch.setattr(kinds, "KINDS", (*kinds.KINDS, PLANTED))
    with pytest.raises(ValueError, match="'close_on_shutdown' is not a recommendation kind: declare it"):
        kinds.in_order()
