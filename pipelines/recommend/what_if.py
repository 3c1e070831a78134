"""What-if per group: every candidate configuration replayed over the group's observed
window and priced by the group's fitted cost model (``gold/what_if``).

The replay prices the current configuration too, and its figure for the observed period
differs from what gold measured there (the model's fit: the demo's KIP-848 run measured 314
duplicates and replayed 378). A prediction is what a configuration leaves of the measured
figure: the measured figure times the ratio of the two replays, candidate over current
(``anchored``), so a saving is a share of what was measured and never more than it, and what
the model gets wrong in both replays alike (a window or a rate off by a fifth) cancels. The
replays' own figures are kept beside (``replayed_``), and the current one's error on the
observed period is the model's fit, which the confidence reads.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
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


def anchored(measured: float, replay_now: float, replay: float) -> float:
    """What a configuration whose replay costs ``replay`` leaves of the ``measured`` figure, where
    the current configuration's replay costs ``replay_now``: the measured figure times the replays'
    ratio. The model's figures are products (a rate times a window times the handoffs, a pause per
    handoff times the handoffs), so its error is a factor both replays share; the difference of the
    replays would carry that factor into the saving whole (378 saved of 314 measured). Where the
    current replay costs nothing there is no ratio: the measured figure plus what the replay adds."""
    if replay_now > 0:
        return measured * replay / replay_now
    return measured + replay - replay_now


def fit_error_pct(replay: float, measured: float) -> float | None:
    """The replay's error on the observed period, in percent of the measured figure (None: nothing
    was measured); + where the replay counts more."""
    return 100.0 * (replay - measured) / measured if measured > 0 else None


@dataclass(frozen=True)
class WhatIf:
    current: Config
    fitted: Fitted
    measured: Measured
    priced: dict[Config, Priced]  # the predictions: each replay anchored to the measured figures, current first
    window_ms: tuple[int, int]
    replayed: dict[Config, Priced] | None = None  # the replays' own figures (None: the predictions are)
    broker: BrokerGroups = BrokerGroups()  # the KIP-848 settings it priced with, read or assumed

    @property
    def baseline(self) -> Priced:
        """The current configuration's prediction: what gold measured (the replay's counts)."""
        return self.priced[self.current]

    @property
    def replayed_baseline(self) -> Priced:
        """The current configuration's replay of the observed period: set beside the measured, the model's fit."""
        return (self.replayed or self.priced)[self.current]

    def anchor(self, replay: Priced) -> Priced:
        """A replay's figures as a prediction: what it leaves of the measured figures (``anchored``)."""
        now, seen = self.replayed_baseline, self.measured
        return replace(replay, duplicates=anchored(seen.duplicates, now.duplicates, replay.duplicates),
                       pause_s=anchored(seen.pause_s, now.pause_s, replay.pause_s))


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


Shard = tuple[int, int]  # (k, n): the k-th of n shares of a group's candidates
WHOLE: Shard = (0, 1)


def price_all(configs: list[Config], members: list[dict[str, Any]], partitions: dict[str, int],
              fitted: Fitted, shard: Shard = WHOLE) -> dict[Config, Priced]:
    """Every candidate priced, in ``configs`` order; with ``shard`` (k, n), only those of the k-th of
    n shares (the families k, k + n, ...: a large group's candidates priced over n tasks, then
    joined by ``what_if``'s ``given``). Candidates of one setup share its replay, and
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
    k, n = shard
    for (assignor, static, _), family in list(families.items())[k::n]:
        seen = replayed(next(iter(family.values()))[0], members)
        assignments = Assignments(SHARED_PARTITIONS if len(family) > 1 else 0)
        renamings = draws([observed_id(m) for m in seen], assignor.startswith("consumer:"), static,
                          sum(partitions.values()))
        for setup, sharing in family.items():
            each = [price_each(replay(seen, partitions, setup, assignments, fitted.round_ms, renaming), fitted,
                               kind_of(setup), [c.commit_on_revoke for c in sharing], setup.session_timeout_ms)
                    for renaming in renamings]
            priced.update((c, mean_priced(over_draws)) for c, over_draws in zip(sharing, zip(*each)))
    return {c: priced[c] for c in configs if c in priced}


def _candidates(members: list[dict[str, Any]], handoffs: list[dict[str, Any]], intervals: list[dict[str, Any]],
                broker: BrokerGroups) -> tuple[list[Config], Fitted]:
    """The group's candidates (the current configuration first) and its fitted cost model."""
    configs = candidates(current_config(members, broker), members, broker)
    fitted = fit(handoffs, intervals, members, kind_of(configs[0].setup), heartbeats(members, broker),
                 configs[0].setup.session_timeout_ms)
    return configs, fitted


def priced_share(members: list[dict[str, Any]], handoffs: list[dict[str, Any]], intervals: list[dict[str, Any]],
                 broker: BrokerGroups, shard: Shard) -> dict[int, Priced]:
    """One share of the group's replays (``price_all``'s ``shard``), by the candidate's place in its list:
    what one task of a large group's pricing returns to ``what_if``."""
    if not members:
        return {}
    configs, fitted = _candidates(members, handoffs, intervals, broker)
    found = price_all(configs, members, partition_counts(intervals), fitted, shard)
    return {i: found[c] for i, c in enumerate(configs) if c in found}


def what_if(members: list[dict[str, Any]], handoffs: list[dict[str, Any]], intervals: list[dict[str, Any]],
            broker: BrokerGroups, given: dict[int, Priced] | None = None) -> WhatIf | None:
    """The group's what-if, or None when it has no member that reported its configuration. ``given``:
    the replays ``priced_share`` found over tasks (by candidate place); the pass prices them itself
    unless they cover every candidate (a share whose task failed is priced here, and fails here)."""
    if not members:
        return None
    configs, fitted = _candidates(members, handoffs, intervals, broker)
    current = configs[0]
    if given is not None and set(given) == set(range(len(configs))):
        replays = {c: given[i] for i, c in enumerate(configs)}
    else:
        replays = price_all(configs, members, partition_counts(intervals), fitted)
    times = [m["joined_ms"] for m in members] + [m["last_seen_ms"] for m in members]
    unanchored = WhatIf(current, fitted, measured(handoffs), replays, (min(times), max(times)), replays, broker)
    return replace(unanchored, priced={c: unanchored.anchor(p) for c, p in replays.items()})


def rows(group: tuple[str, str], w: WhatIf) -> list[dict[str, Any]]:
    """``gold/what_if`` rows of ``group`` (cluster_id, group_id): one per candidate, with its predicted
    figures and savings (anchored to the measured ones) and its replay's own figures."""
    base, replays = w.baseline, w.replayed or w.priced
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
            "replayed_duplicates": replays[c].duplicates, "replayed_pause_s": replays[c].pause_s,
            "measured_duplicates": w.measured.duplicates if c == w.current else None,
            "measured_pause_s": w.measured.pause_s if c == w.current else None,
        })
    return out
