"""The staged plan: the configuration that saves the most with every change together, reached one
change at a time in order of saving per rollout effort, each step priced from the one before."""
from __future__ import annotations

import pytest

from pipelines.recommend.configuration import Config
from pipelines.recommend.judgement import Evidence, pays
from pipelines.recommend.kinds import changes, named
from pipelines.recommend.plan import path, rollback_criteria, target
from pipelines.recommend.plan_rows import migration_hold, step_title
from pipelines.recommend.what_if import WhatIf
from pipelines.simulator.cost_model import Priced
from pipelines.simulator.replay import Setup
from tests.support.fleets import eager_rolling_restarts
from tests.support.recommending import recommend_fleet

pytestmark = pytest.mark.fast

RANGE = Config(Setup("classic:range", False, 45_000, 300_000), False)
COMMIT = Config(RANGE.setup, True)
UNIFORM = Config(Setup("consumer:uniform", False, 45_000, 300_000), False)
BOTH = Config(UNIFORM.setup, True)


def _what_if(priced: dict[Config, Priced]) -> WhatIf:
    return WhatIf(RANGE, None, None, priced, (0, 1))  # type: ignore[arg-type]  # path reads the priced only


def test_the_cheaper_change_goes_first_when_it_saves_more_per_effort_and_the_migration_follows():
    """Commit-on-revoke saves 60% of the duplicates for effort 1; the move to KIP-848 saves 80% of the
    pause for effort 3: commit first (0.6 a unit against 0.27), then the migration."""
    priced = {RANGE: Priced(10, 40, 40, 1_000.0, 100.0), COMMIT: Priced(10, 40, 40, 400.0, 100.0),
              UNIFORM: Priced(10, 8, 8, 1_000.0, 20.0), BOTH: Priced(10, 8, 8, 400.0, 20.0)}
    w = _what_if(priced)
    goal = target(w, pays)
    assert goal == BOTH
    steps = path(w, goal)
    assert [(s.kind, s.config, s.migrates) for s in steps] == [("commit_on_revoke", COMMIT, False),
                                                               ("assignor", BOTH, True)]
    assert steps[1].before == steps[0].after == priced[COMMIT]  # each step priced from the one before
    assert named("assignor").effort > named("commit_on_revoke").effort
    # the migration's rollback reads the mixed phase against the group's figures today
    text = rollback_criteria(steps[1], today=(25.0, 2.5))
    assert "group_protocol_phases" in text and "3.12 s" in text and "GROUP_ID_NOT_FOUND" in text
    assert "group_protocol_phases" not in rollback_criteria(steps[0], today=(25.0, 2.5))


def test_of_targets_that_save_as_much_the_one_with_less_to_roll_out_wins():
    """Commit-on-revoke with KIP-848 priced as commit-on-revoke alone, but for the sums' float noise:
    the target is commit-on-revoke, and the plan has no migration step that saves nothing."""
    priced = {RANGE: Priced(10, 40, 40, 1_000.0, 14.4), COMMIT: Priced(10, 40, 40, 0.0, 10.4),
              UNIFORM: Priced(10, 8, 8, 1_000.0, 14.4), BOTH: Priced(10, 8, 8, 0.0, 10.400000000000002 - 1e-12)}
    w = _what_if(priced)
    assert target(w, pays) == COMMIT
    assert [s.kind for s in path(w, COMMIT)] == ["commit_on_revoke"]


def test_a_migration_that_adds_less_than_a_change_must_save_is_left_out_and_the_group_told_why():
    """scale-out-in's what-if (2026-11-27): commit-on-revoke saves its 470 duplicates, and KIP-848 on
    top of it 0.2 of 2.0 paused partition-seconds, below the rules' 10% and 1 partition-second: the
    target is commit-on-revoke alone, and the group is told what KIP-848 would add."""
    priced = {RANGE: Priced(3, 12, 9, 470.0, 2.0), COMMIT: Priced(3, 12, 9, 0.0, 2.0),
              UNIFORM: Priced(3, 4, 4, 470.0, 1.8), BOTH: Priced(3, 4, 4, 0.0, 1.8)}
    w = _what_if(priced)
    assert target(w, pays) == COMMIT
    evidence = Evidence("g", [{"group_protocol": "classic", "assignor": "range"}], [{"cause": "scale_out"}], [], [], w)
    hold = migration_hold(evidence, [])
    assert hold is not None and hold.evidence[0].startswith(
        "What it adds to the changes above is less than a change must save (10% of one figure, and 10 duplicates "
        "or 1 paused partition-second): the best KIP-848 configuration (consumer:uniform +commit-on-revoke")


def test_a_migration_that_saves_more_per_effort_goes_first():
    priced = {RANGE: Priced(10, 40, 40, 1_000.0, 100.0), COMMIT: Priced(10, 40, 40, 900.0, 100.0),
              UNIFORM: Priced(10, 4, 4, 1_000.0, 1.0), BOTH: Priced(10, 4, 4, 900.0, 1.0)}
    assert [s.kind for s in path(_what_if(priced), BOTH)] == ["assignor", "commit_on_revoke"]


