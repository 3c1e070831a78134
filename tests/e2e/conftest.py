"""The e2e tests' one expensive fixture: every built-in scenario run on the session broker
(each under a different assignor, so all four protocols are covered), all writing telemetry
to one topic, and one run of the whole pipeline (SQL models included) over it."""
from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lens_scenarios.runner import RunOptions, run_scenario
from lens_scenarios.spec import Scenario, builtin_names, load
from pipelines import catalog, lake
from pipelines.config import PipelineConfig, embedded_broker_groups
from pipelines.gold.costs import read_costs
from pipelines.sql_build import marts_path
from pipelines.stages import run_pipeline
from lens_runtime.jvm_agent_build import ensure_agent_jar
from tests.support import framework_apps
from tests.support.framework_fleets import PLAN as FRAMEWORK_PLAN, scenario_of as framework_scenario
from tests.support.java_members import PLAN as JAVA_PLAN, scenario_of as java_scenario

ENVELOPE = ("event_id", "kind", "event_time_ms", "agent_id", "seq", "group_id", "member_id", "group_instance_id",
            "generation", "group_protocol", "rebalance_protocol", "assignor", "body")
ASSIGNORS = ("range", "cooperative-sticky", "consumer", "roundrobin")


def _plan() -> list[tuple[str, str]]:
    """Each built-in scenario with an assignor, cycling over the fully instrumented ones so every
    protocol is exercised; the partial-adoption one under eager range, where every rebalance moves
    every partition (the most there is to see around members without the agent)."""
    names = builtin_names(fully_instrumented=True, migrations=False)
    plan = [(name, ASSIGNORS[i % len(ASSIGNORS)]) for i, name in enumerate(names)]
    return plan + [(name, "range") for name in builtin_names(migrations=False) if name not in names]


LANDINGS = ("landed", "landed_migrations", "landed_java", "landed_frameworks")
# A landing runs its scenarios in real time and the whole pipeline over them, in the setup of the first test that
# asks for it: ``landed`` took 440 s in CI on a quiet machine and over the suite's 600 s on a slower one.
LANDING_TIMEOUT_S = 1800


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """This folder's tests that read a landing get ``LANDING_TIMEOUT_S`` (setup included) unless they set their own
    (the hook sees every collected test: other folders have fixtures of these names too)."""
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents and set(LANDINGS) & set(getattr(item, "fixturenames", ())) \
                and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(LANDING_TIMEOUT_S))


@pytest.fixture(scope="session")
def landed(kafka, spark, tmp_path_factory) -> dict[str, Any]:
    return land(kafka, spark, tmp_path_factory, _plan())


@pytest.fixture(scope="session")
def landed_migrations(kafka, spark, tmp_path_factory) -> dict[str, Any]:
    """The built-ins that migrate members between protocols, under eager range (where the mixed phase
    costs the most), landed on their own: each run is ~50 s, so only the slow tests ask for them."""
    return land(kafka, spark, tmp_path_factory,
                [(name, "range") for name in builtin_names(fully_instrumented=True, migrations=True)])


@pytest.fixture(scope="session")
def landed_java(kafka, spark, tmp_path_factory) -> dict[str, Any]:
    """Built-ins with Java members (tests/support/java_members.py), landed on their own: slow tests only."""
    return land(kafka, spark, tmp_path_factory, [(name, assignor) for name, (assignor, _) in JAVA_PLAN.items()],
                java_scenario)


@pytest.fixture(scope="session")
def landed_frameworks(kafka, spark, tmp_path_factory) -> dict[str, Any]:
    """Built-ins whose members are the framework applications (tests/support/framework_fleets.py), landed on their
    own: slow tests only. The applications pick their own assignors (Streams its own; the others range)."""
    ensure_agent_jar()
    framework_apps.ensure_built()
    return land(kafka, spark, tmp_path_factory, [(name, "range") for name in FRAMEWORK_PLAN], framework_scenario)


def land(kafka, spark, tmp_path_factory, plan: list[tuple[str, str]],
         scenario_of: Callable[[str], Scenario] = load) -> dict[str, Any]:
    """Runs each (scenario, assignor) of ``plan`` on the session broker, all writing telemetry to one
    topic, then the whole pipeline over it; returns the runs and what the tests read from the lake.
    ``scenario_of``: the scenario a name runs (a built-in as loaded, or changed: Java members)."""
    telemetry = f"e2e-telemetry-{uuid.uuid4().hex[:6]}"
    runs, options_of = {}, {}
    for name, assignor in plan:
        options = RunOptions(assignor=assignor, commit="batch", out_dir=tmp_path_factory.mktemp("runs"),
                             bootstrap=kafka.bootstrap_servers, telemetry_topic=telemetry)
        runs[name], options_of[name] = run_scenario(scenario_of(name), options), options
    config = PipelineConfig(bootstrap_servers=kafka.bootstrap_servers, topic=telemetry,
                            lake_path=str(tmp_path_factory.mktemp("e2e-lake") / "lake"), **embedded_broker_groups())
    results = run_pipeline(spark, config, progress=lambda _m: None)
    handoffs = [r.asDict() for r in lake.read(spark, config.lake_path, catalog.HANDOFFS).collect()]
    clients = {r.agent_id: r.client_id for r in
               lake.read(spark, config.lake_path, catalog.EVENTS).select("agent_id", "client_id")
               .distinct().collect()}
    metrics = [r.asDict() for r in lake.read(spark, config.lake_path, catalog.METRICS).where("grain = 'day'").collect()]
    events: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in lake.read(spark, config.lake_path, catalog.EVENTS).select(*ENVELOPE).collect():
        events[r.group_id].append(r.asDict())
    recommendations = [r.asDict(recursive=True) for r in lake.read(spark, config.lake_path, catalog.RECOMMENDATIONS)
                       .orderBy("group_id", "rank").collect()]
    phases: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in lake.read(spark, config.lake_path, catalog.PROTOCOL_PHASES).orderBy("start_ms").collect():
        phases[r.group_id].append(r.asDict())
    phase_costs: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in (spark.read.format("delta").load(f"{marts_path(config.lake_path)}/group_protocol_phases")
              .orderBy("started_at").collect()):
        phase_costs[r.group_id].append(r.asDict())
    return {"runs": runs, "handoffs": handoffs, "clients": clients, "results": results,
            "phases": phases, "phase_costs": phase_costs,
            "costs": {group: r for (_cluster, group), r in read_costs(spark, config.lake_path).items()},  # one cluster
            "metrics": metrics, "events": events,
            "options": options_of, "recommendations": recommendations, "config": config}


