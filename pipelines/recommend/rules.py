"""The recommendation rules: each reads a group's evidence, names one change, prices it
with the what-if and says how to roll it out (``gold/recommendations``).

A rule fires only on its own evidence (restarts for static membership, graceful
duplicates for commit-on-revoke, stalls for ``max.poll.interval.ms``, crashes for the
session timeout, enforced rebalances or load skew for the enforce policy) and only when
the what-if predicts a saving of at least ``MIN_SAVING`` of what the group's rebalances
cost now, in duplicates or in paused partition-seconds, without making the other
worse by more than ``MAX_WORSE`` (a stated trade-off excepted). So a group without churn,
or already on the configuration a rule would pick, gets no change: it gets one
``healthy`` row that says why. Warnings (a rebalance storm, eager and cooperative
members in one group) carry no config change of their own.

Every evidence figure comes with the SQL that reproduces it over the lake's tables;
the group is two parameters (``:cluster_id``, ``:group_id``), never text spliced into the query.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from pipelines.recommend.candidates import (Config, changes, classic_heartbeat_ms, kind_of, longest_restart_ms,
                                            longest_stall_ms, mixed_protocols, static_session_timeout_ms, with_setup)
from pipelines.recommend import readiness
from pipelines.recommend.plan import EFFORT, Step, mixed_phase_s, path, per_handoff, rollback_criteria, score, target
from pipelines.recommend.what_if import WhatIf, partition_counts
from pipelines.simulator.assignors import ASSIGNORS, assign
from pipelines.simulator.cost_model import Priced, price
from pipelines.simulator.group import Assignment, Member, TopicPartition
from pipelines.simulator.handoff import owners
from pipelines.simulator.migration import lands_first, layout_at, mixed_phase_cost
from pipelines.simulator.replay import SimHandoff, SimRebalance, replay
from pipelines.vocabulary import CONFIDENCE_LEVELS, PLAN_KINDS, RECOMMENDATION_KIND_NAMES

MIN_SAVING = 0.10
MAX_WORSE = 0.10
# Below these a saving is not worth a rollout, whatever its share: a few records or a second of one partition.
MIN_DUPLICATES = 10
MIN_PAUSE_S = 1.0
# Below this share of partition-time run by members with the agent, no change is priced: the what-if
# replays the group's membership through assignor models, and the members without the agent are
# missing from it (their partitions, joins and leaves), so a replay at 80% would misassign a fifth
# of the partitions it prices.
MIN_COVERAGE = 0.9
# P2's chance where the group showed no restart: how long a deploy keeps a member away is unknown, so
# the mixed phase is priced at the middle of its two outcomes, back within the round (away half a
# heartbeat) or not; they bound it (scale-out-in: 5.9 and 6.8 partition-s; 6 reruns measured 6.4 +- 0.4)
UNSEEN_RESTART_P2 = 0.5
STORM_PER_HOUR = 12  # one rebalance every five minutes, all hour
SKEW_RATIO = 1.5  # the busiest member's record rate over the members' mean

Q_COST_BY_CAUSE = ("SELECT cause, count(*) AS handoffs, sum(duplicates) AS duplicates, "
                   "sum(duplicates_upper) AS duplicates_upper, sum(pause_s) AS pause_s, "
                   "sum(pause_upper_s) AS pause_upper_s "
                   "FROM delta.`{lake}/gold/handoffs` WHERE cluster_id = :cluster_id AND group_id = :group_id "
                   "GROUP BY cause")
Q_MEMBERS = ("SELECT agent_id, client_id, group_instance_id, assignor, join_cause, leave_cause, joined_ms, left_ms, "
             "crashed, stalls, enforced_ms, session_timeout_ms, max_poll_interval_ms, commit_on_revoke "
             "FROM delta.`{lake}/gold/members` WHERE cluster_id = :cluster_id AND group_id = :group_id "
             "ORDER BY joined_ms")
Q_READINESS = ("SELECT agent_id, client_id, group_instance_id, group_protocol, assignor, remote_assignor, "
               "librdkafka_version, pattern, config_keys, callback_calls, client_errors, enforced_ms, joined_ms, "
               "left_ms, last_seen_ms FROM delta.`{lake}/gold/members` "
               "WHERE cluster_id = :cluster_id AND group_id = :group_id ORDER BY joined_ms")
Q_WHAT_IF = ("SELECT config, predicted_rebalances, predicted_handoffs, predicted_partitions_moved, "
             "predicted_duplicates, predicted_pause_s, predicted_duplicates_saved, predicted_pause_saved_s "
             "FROM delta.`{lake}/gold/what_if` WHERE cluster_id = :cluster_id AND group_id = :group_id "
             "ORDER BY predicted_duplicates_saved DESC")
Q_COVERAGE = ("SELECT hour_start, covered_s, owned_s, covered_s / owned_s AS coverage "
              "FROM delta.`{lake}/gold/coverage` WHERE cluster_id = :cluster_id AND group_id = :group_id "
              "ORDER BY hour_start")
Q_EPISODES = ("SELECT date_trunc('hour', timestamp_millis(start_ms)) AS hour, cause, count(*) AS rebalances "
              "FROM delta.`{lake}/gold/episodes` WHERE cluster_id = :cluster_id AND group_id = :group_id "
              "AND cause <> 'start' "
              "GROUP BY 1, 2 ORDER BY 1")


@dataclass(frozen=True)
class Recommendation:
    kind: str
    title: str
    config: Config | None  # the candidate it prices (None: a warning or the healthy verdict)
    config_change: tuple[str, ...]
    rollout: tuple[str, ...]
    evidence: tuple[str, ...]
    evidence_query: str
    confidence: str
    confidence_reason: str
    priced: Priced | None = None
    tradeoff: str | None = None
    before: Priced | None = None  # what ``priced`` saves from (None: the current configuration's replay)
    mixed_phase: Priced | None = None  # a migration step's mixed phase (``simulator.migration``)

    def __post_init__(self) -> None:
        # a rule with a new kind or confidence declares it first (the SQL tests and the CLI follow the declaration)
        if self.kind not in RECOMMENDATION_KIND_NAMES or self.confidence not in CONFIDENCE_LEVELS:
            raise ValueError(f"undeclared recommendation kind {self.kind!r} or confidence {self.confidence!r}: "
                             "declare it in pipelines/vocabulary.py")


@dataclass(frozen=True)
class Evidence:
    """One group's gold rows and its what-if, as the rules read them."""

    group_id: str
    members: list[dict[str, Any]]
    handoffs: list[dict[str, Any]]
    episodes: list[dict[str, Any]]
    intervals: list[dict[str, Any]]
    what_if: WhatIf
    coverage: float | None = None  # share of the group's partition-time its instrumented members held

    def churn(self, cause: str | None = None) -> list[dict[str, Any]]:
        return [h for h in self.handoffs if h["cause"] != "start" and (cause is None or h["cause"] == cause)]

    @cached_property
    def readiness(self) -> list[readiness.Finding]:
        """The KIP-848 readiness findings of the group's members, over the topics they owned or named."""
        topics = {i["topic"] for i in self.intervals} | {
            t for m in self.members for s in m["subscriptions"] for t in s["topics"]}
        return readiness.findings(self.members, topics)


