"""The closed loop over every built-in scenario (slow): run each under eager range, recommend,
apply the best change a scenario run can apply, rerun, and hold the prediction against both
runs' ground truth. Prints the table docs/measured.md quotes."""
from __future__ import annotations

import uuid

import pytest

from lens_runtime.errors import LensError
from lens_scenarios.rerun import pick, rerun
from lens_scenarios.runner import RunOptions, run_scenario
from lens_scenarios.spec import builtin_names, load
from pipelines.config import PipelineConfig, embedded_broker_groups
from pipelines.recommend.closed_loop import VERIFIABLE, judge, recommendations_of
from pipelines.stages import run_pipeline


@pytest.mark.slow
def test_every_built_in_scenario_saves_what_its_top_recommendation_predicted(kafka, spark, tmp_path):
    telemetry = f"loop-telemetry-{uuid.uuid4().hex[:6]}"
    options = RunOptions(assignor="range", commit="batch", out_dir=tmp_path / "runs",
                         bootstrap=kafka.bootstrap_servers, telemetry_topic=telemetry)
    baselines = {name: run_scenario(load(name), options)
                 for name in builtin_names(fully_instrumented=True, migrations=False)}
    config = PipelineConfig(bootstrap_servers=kafka.bootstrap_servers, topic=telemetry,
                            lake_path=str(tmp_path / "lake"), **embedded_broker_groups())
    run_pipeline(spark, config, progress=lambda _m: None)
    lines, failed = [], []
    for name, baseline in baselines.items():
        found = recommendations_of(spark, config.lake_path, baseline.manifest["group_id"])
        try:
            rec, _ = pick(found, load(name), options, VERIFIABLE)
        except LensError as err:  # nothing a rerun can check: say so in the table
            lines.append(f"| {name} | {found[0]['title']}: {err} | | | - |")
            continue
        verified = judge(rec, rerun(load(name), options, baseline, rec))
        d, p = verified.checks
        lines.append(f"| {name} | {rec['title']} | {d.predicted_saving:,.0f} / {d.measured_saving:,.0f} | "
                     f"{p.predicted_saving:,.1f} / {p.measured_saving:,.1f} | {'yes' if verified.holds else 'no'} |")
        if not verified.holds:
            failed.append(name)
    print("\n| scenario (range, batch) | top change | duplicates saved: predicted / measured | "
          "paused partition-s saved: predicted / measured | holds |\n|---|---|---|---|---|\n" + "\n".join(lines))
    assert not failed, failed
