"""How a change rolls out: from which members (``running``), a canary first and then the rest one
at a time, a move to KIP-848's consumer protocol with its mixed phase priced
(``simulator.migration``) and the blocking readiness findings fixed first, and the figures that
say roll back (``plan.rollback_criteria``).
"""
from __future__ import annotations

from typing import Any

from pipelines.recommend import readiness
from pipelines.recommend.configuration import classic_heartbeat_ms, longest_restart_ms
from pipelines.recommend.judgement import Evidence, fmt
from pipelines.recommend.plan import Step, mixed_phase_s, rollback_criteria
from pipelines.recommend.what_if import partition_counts
from pipelines.simulator.cost_model import Priced
from pipelines.simulator.group import Member
from pipelines.simulator.migration import lands_first, layout_at, mixed_phase_cost

# P2's chance where the group showed no restart: how long a deploy keeps a member away is unknown, so
# the mixed phase is priced at the middle of its two outcomes, back within the round (away half a
# heartbeat) or not; they bound it (scale-out-in: 5.9 and 6.8 partition-s; 6 reruns measured 6.4 +- 0.4)
UNSEEN_RESTART_P2 = 0.5


def running(e: Evidence) -> tuple[list[dict[str, Any]], dict[str, set[tuple[str, int]]]]:
    """The members a change starts from, in join order, and who holds what: the live members as they
    hold the partitions now. A group that has stopped (every member left: a finished scenario run, a
    fleet shut down) is planned as it starts again: the members that formed it, as they held its
    partitions once formed (a closed loop's rerun migrates them so, before the scenario's churn).
    Planned from its last owners instead, scale-out-in, which ends on two members after a scale-in,
    was priced an 18-handoff mixed phase for the 24 its three migrated members made."""
    live = [m for m in e.members if m["left_ms"] is None and not m["crashed"]]
    if live:
        layout = layout_at(e.intervals)
    else:
        formed = [ep["end_ms"] for ep in e.episodes if ep["cause"] == "start"]
        layout = layout_at(e.intervals, max(formed) if formed else None)
        live = [m for m in e.members if m["agent_id"] in layout]
    live.sort(key=lambda m: m["joined_ms"])
    return live, {m["agent_id"]: layout.get(m["agent_id"], set()) for m in live}


def step_rollout(e: Evidence, step: Step) -> tuple[str, ...]:
    """A step's rollout lines: a canary, the rest one at a time, a migration's mixed phase and what
    comes before it, and the rollback criteria."""
    live, _ = running(e)
    canary = live[0]["client_id"] if live else "one member"
    today = per_handoff_measured(e)
    lines = ["Needs brokers with the KIP-848 group coordinator (Kafka 4.0+) and librdkafka 2.15+ (KIP-848 is "
             "generally available from 2.12; 2.15 fixes its known bugs)."] if step.upgrades else []
    lines += [f"Canary: apply it to one member ({canary}) and let it run through at least one rebalance.",
              "Then the other members, one at a time."]
    if step.migrates:
        lines += [f"The mixed phase (classic and consumer-protocol members in one group) lasts about "
                  f"{mixed_phase_s(e.members, len(live)):.0f} s: {len(live)} restarts, each as long as the longest "
                  "measured here plus a few seconds to settle. In it, every epoch bump makes each eager classic "
                  "member revoke all its partitions (measured on Kafka 4.2: docs/measured.md).",
                  "Before the canary: the broker's group.consumer.migration.policy must allow the upgrade "
                  "(bidirectional, the default, or upgrade), and the readiness findings below must be fixed."]
    first = fixes_first(e)[0] if step.upgrades else ()
    return (*first, *lines, rollback_criteria(step, today))


def per_handoff_measured(e: Evidence) -> tuple[float, float]:
    """(duplicates, pause seconds) per handoff gold measured after the group formed."""
    n = max(len(e.churn()), 1)
    return e.what_if.measured.duplicates / n, e.what_if.measured.pause_s / n


def mixed_phase(e: Evidence, step: Step) -> tuple[Priced, str]:
    """A migration step's mixed phase: the live members, canary first, restarted on the consumer
    protocol one at a time from who holds what now, priced by the group's own cost model over the
    chance that the canary is back before its leave's classic round completes (P2), and the
    sentence that says how likely that is."""
    live, layout = running(e)
    static = step.source.setup.static
    view = [Member(m["agent_id"], m["agent_id"] if static else None,
                   frozenset(m["subscriptions"][-1]["topics"])) for m in live]
    seen_s, heartbeat_s = longest_restart_ms(e.members) / 1000.0, classic_heartbeat_ms(e.members) / 1000.0
    if static or len(live) < 2:
        down_s, p2, line = seen_s, 0.0, ""
    elif seen_s:
        down_s, p2 = seen_s, lands_first(seen_s, heartbeat_s, len(live) - 1)
        line = (f" The canary is back before the classic round its leave starts completes with a chance of {p2:.0%} "
                f"(its {seen_s:.2f} s restart against the others' {heartbeat_s:g} s heartbeat): then that round is the "
                "conversion's, one bump fewer; the figures are the expectation." if p2 else "")
    else:  # how long a restart keeps a member away is unknown: the two outcomes bound the cost
        down_s, p2 = heartbeat_s / 2, UNSEEN_RESTART_P2
        line = (" The group showed no restart, so whether the canary is back before the classic round its leave "
                "starts completes (one bump fewer) is unknown: the figures are the middle of the two outcomes.")
    return mixed_phase_cost(view, layout, partition_counts(e.intervals), step.source.setup.assignor,
                            step.config.setup.assignor, down_s, p2, e.what_if.fitted.at_any_moment(),
                            step.source.commit_on_revoke), line


def phase_lines(mixed: tuple[Priced, str] | None) -> tuple[str, ...]:
    """The evidence line of a migration's predicted mixed phase (none without one)."""
    if mixed is None:
        return ()
    priced, chance = mixed
    return (f"The mixed phase: {priced.handoffs} handoffs ({priced.partitions_moved} moves) over {priced.rebalances} "
            f"epoch bumps, {fmt(priced.duplicates, priced.pause_s)} (simulator.migration: eager classic members give "
            f"back everything at each bump; a static member's restart moves nothing).{chance}",)



def fixes_first(e: Evidence) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(rollout lines, evidence lines) a move to the consumer protocol puts first: each blocking
    readiness finding's fix, and that the migration waits for them; nothing when there is none."""
    held = readiness.blocking(e.readiness)
    if not held:
        return (), ()
    codes, lines = ", ".join(dict.fromkeys(f.code for f in held)), readiness.said(held)
    return ((f"First fix the blocking readiness findings ({len(lines)} below, migration_readiness); the migration "
             "waits for these fixes:", *lines),
            (f"The migration waits: {len(held)} blocking readiness findings ({codes}) must be fixed first "
             "(migration_readiness).",))


def upgrade(e: Evidence, step: Step) -> tuple[Priced | None, tuple[str, ...], tuple[str, ...]]:
    """What a move to KIP-848 adds to its step: its mixed phase priced, the evidence line that says
    it and the one that says the migration waits for the blocking readiness fixes (None and
    nothing for any other step)."""
    if not step.upgrades:
        return None, (), ()
    mixed = mixed_phase(e, step)
    return mixed[0], phase_lines(mixed), fixes_first(e)[1]