def _fixes_first(e: Evidence) -> tuple[tuple[str, ...], tuple[str, ...]]:
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


def _total(handoffs: list[dict[str, Any]], figure: str) -> float:
    """The sum of a gold/handoffs figure (``pipelines.measures``: exact, else the lower bound; unknown: 0)."""
    return sum(h[figure] or 0 for h in handoffs)


def _fmt(d: float, p: float) -> str:
    return f"{d:,.0f} duplicates and {p:,.1f} paused partition-seconds"


def pays(base: Priced, p: Priced, tradeoff_ok: bool = False) -> bool:
    """A saving of at least MIN_SAVING in one figure, and the other no more than MAX_WORSE worse."""
    dup_saved, pause_saved = base.duplicates - p.duplicates, base.pause_s - p.pause_s
    good = (dup_saved > MIN_SAVING * base.duplicates and dup_saved >= MIN_DUPLICATES) or \
           (pause_saved > MIN_SAVING * base.pause_s and pause_saved >= MIN_PAUSE_S)
    worse = dup_saved < -MAX_WORSE * max(base.duplicates, 1) or pause_saved < -MAX_WORSE * max(base.pause_s, 1)
    return good and (tradeoff_ok or not worse)


def _confidence(e: Evidence, config: Config) -> tuple[str, str]:
    f, w = e.what_if.fitted, e.what_if
    base, seen = w.baseline, w.measured
    reasons = []
    off = [abs(b - s) / s for b, s in ((base.duplicates, seen.duplicates), (base.pause_s, seen.pause_s)) if s > 0]
    if off and max(off) > 0.25:
        reasons.append(f"the model of the current configuration is {100 * max(off):.0f}% off what gold measured "
                       f"({_fmt(base.duplicates, base.pause_s)} against {_fmt(seen.duplicates, seen.pause_s)})")
    if f.pause_observations < 5 or f.window_observations < 5:
        reasons.append(f"the cost model rests on few handoffs ({f.pause_observations} pauses, "
                       f"{f.window_observations} graceful re-deliveries)")
    now, then = w.current.setup.assignor.split(":")[0], config.setup.assignor.split(":")[0]
    if now != then:
        reasons.append(f"the group was never seen on group.protocol={then}: its handoff pause is assumed to be "
                       "the one measured here")
    if not reasons:
        return "high", (f"{f.pause_observations} measured handoffs fit the model, which reproduces the measured "
                        "costs within 25%")
    return ("low" if len(reasons) > 1 else "medium"), "; ".join(reasons)


