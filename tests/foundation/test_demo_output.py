"""The demo's output reads in 80 columns, shows a bounded figure (after a crash, or of a group seen
in the broker's log alone) as its bounds, never one number, says which figures are exact and which
bounded and from where, and says in words what the runs showed, from the measured figures."""
from __future__ import annotations

from rich.console import Console

from types import SimpleNamespace

from lens_cli.demo import costs_table, fleet_line, parse_run, recommendation_lines
from lens_cli.demo_findings import RunCosts, change, findings
from lens_runtime.errors import LensError

RANGE = RunCosts(scenario="rolling-restart", assignor="range", commit="batch", episodes=1, handoffs_gold=36,
                 handoffs_truth=36, duplicates_gold=1939, duplicates_gold_upper=1939, duplicates_truth=1939,
                 pause_gold_s=6.62, pause_gold_upper_s=6.62, pause_truth_s=6.66)
COOPERATIVE = RunCosts(scenario="rolling-restart", assignor="cooperative-sticky", commit="batch", episodes=2,
                       handoffs_gold=12, handoffs_truth=12, duplicates_gold=378, duplicates_gold_upper=378,
                       duplicates_truth=378, pause_gold_s=10.69, pause_gold_upper_s=10.69,
                       pause_truth_s=10.71)
REVOKE = RunCosts(scenario="rolling-restart", assignor="range", commit="revoke", episodes=1, handoffs_gold=36,
                  handoffs_truth=36, duplicates_gold=0, duplicates_gold_upper=0, duplicates_truth=0,
                  pause_gold_s=13.1, pause_gold_upper_s=13.1, pause_truth_s=13.2)
STATIC = RunCosts(scenario="static-rolling-restart", assignor="range", commit="batch", episodes=1, handoffs_gold=12,
                  handoffs_truth=12, duplicates_gold=470, duplicates_gold_upper=470, duplicates_truth=470,
                  pause_gold_s=8.6, pause_gold_upper_s=8.6, pause_truth_s=8.62)
CRASH = RunCosts(scenario="crash", assignor="cooperative-sticky", commit="batch", episodes=2, handoffs_gold=3,
                 handoffs_truth=3, duplicates_gold=167, duplicates_gold_upper=911, duplicates_truth=256,
                 pause_gold_s=4.37, pause_gold_upper_s=18.01, pause_truth_s=16.22)
PLAIN = RunCosts(scenario="rolling-restart", assignor="consumer", commit="batch", episodes=3, handoffs_gold=9,
                 handoffs_truth=9, duplicates_gold=0, duplicates_gold_upper=310, duplicates_truth=174,
                 pause_gold_s=2.1, pause_gold_upper_s=7.9, pause_truth_s=3.3, agent=False)
RUNS = [RANGE, COOPERATIVE, REVOKE, STATIC, CRASH, PLAIN]


def _text(renderable, width: int = 80) -> str:
    console = Console(record=True, width=width)
    console.print(renderable)
    return console.export_text()


def test_the_per_run_table_reads_in_80_columns_with_bounds_where_gold_has_them():
    text = _text(costs_table(RUNS))
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "167..911 / 256" in text and "4.4..18.0 / 16.2" in text
    assert "1,939 / 1,939" in text and "1,939..1,939" not in text
    for run in RUNS:  # names whole, not cut to "cooperative-stic…"
        assert run.scenario in text and run.assignor in text, run.label
    assert "…" not in text
    assert "(exact, agent)" in text and "(bounds, agent)" in text and "(bounds, broker log)" in text
    assert "0..310 / 174" in text and "2.1..7.9 / 3.3" in text


def test_a_group_without_the_agent_is_said_to_be_seen_from_the_broker_as_bounds_not_a_crash():
    said = findings(RUNS)
    [plain] = [s for s in said if "without the agent" in s]
    assert "rolling-restart / consumer / batch / no agent" in plain and "0..310 duplicated records (ground " \
        "truth: 174)" in plain and "2.1..7.9 paused partition-seconds (truth: 3.3)" in plain
    assert not any("A crash (rolling-restart" in s for s in said)
    assert findings([RANGE, PLAIN])[1:] == [plain]  # never compared with the baseline as a configuration


