"""One group's recommend pass: its what-if and its ranked recommendations, as table rows.

Pure Python over the group's gold rows (members, handoffs, episodes, ownership
intervals), so it runs in Spark's Python workers and in tests alike.
"""
from __future__ import annotations

import traceback
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from consumer_agent.options import DEFAULT_TELEMETRY_TOPIC
from pipelines.catalog import RECOMMENDATIONS
from pipelines.policy import DEFAULT_WINDOW_H
from pipelines.recommend import what_if as what_if_module
from pipelines.recommend.bounds import source_of
from pipelines.recommend.configuration import BrokerGroups
from pipelines.recommend.instrument import instrument_advice
from pipelines.recommend.judgement import Evidence, Recommendation
from pipelines.recommend.rules import recommend
from pipelines.recommend.window import SINCE, Rows, judged, length_ms
from pipelines.simulator.cost_model import Priced

RECOMMENDATION_COLUMNS = RECOMMENDATIONS.column_names()
# A share of a large group's replays, priced by a task of its own (``priced_share``) and read by the
# group's pass as rows of this source.
PRICED = "priced"
PRICED_FIELDS = [f.name for f in fields(Priced)]
PRICED_DDL = (f"cluster_id string, group_id string, {PRICED} struct<candidate: int, rebalances: bigint, "
              "handoffs: bigint, partitions_moved: bigint, duplicates: double, pause_s: double>")


def _pct(saved: float, of: float) -> float | None:
    return 100.0 * saved / of if of > 0 else None


def fit_columns(w: what_if_module.WhatIf) -> dict[str, float | None]:
    """The model's fit, beside the measured figures every prediction is anchored to: the current
    configuration's replay of the observed period and its error in percent of the measured."""
    replay, seen = w.replayed_baseline, w.measured
    return {"replayed_duplicates": replay.duplicates, "replayed_pause_s": replay.pause_s,
            "replayed_duplicates_error_pct": what_if_module.fit_error_pct(replay.duplicates, seen.duplicates),
            "replayed_pause_error_pct": what_if_module.fit_error_pct(replay.pause_s, seen.pause_s)}


def recommendation_row(group: tuple[str, str], rank: int, r: Recommendation, w: what_if_module.WhatIf | None,
                       lake_path: str, source: str | None) -> dict[str, Any]:
    """``group``: (cluster_id, group_id); ``w``: its what-if (None: a group no member with the agent showed);
    ``source``: where the figures it rests on came from."""
    row = dict.fromkeys(RECOMMENDATION_COLUMNS)
    row.update(cluster_id=group[0], group_id=group[1], rank=rank, kind=r.kind, title=r.title,
               recommended_config=r.config.label if r.config else None, config_change=list(r.config_change),
               rollout=list(r.rollout), evidence=list(r.evidence),
               evidence_query=r.evidence_query.format(lake=lake_path), tradeoff=r.tradeoff,
               confidence=r.confidence, confidence_reason=r.confidence_reason, source=source)
    if w is not None:
        row.update(current_config=w.current.label, measured_duplicates=w.measured.duplicates,
                   measured_pause_s=w.measured.pause_s, **fit_columns(w))
    if r.config is not None:
        row.update(target_assignor=r.config.setup.assignor, target_static_membership=r.config.setup.static,
                   target_commit_on_revoke=r.config.commit_on_revoke,
                   target_session_timeout_ms=r.config.setup.session_timeout_ms,
                   target_max_poll_interval_ms=r.config.setup.max_poll_interval_ms)
    if r.mixed_phase is not None:
        row.update(predicted_duplicates_mixed_phase=r.mixed_phase.duplicates,
                   predicted_pause_mixed_phase_s=r.mixed_phase.pause_s)
    if r.priced is not None and w is not None:
        base = r.before or w.baseline
        d, p = base.duplicates - r.priced.duplicates, base.pause_s - r.priced.pause_s
        row.update(predicted_duplicates_before=base.duplicates, predicted_duplicates_after=r.priced.duplicates,
                   predicted_duplicates_saved=d, predicted_duplicates_saved_pct=_pct(d, base.duplicates),
                   predicted_pause_before_s=base.pause_s, predicted_pause_after_s=r.priced.pause_s,
                   predicted_pause_saved_s=p, predicted_pause_saved_pct=_pct(p, base.pause_s))
    return row