def _priced_change(e: Evidence, kind: str, title: str, config: Config, rollout: tuple[str, ...],
                   evidence: tuple[str, ...], query: str, tradeoff: str | None = None) -> Recommendation | None:
    base, p = e.what_if.baseline, e.what_if.priced.get(config)
    if p is None or config == e.what_if.current or not pays(base, p, tradeoff_ok=tradeoff is not None):
        return None
    level, why = _confidence(e, config)
    return Recommendation(kind, title, config, tuple(changes(e.what_if.current, config)), rollout, evidence, query,
                          level, why, p, tradeoff)


def _same_but_assignor(e: Evidence, assignor: str) -> Config | None:
    """The priced candidate that changes only the assignor (and the session timeout where the
    protocol changes: KIP-848's is the brokers'), or None."""
    cur = e.what_if.current
    same = [c for c in e.what_if.priced if c.setup.assignor == assignor and c.setup.static == cur.setup.static
            and c.commit_on_revoke == cur.commit_on_revoke
            and c.setup.max_poll_interval_ms == cur.setup.max_poll_interval_ms]
    return max(same, key=lambda c: c.setup.session_timeout_ms, default=None)  # not a shortened one


def assignor_rule(e: Evidence) -> Recommendation | None:
    """The assignor (and protocol) that saves the most, all else kept."""
    cur = e.what_if.current
    options = [_same_but_assignor(e, a) for a in ASSIGNORS if a != cur.setup.assignor]
    options = [c for c in options if c is not None and pays(e.what_if.baseline, e.what_if.priced[c])]
    if not options:
        return None
    best = max(options, key=lambda c: score(e.what_if.baseline, e.what_if.priced[c]))
    now, then = cur.setup.assignor, best.setup.assignor
    eager_now = ASSIGNORS[now].rebalance_protocol == "eager"
    migration = Step("assignor", cur, best, e.what_if.baseline, e.what_if.priced[best])
    if migration.upgrades:  # rolled out as a plan's migration step is
        rollout = _step_rollout(e, migration)
    elif eager_now and ASSIGNORS[then].rebalance_protocol == "cooperative":
        rollout = ("librdkafka refuses a strategy list that mixes eager and cooperative assignors, so KIP-429's "
                   "two rolling bounces (add cooperative-sticky, then drop the old one) are not possible here.",
                   "Either stop every member and start them with the new strategy (one short full stop), or, on "
                   "Java clients, do the two bounces: [cooperative-sticky, "
                   f"{now.split(':')[1]}] first, then [cooperative-sticky].",
                   "Members on different strategies share no protocol: a member started with only the new one "
                   "cannot join until the old ones are gone.")
    else:
        rollout = ("Stop every member and start them with the new strategy: members with different strategies "
                   "share no protocol, and a rolling change leaves the new ones outside the group.",)
    mixed = _mixed_phase(e, migration) if migration.upgrades else None
    waits = _fixes_first(e)[1] if mixed is not None else ()
    base, p = e.what_if.baseline, e.what_if.priced[best]
    evidence = (f"{len(e.churn())} partition handoffs after the group formed cost {_fmt(e.what_if.measured.duplicates, e.what_if.measured.pause_s)} (gold/handoffs).",
                f"Replayed under {then} the same membership changes make {p.rebalances} rebalances and "
                f"{p.handoffs} handoffs instead of {base.handoffs} ({ASSIGNORS[then].rebalance_protocol} "
                f"protocol: {'only moved partitions stop' if ASSIGNORS[then].rebalance_protocol == 'cooperative' else 'every partition stops at every rebalance'}).",
                *_phase_lines(mixed), *waits)
    rec = _priced_change(e, "assignor", f"Switch to {then.replace('consumer:', 'KIP-848 ').replace('classic:', '')}",
                         best, rollout, evidence, Q_WHAT_IF)
    return rec if rec is None or mixed is None else replace(rec, mixed_phase=mixed[0])


