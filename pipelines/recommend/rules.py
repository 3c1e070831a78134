"""The rules in their order: a group's ranked recommendations (``gold/recommendations``).

Each config change on its own evidence (``recommendations``, one per kind of ``kinds``), the
staged plan to the configuration that saves the most when it takes two changes or more
(``plan_rows``), then the warnings (``group_warnings``), which carry no config change of their
own. So a group without churn, or already on the configuration a rule would pick, gets no
change: it gets one ``healthy`` row that says why. Every evidence figure comes with the SQL
that reproduces it over the lake's tables (``evidence_queries``).
"""
from __future__ import annotations

from pipelines.policy import MIN_SAVING
from pipelines.recommend.evidence_queries import Q_COST_BY_CAUSE
from pipelines.recommend.group_warnings import WARNINGS, coverage_warning, readiness_warning
from pipelines.recommend.judgement import Evidence, Recommendation, fmt
from pipelines.recommend.plan import score
from pipelines.recommend.plan_rows import migration_hold, plan_steps
from pipelines.recommend.recommendations import recommendations


def recommend(e: Evidence) -> list[Recommendation]:
    """Ranked changes (the best saving first), then warnings; or one ``healthy`` verdict."""
    base = e.what_if.baseline
    ready = [r] if (r := readiness_warning(e)) is not None else []
    if (low := coverage_warning(e)) is not None:
        return [low, *[r for rule in WARNINGS if (r := rule(e)) is not None], *ready]
    found = recommendations(e)
    found.sort(key=lambda r: -score(base, r.priced))  # type: ignore[arg-type]
    found = plan_steps(e) + found  # the plan first, then each change on its own
    warnings = [r for rule in WARNINGS if (r := rule(e)) is not None]
    hold = [h] if (h := migration_hold(e, found)) is not None else []
    if found or warnings:
        return found + warnings + hold + ready
    m = e.what_if.measured
    why = (f"{len(e.churn())} handoffs after the group formed cost {fmt(m.duplicates, m.pause_s)}; no change the "
           f"what-if priced ({len(e.what_if.priced) - 1} configurations) saves {100 * MIN_SAVING:.0f}% of that"
           if e.churn() else "no rebalance after the group formed: nothing to save")
    return [Recommendation("healthy", "No change recommended", None, (), (), (why,), Q_COST_BY_CAUSE, "high", why),
            *hold, *ready]