def test_the_fleet_line_counts_the_groups_from_each_source():
    gold = {"a": SimpleNamespace(handoffs=36, broker_handoffs=0), "b": SimpleNamespace(handoffs=9, broker_handoffs=9),
            "c": SimpleNamespace(handoffs=12, broker_handoffs=2)}
    assert fleet_line(gold) == ("Gold priced the handoffs of 3 group(s) on the cluster: 2 with the agent on their "
                                "members (exact figures, a crash bounded), 1 seen only in the broker's "
                                "__consumer_offsets (bounds).")


def test_each_top_recommendation_sits_under_the_measured_cost_and_says_a_negative_saving_as_a_cost():
    top = {"title": "Commit processed offsets on revoke", "config_change": ["lens.commit.on.revoke=true"],
           "predicted_duplicates_saved": 2327.0, "predicted_pause_saved_s": -0.7}
    text = _text("\n".join(recommendation_lines([RANGE, CRASH], {RANGE.label: top})))
    assert "measured: 1,939 duplicates, 6.6 paused partition-s" in text
    assert "predicted: saves 2,327 duplicates, costs 0.7 more paused partition-s" in text
    assert "lens.commit.on.revoke=true" in text
    assert "crash" not in text  # no recommendation read for it: nothing printed


def test_the_findings_follow_the_measured_direction():
    said = " ".join(findings(RUNS))
    assert "Cooperative-sticky (incremental rebalancing, KIP-429) cut duplicated records 5.1x (1,939 -> 378) and " \
           "raised paused partition-seconds 1.6x (6.6 -> 10.7)" in said
    assert "Commit-on-revoke (commit what was processed when partitions are taken away) took duplicated records " \
           "to zero (1,939 -> 0) and raised paused partition-seconds 2.0x (6.6 -> 13.1). The pause grows" in said
    assert "(12 handoffs against 36)" in said and "It still duplicates on restart" in said
    assert "167..911 duplicated records (ground truth: 256)" in said


def test_a_shorter_pause_is_not_explained_as_a_longer_one():
    faster = RunCosts(**{**REVOKE.__dict__, "pause_gold_s": 5.7, "pause_gold_upper_s": 5.7})
    said = " ".join(findings([RANGE, faster]))
    assert "cut paused partition-seconds by 14% (6.6 -> 5.7)" in said and "The pause grows" not in said
    level = RunCosts(**{**REVOKE.__dict__, "pause_gold_s": 6.8, "pause_gold_upper_s": 6.8})
    said = " ".join(findings([RANGE, level]))  # +3%: noise, neither "raised" nor explained
    assert "left paused partition-seconds about the same (6.6 -> 6.8)" in said and "The pause grows" not in said
    assert change(10, 10, "x") == "left x about the same (10 -> 10)"
    assert change(5.3, 5.31, "pause", ".1f") == "left pause about the same (5.3 -> 5.3)"  # not "cut by 0%"


def test_findings_need_the_baseline_to_compare_with():
    assert findings([COOPERATIVE]) == []


def test_a_bad_run_names_the_form_and_the_choices():
    assert parse_run("crash/cooperative-sticky/batch") == ("crash", "cooperative-sticky", "batch")
    for bad in ("crash", "nosuch/range/batch", "crash/nosuch/batch", "crash/range/sometimes"):
        try:
            parse_run(bad)
        except LensError as err:
            assert "SCENARIO/ASSIGNOR/COMMIT" in str(err) and "crash/cooperative-sticky/batch" in str(err)
        else:
            raise AssertionError(bad)


def test_a_run_whose_recommend_pass_failed_says_so_under_its_cost():
    failed = {"failed": "group g: its last recommend pass failed (KeyError: 'm3' at x.py:1 in f); no recommendation "
                        "until a pass succeeds (audit/recommend_failures has the traceback)"}
    text = _text("\n".join(recommendation_lines([RANGE], {RANGE.label: failed})), width=200)
    assert "measured: 1,939 duplicates" in text and "-> group g: its last recommend pass failed (KeyError" in text