def static_rule(e: Evidence) -> Recommendation | None:
    """Static membership when members restart and come back quickly."""
    cur = e.what_if.current
    restarts = e.churn("restart")
    if cur.setup.static or not longest_restart_ms(e.members):
        return None
    config = with_setup(cur, static=True, session_timeout_ms=static_session_timeout_ms(cur, e.members))
    longest = longest_restart_ms(e.members) / 1000.0
    evidence = (f"{sum(m['leave_cause'] == 'restart' for m in e.members)} restarts; the longest took "
                f"{longest:.1f} s from leave to rejoin (gold/members).",
                f"Restart handoffs cost {_fmt(_total(restarts, 'duplicates'), _total(restarts, 'pause_s'))} (gold/handoffs, cause restart).",
                f"With group.instance.id and session.timeout.ms={config.setup.session_timeout_ms} a restart is no "
                "rebalance: only the restarting member's partitions wait for it.")
    rollout = ("Give every member a group.instance.id that is unique in the group and survives restarts "
               "(a StatefulSet pod name, a host name plus an index).",
               "Roll the members one by one; a member with an instance id joins a group of dynamic members "
               "without trouble.",
               f"Keep session.timeout.ms at least {config.setup.session_timeout_ms} ms: a restart longer than it "
               "is a rebalance again.")
    tradeoff = (f"a crashed static member's partitions wait up to session.timeout.ms "
                f"({config.setup.session_timeout_ms} ms) before they move") if config.setup.session_timeout_ms > cur.setup.session_timeout_ms else None
    return _priced_change(e, "static_membership", "Use static membership (group.instance.id)", config, rollout,
                          evidence, Q_MEMBERS, tradeoff)


def commit_on_revoke_rule(e: Evidence) -> Recommendation | None:
    """Commit what was processed inside the revoke callback when graceful handoffs re-deliver."""
    cur = e.what_if.current
    graceful = [h for h in e.churn() if h["release_kind"] == "revoked" and not h["commit_in_revoke"]]
    duplicated = _total(graceful, "duplicates")
    if cur.commit_on_revoke or duplicated == 0:
        return None
    config = Config(cur.setup, True)
    evidence = (f"{len(graceful)} graceful handoffs re-delivered {duplicated:,} records that had been processed but "
                "not committed (gold/handoffs, release_kind revoked).",
                f"Uncommitted window: {e.what_if.fitted.uncommitted_window_s:.2f} s of records per partition at a revoke.")
    rollout = ("Set lens.commit.on.revoke=true on the InstrumentedConsumer (the agent commits the processed "
               "offsets synchronously inside the revoke callback).",
               "Roll it member by member; it changes nothing on the wire.",
               "Crashes still re-deliver: a killed process commits nothing.")
    fitted = e.what_if.fitted
    return _priced_change(e, "commit_on_revoke", "Commit processed offsets on revoke", config, rollout, evidence,
                          Q_COST_BY_CAUSE, tradeoff=f"each revoke waits for one synchronous commit "
                          f"(about {1000 * fitted.commit_in_revoke_s:.0f} ms) before the partition moves")


def max_poll_rule(e: Evidence) -> Recommendation | None:
    cur = e.what_if.current
    stall = longest_stall_ms(e.members)
    if stall < cur.setup.max_poll_interval_ms:
        return None
    options = [c for c in e.what_if.priced if c.setup.max_poll_interval_ms > cur.setup.max_poll_interval_ms
               and c.setup.assignor == cur.setup.assignor and c.setup.static == cur.setup.static
               and c.commit_on_revoke == cur.commit_on_revoke and c.setup.session_timeout_ms == cur.setup.session_timeout_ms]
    if not options:
        return None
    config = options[0]
    evidence = (f"The longest stall between polls was {stall / 1000:.1f} s, past max.poll.interval.ms="
                f"{cur.setup.max_poll_interval_ms}: the member was thrown out and its partitions moved (gold/members, "
                "stalls; gold/handoffs, cause poll_interval_exceeded).",)
    rollout = (f"Raise max.poll.interval.ms to {config.setup.max_poll_interval_ms}, or process less per poll "
               "(consume() fewer records; max.poll.records on Java clients) or faster.",
               "Roll it member by member.")
    return _priced_change(e, "max_poll_interval", "Give slow batches room: raise max.poll.interval.ms", config,
                          rollout, evidence, Q_MEMBERS,
                          tradeoff="a member that truly hangs keeps its partitions that much longer")


