"""Every built-in scenario under every assignor/protocol, in bounded time (slow: ~25 min on 2 cores)."""
from __future__ import annotations

import pytest

from lens_runtime.errors import LensError
from lens_scenarios.consumer_config import ASSIGNORS
from lens_scenarios.runner import RunOptions, run_scenario
from lens_scenarios.spec import builtin_names, load


@pytest.mark.slow
@pytest.mark.parametrize("assignor", ASSIGNORS)
@pytest.mark.parametrize("name", builtin_names())
def test_builtin_runs_in_bounded_time(kafka, tmp_path, name, assignor):
    scenario = load(name)
    options = RunOptions(assignor=assignor, commit="batch", out_dir=tmp_path, bootstrap=kafka.bootstrap_servers)
    if "consumer" in scenario.migrations and assignor == "cooperative-sticky":  # the broker refuses it online
        with pytest.raises(LensError, match="fatal GROUP_ID_NOT_FOUND"):
            run_scenario(scenario, options)
        return
    result = run_scenario(scenario, options)
    summary = result.truth.summary()
    print(f"{name} {assignor}: {result.wall_s:.1f} s {summary}")
    assert result.manifest["settled"]
    assert result.wall_s <= scenario.duration_s + 40
    assert summary.unique_records >= 0.9 * result.manifest["produced"]
    assert all(p["exit_code"] is not None for p in result.manifest["processes"])