def test_an_eager_restarting_group_gets_a_plan_its_steps_chain_and_the_migration_is_held_with_its_reason():
    _, found = recommend_fleet(eager_rolling_restarts())
    steps = [r for r in found if r["kind"] == "plan_step"]
    assert [r["title"] for r in steps] == ["Step 1 of 2: commit processed offsets on revoke",
                                           "Step 2 of 2: static membership (group.instance.id)"]
    assert found[:2] == steps  # the plan comes first, each change on its own after it
    first, second = steps
    assert first["config_change"] == ["lens.commit.on.revoke=true"]
    assert second["config_change"][0].startswith("group.instance.id=")
    assert second["predicted_duplicates_before"] == first["predicted_duplicates_after"]
    assert second["predicted_pause_before_s"] == first["predicted_pause_after_s"]
    assert first["predicted_duplicates_saved"] == first["predicted_duplicates_before"] > 0  # 1,440 re-deliveries
    for r in steps:
        assert r["rollout"][0].startswith("Canary: apply it to one member (m1)")
        assert r["rollout"][-1].startswith("Roll back if")
    hold = next(r for r in found if r["kind"] == "migration_hold")
    assert hold["evidence"][0].startswith("The changes above save as much without it")


def test_a_change_priced_only_with_another_waits_for_it_and_no_step_is_empty():
    """The grid prices a shorter session timeout only with commit-on-revoke here: the session step
    cannot come first (it would change nothing priced, and nothing beats nothing when commit-on-revoke
    alone costs pause), so it follows the commit step."""
    shorter = Config(Setup("classic:range", False, 10_000, 300_000), True)
    priced = {RANGE: Priced(10, 40, 40, 1_000.0, 100.0), COMMIT: Priced(10, 40, 40, 1_000.0, 110.0),
              shorter: Priced(10, 40, 40, 1_000.0, 60.0)}
    steps = path(_what_if(priced), shorter)
    assert [(s.kind, s.config) for s in steps] == [("commit_on_revoke", COMMIT), ("session_timeout", shorter)]
    assert all(s.config != s.source and changes(s.source, s.config) for s in steps)


def test_a_step_that_brings_a_later_change_with_it_ends_the_path():
    """A static group's grid prices commit-on-revoke only at the static session timeout: the commit
    step lands on the target, and no empty session step follows."""
    static = Config(Setup("classic:range", True, 6_000, 300_000), False)
    goal = Config(Setup("classic:range", True, 12_000, 300_000), True)
    priced = {static: Priced(10, 40, 40, 1_000.0, 100.0), goal: Priced(10, 40, 40, 0.0, 100.0)}
    w = WhatIf(static, None, None, priced, (0, 1))  # type: ignore[arg-type]
    assert [(s.kind, s.config) for s in path(w, goal)] == [("commit_on_revoke", goal)]


def test_a_target_without_static_membership_says_to_remove_it_and_a_step_that_saves_nothing_alone_says_why():
    """Static restarts under KIP-848 hold their partitions until the broker's session timeout; dynamic
    leavers hand them over at once: the static cooperative group's target (seen on the e2e lake) is
    KIP-848 without group.instance.id, reached through a migration that saves nothing by itself."""
    static = Config(Setup("classic:cooperative-sticky", True, 6_000, 300_000), False)
    commit = Config(static.setup, True)
    moved = Config(Setup("consumer:uniform", True, 10_000, 300_000), True)
    goal = Config(Setup("consumer:uniform", False, 10_000, 300_000), True)
    priced = {static: Priced(10, 12, 12, 429.0, 8.1), commit: Priced(10, 12, 12, 0.0, 8.2),
              moved: Priced(10, 12, 12, 0.0, 8.2), goal: Priced(10, 12, 12, 0.0, 6.6)}
    for c in (Config(Setup("classic:cooperative-sticky", False, 6_000, 300_000), True),  # the rest of the grid
              Config(Setup("classic:cooperative-sticky", False, 6_000, 300_000), False),
              Config(moved.setup, False), Config(goal.setup, False)):
        priced[c] = Priced(10, 12, 12, 0.0 if c.commit_on_revoke else 429.0, 9.0)
    w = WhatIf(static, None, None, priced, (0, 1))  # type: ignore[arg-type]
    steps = path(w, target(w, pays))
    assert [(s.kind, s.config) for s in steps] == [("commit_on_revoke", commit), ("assignor", moved),
                                                   ("static_membership", goal)]
    assert changes(moved, goal) == ["# remove group.instance.id: each member joins as a new dynamic member"]
    assert changes(commit, static) == ["lens.commit.on.revoke=false"]
    assert step_title(steps[2]) == "dynamic membership (remove group.instance.id)"
