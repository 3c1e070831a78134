"""What a simulated handoff costs, fitted per group from what gold measured.

Fitted from the group's own gold rows, never from constants tuned to our scenarios:

- each partition's record rate: records processed over the seconds it was owned
  (``gold/partition_ownership``);
- the uncommitted window: seconds of records processed but not committed at a revoke; a
  graceful handoff re-delivers ``rate x window`` records, none with commit-on-revoke. Two
  readings, for two questions:

  - ``uncommitted_window_s``, what a replay of the observed period uses: the records the
    period's own graceful handoffs re-delivered (the ticks' reading when it had none). A
    what-if is that period with another setting: its rebalances come at the same moments of
    each member's commit cycle, and a saving is measured against what those moments cost.
    (The closed loop measured this: slow-processing's KIP-848 move, 223 duplicates saved
    against 237 predicted from the revokes' 0.54 s, 263 against 376 from the ticks' 1.0 s;
    a CI run of subscription-change, 46 against 71 from the ticks' 0.74 s where its two
    revokes read 0.45 s.)
  - ``sampled_window_s``, for handoffs at moments of their own (a migration's mixed phase,
    rolled out later): every progress tick's uncommitted records over the partitions'
    rates (``partition_ownership.uncommitted_sum``), once there are ``MIN_WINDOW_SAMPLES``,
    else the first. A revoke comes at no particular point of a commit cycle, so the time
    average is what it sees; a run's revokes alone are few and correlated (a member's
    partitions share its cycle: slow-processing's mixed phase re-delivered 1,210 against
    705 predicted from the revokes, 834 against 1,110 from the ticks). One run's mixed phase
    is a wide draw around it: two reruns of scale-out-in's migration re-delivered 23.5 and 51
    records a handoff where the ticks read 44;
- a handoff's pause, by how the protocol hands a partition over (``PROTOCOL_KINDS``):
  a partition that moves waits for the new owner's round (eager: every member rejoins;
  cooperative: the second round; KIP-848: the gainer's next heartbeat), and under eager
  one given back to its owner waits for the round only. A moved partition is priced by who let
  it go: one whose owner left waits from the owner's close for the others to notice (a heartbeat
  phase) and for their round; under eager one moved between staying members waits for the round
  only, as they all learn of it at once (scale-out-in, ground truth of 7 runs: 0.8-1.1 s against
  0.02-0.12 s; one mean over both priced a switch from roundrobin to range, which moves fewer
  partitions between staying members, at 1.0 partition-seconds saved where three reruns measured
  0.0 ± 0.1); under KIP-848 both wait for the gainer's next heartbeat. Each is ``overhead +
  prior_pause_s``: the heartbeats the protocol's mechanism waits for (``PHASE_HEARTBEATS``) times
  the interval, plus the round's own time measured on the embedded broker (``ROUND_S``); under the
  group's own kind what it showed is its measured mean, and its overhead (what the measured pause
  has beyond the prior: fetch, processing) carries to the rest;
- commit-on-revoke's commit: how much longer a revoke callback that committed took than one that
  did not (a prior of ``COMMIT_IN_REVOKE_PRIOR_S`` until a group has both), for the trade-off the
  recommendation states. The commit itself adds nothing to a handoff's pause as gold and ground
  truth measure it, from when the revoke callback returned: on the embedded broker partitions given
  back or moved between staying members under eager paused 0.070 and 0.056 s with it, 0.068 and
  0.061 s without, and KIP-848 moves 0.51 and 0.49 s with it, 0.54 and 0.60 s without
  (``benchmarks/handoff_pauses.py --assignors range,consumer --commit revoke|batch``, two runs each,
  2026-11-27). Not modelled: an eager round also waits for the last member's commit, which on a
  distant cluster could be tens of milliseconds a rebalance;
- what commit-on-revoke does change in a pause: the records a rebalance hands over again
  (``Backlog``). A member hands a partition over, and takes one, only at a poll, after the batch in
  its hands; a rebalance re-delivers each partition's uncommitted records, and the members work
  through them in full batches. Where records are slow, a batch keeps a member from polling for
  seconds: the next rebalance waits for it (under eager every member must rejoin the round; under
  the cooperative protocols the owner's revoke and the gainer's first fetch each wait for theirs),
  and a moved partition's first record waits behind the re-delivered records of the gainer's other
  partitions. ``lazy-commits`` (10 ms a record, a commit every 1,000) showed both: a round that
  waited 2.6 s for a member re-reading 630 records, partitions whose first record came 5.1 s after
  their assignment, behind 483 re-delivered ones; commit-on-revoke took its pause from 30.5 to 6.9
  partition-s (ground truth, one rerun each). The group's pauses beyond their priors are its members'
  records in hand: ``s_per_record`` is that excess over the records its handoffs left in hand (those
  re-delivered and those that arrived while the partition waited); a handoff's re-delivered records
  add their share under batch commits and none on revoke, at most half of ``away_s``, the longest a
  member was seen away from poll (its longest progress tick interval beyond the group's shortest: the
  ticks come at the first poll after the agent's timer): a rebalance lands at a uniform moment of the
  batch in a member's hands. A group whose members poll often (fast records: rolling-restart's 1 ms
  a record, 0.03 s away at most; scale-out-in's 0.1 s) gets little of it, whatever the excess of its
  pauses (scale-out-in's, on a loaded machine, would have priced commit-on-revoke 1.0 partition-s
  without the half, where its reruns measured -0.6 +- 0.3);
- a static member's return (a bounce): its time away plus what a return took beyond that
  where the group was seen doing it (a handoff from a member to its own restart), else
  one handoff pause;
- a crash: the measured pause less the session timeout it waited for, plus the
  candidate's timeout; its duplicates (what the killed member processed past its last
  commit) do not depend on any setting here, so the measured bounds are kept;
- a classic join round: how long it stays open to a member joining, from the group's restarts
  (``replay.observed_round_ms``);
- a stall's lost partitions: their measured duplicates and pause per handoff, the pause's
  upper bound (from the owner's last progress: a stalled owner read nothing after it); under
  KIP-848 (``held``) the same duplicates, and the whole stall plus one reconciliation's pause.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pipelines.measures import exact, measured_duplicates, measured_pause_s, upper_name
from pipelines.simulator.group import TopicPartition
from pipelines.simulator.replay import ROUND_MS, SimHandoff, SimRebalance, observed_round_ms, restart_pairs

# A synchronous commit inside the revoke callback: one broker round trip; on the embedded
# broker a committed revoke callback took this much longer than one that did not commit.
COMMIT_IN_REVOKE_PRIOR_S = 0.02
DEFAULT_HEARTBEAT_MS = 3_000  # librdkafka's heartbeat.interval.ms
PROTOCOL_KINDS = ("eager", "cooperative", "consumer")  # classic eager, classic cooperative, KIP-848
# A moved partition's pause under each protocol kind, (its owner left, its owner stayed), is the
# heartbeats its handover waits for, by the protocol's mechanism, times the heartbeat interval, plus
# the round's own time (``prior_pause_s``). The heartbeats:
# - its owner left: the others learn of the leave at their next heartbeat, at a uniform phase of
#   their cycle (a leave lands anywhere in it): half a heartbeat under every kind;
# - eager, its owner stayed (or it is given back to its owner): the members learn of the round
#   together, so it waits for the round only: none;
# - cooperative, its owner stayed: the second round starts at the members' next heartbeat, a whole
#   cycle after the first round's answer restarted their timers: one;
# - KIP-848, its owner stayed: the gainer's next heartbeat after the owner's revocation: half.
# Half a heartbeat is an expectation, exact over the phase; one run's draw of phases swings the
# sum by more than any prior measured from a few runs could settle.
PHASE_HEARTBEATS = {"eager": (0.5, 0.0), "cooperative": (0.5, 1.0), "consumer": (0.5, 0.5)}
# The round's time beyond the heartbeats waited (join and sync, or the reconciliation, and the first
# fetch), seconds: the mean measured pause (ground truth) less the heartbeats above, on the embedded
# broker (1 s heartbeats), 16 runs of rolling-restart and scale-out-in under range, roundrobin,
# cooperative-sticky and KIP-848, each timeline jittered by up to a heartbeat
# (`benchmarks/handoff_pauses.py --runs 2`, 2026-11-27): eager 0.068 (126 handoffs given back or
# moved between staying members; 36 whose owner left read 0.14 ± 0.07), cooperative 0.086 and 0.088
# (18 and 8), KIP-848 -0.02 ± 0.09 and -0.04 ± 0.06 (17 and 14: nothing beyond the heartbeat).
ROUND_S = {"eager": 0.07, "cooperative": 0.09, "consumer": 0.0}


def prior_pause_s(kind: str, owner_left: bool, heartbeat_ms: int) -> float:
    """A moved partition's pause under ``kind`` (an eager one given back to its owner: as one
    moved between staying members) before a group's own pauses say more."""
    return PHASE_HEARTBEATS[kind][0 if owner_left else 1] * heartbeat_ms / 1000.0 + ROUND_S[kind]


