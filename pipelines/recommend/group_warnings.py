"""The warnings about a group, with no config change of their own: a rebalance storm, eager and
cooperative members in one group, too few members with the agent to price a change, what to fix
before a move to KIP-848 (``readiness``); and the enforce-rebalance policy, which changes the
application's calls rather than its configuration.
"""
from __future__ import annotations

from collections import Counter

from pipelines.policy import MIN_COVERAGE
from pipelines.recommend import readiness
from pipelines.recommend.configuration import kind_of, mixed_protocols
from pipelines.recommend.evidence_queries import Q_COST_BY_CAUSE, Q_COVERAGE, Q_EPISODES, Q_MEMBERS, Q_READINESS
from pipelines.recommend.judgement import Evidence, Recommendation, confidence, fmt, total
from pipelines.recommend.rollout import running
from pipelines.recommend.what_if import partition_counts
from pipelines.simulator.assignors import ASSIGNORS, assign
from pipelines.simulator.cost_model import price
from pipelines.simulator.group import Assignment, Member, TopicPartition
from pipelines.simulator.handoff import owners
from pipelines.simulator.replay import SimHandoff, SimRebalance, replay

STORM_PER_HOUR = 12  # one rebalance every five minutes, all hour
SKEW_RATIO = 1.5  # the busiest member's record rate over the members' mean


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
                f"One enforced rebalance costs about {fmt(one.duplicates, one.pause_s)} under the "
                f"{ASSIGNORS[cur.setup.assignor].rebalance_protocol} protocol (simulated)."]
    if requests:
        evidence.append(f"{requests} enforce_rebalance calls; their rebalances cost "
                        f"{fmt(total(enforced, 'duplicates'), total(enforced, 'pause_s'))} "
                        f"and moved {sum(not h['same_owner'] for h in enforced)} partitions to another member "
                        "(gold/handoffs, cause enforced).")
    priced = None
    if useful:
        title = f"Enforce a rebalance when skew stays above {SKEW_RATIO}x, at most once an hour"
        change = (f"# call consumer.enforce_rebalance() when the busiest member's record rate stays above "
                  f"{SKEW_RATIO}x the members' mean for 10 minutes; at most once per hour",)
        policy = ("The signal: per-member record rates from the agent's progress events (gold/partition_ownership).",
                  f"At most once an hour: each call costs about {fmt(one.duplicates, one.pause_s)}.")
    else:
        title = "Stop calling enforce_rebalance: it costs a rebalance and cannot fix the skew"
        change = ("# stop calling consumer.enforce_rebalance() on load or lag signals",)
        policy = ("With unchanged membership the assignor gives back the same balance of partition counts: skew from "
                  "hot partitions needs more partitions, better keys, or a rate-aware assignor.",
                  "Keep enforce_rebalance for what changes the assignment (a subscription the group has not seen).")
        without = [{**m, "enforced_ms": []} for m in e.members]
        rounds = replay(without, partition_counts(e.intervals), cur.setup, round_ms=fitted.round_ms)
        priced = price(rounds, fitted, kind_of(cur.setup), cur.commit_on_revoke, cur.setup.session_timeout_ms)
    level, why = confidence(e, cur) if requests else \
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



WARNINGS = (enforce_rule, storm_warning, mixed_warning)
