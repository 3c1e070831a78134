"""The rules in their order: a group's ranked recommendations (``gold/recommendations``).

The staged plan to the configuration that saves the most when it takes two changes or more
(``plan_rows``), then each config change on its own evidence (``recommendations``, one per kind
of ``kinds``): a change that is a step of the plan appears once, as that step, and any other is
listed as an alternative to the plan with why the plan chose otherwise; then the warnings
(``group_warnings``), which carry no config change of their own, and the advice to run the agent
where the broker's bounds are too wide to choose between changes (``instrument``: it takes the
coverage warning's place, which it prices). So a group without churn, or
already on the configuration a rule would pick, gets no change: it gets one ``healthy`` row
that says why. Every evidence figure comes with the SQL
that reproduces it over the lake's tables (``evidence_queries``).
"""
from __future__ import annotations

from pipelines.policy import MIN_SAVING
from pipelines.recommend.evidence_queries import Q_COST_BY_CAUSE
from pipelines.recommend.group_warnings import WARNINGS, coverage_warning, readiness_warning
from pipelines.recommend.judgement import Evidence, Recommendation, fmt
from pipelines.recommend.plan import score
from pipelines.recommend.plan_rows import migration_hold, one_list, plan_of, plan_steps
from pipelines.recommend.recommendations import recommendations


def recommend(e: Evidence) -> list[Recommendation]:
    """Ranked changes (the best saving first), then warnings; or one ``healthy`` verdict."""
    base = e.what_if.baseline
    ready = [r] if (r := readiness_warning(e)) is not None else []
    advice = [e.instrument] if e.instrument is not None else []  # says what the coverage warning says, priced
    if (low := coverage_warning(e)) is not None:
        return [*(advice or [low]), *[r for rule in WARNINGS if (r := rule(e)) is not None], *ready]
    found = recommendations(e)
    found.sort(key=lambda r: -score(base, r.priced))  # type: ignore[arg-type]
    plan = plan_of(e)  # the plan first, each of its changes once, as its step; then the alternatives to it
    found = one_list(e, plan, plan_steps(e, plan), found)
    warnings = [r for rule in WARNINGS if (r := rule(e)) is not None]
    hold = [h] if (h := migration_hold(e, found)) is not None else []
    if found or warnings:
        return found + warnings + advice + hold + ready
    if advice:  # no change the agent's part prices pays; the broker's part is too wide to tell
        return [*advice, *hold, *ready]
    m = e.what_if.measured
    why = (f"{len(e.churn())} handoffs after the group formed cost {fmt(m.duplicates, m.pause_s)}; no change the "
           f"what-if priced ({len(e.what_if.priced) - 1} configurations) saves {100 * MIN_SAVING:.0f}% of that"
           if e.churn() else "no rebalance after the group formed: nothing to save")
    assumed = e.what_if.broker.assumed() if e.what_if.current.setup.assignor.startswith("consumer:") else None
    evidence = (why, *([f"{assumed}."] if assumed else []))
    return [Recommendation("healthy", "No change recommended", None, (), (), evidence, Q_COST_BY_CAUSE, "high", why),
            *hold, *ready]
