"""The pipeline on a multi-executor cluster (slow): Spark's ``local-cluster`` master runs
separate executor JVMs, each with its own Python workers, as a standalone cluster would, so
nothing may rely on the driver's memory or on one process. The whole pipeline runs there
from the command line, and gold must still equal the runs' ground truth.

    ./lens test -m slow tests/e2e/test_cluster.py
"""
from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pytest

from lens_scenarios.ground_truth import GroundTruth
from lens_scenarios.runner import RunOptions, run_scenario
from lens_scenarios.spec import load
from pipelines import catalog, lake
from tests.support.gold_matching import check, gold_for_run, matched

CLUSTER = "local-cluster[2,1,1024]"  # two workers of one core and 1 GiB each
SCENARIOS = (("rolling-restart", "range"), ("crash", "cooperative-sticky"), ("scale-out-in", "consumer"))


@pytest.mark.slow
def test_on_a_multi_executor_cluster_gold_equals_ground_truth(kafka, spark, tmp_path):
    telemetry = f"cluster-telemetry-{uuid.uuid4().hex[:6]}"
    runs = {name: run_scenario(load(name), RunOptions(
        assignor=assignor, commit="batch", out_dir=tmp_path / "runs", bootstrap=kafka.bootstrap_servers,
        telemetry_topic=telemetry)) for name, assignor in SCENARIOS}
    path = str(tmp_path / "lake")
    result = subprocess.run(
        [sys.executable, "-m", "lens_cli.main", "pipeline", "run", "--master", CLUSTER, "--lake", path,
         "--bootstrap", kafka.bootstrap_servers, "--topic", telemetry,
         "--kip848-heartbeat-ms", "1000", "--kip848-session-timeout-ms", "10000"],
        capture_output=True, text=True, timeout=1500, env={**os.environ, "COLUMNS": "100"})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "[sql] done in" in result.stdout, result.stdout[-3000:]
    landed = {"handoffs": [r.asDict() for r in lake.read(spark, path, catalog.HANDOFFS).collect()],
              "clients": {r.agent_id: r.client_id for r in lake.read(spark, path, catalog.EVENTS)
                          .select("agent_id", "client_id").distinct().collect()}}
    problems = []
    for name, run in runs.items():
        truth = GroundTruth.load(run.run_dir)
        assert truth.handoffs, f"{name} moved nothing"
        for handoff, row in matched(truth.handoffs, gold_for_run(landed, run.manifest["run_id"])):
            problems.extend([f"{name}: gold lacks {handoff}"] if row is None else
                            [f"{name}: {p}" for p in check(handoff, row)])
    assert not problems, "\n".join(problems)
