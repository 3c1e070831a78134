"""A cluster's marts as the SQL build leaves them, for a fleet of any size, without a lake: every mart the
report reads, one frame each, with the shapes real marts have (tests/e2e's lake), for groups of three
kinds: members all with the agent, some with it (the broker's log pricing the rest), and none (the
broker's log alone: bounds, no members, no what-if). Seeded, so a fleet is the same in every run; one
group's name is markup, as names from telemetry can be, and its costs put it among the charted groups."""
from __future__ import annotations

import random
from datetime import date, datetime, timedelta, timezone
from typing import Any

import polars as pl

from tuning_report.marts import MARTS, Fleet

HOSTILE = "<img src=x onerror=alert(1)>"
CAUSES = ("restart", "crash", "scale_out", "scale_in", "poll_interval_exceeded", "unseen_member")
SOURCES = ("agent", "both", "broker")
T0 = datetime(2026, 11, 20, tzinfo=timezone.utc)


def _episodes(rng: random.Random, key: dict[str, Any], source: str, partitions: int,
              scale: float = 1.0) -> tuple[list, list]:
    """(rebalance_episodes rows, episode_handoffs rows) of one group: a few episodes, each moving every partition,
    at a rate of the group's own (a fleet's costs spread over orders of magnitude)."""
    episodes, handoffs = [], []
    rate = rng.lognormvariate(0, 1.5) * scale
    for e in range(rng.randint(3, 8)):
        start = T0 + timedelta(hours=rng.uniform(0, 48))
        cause = rng.choice(CAUSES)
        moved = []
        for p in range(partitions):
            low = rng.uniform(0.2, 3.0)
            bounded = source == "broker" or (source == "both" and p % 3 == 0)
            dup = round(rng.randint(0, 200) * rate)
            moved.append({**key, "handoff_id": f"{key['group_id']}-{e}-{p}", "episode_id": f"{key['group_id']}-{e}",
                          "topic": "orders", "partition": p, "cause": cause, "release_kind": "revoked",
                          "prev_agent_id": None if bounded else f"a{p % 4}", "prev_client_id": f"c{p % 4}",
                          "next_agent_id": None if bounded else f"a{(p + 1) % 4}", "next_client_id": f"c{(p + 1) % 4}",
                          "released_at": start + timedelta(seconds=rng.uniform(0, 2)), "pause_s": low,
                          "pause_upper_s": low * (rng.uniform(3, 12) if bounded else 1), "duplicates": 0 if bounded
                          else dup, "duplicates_upper": dup * (8 if bounded else 1),
                          "pause_estimate_s": low * 2 if bounded else low, "duplicates_estimate": dup * 3 if bounded
                          else dup, "source": "broker" if bounded else ("both" if source == "both" else "agent"),
                          "cause_confidence": "probable" if bounded else "exact"})
        figures = {f: sum(h[f] for h in moved) for f in ("duplicates", "duplicates_upper", "pause_s", "pause_upper_s",
                                                          "duplicates_estimate", "pause_estimate_s")}
        episodes.append({**key, "episode_id": f"{key['group_id']}-{e}", "started_at": start,
                         "ended_at": start + timedelta(seconds=30), "duration_s": 30.0, "cause": cause,
                         "partitions_moved": partitions, "join_s": None if source == "broker" else 2.0,
                         "callbacks_s": None if source == "broker" else 0.5, "reconcile_s": None, "source": source,
                         **figures})
        handoffs += moved
    return episodes, handoffs


