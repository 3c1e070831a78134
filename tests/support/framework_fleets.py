"""The framework applications as scenario fleets (tests/e2e/test_framework_fleets.py): each built-in of ``SCENARIOS``
with every member one of the applications of tests/jvm_agent/apps/, run as users run it (``java -jar``) with only
``-javaagent:`` added (``runtime: app``, lens_scenarios.spec.MemberApp). A plan name is ``<scenario>@<fleet>``."""
from __future__ import annotations

from lens_scenarios.spec import MemberApp, Scenario, load, on_runtime
from tests.support.framework_apps import BOOT3, BOOT4, PLAIN, STREAMS, App, app_command

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
PLAN = [f"{scenario}@{fleet}" for fleet in FLEETS for scenario in SCENARIOS]


def scenario_of(name: str) -> Scenario:
    """The built-in ``<scenario>`` with every member the ``<fleet>``'s application."""
    scenario, fleet = name.split("@")
    app, settings = FLEETS[fleet]
    member_app = MemberApp(tuple(app_command(app)), tuple(sorted(settings.items())))
    return on_runtime(load(scenario), "app", app=member_app)
