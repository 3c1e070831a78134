"""The config-change kinds are declared once (``pipelines.recommend.kinds``): the what-if's grid,
the rules, the staged plan and the report follow the declaration, so a kind declared with its
simulator effect (and its name in the vocabulary) is priced, recommended, planned and reported
without another edit."""
from __future__ import annotations

from typing import Any

import pytest

from pipelines import vocabulary
from pipelines.recommend import kinds
from pipelines.recommend.configuration import Config
from pipelines.recommend.kinds import ChangeKind, Effect
from pipelines.recommend.recommendations import RULES
from pipelines.simulator.replay import Setup
from tests.support.fleets import scale_out_then_crash
from tests.support.recommending import recommend_fleet
from tests.support.report_page import page_of

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


def test_a_planted_kind_is_priced_recommended_planned_and_reported_from_its_declaration(planted):
    """scale_out_then_crash: m2 crashed and its partition waited out the 45 s session timeout. The
    planted kind's effect replays the crash as a leave, so the what-if prices it; it pays, so its
    rule is the what-if's own, and it is the first step of the plan to the configuration that saves
    the most, where it appears once; the report shows the row as the recommend stage wrote it."""
    what_if, found = recommend_fleet(scale_out_then_crash())
    closing = [w for w in what_if if w["config"].endswith("close_on_shutdown=True")]
    assert closing and len(closing) == len(what_if) // 2  # the grid doubled: each configuration, closing or not
    assert next(w for w in what_if if w["is_current"])["config"].endswith("close_on_shutdown=False")

    # its rule's recommendation is the plan's first step: one row, with the rule's evidence
    assert not [r for r in found if r["kind"] == PLANTED.name]
    step = next(r for r in found if r["kind"] == "plan_step" and r["config_change"] == [CLOSE_LINE])
    assert step["title"].endswith(": close the consumer on shutdown") and step["title"].startswith("Step 1 of ")
    assert f"for a rollout effort of {PLANTED.effort} " in step["evidence"][0]
    assert step["predicted_pause_saved_s"] > 0 and any(line.startswith("Replayed with " + CLOSE_LINE)
                                                       for line in step["evidence"])
    assert step["rollout"][0].startswith("Canary: apply it to one member") and step["rollout"][-1].startswith("Roll")

    page = page_of([r for r in found if r["kind"] != "healthy"])
    assert step["title"] in page and CLOSE_LINE in page


def test_a_kind_the_vocabulary_does_not_declare_is_refused_by_name(monkeypatch):
    monkeypatch.setattr(kinds, "KINDS", (*kinds.KINDS, PLANTED))
    with pytest.raises(ValueError, match="'close_on_shutdown' is not a recommendation kind: declare it"):
        kinds.in_order()


def test_running_the_agent_is_registered_beside_the_config_changes_and_prices_nothing():
    """``INSTRUMENT``: declared in the registry (its title, the lines that run the agent, its effort, its
    rollback wording) and in the vocabulary, with no simulator effect: the what-if's grid has no setting for
    it, and no rerun checks it (it changes what is known of a group, not what its rebalances cost)."""
    assert kinds.INSTRUMENT not in kinds.KINDS and kinds.INSTRUMENT.name not in {k.name for k in kinds.KINDS}
    declared = {k.name: k for k in vocabulary.RECOMMENDATION_KINDS}[kinds.INSTRUMENT.name]
    assert not declared.rerun_checks and kinds.INSTRUMENT.effort >= 1
    assert "lens.telemetry.topic=t" in kinds.INSTRUMENT.settings("t")
    assert kinds.INSTRUMENT.rolling_back.startswith("Roll back")
    what_if, _ = recommend_fleet(scale_out_then_crash())
    assert what_if and len({w["config"] for w in what_if}) == len(what_if)
    assert not any("agent" in w["config"] or "instrument" in w["config"] for w in what_if)
