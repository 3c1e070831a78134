"""The recommendations: one config change per kind (``kinds``), each on its own evidence.

A kind's rule fires only on its own evidence (restarts for static membership, graceful
duplicates for commit-on-revoke, stalls for ``max.poll.interval.ms``, crashes for the session
timeout) and only when the what-if's price of the change pays (``judgement.pays``); a group
already on the configuration a rule would pick gets none. A kind without a rule of its own
(``RULES``) is recommended on the what-if alone (``priced_rule``). Its title and config lines
are its kind's.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from pipelines.recommend import kinds
from pipelines.recommend.configuration import Config, longest_restart_ms, longest_stall_ms
from pipelines.recommend.evidence_queries import Q_COST_BY_CAUSE, Q_MEMBERS, Q_WHAT_IF
from pipelines.recommend.judgement import Evidence, Recommendation, confidence, fmt, pays, total
from pipelines.recommend.kinds import ChangeKind, static_session_timeout_ms
from pipelines.recommend.plan import Step, score
from pipelines.recommend.rollout import step_rollout, upgrade
from pipelines.simulator.assignors import ASSIGNORS

Rule = Callable[[Evidence, ChangeKind], Recommendation | None]


def priced_change(e: Evidence, kind: ChangeKind, config: Config, rollout: tuple[str, ...],
                  evidence: tuple[str, ...], query: str, tradeoff: str | None = None) -> Recommendation | None:
    """The recommendation of ``config``, if the what-if priced it and its saving pays."""
    base, p = e.what_if.baseline, e.what_if.priced.get(config)
    if p is None or config == e.what_if.current or not pays(base, p, tradeoff_ok=tradeoff is not None):
        return None
    level, why = confidence(e, config)
    return Recommendation(kind.name, kind.title(config), config, tuple(kinds.changes(e.what_if.current, config)),
                          rollout, evidence, query, level, why, p, tradeoff)


def _churn_line(e: Evidence) -> str:
    m = e.what_if.measured
    return (f"{len(e.churn())} partition handoffs after the group formed cost {fmt(m.duplicates, m.pause_s)} "
            "(gold/handoffs).")


def priced_rule(e: Evidence, kind: ChangeKind) -> Recommendation | None:
    """A kind without a rule of its own: the priced candidate that moves only its settings and saves
    the most, on the what-if's evidence, rolled out as a plan's step is."""
    cur, base = e.what_if.current, e.what_if.baseline
    options = [c for c in e.what_if.priced
               if c != cur and c.same_but(cur, *kind.settings) and pays(base, e.what_if.priced[c])]
    if not options:
        return None
    best = max(options, key=lambda c: score(base, e.what_if.priced[c]))
    p = e.what_if.priced[best]
    evidence = (_churn_line(e), f"Replayed with {'; '.join(kind.lines(cur, best))} the same membership changes cost "
                                f"{fmt(p.duplicates, p.pause_s)} instead of {fmt(base.duplicates, base.pause_s)} "
                                "(gold/what_if).")
    return priced_change(e, kind, best, step_rollout(e, Step(kind.name, cur, best, base, p)), evidence, Q_WHAT_IF)


def _same_but_assignor(e: Evidence, assignor: str) -> Config | None:
    """The priced candidate that changes only the assignor (and the session timeout where the
    protocol changes: KIP-848's is the brokers'), or None."""
    cur = e.what_if.current
    same = [c for c in e.what_if.priced
            if c.setup.assignor == assignor and c.same_but(cur, "assignor", "session_timeout_ms")]
    return max(same, key=lambda c: c.setup.session_timeout_ms, default=None)  # not a shortened one


def _assignor_rollout(e: Evidence, migration: Step) -> tuple[str, ...]:
    now, then = migration.source.setup.assignor, migration.config.setup.assignor
    if migration.upgrades:  # rolled out as a plan's migration step is
        return step_rollout(e, migration)
    if ASSIGNORS[now].rebalance_protocol == "eager" and ASSIGNORS[then].rebalance_protocol == "cooperative":
        return ("librdkafka refuses a strategy list that mixes eager and cooperative assignors, so KIP-429's "
                "two rolling bounces (add cooperative-sticky, then drop the old one) are not possible here.",
                "Either stop every member and start them with the new strategy (one short full stop), or, on "
                "Java clients, do the two bounces: [cooperative-sticky, "
                f"{now.split(':')[1]}] first, then [cooperative-sticky].",
                "Members on different strategies share no protocol: a member started with only the new one "
                "cannot join until the old ones are gone.")
    return ("Stop every member and start them with the new strategy: members with different strategies "
            "share no protocol, and a rolling change leaves the new ones outside the group.",)


def assignor_rule(e: Evidence, kind: ChangeKind) -> Recommendation | None:
    """The assignor (and protocol) that saves the most, all else kept."""
    cur, base = e.what_if.current, e.what_if.baseline
    options = [_same_but_assignor(e, a) for a in ASSIGNORS if a != cur.setup.assignor]
    options = [c for c in options if c is not None and pays(base, e.what_if.priced[c])]
    if not options:
        return None
    best = max(options, key=lambda c: score(base, e.what_if.priced[c]))
    then, p = best.setup.assignor, e.what_if.priced[best]
    migration = Step(kind.name, cur, best, base, p)
    rollout = _assignor_rollout(e, migration)
    mixed, phase, waits = upgrade(e, migration)
    protocol = ASSIGNORS[then].rebalance_protocol
    stops = "only moved partitions stop" if protocol == "cooperative" else "every partition stops at every rebalance"
    evidence = (_churn_line(e),
                f"Replayed under {then} the same membership changes make {p.rebalances} rebalances and "
                f"{p.handoffs} handoffs instead of {base.handoffs} ({protocol} protocol: {stops}).",
                *phase, *waits)
    rec = priced_change(e, kind, best, rollout, evidence, Q_WHAT_IF)
    return rec if rec is None or mixed is None else replace(rec, mixed_phase=mixed)


def static_rule(e: Evidence, kind: ChangeKind) -> Recommendation | None:
    """Static membership when members restart and come back quickly."""
    cur = e.what_if.current
    restarts = e.churn("restart")
    if cur.setup.static or not longest_restart_ms(e.members):
        return None
    config = cur.having(static=True, session_timeout_ms=static_session_timeout_ms(cur, e.members))
    timeout, longest = config.setup.session_timeout_ms, longest_restart_ms(e.members) / 1000.0
    evidence = (f"{sum(m['leave_cause'] == 'restart' for m in e.members)} restarts; the longest took "
                f"{longest:.1f} s from leave to rejoin (gold/members).",
                f"Restart handoffs cost {fmt(total(restarts, 'duplicates'), total(restarts, 'pause_s'))} "
                "(gold/handoffs, cause restart).",
                f"With group.instance.id and session.timeout.ms={timeout} a restart is no "
                "rebalance: only the restarting member's partitions wait for it.")
    rollout = ("Give every member a group.instance.id that is unique in the group and survives restarts "
               "(a StatefulSet pod name, a host name plus an index).",
               "Roll the members one by one; a member with an instance id joins a group of dynamic members "
               "without trouble.",
               f"Keep session.timeout.ms at least {timeout} ms: a restart longer than it is a rebalance again.")
    tradeoff = (f"a crashed static member's partitions wait up to session.timeout.ms ({timeout} ms) before they "
                "move") if timeout > cur.setup.session_timeout_ms else None
    return priced_change(e, kind, config, rollout, evidence, Q_MEMBERS, tradeoff)


def commit_on_revoke_rule(e: Evidence, kind: ChangeKind) -> Recommendation | None:
    """Commit what was processed inside the revoke callback when graceful handoffs re-deliver."""
    cur, fitted = e.what_if.current, e.what_if.fitted
    graceful = [h for h in e.churn() if h["release_kind"] == "revoked" and not h["commit_in_revoke"]]
    duplicated = total(graceful, "duplicates")
    if cur.commit_on_revoke or duplicated == 0:
        return None
    evidence = (f"{len(graceful)} graceful handoffs re-delivered {duplicated:,} records that had been processed but "
                "not committed (gold/handoffs, release_kind revoked).",
                f"Uncommitted window: {fitted.uncommitted_window_s:.2f} s of records per partition at a revoke.")
    rollout = ("Set lens.commit.on.revoke=true on the InstrumentedConsumer (the agent commits the processed "
               "offsets synchronously inside the revoke callback).",
               "Roll it member by member; it changes nothing on the wire.",
               "Crashes still re-deliver: a killed process commits nothing.")
    return priced_change(e, kind, cur.having(commit_on_revoke=True), rollout, evidence, Q_COST_BY_CAUSE,
                         tradeoff=f"each revoke waits for one synchronous commit "
                         f"(about {1000 * fitted.commit_in_revoke_s:.0f} ms) before the partition moves")


def max_poll_rule(e: Evidence, kind: ChangeKind) -> Recommendation | None:
    """Room for the longest stall when a member stalled past max.poll.interval.ms."""
    cur = e.what_if.current
    stall = longest_stall_ms(e.members)
    if stall < cur.setup.max_poll_interval_ms:
        return None
    options = [c for c in e.what_if.priced if c.setup.max_poll_interval_ms > cur.setup.max_poll_interval_ms
               and c.same_but(cur, "max_poll_interval_ms")]
    if not options:
        return None
    config = options[0]
    evidence = (f"The longest stall between polls was {stall / 1000:.1f} s, past max.poll.interval.ms="
                f"{cur.setup.max_poll_interval_ms}: the member was thrown out and its partitions moved (gold/members, "
                "stalls; gold/handoffs, cause poll_interval_exceeded).",)
    rollout = (f"Raise max.poll.interval.ms to {config.setup.max_poll_interval_ms}, or process less per poll "
               "(consume() fewer records; max.poll.records on Java clients) or faster.",
               "Roll it member by member.")
    return priced_change(e, kind, config, rollout, evidence, Q_MEMBERS,
                         tradeoff="a member that truly hangs keeps its partitions that much longer")


def session_timeout_rule(e: Evidence, kind: ChangeKind) -> Recommendation | None:
    """A shorter session timeout when crashed members' partitions waited for it."""
    crashes = [h for h in e.churn() if h["release_kind"] == "crash"]
    if not crashes:
        return None
    cur = e.what_if.current
    options = [c for c in e.what_if.priced if c.setup.session_timeout_ms < cur.setup.session_timeout_ms
               and c.same_but(cur, "session_timeout_ms", "static", "max_poll_interval_ms")]
    if not options:
        return None
    config = min(options, key=lambda c: e.what_if.priced[c].pause_s)
    waited = total(crashes, "pause_s")
    evidence = (f"{len(crashes)} partitions of crashed members waited at least {waited:.1f} partition-seconds "
                f"for session.timeout.ms={cur.setup.session_timeout_ms} to expire (gold/handoffs, cause crash).",)
    return priced_change(e, kind, config, ("Lower it member by member; keep it at least three heartbeat intervals.",),
                         evidence, Q_COST_BY_CAUSE,
                         tradeoff="a long GC pause or network blip now counts as a crash and rebalances the group")


# The kinds whose evidence has a rule of its own; any other is priced on the what-if alone.
RULES: dict[str, Rule] = {"assignor": assignor_rule, "static_membership": static_rule,
                          "commit_on_revoke": commit_on_revoke_rule, "max_poll_interval": max_poll_rule,
                          "session_timeout": session_timeout_rule}


def recommendations(e: Evidence) -> list[Recommendation]:
    """Each kind's recommendation that fires and pays, in the vocabulary's order of kinds."""
    found = (RULES.get(kind.name, priced_rule)(e, kind) for kind in kinds.in_order())
    return [r for r in found if r is not None]
