"""The framework applications as scenario fleets (tests/e2e/test_framework_fleets.py): each built-in of ``SCENARIOS``
with every member one of the applications of tests/jvm_agent/apps/, run as users run it (``java -jar``) with only
``-javaagent:`` added (``runtime: app``, lens_scenarios.spec.MemberApp). A plan name is ``<scenario>@<fleet>``.
``mismatches`` holds gold to the applications' truth."""
from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

from lens_scenarios.ground_truth import Handoff
from lens_scenarios.spec import MemberApp, Scenario, load, on_runtime
from tests.support.framework_apps import BOOT3, BOOT4, PLAIN, STREAMS, App, app_command
from tests.support.gold_matching import TOLERANCE_S, check, matched

# fleet -> (application, its settings): every framework, Spring's record and batch listeners with the container's
# and the listener's (manual) acknowledgements, under both Boot lines
FLEETS: dict[str, tuple[App, dict[str, str]]] = {
    "plain-autocommit": (PLAIN, {}),
    "kafka-streams": (STREAMS, {}),
    "boot3-record-container": (BOOT3, {"listener": "record", "ack-mode": "record"}),
    "boot3-batch-manual": (BOOT3, {"listener": "batch", "ack-mode": "manual"}),
    "boot4-record-manual": (BOOT4, {"listener": "record", "ack-mode": "manual_immediate"}),
    "boot4-batch-container": (BOOT4, {"listener": "batch", "ack-mode": "batch"}),
}
SCENARIOS = ("rolling-restart", "crash")
# The fleets whose application processes a poll's records one at a time after the poll returned (truth is written
# per record, as it is processed): Streams' tasks, and Spring's record listeners (a commit after each record).
ONE_AT_A_TIME = {"kafka-streams", "boot3-record-container", "boot4-record-manual"}
PLAN = [f"{scenario}@{fleet}" for fleet in FLEETS for scenario in SCENARIOS]


def scenario_of(name: str) -> Scenario:
    """The built-in ``<scenario>`` with every member the ``<fleet>``'s application."""
    scenario, fleet = name.split("@")
    app, settings = FLEETS[fleet]
    member_app = MemberApp(tuple(app_command(app)), tuple(sorted(settings.items())))
    return on_runtime(load(scenario), "app", app=member_app)


def mismatches(fleet: str, truth: list[Handoff], gold: dict[tuple, list[dict[str, Any]]],
               readings: Counter) -> list[str]:
    """How gold's handoffs differ from the applications' truth, held to ``gold_matching.check`` but where truth and
    the agent see different things, each counted in ``readings``:

    - ``late restart``: truth knows a rolling restart's new process replaced the old one; gold pairs a leave and a
      join as a restart within ``REPLACE_WINDOW_S`` (10 s) unless both have one identity, and a JVM application
      that takes longer to rejoin (Spring Boot on a loaded machine) is a scale-in, then a scale-out, to it;
    - ``idle killed owner``: truth sees a revoke, but the partition passed through a member that was assigned it
      and killed before it processed a record (invisible to truth, built from records); gold's chain through it
      carries that crash's bounds, which must hold the truth;
    - ``processed after fetch`` (``ONE_AT_A_TIME``): truth's pause ends at the first record of the partition the new
      owner processed, gold's at the first one its consumer handed out; in between the record waits behind the
      poll's other records (a commit after each, with Spring's record listeners) or for a new Streams task to
      start, so gold's pause may fall short of truth's, never exceed it;
    - ``streams request`` (Kafka Streams only): Streams asks for its own follow-up rounds (``enforceRebalance``),
      which the agent reports as it reports any request and gold then takes for the cause of the round's handoffs,
      where truth has the timeline's action.
    """
    problems = []
    for handoff, row in matched(truth, gold):
        if row is None:
            problems.append(f"gold lacks {handoff}")
            continue
        expected = handoff
        if handoff.cause == "restart" and row["cause"] in ("scale_in", "scale_out"):
            readings["late restart"] += 1
            expected = dataclasses.replace(expected, cause=row["cause"])
        if handoff.released_by in ("revoke", "exit") and row["pause_s"] != row["pause_upper_s"]:
            readings["idle killed owner"] += 1
            expected = dataclasses.replace(expected, released_by="crash")
        elif fleet in ONE_AT_A_TIME and handoff.released_by in ("revoke", "exit") and row["pause_s"] is not None \
                and row["pause_s"] <= handoff.pause_s + TOLERANCE_S:
            readings["processed after fetch"] += handoff.pause_s - row["pause_s"] > TOLERANCE_S
            expected = dataclasses.replace(expected, pause_s=row["pause_s"])
        if fleet == "kafka-streams" and row["cause"] == "enforced" and handoff.cause != "start":
            readings["streams request"] += 1
            expected = dataclasses.replace(expected, cause="enforced")
        problems += check(expected, row)
    return problems
