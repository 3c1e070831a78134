"""Which recommendation a closed loop reruns (``lens_scenarios.rerun.pick``) and how a staged migration is
run: pure, no broker."""
from __future__ import annotations

import pytest

from lens_runtime.errors import LensError
from lens_scenarios.config_change import (MIGRATION_AT_S, MIGRATION_DOWN_S, MIGRATION_INTERVAL_S, migrating_first,
                                          migration_down_s)
from lens_scenarios.rerun import pick
from lens_scenarios.runner import RunOptions
from lens_scenarios.spec import load
from pipelines.recommend.closed_loop import VERIFIABLE

pytestmark = pytest.mark.fast


def _rec(rank: int, kind: str, assignor: str = "classic:range", commit_on_revoke: bool = False) -> dict:
    return {"rank": rank, "kind": kind, "title": f"{kind} {rank}", "target_assignor": assignor,
            "target_static_membership": False, "target_commit_on_revoke": commit_on_revoke,
            "target_session_timeout_ms": 10_000, "target_max_poll_interval_ms": 10_000}


PLAN = [_rec(1, "plan_step", commit_on_revoke=True), _rec(2, "plan_step", "classic:roundrobin", True),
        _rec(3, "migration", "consumer:uniform", True), _rec(4, "commit_on_revoke", commit_on_revoke=True)]


def test_step_n_is_the_plans_nth_step_whatever_its_kind():
    scenario, options = load("scale-out-in"), RunOptions(assignor="range")
    assert pick(PLAN, scenario, options, VERIFIABLE)[0]["rank"] == 1
    assert pick(PLAN, scenario, options, VERIFIABLE, "commit_on_revoke")[0]["rank"] == 4
    assert [pick(PLAN, scenario, options, VERIFIABLE, step=n)[0]["rank"] for n in (1, 2, 3)] == [1, 2, 3]


def test_a_step_the_plan_does_not_have_names_the_range():
    scenario, options = load("scale-out-in"), RunOptions(assignor="range")
    with pytest.raises(LensError, match=r"--step 4: the plan has 3 step\(s\); pass --step 1 to 3"):
        pick(PLAN, scenario, options, VERIFIABLE, step=4)
    with pytest.raises(LensError, match="no staged plan; drop --step"):
        pick(PLAN[3:], scenario, options, VERIFIABLE, step=1)


def test_a_target_sets_static_membership_both_ways():
    """A plan step can remove group.instance.id: rerun static, static-rolling-restart's rolling
    restart made no rebalance at all, and the step's check measured nothing."""
    from lens_scenarios.config_change import Target, apply

    dynamic, static = (Target("classic:range", s, False, 10_000, 10_000) for s in (False, True))
    scenario, _ = apply(load("static-rolling-restart"), RunOptions(), dynamic)
    assert [m.group_instance_id for m in scenario.members] == [None, None, None]
    assert all(m.group_instance_id is None for a in scenario.timeline for m in a.members or ())
    scenario, _ = apply(load("rolling-restart"), RunOptions(), static)
    assert [m.group_instance_id for m in scenario.members] == [m.name for m in scenario.members]


def test_a_staged_migration_restarts_members_as_the_scenario_restarts_them():
    """The plan prices a migration's restarts at the group's longest observed restart, so its rerun
    takes each member down as long as the scenario's own restarts do (a fixed 0.5 s measured 0.75 s
    a returning partition of static-rolling-restart where 1.29 s was priced for its 1 s restarts)."""
    static = migrating_first(load("static-rolling-restart"), "uniform")
    [migration] = [a for a in static.timeline if a.kind == "protocol_migration"]
    assert migration.params["down_s"] == 1.0
    assert migration_down_s(load("scale-out-in")) == MIGRATION_DOWN_S  # no restarts of its own
    # the scenario's own timeline follows the last member's return
    [restart] = [a for a in static.timeline if a.kind == "rolling_restart"]
    assert restart.at_s == 2.0 + MIGRATION_AT_S + 3 * (1.0 + MIGRATION_INTERVAL_S)


def test_a_kind_that_is_a_step_of_the_plan_points_to_the_step():
    """A change that is a step of the plan appears only as that step: --kind names the steps to pick from."""
    scenario, options = load("scale-out-in"), RunOptions(assignor="range")
    with pytest.raises(LensError, match=r"checked as that step, --step N \(plan_step 1; plan_step 2; migration 3\)"):
        pick(PLAN[:3], scenario, options, VERIFIABLE, "commit_on_revoke")
