"""The staged plan's rows: each step of the plan (``plan``) as a recommendation, named and
rolled out as its kind says (``kinds``), and the verdict that a classic group should not move to
KIP-848 yet (``migration_hold``), judged against the plan's target.
"""
from __future__ import annotations

from pipelines.policy import MAX_WORSE, MIN_DUPLICATES, MIN_PAUSE_S, MIN_SAVING
from pipelines.recommend import kinds
from pipelines.recommend.configuration import Config
from pipelines.recommend.evidence_queries import Q_WHAT_IF
from pipelines.recommend.judgement import Evidence, Recommendation, confidence, fmt, pays
from pipelines.recommend.plan import Step, path, score, target
from pipelines.recommend.rollout import step_rollout, upgrade
from pipelines.simulator.assignors import ASSIGNORS
from pipelines.vocabulary import PLAN_KINDS


def step_title(step: Step) -> str:
    """What a step changes, in words (its kind's): a plan's target may also remove a setting the group has."""
    return kinds.named(step.kind).step(step.source, step.config)


def _step_row(e: Evidence, steps: list[Step], i: int, goal: Config) -> Recommendation:
    """Step ``i`` (from 1) of ``steps``, the path to ``goal``."""
    step, base, n = steps[i - 1], e.what_if.baseline, len(steps)
    gain = score(step.before, step.after)
    alone = " It saves nothing on its own: the steps after it need it." if gain <= 0 < i < n else ""
    order = (f"Step {i} of {n}: after the steps before it, the what-if goes from "
             f"{fmt(step.before.duplicates, step.before.pause_s)} to {fmt(step.after.duplicates, step.after.pause_s)}: "
             f"{gain:.2f} of relative saving for a rollout effort of {kinds.named(step.kind).effort} (steps go in "
             f"order of saving per effort: the easy change that saves the most first).{alone}")
    whole = (f"The whole plan takes the group from {fmt(base.duplicates, base.pause_s)} to "
             f"{fmt(steps[-1].after.duplicates, steps[-1].after.pause_s)} (target {goal.label}).")
    mixed, phase, waits = upgrade(e, step)
    title, change = f"Step {i} of {n}: {step_title(step)}", tuple(kinds.changes(step.source, step.config))
    evidence, rollout = (order, *phase, whole, *waits), step_rollout(e, step)
    level, why = confidence(e, goal)
    return Recommendation("migration" if step.migrates else "plan_step", title, step.config, change, rollout,
                          evidence, Q_WHAT_IF, level, why, step.after, before=step.before,
                          mixed_phase=mixed if step.migrates else None)


def plan_steps(e: Evidence) -> list[Recommendation]:
    """The staged plan to the configuration that saves the most, when it takes two changes or more
    (one change is that change's own recommendation)."""
    goal = target(e.what_if, pays)
    steps = path(e.what_if, goal) if goal is not None else []
    if len(steps) < 2:
        return []
    return [_step_row(e, steps, i, goal) for i in range(1, len(steps) + 1)]


def _hold_reason(e: Evidence) -> str | None:
    """Why the group should not migrate (None: no reason to give): a custom assignor, or no KIP-848
    configuration that pays more than the changes recommended without it."""
    known = {name.split(":")[1] for name in ASSIGNORS if name.startswith("classic:")}
    custom = sorted({first for m in e.members if m["group_protocol"] == "classic" and m["assignor"]
                     and (first := m["assignor"].split(",")[0].strip()) not in known})
    if custom:
        return (f"members run an assignor KIP-848 cannot run ({', '.join(custom)}): the consumer protocol assigns "
                "with the broker's assignors only (uniform, range); keep the classic protocol or port its logic "
                "to a broker-side assignor first")
    if not e.churn():
        return None  # the healthy verdict says it: no rebalance to save on
    base = e.what_if.baseline
    options = [c for c in e.what_if.priced if c.setup.assignor.startswith("consumer:")]
    best = max(options, key=lambda c: score(base, e.what_if.priced[c]), default=None)
    if best is None:
        return None
    p, goal = e.what_if.priced[best], target(e.what_if, pays)
    if goal is not None and pays(base, p):
        g = e.what_if.priced[goal]
        lead = ("the changes above save as much without it" if score(base, p) <= score(base, g) else
                f"what it adds to the changes above is less than a change must save ({100 * MIN_SAVING:.0f}% of "
                f"one figure, and {MIN_DUPLICATES} duplicates or {MIN_PAUSE_S:.0f} paused partition-second)")
        return (f"{lead}: the best KIP-848 configuration ({best.label}) would cost "
                f"{fmt(p.duplicates, p.pause_s)}, theirs {fmt(g.duplicates, g.pause_s)} (what-if)")
    return (f"no KIP-848 configuration pays: the best ({best.label}) would cost "
            f"{fmt(p.duplicates, p.pause_s)} against {fmt(base.duplicates, base.pause_s)} now (what-if); "
            f"a change must save {100 * MIN_SAVING:.0f}% of one figure without making the other "
            f"{100 * MAX_WORSE:.0f}% worse")


def migration_hold(e: Evidence, plan: list[Recommendation]) -> Recommendation | None:
    """Why a classic group should not move to KIP-848 yet, when no recommendation moves it: a custom
    assignor (KIP-848 runs only the broker's), or no KIP-848 configuration that pays more than the
    changes recommended without it."""
    if e.what_if.current.setup.assignor.startswith("consumer:") or any(
            r.config is not None and r.config.setup.assignor.startswith("consumer:")
            and r.kind in PLAN_KINDS + ("assignor",) for r in plan):
        return None
    reason = _hold_reason(e)
    if reason is None:
        return None
    return Recommendation("migration_hold", "Do not migrate this group to KIP-848 yet", None, (), (
        "Kafka 5.0 makes group.protocol=consumer the default and 6.0 removes the classic protocol from the Java "
        "client: plan the move when the reason below no longer holds.",), (f"{reason[0].upper()}{reason[1:]}.",),
        Q_WHAT_IF, "high", "read from the members' configuration and the what-if")
