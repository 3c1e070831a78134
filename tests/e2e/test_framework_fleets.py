"""Framework applications as fleets, end to end (slow: twelve scenario runs of JVM applications and a pipeline run,
about half an hour on a shared 2-core machine):

    PYTHONPATH=$PWD python -m pytest -m slow tests/e2e/test_framework_fleets.py

Each of rolling-restart and crash with every member one of the real applications of tests/jvm_agent/apps/ (the
plain auto-committing consumer on kafka-clients 3.5, the Kafka Streams application, Spring Boot 3.5 and 4.0
executable jars with record and batch listeners, container and manual acknowledgements), started as users start
them with only `-javaagent:` added (tests/support/framework_fleets.py). Truth is what each application logged of the
records it processed and of its callbacks (the Java members' truth writer); gold must equal it handoff by handoff:
graceful handoffs' duplicates exact and pauses within 100 ms, crash handoffs within their bounds."""
from __future__ import annotations

import pytest

from lens_scenarios.ground_truth import GroundTruth
from tests.support.framework_fleets import PLAN
from tests.support.gold_matching import gold_for_run, mismatches


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("name", PLAN)
def test_gold_equals_the_applications_own_truth(landed_frameworks, name):
    run = landed_frameworks["runs"][name]
    assert {p["runtime"] for p in run.manifest["processes"]} == {"app"}
    truth = GroundTruth.load(run.run_dir)
    assert any(h.moved for h in truth.handoffs), "scenario moved nothing"
    if name.startswith("crash@"):
        assert any(h.cause == "crash" for h in truth.handoffs), "no handoff of the killed member"
    problems = mismatches(truth.handoffs, gold_for_run(landed_frameworks, run.manifest["run_id"]))
    assert not problems, "\n".join(problems)
