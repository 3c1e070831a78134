"""What-if per group: every candidate configuration replayed over the group's observed
window and priced by the group's fitted cost model (``gold/what_if``).

Predicted savings are differences between two replays (the current configuration's and a
candidate's) under one fitted model, so what the model leaves out of both cancels; the
current configuration's replay is also set beside what gold measured (``calibration``),
and a recommendation whose model does not reproduce the measured costs says so.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipelines.measures import measured_duplicates, measured_pause_s
from pipelines.recommend import kinds
from pipelines.recommend.candidates import candidates
from pipelines.recommend.configuration import BrokerGroups, Config, current_config, heartbeats, kind_of
from pipelines.simulator.cost_model import Fitted, Priced, fit, mean_priced, price_each
from pipelines.simulator.member_ids import draws
from pipelines.simulator.replay import Assignments, Setup, observed_id, replay

SHARED_PARTITIONS = 500_000  # owned partitions kept to share between replays: 40-75 MiB (measured 80-150 B each)


@dataclass(frozen=True)
class Measured:
    """What gold measured over the window (the group's start left out): bounded figures as midpoints."""

    handoffs: int
    duplicates: float
    pause_s: float


@dataclass(frozen=True)
class WhatIf:
    current: Config
    fitted: Fitted
    measured: Measured
    priced: dict[Config, Priced]  # the current configuration first
    window_ms: tuple[int, int]

    @property
    def baseline(self) -> Priced:
        return self.priced[self.current]


def partition_counts(intervals: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for i in intervals:
        counts[i["topic"]] = max(counts.get(i["topic"], 0), int(i["partition"]) + 1)
    return dict(sorted(counts.items()))


def measured(handoffs: list[dict[str, Any]]) -> Measured:
    """Gold's figures after the group formed (``pipelines.measures.measured_duplicates`` and
    ``measured_pause_s``: midpoints of the bounds; unknown ones count 0)."""
    churn = [h for h in handoffs if h["cause"] != "start"]
    return Measured(len(churn), sum(measured_duplicates(h) or 0.0 for h in churn),
                    sum(measured_pause_s(h) or 0.0 for h in churn))


def replayed(config: Config, members: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The membership timeline the replay sees under ``config``: as observed, through the effect of
    each setting the simulator does not read itself (``kinds.Effect.replayed``)."""
    for setting, value in config.extra:
        effect = next(k.effect for k in kinds.KINDS if k.setting == setting)
        members = effect.replayed(value, members) if effect.replayed is not None else members
    return members


def price_all(configs: list[Config], members: list[dict[str, Any]], partitions: dict[str, int],
              fitted: Fitted) -> dict[Config, Priced]:
    """Every candidate priced, in ``configs`` order. Candidates of one setup share its replay, and
    setups of one assignor model (one assignor, static or not: the members the model sees) the
    assignments their replays compute (``replay.Assignments``, up to ``SHARED_PARTITIONS``). A replay
    is priced as it runs, round by round, for all its candidates at once, and a model's assignments
    dropped once its setups are replayed: a worker holds one round and one model's assignments at
    a time, however many candidates there are and however long the window. Where a rerun would
    draw the members' order afresh (``member_ids.draws``), a setup is the mean over draws of it.
    Settings the simulator does not read itself replay their own timeline (``replayed``)."""
    families: dict[tuple[str, bool, tuple], dict[Setup, list[Config]]] = {}
    for c in configs:
        families.setdefault((c.setup.assignor, c.setup.static, c.extra), {}).setdefault(c.setup, []).append(c)
    priced: dict[Config, Priced] = {}
    for (assignor, static, _), family in families.items():
        seen = replayed(next(iter(family.values()))[0], members)
        assignments = Assignments(SHARED_PARTITIONS if len(family) > 1 else 0)
        renamings = draws([observed_id(m) for m in seen], assignor.startswith("consumer:"), static,
                          sum(partitions.values()))
        for setup, sharing in family.items():
            each = [price_each(replay(seen, partitions, setup, assignments, fitted.round_ms, renaming), fitted,
                               kind_of(setup), [c.commit_on_revoke for c in sharing], setup.session_timeout_ms)
                    for renaming in renamings]
            priced.update((c, mean_priced(over_draws)) for c, over_draws in zip(sharing, zip(*each)))
    return {c: priced[c] for c in configs}


def what_if(members: list[dict[str, Any]], handoffs: list[dict[str, Any]], intervals: list[dict[str, Any]],
            broker: BrokerGroups) -> WhatIf | None:
    """The group's what-if, or None when it has no member that reported its configuration."""
    if not members:
        return None
    configs = candidates(current_config(members, broker), members, broker)
    current = configs[0]
    fitted = fit(handoffs, intervals, members, kind_of(current.setup), heartbeats(members, broker),
                 current.setup.session_timeout_ms)
    priced = price_all(configs, members, partition_counts(intervals), fitted)
    times = [m["joined_ms"] for m in members] + [m["last_seen_ms"] for m in members]
    return WhatIf(current, fitted, measured(handoffs), priced, (min(times), max(times)))


def rows(group: tuple[str, str], w: WhatIf) -> list[dict[str, Any]]:
    """``gold/what_if`` rows of ``group`` (cluster_id, group_id): one per candidate, with its predicted
    figures and savings."""
    base = w.baseline
    out = []
    for c, p in w.priced.items():
        protocol, assignor = c.setup.assignor.split(":")
        out.append({
            "cluster_id": group[0], "group_id": group[1], "config": c.label, "is_current": c == w.current,
            "group_protocol": protocol,
            "assignor": assignor, "static_membership": c.setup.static, "commit_on_revoke": c.commit_on_revoke,
            "session_timeout_ms": c.setup.session_timeout_ms, "max_poll_interval_ms": c.setup.max_poll_interval_ms,
            "window_start_ms": w.window_ms[0], "window_end_ms": w.window_ms[1],
            "predicted_rebalances": p.rebalances, "predicted_handoffs": p.handoffs,
            "predicted_partitions_moved": p.partitions_moved, "predicted_duplicates": p.duplicates,
            "predicted_pause_s": p.pause_s, "predicted_duplicates_saved": base.duplicates - p.duplicates,
            "predicted_pause_saved_s": base.pause_s - p.pause_s,
            "measured_duplicates": w.measured.duplicates if c == w.current else None,
            "measured_pause_s": w.measured.pause_s if c == w.current else None,
        })
    return out
