"""One group's recommend pass: its what-if and its ranked recommendations, as table rows.

Pure Python over the group's gold rows (members, handoffs, episodes, ownership
intervals), so it runs in Spark's Python workers and in tests alike.
"""
from __future__ import annotations

from typing import Any

from pipelines.catalog import RECOMMENDATIONS
from pipelines.policy import DEFAULT_WINDOW_H
from pipelines.recommend import what_if as what_if_module
from pipelines.recommend.configuration import BrokerGroups
from pipelines.recommend.judgement import Evidence, Recommendation
from pipelines.recommend.rules import recommend
from pipelines.recommend.window import SINCE, Rows, judged, length_ms

RECOMMENDATION_COLUMNS = RECOMMENDATIONS.column_names()


def _pct(saved: float, of: float) -> float | None:
    return 100.0 * saved / of if of > 0 else None


def recommendation_row(group: tuple[str, str], rank: int, r: Recommendation, w: what_if_module.WhatIf,
                       lake_path: str) -> dict[str, Any]:
    """``group``: (cluster_id, group_id)."""
    row = dict.fromkeys(RECOMMENDATION_COLUMNS)
    base = r.before or w.baseline
    row.update(cluster_id=group[0], group_id=group[1], rank=rank, kind=r.kind, title=r.title,
               current_config=w.current.label,
               recommended_config=r.config.label if r.config else None, config_change=list(r.config_change),
               rollout=list(r.rollout), evidence=list(r.evidence),
               evidence_query=r.evidence_query.format(lake=lake_path),
               measured_duplicates=w.measured.duplicates, measured_pause_s=w.measured.pause_s, tradeoff=r.tradeoff,
               confidence=r.confidence, confidence_reason=r.confidence_reason)
    if r.config is not None:
        row.update(target_assignor=r.config.setup.assignor, target_static_membership=r.config.setup.static,
                   target_commit_on_revoke=r.config.commit_on_revoke,
                   target_session_timeout_ms=r.config.setup.session_timeout_ms,
                   target_max_poll_interval_ms=r.config.setup.max_poll_interval_ms)
    if r.mixed_phase is not None:
        row.update(predicted_duplicates_mixed_phase=r.mixed_phase.duplicates,
                   predicted_pause_mixed_phase_s=r.mixed_phase.pause_s)
    if r.priced is not None:
        d, p = base.duplicates - r.priced.duplicates, base.pause_s - r.priced.pause_s
        row.update(predicted_duplicates_before=base.duplicates, predicted_duplicates_after=r.priced.duplicates,
                   predicted_duplicates_saved=d, predicted_duplicates_saved_pct=_pct(d, base.duplicates),
                   predicted_pause_before_s=base.pause_s, predicted_pause_after_s=r.priced.pause_s,
                   predicted_pause_saved_s=p, predicted_pause_saved_pct=_pct(p, base.pause_s))
    return row


def recommend_group(rows: list[dict[str, Any]], lake_path: str, broker: BrokerGroups = BrokerGroups(),
                    window_h: float = DEFAULT_WINDOW_H) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(what-if rows, recommendation rows) of one group; ``rows`` carry the group's key, ``source`` (members,
    handoffs, episodes, intervals, coverage) and the source table's columns. The group is judged on
    its last ``window_h`` hours (``pipelines.recommend.window``). The what-if prices the
    handoffs the agent saw both sides of; a group whose coverage is below ``policy.MIN_COVERAGE``
    gets the coverage warning instead of priced changes."""
    of: Rows = {source: [] for source in SINCE}
    for row in rows:
        of[row["source"]].append(row[row["source"]])
    of = judged(of, length_ms(window_h))
    group = (rows[0]["cluster_id"], rows[0]["group_id"])
    owned = sum(c["owned_s"] for c in of["coverage"])
    coverage = sum(c["covered_s"] for c in of["coverage"]) / owned if owned > 0 else None
    covered = [h for h in of["handoffs"] if not h.get("unseen_owner")]  # priced on what the agent saw only
    w = what_if_module.what_if(of["members"], covered, of["intervals"], broker)
    if w is None:
        return [], []
    found = recommend(Evidence(group[1], of["members"], covered, of["episodes"], of["intervals"], w, coverage))
    return (what_if_module.rows(group, w),
            [recommendation_row(group, rank, r, w, lake_path) for rank, r in enumerate(found, 1)])