def session_timeout_rule(e: Evidence) -> Recommendation | None:
    crashes = [h for h in e.churn() if h["release_kind"] == "crash"]
    if not crashes:
        return None
    cur = e.what_if.current
    options = [c for c in e.what_if.priced if c.setup.session_timeout_ms < cur.setup.session_timeout_ms
               and c.setup.assignor == cur.setup.assignor and c.commit_on_revoke == cur.commit_on_revoke]
    if not options:
        return None
    config = min(options, key=lambda c: e.what_if.priced[c].pause_s)
    waited = _total(crashes, "pause_s")
    evidence = (f"{len(crashes)} partitions of crashed members waited at least {waited:.1f} partition-seconds "
                f"for session.timeout.ms={cur.setup.session_timeout_ms} to expire (gold/handoffs, cause crash).",)
    return _priced_change(e, "session_timeout", "Find crashed members sooner: lower session.timeout.ms", config,
                          ("Lower it member by member; keep it at least three heartbeat intervals.",), evidence,
                          Q_COST_BY_CAUSE, tradeoff="a long GC pause or network blip now counts as a crash and "
                                                    "rebalances the group")


def member_loads(rate: dict[TopicPartition, float], assignment: Assignment) -> dict[str, float]:
    """Records per second each member reads under ``assignment`` (its partitions' rates)."""
    return {m: sum(rate.get(tp, 0.0) for tp in tps) for m, tps in assignment.items()}


def skew(loads: dict[str, float]) -> float:
    """The busiest member's record rate over the members' mean (1.0: balanced)."""
    mean = sum(loads.values()) / len(loads) if loads else 0.0
    return max(loads.values()) / mean if mean > 0 else 1.0


def enforce_rule(e: Evidence) -> Recommendation | None:
    """KIP-568 in spirit: whether an enforced rebalance pays, on which signal, how often.

    The signal is load skew between the live members (their partitions' record rates).
    One enforced rebalance is simulated under the group's assignor: what it would move,
    the skew after it, and its price under the group's protocol. It is recommended only
    when it cuts the skew by a fifth or more; a group that enforces rebalances that
    change no owner is told to stop, priced by the replay without them."""
    cur, fitted = e.what_if.current, e.what_if.fitted
    live, now = running(e)
    view = [Member(m["agent_id"], m["group_instance_id"], frozenset(m["subscriptions"][-1]["topics"])) for m in live]
    again = assign(cur.setup.assignor, view, partition_counts(e.intervals), now) if view else {}
    moved = {tp for tp, o in owners(again).items() if owners(now).get(tp) != o}
    before, after = skew(member_loads(fitted.rate, now)), skew(member_loads(fitted.rate, again))
    handed = [SimHandoff(tp, "graceful", tp in moved) for tps in now.values() for tp in sorted(tps)
              if tp in moved or not cur.setup.cooperative]
    one = price([SimRebalance(0, "enforced", tuple(handed))], fitted, kind_of(cur.setup), cur.commit_on_revoke,
                cur.setup.session_timeout_ms)
    requests = sum(len(m["enforced_ms"]) for m in e.members)
    enforced = e.churn("enforced")
    useful = before >= SKEW_RATIO and after <= 0.8 * before
    if not useful and not requests:
        return None  # no skew an enforced rebalance would fix, and none was asked for
    evidence = [f"Load skew: the busiest live member reads {before:.2f}x the members' mean record rate "
                f"(gold/partition_ownership); after an enforced rebalance under {cur.setup.assignor}: {after:.2f}x "
                f"(simulated, {len(moved)} partitions move).",
                f"One enforced rebalance costs about {_fmt(one.duplicates, one.pause_s)} under the "
                f"{ASSIGNORS[cur.setup.assignor].rebalance_protocol} protocol (simulated)."]
    if requests:
        evidence.append(f"{requests} enforce_rebalance calls; their rebalances cost "
                        f"{_fmt(_total(enforced, 'duplicates'), _total(enforced, 'pause_s'))} "
                        f"and moved {sum(not h['same_owner'] for h in enforced)} partitions to another member "
                        "(gold/handoffs, cause enforced).")
    priced = None
    if useful:
        title = f"Enforce a rebalance when skew stays above {SKEW_RATIO}x, at most once an hour"
        change = (f"# call consumer.enforce_rebalance() when the busiest member's record rate stays above "
                  f"{SKEW_RATIO}x the members' mean for 10 minutes; at most once per hour",)
        policy = ("The signal: per-member record rates from the agent's progress events (gold/partition_ownership).",
                  f"At most once an hour: each call costs about {_fmt(one.duplicates, one.pause_s)}.")
    else:
        title = "Stop calling enforce_rebalance: it costs a rebalance and cannot fix the skew"
        change = ("# stop calling consumer.enforce_rebalance() on load or lag signals",)
        policy = ("With unchanged membership the assignor gives back the same balance of partition counts: skew from "
                  "hot partitions needs more partitions, better keys, or a rate-aware assignor.",
                  "Keep enforce_rebalance for what changes the assignment (a subscription the group has not seen).")
        without = [{**m, "enforced_ms": []} for m in e.members]
        rounds = replay(without, partition_counts(e.intervals), cur.setup, round_ms=fitted.round_ms)
        priced = price(rounds, fitted, kind_of(cur.setup), cur.commit_on_revoke, cur.setup.session_timeout_ms)
    level, why = _confidence(e, cur) if requests else \
        ("medium", "no enforced rebalance was measured here; its cost is simulated")
    return Recommendation("enforce_policy", title, cur if priced else None, change, policy, tuple(evidence),
                          Q_COST_BY_CAUSE, level, why, priced)


