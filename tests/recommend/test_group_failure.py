"""One group whose recommend pass raises is named, not the stage's end: pure, no Spark (the stage's
own test over a lake: tests/pipelines/test_recommend_failures.py)."""
from __future__ import annotations

from pipelines.recommend.configuration import BrokerGroups
from pipelines.recommend.group_pass import recommend_or_fail
from pipelines.recommend.stage import failure_lines
from tests.support.fleets import scale_out_then_crash
from tests.support.reference_ownership import gold_of_group


def _rows(group: str, broken: bool = False) -> list[dict]:
    intervals, handoffs, episodes, members = gold_of_group(scale_out_then_crash(group=group).events, gap_s=10.0)
    if broken:  # a member without its join: what no gold row holds, planted
        members[0]["joined_ms"] = None
    return [{"cluster_id": "c1", "group_id": group, "source": source, source: row}
            for source, rows in (("members", members), ("handoffs", handoffs), ("episodes", episodes),
                                 ("intervals", intervals)) for row in rows]


def test_a_group_whose_pass_raises_gives_one_failure_row_and_the_others_their_results():
    good = recommend_or_fail(_rows("good"), "/lake", BrokerGroups(), 168.0, 7)
    assert good[0] and good[1] and good[2] == []
    what_if, recommendations, [failure] = recommend_or_fail(_rows("bad", broken=True), "/lake", BrokerGroups(),
                                                            168.0, 7)
    assert what_if == [] and recommendations == []
    assert (failure["cluster_id"], failure["group_id"], failure["validate_batch"]) == ("c1", "bad", 7)
    assert failure["error"].startswith("TypeError: ") and "\n" not in failure["error"]
    assert failure["raised_at"].startswith("pipelines/recommend/") and " in " in failure["raised_at"]
    assert failure["traceback"].rstrip().endswith(failure["error"].split(": ", 1)[1])


def test_the_stage_says_each_failed_group_in_one_line():
    failed = [{"cluster_id": "c1", "group_id": "bad", "error": "KeyError: 'm3'",
               "raised_at": "pipelines/simulator/migration.py:88 in mixed_phase_rounds"}]
    assert failure_lines(failed, 1, 4) == [
        "recommend: group 'bad' (cluster c1) failed: KeyError: 'm3' at pipelines/simulator/migration.py:88 in "
        "mixed_phase_rounds; the other 3 group(s) are written, this one's error is in audit/recommend_failures"]
    assert failure_lines(failed, 7, 9)[-1] == "recommend: 6 more group(s) failed: see audit/recommend_failures"


def test_recommend_names_a_group_whose_last_pass_failed():
    from lens_cli.recommend_commands import failure_words

    said = failure_words({"cluster_id": "", "group_id": "bad", "error": "KeyError: 'm3'",
                          "raised_at": "pipelines/simulator/migration.py:88 in mixed_phase_rounds"})
    assert said == ("group bad: its last recommend pass failed (KeyError: 'm3' at pipelines/simulator/migration.py:88 "
                    "in mixed_phase_rounds); no recommendation until a pass succeeds (audit/recommend_failures has "
                    "the traceback)")
