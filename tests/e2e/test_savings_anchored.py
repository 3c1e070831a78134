"""No recommendation's saving exceeds the measured figure it is taken from: a change on its own
saves a share of what gold measured (its before is the measured figure), a plan step a share of
what the steps before it leave; every row carries the model's fit beside the measured figures.
Over the e2e lakes (every built-in scenario; the migrations and the Java members' in the slow
tier) and the demo (slow: `./lens test -m slow tests/e2e/test_savings_anchored.py`)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pipelines import catalog, lake
from pipelines.vocabulary import PLAN_KINDS
from tests.support.fresh_home import fresh_home_env

FIGURES = (("duplicates", ""), ("pause", "_s"))
EPSILON = 1e-6  # the ratio's floating point


def beyond_measured(recommendations: list[dict[str, Any]]) -> list[str]:
    """Each priced recommendation whose saving exceeds what it is taken from, or whose before is not the
    measured figure (a change on its own), or that lacks the model's fit; in words."""
    wrong = []
    for r in recommendations:
        label = f"{r['group_id']} #{r['rank']} {r['title']}"
        if r["replayed_duplicates"] is None or r["measured_duplicates"] is None:
            wrong.append(f"{label}: no measured figures or replay beside them")
            continue
        for figure, unit in FIGURES:
            saved, before = r[f"predicted_{figure}_saved{unit}"], r[f"predicted_{figure}_before{unit}"]
            if saved is None:
                continue
            measured = r[f"measured_{figure}{unit}"]
            if saved > before + EPSILON * max(1.0, before):
                wrong.append(f"{label}: saves {saved:.3f} {figure} of {before:.3f} before it")
            if r["kind"] not in PLAN_KINDS and abs(before - measured) > EPSILON * max(1.0, measured):
                wrong.append(f"{label}: before {before:.3f} {figure}, measured {measured:.3f}")
            if r["kind"] not in PLAN_KINDS and saved > measured + EPSILON * max(1.0, measured):
                wrong.append(f"{label}: saves {saved:.3f} {figure} of the measured {measured:.3f}")
    return wrong


def test_no_saving_exceeds_the_measured_figure_on_the_built_ins(landed):
    priced = [r for r in landed["recommendations"] if r["predicted_duplicates_saved"] is not None]
    assert priced  # the built-ins make changes worth recommending
    assert beyond_measured(landed["recommendations"]) == []


@pytest.mark.slow
@pytest.mark.parametrize("lake_fixture", ["landed_migrations", "landed_java"])
def test_no_saving_exceeds_the_measured_figure_on_the_slow_lakes(request, lake_fixture):
    assert beyond_measured(request.getfixturevalue(lake_fixture)["recommendations"]) == []


@pytest.mark.slow
def test_no_saving_exceeds_the_measured_figure_in_the_demo(spark, kafka, tmp_path):
    """The demo as a user runs it (a child process, on the session broker), its lake read after."""
    home, lake_path = tmp_path / "home", tmp_path / "demo-lake"
    env = fresh_home_env(home)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2]), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-m", "lens_cli.main", "demo", "--lake", str(lake_path),
                           "--bootstrap", kafka.bootstrap_servers], env=env, capture_output=True, text=True,
                          timeout=3600, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    print(done.stdout)  # the demo's figures, for the record (-s)
    found = [r.asDict(recursive=True) for r in lake.read(spark, str(lake_path), catalog.RECOMMENDATIONS).collect()]
    assert any(r["predicted_duplicates_saved"] is not None for r in found)
    assert beyond_measured(found) == []
