"""Framework applications as fleets, end to end (slow: twelve scenario runs of JVM applications and a pipeline run,
about an hour on a shared, loaded 2-core machine):

    PYTHONPATH=$PWD python -m pytest -m slow tests/e2e/test_framework_fleets.py

Each of rolling-restart and crash with every member one of the real applications of tests/jvm_agent/apps/ (the
plain auto-committing consumer on kafka-clients 3.5, the Kafka Streams application, Spring Boot 3.5 and 4.0
executable jars with record and batch listeners, container and manual acknowledgements), started as users start
them with only `-javaagent:` added (tests/support/framework_fleets.py). Truth is what each application logged of the
records it processed and of its callbacks (the Java members' truth writer); gold must equal it handoff by handoff:
graceful handoffs' duplicates exact and pauses within 100 ms, crash handoffs within their bounds, causes the
timeline's; where truth and the agent see different things (framework_fleets.mismatches says which and why), those
handoffs are held to what each side can see, and counted."""
from __future__ import annotations

from collections import Counter

import pytest

from lens_scenarios.ground_truth import GroundTruth
from tests.support.framework_fleets import PLAN, mismatches
from tests.support.gold_matching import gold_for_run


@pytest.mark.slow
@pytest.mark.timeout(5400)
@pytest.mark.parametrize("name", PLAN)
def test_gold_equals_the_applications_own_truth(landed_frameworks, name):
    run = landed_frameworks["runs"][name]
    assert {p["runtime"] for p in run.manifest["processes"]} == {"app"}
    truth = GroundTruth.load(run.run_dir)
    assert any(h.moved for h in truth.handoffs), "scenario moved nothing"
    if name.startswith("crash@"):
        assert any(h.cause == "crash" for h in truth.handoffs), "no handoff of the killed member"
    readings: Counter = Counter()
    problems = mismatches(name.split("@")[1], truth.handoffs, gold_for_run(landed_frameworks, run.manifest["run_id"]),
                          readings)
    print(f"{name}: {len(truth.handoffs)} handoffs, {truth.summary().duplicates} duplicates; {dict(readings)}")
    assert not problems, "\n".join(problems)
    assert readings["idle killed owner"] == 0 or name.startswith("crash@")
    assert truth.summary().duplicates == 0 or name.startswith("crash@")  # graceful handoffs: what was processed was
    # committed (auto commit before the revoke, Streams' and Spring's commits), so nothing is read twice