def storm_warning(e: Evidence) -> Recommendation | None:
    rebalances = sorted((x for x in e.episodes if x["cause"] != "start"), key=lambda x: x["start_ms"])
    per_hour = Counter(x["start_ms"] // 3_600_000 for x in rebalances)
    overlapping = sum(1 for a, b in zip(rebalances, rebalances[1:]) if b["start_ms"] < a["end_ms"])
    busiest = max(per_hour.values(), default=0)
    if busiest <= STORM_PER_HOUR and not overlapping:
        return None
    cause, n = Counter(x["cause"] for x in rebalances).most_common(1)[0]
    evidence = (f"Up to {busiest} rebalances in one hour (threshold {STORM_PER_HOUR}); {overlapping} started before "
                f"the previous one ended (gold/episodes).",
                f"The likely cause: {cause} ({n} of {len(rebalances)} rebalances).")
    return Recommendation("storm", f"Rebalance storm, mostly {cause}", None, (), (
        "Find what makes members " + {"restart": "restart", "crash": "crash", "poll_interval_exceeded": "stall",
                                      "scale_out": "scale out", "scale_in": "scale in"}.get(cause, cause) +
        " this often; the changes above price what each fix saves.",), evidence, Q_EPISODES, "high",
        "counted from gold/episodes")


def mixed_warning(e: Evidence) -> Recommendation | None:
    if not mixed_protocols(e.members):
        return None
    return Recommendation("mixed_protocols", "Eager and cooperative members in one group", None, (), (
        "Give every member the same partition.assignment.strategy: librdkafka refuses a list mixing eager and "
        "cooperative assignors, and the group picks a protocol every member supports, if any.",),
        ("Members report different rebalance protocols (gold/members, assignor).",), Q_MEMBERS, "high",
        "read from the members' configuration")


def coverage_warning(e: Evidence) -> Recommendation | None:
    if e.coverage is None or e.coverage >= MIN_COVERAGE:
        return None
    return Recommendation("coverage", f"Only {100 * e.coverage:.0f}% of this group's partition-time ran the agent",
                          None, (), (
        "Run the agent on the group's other members (confluent-kafka consumers: consumer_agent), then price "
        "changes: members without it are missing from the what-if's replay, so no change is priced below "
        f"{100 * MIN_COVERAGE:.0f}%.",),
        (f"Members with the agent held {100 * e.coverage:.1f}% of the group's partition-time (gold/coverage); "
         "Handoffs to or from members without it are in gold/handoffs with unseen_owner = true.",),
        Q_COVERAGE, "high", "measured from gold/coverage")


STEP_TITLES = {"commit_on_revoke": "commit processed offsets on revoke", "max_poll_interval": "raise max.poll.interval.ms",
               "static_membership": "static membership (group.instance.id)", "session_timeout": "the session timeout",
               "assignor": "the assignor"}


def step_title(step: Step) -> str:
    """What a step changes, in words: a plan's target may also remove a setting the group has."""
    if step.kind == "static_membership" and not step.config.setup.static:
        return "dynamic membership (remove group.instance.id)"
    if step.kind == "commit_on_revoke" and not step.config.commit_on_revoke:
        return "stop committing on revoke"
    if step.kind != "assignor":
        return STEP_TITLES[step.kind]
    then = step.config.setup.assignor
    protocol, name = then.split(":")
    if step.migrates:
        return f"migrate to KIP-848 {name}" if protocol == "consumer" else f"move back to the classic protocol ({name})"
    return f"switch to {'KIP-848 ' if protocol == 'consumer' else ''}{name}"


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


def _step_rollout(e: Evidence, step: Step) -> tuple[str, ...]:
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
    first = _fixes_first(e)[0] if step.upgrades else ()
    return (*first, *lines, rollback_criteria(step, today))


def per_handoff_measured(e: Evidence) -> tuple[float, float]:
    """(duplicates, pause seconds) per handoff gold measured after the group formed."""
    n = max(len(e.churn()), 1)
    return e.what_if.measured.duplicates / n, e.what_if.measured.pause_s / n


def _mixed_phase(e: Evidence, step: Step) -> tuple[Priced, str]:
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


def _phase_lines(mixed: tuple[Priced, str] | None) -> tuple[str, ...]:
    """The evidence line of a migration's predicted mixed phase (none without one)."""
    if mixed is None:
        return ()
    priced, chance = mixed
    return (f"The mixed phase: {priced.handoffs} handoffs ({priced.partitions_moved} moves) over {priced.rebalances} "
            f"epoch bumps, {_fmt(priced.duplicates, priced.pause_s)} (simulator.migration: eager classic members give "
            f"back everything at each bump; a static member's restart moves nothing).{chance}",)


def plan_steps(e: Evidence) -> list[Recommendation]:
    """The staged plan to the configuration that saves the most, when it takes two changes or more
    (one change is that change's own recommendation)."""
    goal = target(e.what_if, pays)
    steps = path(e.what_if, goal) if goal is not None else []
    if len(steps) < 2:
        return []
    level, why = _confidence(e, goal)
    base = e.what_if.baseline
    out = []
    for i, step in enumerate(steps, 1):
        gain = score(step.before, step.after)
        alone = (" It saves nothing on its own: the steps after it need it." if gain <= 0 < i < len(steps) else "")
        order = (f"Step {i} of {len(steps)}: after the steps before it, the what-if goes from "
                 f"{_fmt(step.before.duplicates, step.before.pause_s)} to {_fmt(step.after.duplicates, step.after.pause_s)}: "
                 f"{gain:.2f} of relative saving for a rollout effort of {EFFORT[step.kind]} (steps go in order of "
                 f"saving per effort: the easy change that saves the most first).{alone}")
        total = (f"The whole plan takes the group from {_fmt(base.duplicates, base.pause_s)} to "
                 f"{_fmt(steps[-1].after.duplicates, steps[-1].after.pause_s)} (target {goal.label}).")
        mixed = _mixed_phase(e, step) if step.upgrades else None
        title, change = f"Step {i} of {len(steps)}: {step_title(step)}", tuple(changes(step.source, step.config))
        waits = _fixes_first(e)[1] if mixed is not None else ()
        evidence, rollout = (order, *_phase_lines(mixed), total, *waits), _step_rollout(e, step)
        phase = mixed[0] if mixed else None
        out.append(Recommendation("migration", title, step.config, change, rollout, evidence, Q_WHAT_IF, level, why,
                                  step.after, before=step.before, mixed_phase=phase) if step.migrates else
                   Recommendation("plan_step", title, step.config, change, rollout, evidence, Q_WHAT_IF, level, why,
                                  step.after, before=step.before))
    return out


def migration_hold(e: Evidence, plan: list[Recommendation]) -> Recommendation | None:
    """Why a classic group should not move to KIP-848 yet, when no recommendation moves it: a custom
    assignor (KIP-848 runs only the broker's), or no KIP-848 configuration that pays more than the
    changes recommended without it."""
    if e.what_if.current.setup.assignor.startswith("consumer:") or any(
            r.config is not None and r.config.setup.assignor.startswith("consumer:")
            and r.kind in PLAN_KINDS + ("assignor",) for r in plan):
        return None
    known = {name.split(":")[1] for name in ASSIGNORS if name.startswith("classic:")}
    custom = sorted({first for m in e.members if m["group_protocol"] == "classic" and m["assignor"]
                     and (first := m["assignor"].split(",")[0].strip()) not in known})
    if custom:
        reason = (f"members run an assignor KIP-848 cannot run ({', '.join(custom)}): the consumer protocol assigns "
                  "with the broker's assignors only (uniform, range); keep the classic protocol or port its logic "
                  "to a broker-side assignor first")
    elif not e.churn():
        return None  # the healthy verdict says it: no rebalance to save on
    else:
        options = [c for c in e.what_if.priced if c.setup.assignor.startswith("consumer:")]
        best = max(options, key=lambda c: score(e.what_if.baseline, e.what_if.priced[c]), default=None)
        if best is None:
            return None
        p, base = e.what_if.priced[best], e.what_if.baseline
        goal = target(e.what_if, pays)
        if goal is not None and pays(base, p):
            g = e.what_if.priced[goal]
            lead = ("the changes above save as much without it" if score(base, p) <= score(base, g) else
                    f"what it adds to the changes above is less than a change must save ({100 * MIN_SAVING:.0f}% of "
                    f"one figure, and {MIN_DUPLICATES} duplicates or {MIN_PAUSE_S:.0f} paused partition-second)")
            reason = (f"{lead}: the best KIP-848 configuration ({best.label}) would cost "
                      f"{_fmt(p.duplicates, p.pause_s)}, theirs {_fmt(g.duplicates, g.pause_s)} (what-if)")
        else:
            reason = (f"no KIP-848 configuration pays: the best ({best.label}) would cost "
                      f"{_fmt(p.duplicates, p.pause_s)} against {_fmt(base.duplicates, base.pause_s)} now (what-if); "
                      f"a change must save {100 * MIN_SAVING:.0f}% of one figure without making the other "
                      f"{100 * MAX_WORSE:.0f}% worse")
    return Recommendation("migration_hold", "Do not migrate this group to KIP-848 yet", None, (), (
        "Kafka 5.0 makes group.protocol=consumer the default and 6.0 removes the classic protocol from the Java "
        "client: plan the move when the reason below no longer holds.",), (f"{reason[0].upper()}{reason[1:]}.",), Q_WHAT_IF, "high",
        "read from the members' configuration and the what-if")


def readiness_warning(e: Evidence) -> Recommendation | None:
    """What to fix before (blocking) or with the group's move to KIP-848's consumer protocol, member by
    member (``readiness``); for every group that still has classic members and any finding."""
    found = e.readiness
    if not found:
        return None
    counts = Counter(f.severity for f in found)
    title = "KIP-848 readiness: " + ", ".join(f"{s} {counts[s]}" for s in ("blocking", "warning", "info") if counts[s])
    rollout = ("Fix every blocking finding before the first member moves to group.protocol=consumer (without the "
               "fix the member does not start, the broker refuses the upgrade, or the group breaks); the warnings "
               "before or with the move.",
               "Not in telemetry: the brokers' group.consumer.migration.policy (bidirectional, the default, or "
               "upgrade allows the online upgrade) and group.consumer.assignors; check them on the cluster.")
    return Recommendation("migration_readiness", title, None, (), rollout, readiness.said(found), Q_READINESS, "high",
                          "read from the members' telemetry: setting names, client versions, subscriptions, "
                          "callbacks, client errors")


RULES = (assignor_rule, static_rule, commit_on_revoke_rule, max_poll_rule, session_timeout_rule)
WARNINGS = (enforce_rule, storm_warning, mixed_warning)


def recommend(e: Evidence) -> list[Recommendation]:
    """Ranked changes (the best saving first), then warnings; or one ``healthy`` verdict."""
    base = e.what_if.baseline
    ready = [r] if (r := readiness_warning(e)) is not None else []
    if (low := coverage_warning(e)) is not None:
        return [low, *[r for rule in WARNINGS if (r := rule(e)) is not None], *ready]
    found = [r for rule in RULES if (r := rule(e)) is not None]
    found.sort(key=lambda r: -score(base, r.priced))  # type: ignore[arg-type]
    found = plan_steps(e) + found  # the plan first, then each change on its own
    warnings = [r for rule in WARNINGS if (r := rule(e)) is not None]
    hold = [h] if (h := migration_hold(e, found)) is not None else []
    if found or warnings:
        return found + warnings + hold + ready
    m = e.what_if.measured
    why = (f"{len(e.churn())} handoffs after the group formed cost {_fmt(m.duplicates, m.pause_s)}; no change the "
           f"what-if priced ({len(e.what_if.priced) - 1} configurations) saves {100 * MIN_SAVING:.0f}% of that"
           if e.churn() else "no rebalance after the group formed: nothing to save")
    return [Recommendation("healthy", "No change recommended", None, (), (), (why,), Q_COST_BY_CAUSE, "high", why),
            *hold, *ready]