# Progress ticks (one a second in scenarios, every lens.progress.interval.ms) before the sampled
# uncommitted window is read from them rather than from the revokes.
MIN_WINDOW_SAMPLES = 20


def _mean(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _exact(handoff: dict[str, Any], figure: str) -> float | None:
    """A gold/handoffs figure where it is exact (its bounds meet; ``pipelines.measures.exact``), else None."""
    return exact(handoff[figure], handoff[upper_name(figure)])


@dataclass(frozen=True)
class Backlog:
    """What records in the members' hands after a rebalance add to a handoff's pause (module docstring)."""

    s_per_record: float  # the group's pause beyond its priors over the records its handoffs left in hand
    away_s: float  # the longest a member was seen away from poll: the longest batch in its hands
    observed_share: float  # of a handoff's uncommitted records, the share the observed period re-delivered

    def wait_s(self, records: float) -> float:
        """A handoff's expected wait for ``records`` in hand: at most half the longest batch, as a rebalance
        lands at a uniform moment of the batch a member is in."""
        return min(self.s_per_record * records, self.away_s / 2)


NO_BACKLOG = Backlog(0.0, 0.0, 1.0)


@dataclass(frozen=True)
class Fitted:
    """A group's cost parameters, each with how many observations it rests on."""

    rate: dict[TopicPartition, float]  # records per second
    uncommitted_window_s: float  # at the observed period's revokes: what a replay of that period uses
    window_observations: int
    sampled_window_s: float  # at any moment: for handoffs at moments of their own (a mixed phase)
    kind: str  # the group's protocol kind (``PROTOCOL_KINDS``)
    # a moved partition's pause under each protocol kind: (its owner left, its owner stayed)
    move_pause_s: dict[str, tuple[float, float]]
    same_owner_pause_s: float  # eager: a partition given back to its owner
    pause_observations: int
    return_overhead_s: float  # a static member's return: pause beyond its time away
    commit_in_revoke_s: float
    crash_duplicates: float  # per crashed partition (midpoint of the measured bounds)
    crash_overhead_s: float  # a crashed partition's pause beyond the session timeout
    lost_duplicates: float
    lost_pause_s: float
    round_ms: int  # a classic join round, as the group's restarts showed it (the replay's ``round_ms``)
    backlog: Backlog = NO_BACKLOG

    def at_any_moment(self) -> Fitted:
        """The model for handoffs at moments of their own: the sampled uncommitted window."""
        return replace(self, uncommitted_window_s=self.sampled_window_s)

    def duplicates(self, h: SimHandoff, commit_on_revoke: bool) -> float:
        if h.kind == "crash":
            return self.crash_duplicates
        if h.kind in ("lost", "held"):
            return self.lost_duplicates
        return 0.0 if commit_on_revoke else self.rate.get(h.partition, 0.0) * self.uncommitted_window_s

    def redelivery_pause_s(self, h: SimHandoff, commit_on_revoke: bool) -> float:
        """What the records ``h`` hands over again add to its pause under this choice, beyond what the
        observed period's re-deliveries added (which its fitted pauses hold)."""
        if h.kind not in ("graceful", "bounce") or not self.backlog.s_per_record:
            return 0.0
        uncommitted = self.duplicates(h, False)
        return (self.backlog.wait_s(0.0 if commit_on_revoke else uncommitted)
                - self.backlog.wait_s(self.backlog.observed_share * uncommitted))

    def pause_s(self, h: SimHandoff, kind: str, session_timeout_ms: int) -> float:
        if h.kind == "crash":
            return session_timeout_ms / 1000.0 + self.crash_overhead_s
        if h.kind == "lost":
            return self.lost_pause_s
        if h.kind == "held":  # a KIP-848 stall: the member's own partitions wait it out, then a reconciliation
            return h.down_s + self.move_pause_s["consumer"][1]
        if h.kind == "bounce":
            return h.down_s + self.return_overhead_s
        pause = self.move_pause_s[kind][0 if h.left else 1] if h.moved else self.same_owner_pause_s
        return h.down_s + pause  # down_s: a static member's session expiring


def partition_rates(intervals: list[dict[str, Any]]) -> dict[TopicPartition, float]:
    """Records per second per partition over the time it was owned and read."""
    records: dict[TopicPartition, float] = defaultdict(float)
    seconds: dict[TopicPartition, float] = defaultdict(float)
    for i in intervals:
        end = i["released_ms"] or i["last_progress_ms"]
        if i["first_fetch_ms"] is None or end is None or end <= i["first_fetch_ms"]:
            continue
        tp = (i["topic"], int(i["partition"]))
        records[tp] += i["processed"] or 0
        seconds[tp] += (end - i["first_fetch_ms"]) / 1000.0
    return {tp: records[tp] / seconds[tp] for tp in seconds if seconds[tp] > 0}


def revoke_window(revoked: list[dict[str, Any]], rate: dict[TopicPartition, float]) -> tuple[float, int]:
    """(seconds of records processed but not committed, observations) that ``revoked`` (graceful
    handoffs without commit-on-revoke whose duplicates are exact) re-delivered."""
    if not revoked:
        return 0.0, 0
    return (sum(h["duplicates"] for h in revoked) / sum(rate[(h["topic"], int(h["partition"]))] for h in revoked),
            len(revoked))


def sampled_window(intervals: list[dict[str, Any]], rate: dict[TopicPartition, float]) -> tuple[float, int]:
    """(seconds of records processed but not committed, samples) from the progress ticks' samples."""
    sampled = [i for i in intervals if (i.get("uncommitted_samples") or 0) > 0  # .get: rows before the columns
               and rate.get((i["topic"], int(i["partition"])), 0) > 0]
    samples = sum(i["uncommitted_samples"] for i in sampled)
    if not samples:
        return 0.0, 0
    return (sum(i["uncommitted_sum"] for i in sampled)
            / sum(i["uncommitted_samples"] * rate[(i["topic"], int(i["partition"]))] for i in sampled), samples)


def _left_before(h: dict[str, Any], left: dict[str, int | None]) -> bool:
    """The handoff's previous owner let it go as it left the group (its close's revoke)."""
    left_ms = left.get(h["prev_agent_id"])
    return left_ms is not None and h["revoke_ms"] is not None and h["revoke_ms"] >= left_ms


def fit_backlog(ordinary: list[dict[str, Any]], graceful: list[dict[str, Any]], intervals: list[dict[str, Any]],
                rate: dict[TopicPartition, float], prior_of: Callable[[dict[str, Any]], float]) -> Backlog:
    """``Backlog`` from a group's rows: its ``ordinary`` handoffs' pauses beyond their priors (``prior_of``)
    over the records they left in its members' hands (re-delivered, and produced while the partition
    waited); its members' longest time away from poll; the share of its ``graceful`` revokes that did
    not commit."""
    excess = in_hand = 0.0
    for h in ordinary:
        pause, redelivered = _exact(h, "pause_s"), _exact(h, "duplicates")
        if pause is not None and redelivered is not None:
            excess += pause - prior_of(h)
            in_hand += redelivered + rate.get((h["topic"], int(h["partition"])), 0.0) * pause
    ticks = [i["max_progress_interval_ms"] for i in intervals if i["max_progress_interval_ms"]]
    away_s = (max(ticks) - min(ticks)) / 1000.0 if ticks else 0.0
    share = 1.0 - sum(bool(h["commit_in_revoke"]) for h in graceful) / len(graceful) if graceful else 1.0
    return Backlog(max(0.0, excess) / in_hand if in_hand > 0 else 0.0, away_s, share)


def fit(handoffs: list[dict[str, Any]], intervals: list[dict[str, Any]], members: list[dict[str, Any]],
        kind: str, heartbeat_ms: dict[str, int], session_timeout_ms: int) -> Fitted:
    """The cost parameters of one group from its gold rows; ``kind``: the group's protocol
    kind; ``heartbeat_ms``: the heartbeat interval under each kind; ``session_timeout_ms``:
    the group's, which its crashes waited for."""
    rate = partition_rates(intervals)
    graceful = [h for h in handoffs if h["release_kind"] == "revoked" and h["cause"] != "start"]
    plain = [h for h in graceful if not h["commit_in_revoke"] and _exact(h, "duplicates") is not None
             and rate.get((h["topic"], int(h["partition"])), 0) > 0]
    window, observations = revoke_window(plain, rate)
    sampled, samples = sampled_window(intervals, rate)
    if not observations:
        window, observations = sampled, samples
    pairs = restart_pairs(members)
    joined = {m["agent_id"]: m["joined_ms"] for m in members}
    left = {m["agent_id"]: m["left_ms"] for m in members}
    returns = [h for h in graceful if pairs.get(h["prev_agent_id"]) == h["next_agent_id"]]  # to its own restart
    ordinary = [h for h in graceful if _exact(h, "pause_s") is not None and h not in returns]
    moved = [_exact(h, "pause_s") for h in ordinary if not h["same_owner"]]
    same = [_exact(h, "pause_s") for h in ordinary if h["same_owner"]]
    from_leavers = [_exact(h, "pause_s") for h in ordinary if not h["same_owner"] and _left_before(h, left)]
    from_stayers = [_exact(h, "pause_s") for h in ordinary if not h["same_owner"] and not _left_before(h, left)]
    overheads = [h["pause_s"] - (joined[h["next_agent_id"]] - left[h["prev_agent_id"]]) / 1000.0
                 for h in returns if _exact(h, "pause_s") is not None]
    committed = _mean(h["revoke_callback_ms"] for h in graceful if h["commit_in_revoke"])
    uncommitted = _mean(h["revoke_callback_ms"] for h in graceful if not h["commit_in_revoke"])
    crashes = [h for h in handoffs if h["release_kind"] == "crash"]
    crash_overhead = _mean(p - session_timeout_ms / 1000.0 for p in map(measured_pause_s, crashes) if p is not None)
    lost = [h for h in handoffs if h["release_kind"] == "lost"]

    def prior(k: str, owner_left: bool) -> float:
        return prior_pause_s(k, owner_left, heartbeat_ms[k])

    beyond = [p - prior(kind, True) for p in from_leavers] + [p - prior(kind, False) for p in from_stayers]
    overhead = max(0.0, _mean(beyond)) if beyond else 0.0
    move = {k: (overhead + prior(k, True), overhead + prior(k, False)) for k in PROTOCOL_KINDS}
    move[kind] = (_mean(from_leavers) if from_leavers else move[kind][0],
                  _mean(from_stayers) if from_stayers else move[kind][1])
    pause = _mean(moved) if moved else move[kind][1]
    return Fitted(
        rate=rate, uncommitted_window_s=window, window_observations=observations,
        sampled_window_s=sampled if samples >= MIN_WINDOW_SAMPLES else window,
        kind=kind, move_pause_s=move,
        same_owner_pause_s=_mean(same) if same else overhead + prior("eager", False),
        pause_observations=len(moved) + len(same),
        return_overhead_s=max(0.0, _mean(overheads)) if overheads else pause,
        commit_in_revoke_s=(max(0.0, (committed - uncommitted) / 1000.0) if committed is not None
                            and uncommitted is not None else COMMIT_IN_REVOKE_PRIOR_S),
        crash_duplicates=_mean(measured_duplicates(h) for h in crashes) or 0.0,
        crash_overhead_s=crash_overhead if crash_overhead is not None else pause,
        lost_duplicates=_mean(_exact(h, "duplicates") for h in lost) or 0.0,
        lost_pause_s=_mean(measured_pause_s(h) for h in lost) or pause,
        round_ms=observed_round_ms(members, handoffs) if kind != "consumer" else ROUND_MS,
        backlog=fit_backlog(ordinary, graceful, intervals, rate, lambda h: prior("eager", False) if h["same_owner"]
                            else prior(kind, _left_before(h, left))))


@dataclass(frozen=True)
class Priced:
    """A replay's totals under one setup."""

    rebalances: int
    handoffs: int
    partitions_moved: int
    duplicates: float
    pause_s: float


def price_each(rebalances: Iterable[SimRebalance], fitted: Fitted, kind: str, commit_on_revoke: Sequence[bool],
               session_timeout_ms: int) -> list[Priced]:
    """A replay's totals once per ``commit_on_revoke`` choice, in one pass over its rounds (a
    replay is read as it runs, not held: ``replay.replay``)."""
    totals = [[0, 0, 0, 0.0, 0.0] for _ in commit_on_revoke]
    for r in rebalances:
        pause = sum(fitted.pause_s(h, kind, session_timeout_ms) for h in r.handoffs)
        for t, commits in zip(totals, commit_on_revoke):
            t[0] += r.group_rebalance
            t[1] += len(r.handoffs)
            t[2] += sum(h.moved for h in r.handoffs)
            t[3] += sum(fitted.duplicates(h, commits) for h in r.handoffs)
            t[4] += pause + sum(fitted.redelivery_pause_s(h, commits) for h in r.handoffs)
    return [Priced(*t) for t in totals]


def mean_priced(draws: Sequence[Priced]) -> Priced:
    """A setup's expected totals over replays of its member-id draws (``member_ids``): costs as
    means, counts as means rounded (gold/what_if keeps them as whole numbers)."""
    n = len(draws)
    return Priced(round(sum(p.rebalances for p in draws) / n), round(sum(p.handoffs for p in draws) / n),
                  round(sum(p.partitions_moved for p in draws) / n), sum(p.duplicates for p in draws) / n,
                  sum(p.pause_s for p in draws) / n)


def price(rebalances: Iterable[SimRebalance], fitted: Fitted, kind: str, commit_on_revoke: bool,
          session_timeout_ms: int) -> Priced:
    return price_each(rebalances, fitted, kind, [commit_on_revoke], session_timeout_ms)[0]