def _windowed(rows: list[dict[str, Any]], window_h: float) -> tuple[Rows, list[dict[str, Any]]]:
    """The group's rows by source in its window, and the handoffs the what-if prices (those the agent
    saw both sides of); rows of ``PRICED`` (a share's replays) are not the window's."""
    of: Rows = {source: [] for source in SINCE}
    for row in rows:
        if row["source"] != PRICED:
            of[row["source"]].append(row[row["source"]])
    of = judged(of, length_ms(window_h))
    return of, [h for h in of["handoffs"] if not h.get("unseen_owner")]


def priced_share(rows: list[dict[str, Any]], broker: BrokerGroups, window_h: float,
                 shard: what_if_module.Shard) -> list[dict[str, Any]]:
    """One task's share of a large group's replays (``what_if.priced_share``), as rows of ``PRICED_DDL``.
    A share that raises returns nothing: the group's pass then prices every candidate itself, and
    its failure is the group's (``recommend_or_fail``)."""
    try:
        of, covered = _windowed(rows, window_h)
        share = what_if_module.priced_share(of["members"], covered, of["intervals"], broker, shard)
    except Exception:  # said once, by the group's own pass
        return []
    key = {"cluster_id": rows[0]["cluster_id"], "group_id": rows[0]["group_id"]}
    return [{**key, PRICED: {"candidate": i, **asdict(p)}} for i, p in share.items()]


def recommend_group(rows: list[dict[str, Any]], lake_path: str, broker: BrokerGroups = BrokerGroups(),
                    window_h: float = DEFAULT_WINDOW_H,
                    topic: str = DEFAULT_TELEMETRY_TOPIC) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(what-if rows, recommendation rows) of one group; ``rows`` carry the group's key, ``source`` (members,
    handoffs, episodes, intervals, coverage) and the source table's columns. The group is judged on
    its last ``window_h`` hours (``pipelines.recommend.window``). The what-if prices the
    handoffs the agent saw both sides of; a group whose coverage is below ``policy.MIN_COVERAGE``
    gets the coverage warning instead of priced changes, and a group whose broker-only handoffs leave its
    figures too wide to choose between changes the advice to run the agent (``instrument``; sent to
    ``topic``), the one row of a group no member with the agent showed."""
    of, covered = _windowed(rows, window_h)
    group = (rows[0]["cluster_id"], rows[0]["group_id"])
    owned = sum(c["owned_s"] for c in of["coverage"])
    coverage = sum(c["covered_s"] for c in of["coverage"]) / owned if owned > 0 else None
    advice = instrument_advice(of["handoffs"], of["coverage"], topic)
    given = {r[PRICED]["candidate"]: Priced(*(r[PRICED][f] for f in PRICED_FIELDS)) for r in rows
             if r["source"] == PRICED} or None
    w = what_if_module.what_if(of["members"], covered, of["intervals"], broker, given)
    if w is None:
        return [], [recommendation_row(group, 1, advice, None, lake_path, advice.source)] if advice else []
    found = recommend(Evidence(group[1], of["members"], covered, of["episodes"], of["intervals"], w, coverage,
                               advice))
    priced_from = source_of(covered)
    return (what_if_module.rows(group, w),
            [recommendation_row(group, rank, r, w, lake_path, r.source or priced_from)
             for rank, r in enumerate(found, 1)])


def failure_row(group: tuple[str, str], err: BaseException, batch: int) -> dict[str, Any]:
    """``audit/recommend_failures``' row of a group whose pass raised ``err``: the error in one line,
    the frame that raised it (file under the project, line, function) and the traceback's last frames."""
    frames = traceback.extract_tb(err.__traceback__)
    last = frames[-1] if frames else None
    where = (f"{'/'.join(Path(last.filename).parts[-3:])}:{last.lineno} in {last.name}" if last else "")
    tail = "".join(traceback.format_exception(type(err), err, err.__traceback__)[-6:])
    said = " ".join(f"{type(err).__name__}: {err}".split())  # one line, whatever the message
    return {"cluster_id": group[0], "group_id": group[1], "error": said[:500], "raised_at": where,
            "traceback": tail[-4000:], "validate_batch": batch}


def recommend_or_fail(rows: list[dict[str, Any]], lake_path: str, broker: BrokerGroups, window_h: float,
                      batch: int, topic: str = DEFAULT_TELEMETRY_TOPIC
                      ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(what-if rows, recommendation rows, failure rows) of one group: a pass that raises gives one
    ``audit/recommend_failures`` row and nothing else, so the stage writes every other group's results."""
    try:
        return (*recommend_group(rows, lake_path, broker, window_h, topic), [])
    except Exception as err:  # any fault of one group's pass: named in the quality table, not the stage's end
        return [], [], [failure_row((rows[0]["cluster_id"], rows[0]["group_id"]), err, batch)]