def _agent_rows(rng: random.Random, key: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """What only a group with members running the agent has: the what-if, members, hosts, recommendations."""
    configs = [{**key, "config": f"classic:range static={s} cor={c}", "is_current": i == 0,
                "predicted_duplicates": rng.uniform(0, 5000), "predicted_pause_s": rng.uniform(0, 300),
                "predicted_rebalances": rng.randint(1, 9), "measured_duplicates": 2000.0 if i == 0 else None,
                "measured_pause_s": 150.0 if i == 0 else None, "replayed_duplicates": rng.uniform(0, 5000),
                "replayed_pause_s": rng.uniform(0, 300), "cost_rank": i + 1}
               for i, (s, c) in enumerate((s, c) for s in (False, True) for c in (False, True))]
    members = [{**key, "agent_id": f"a{m}", "client_id": f"c{m}", "host": f"h{m % 2}", "handoffs": 10,
                "lost_partitions": 0, "duplicates": 100, "duplicates_upper": 100, "pause_s": 5.0, "pause_upper_s": 5.0,
                "cost_rank": m + 1} for m in range(4)]
    hosts = [{**key, "host": f"h{h}", "member_processes": 2, "handoffs": 20, "duplicates": 200,
              "duplicates_upper": 200, "pause_s": 10.0, "pause_upper_s": 10.0} for h in range(2)]
    recs = [{**key, "rank": 1, "kind": "static_membership", "title": "Use static membership (group.instance.id)",
             "config_change": "group.instance.id=<pod name>", "rollout": "Roll member by member.",
             "evidence": "4 restarts.", "predicted_duplicates_before": 2000.0, "predicted_duplicates_after": 400.0,
             "predicted_duplicates_saved": 1600.0, "predicted_duplicates_saved_pct": 80.0,
             "predicted_pause_before_s": 150.0, "predicted_pause_after_s": 30.0, "measured_duplicates": 2000.0,
             "measured_pause_s": 150.0, "replayed_duplicates": 2100.0, "replayed_duplicates_error_pct": 5.0,
             "replayed_pause_s": 160.0, "replayed_pause_error_pct": 6.7, "tradeoff": None, "confidence": "high",
             "confidence_reason": "fits", "source": "agent"}]
    return {"config_comparison": configs, "member_costs": members, "host_costs": hosts, "open_recommendations": recs}


def _instrument(key: dict[str, Any]) -> dict[str, Any]:
    return {**key, "rank": 1, "kind": "instrument", "title": "Instrument this group: run the agent on its members",
            "config_change": "lens.telemetry.topic=rebalance-lens-telemetry", "rollout": "Canary first.",
            "evidence": "Bounds too wide.", "confidence": "high", "confidence_reason": "from the broker's log",
            "source": "broker"}


def _daily_and_causes(key: dict[str, Any], episodes: list[dict[str, Any]], coverage: tuple[float, float, float]):
    """group_daily_costs and group_cause_costs rows summed from the group's episodes."""
    covered, broker, owned = coverage
    days: dict[date, dict[str, Any]] = {}
    causes: dict[str, dict[str, Any]] = {}
    for e in episodes:
        day = days.setdefault(e["started_at"].date(), {**key, "day": e["started_at"].date(), "rebalances": 0,
                                                        "duplicates": 0, "duplicates_upper": 0, "pause_s": 0.0,
                                                        "pause_upper_s": 0.0, "records_processed": 100_000,
                                                        "covered_s": covered, "owned_s": owned,
                                                        "broker_covered_s": broker, "duplicates_change": None})
        cause = causes.setdefault(e["cause"], {**key, "cause": e["cause"], "duplicates": 0, "duplicates_upper": 0,
                                               "pause_s": 0.0, "pause_upper_s": 0.0})
        day["rebalances"] += 1
        for figure in ("duplicates", "duplicates_upper", "pause_s", "pause_upper_s"):
            day[figure] += e[figure]
            cause[figure] += e[figure]
    return list(days.values()), list(causes.values())


def _group(rng: random.Random, n: int, source: str) -> dict[str, list[dict[str, Any]]]:
    """Every mart's rows of one group; ``source``: who saw it (agent, both, broker)."""
    key = {"cluster_id": "prod", "group_id": HOSTILE if n == 3 else f"group-{n:04d}"}
    episodes, handoffs = _episodes(rng, key, source, rng.choice((6, 12, 24, 48)), 10_000.0 if n == 3 else 1.0)
    owned = 3600.0 * 24
    covered = {"agent": owned, "both": owned * 0.6, "broker": 0.0}[source]
    broker = None if source == "agent" else owned
    daily, causes = _daily_and_causes(key, episodes, (covered, broker or 0.0, owned))
    rows = _agent_rows(rng, key) if source != "broker" else {"open_recommendations": [_instrument(key)]}
    figures = ("duplicates", "duplicates_upper", "duplicates_estimate", "pause_s", "pause_upper_s", "pause_estimate_s")
    totals = {f: sum(e[f] for e in episodes) for f in figures}
    from_broker = [h for h in handoffs if h["source"] == "broker"]
    fleet = {**key, "source": source, "rebalances": len(episodes), "handoffs": len(handoffs),
             "broker_handoffs": len(from_broker), **totals,
             **{f"{f}_from_broker": sum(h[f] for h in from_broker) for f in ("duplicates", "duplicates_upper")},
             "pause_from_broker_s": sum(h["pause_s"] for h in from_broker),
             "pause_upper_from_broker_s": sum(h["pause_upper_s"] for h in from_broker),
             "covered_s": covered, "broker_covered_s": broker, "owned_s": owned, "coverage": covered / owned,
             "broker_coverage": None if broker is None else broker / owned}
    agreement = ([{**key, "figure": f, "handoffs": len(handoffs) - len(from_broker), "outside": 0,
                   "most_outside": 0.0} for f in ("duplicates", "pause_s")] if source == "both" else [])
    return {**rows, "rebalance_episodes": episodes, "episode_handoffs": handoffs, "group_daily_costs": daily,
            "group_cause_costs": causes, "fleet_group_costs": [fleet], "source_agreement": agreement}


def synthetic_fleet(groups: int, seed: int = 52) -> Fleet:
    """``groups`` groups' marts: a third each with all, some and none of their members running the agent."""
    rng = random.Random(seed)
    rows: dict[str, list[dict[str, Any]]] = {mart: [] for mart in MARTS}
    for n in range(groups):
        for mart, found in _group(rng, n, SOURCES[n % 3]).items():
            rows[mart] += found
    ranked = sorted(rows["fleet_group_costs"], key=lambda r: (-r["duplicates_estimate"], -r["pause_estimate_s"]))
    for rank, row in enumerate(ranked, 1):
        row["cost_rank"] = rank
    return Fleet({mart: pl.DataFrame(found, infer_schema_length=None) if found else
                  pl.DataFrame(schema={"cluster_id": pl.String, "group_id": pl.String, "verified_at": pl.Datetime})
                  for mart, found in rows.items()})
