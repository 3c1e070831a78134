"""Handoffs priced from the broker's own log, as bounds: every group, whatever its members run.

Plain rows in, plain rows out (no Spark), per group: the ownership changes
(``pipelines.broker_log.ownership_changes``, both protocols), the commits kept around them
(``pipelines.broker_log.commit_window``) and the data partitions' log ends at the times
``log_end_requests`` names (rows of ``LOG_END_FIELDS``). Out come ``gold/handoffs`` rows in the
agent path's vocabulary (``pipelines.measures``): each figure is what surely happened (its lower
bound), ``_upper`` the most it can have been, ``_estimate`` the log's best single guess where it
allows one (never a bound). For a handoff of partition p from owner A to owner B:

- **A's stop window [S-, S+]**: when A surely still read p, and when it surely no longer did
  (``stop_window``). S- is the latest of A's assignment, the commit before the one that first
  reached A's last committed offset (A handed out the records past it afterwards), and, where
  the log tells A to let go, that moment (KIP-848: the revocation request; classic cooperative:
  the sync that revoked p; a member reads the answer after it is written). S+ is KIP-848's
  acknowledgement (or A's tombstone, or its static leave), a classic round's join completion
  (A rejoined, left or was expelled before it; eager rounds and owners that left), the sync
  itself for an owner that left, or a static member's replacement.
- **C_B**, where B starts: the last commit on p before B's assignment T_asg (no commit: the
  partition's log start, where ``auto.offset.reset=earliest`` starts; ``latest`` starts later
  and re-reads nothing, within the bounds). **c_A**: A's last commit in its tenure.
- **LEO(t)**: the records produced by t (Kafka's ``offsets_for_times(t + 1)``: the first offset
  with a timestamp after t; the log end if none). Sampled rather than looked up, a bound reads
  the sample on its safe side (``LogEnds``).
- **duplicates** D- = max(0, c_A - C_B) (0 unless a commit went backwards: a commit says only what
  A had processed, not what it read past it); ``duplicates_upper`` D+ = max(0, LEO(S+) - C_B):
  A cannot have read a record produced after it stopped.
- **pause_s** W- = max(0, T_asg - max(S+, ts(C_B))) when record C_B was produced by T_asg (it
  waited), else 0: from A surely stopping to B being handed p, nobody read it.
  ``pause_upper_s`` W+ = T_end - max(S-, ts(C_B)), T_end = B's first commit past C_B (B read a
  record before committing past it), or B's own stop by, if it let p go first; null (open)
  while B has neither. ts(C_B) is read off the log ends: produced after the latest sample at
  which the log ended at or before C_B, by the earliest one past it.
- **estimates** where the log says when A was told to let go (KIP-848's request, a cooperative
  revocation's sync, a static leave: A stops right after): ``pause_estimate_s`` = T_asg - that
  moment (or C_B's production, if later), ``duplicates_estimate`` = min(LEO(that moment), c_A +
  A's commit rate x the time since its last advance) - C_B, each within its bounds. An eager
  round's start, a leave's or a crash's moment are not in the log: no estimate.

Tight where the protocol writes the moments down (KIP-848: the window is the revoke callback
plus a heartbeat; the pause's lower bound is exact on the broker's side, missing only B's own
start), wide where it cannot (an eager classic round's start is not logged, so S- falls back
to A's commits). Not visible at all: what A processed past its last commit (the agent's
figure), and loss (a commit past what was processed).
"""
from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pipelines.broker_log.commit_window import last_advance
from pipelines.catalog import LOG_START_MS

# One row per data partition and time: the records produced by ``at_ms`` (``offsets_for_times(at_ms + 1)``;
# the log end offset when no record is later): ``catalog.BROKER_LOG_ENDS``'s columns, as the broker stage
# lands them. ``at_ms`` LOG_START_MS reads the partition's log start.
LOG_END_FIELDS: tuple[str, ...] = ("topic", "partition", "at_ms", "log_end_offset")
# The ownership changes that are handoffs: a new owner (or an eager round's same one) after a previous one.
HANDOFF_KINDS: tuple[str, ...] = ("assigned", "reassigned", "replaced")
# A group converting between the classic and consumer protocols rewrites its records in one write.
CONVERSION_MS = 1_000
TP = tuple[str, int]


class LogEnds:
    """The log ends of a group's data partitions at the times asked (exact lookups or samples)."""

    def __init__(self, rows: Iterable[dict[str, Any]]) -> None:
        samples: dict[TP, list[tuple[int, int]]] = defaultdict(list)
        for r in rows:
            samples[(r["topic"], r["partition"])].append((r["at_ms"], r["log_end_offset"]))
        self._samples = {tp: sorted(s) for tp, s in samples.items()}

    def at_least(self, tp: TP, at_ms: int) -> int | None:
        """At least the records produced by ``at_ms``: the first sample at or after it."""
        samples = self._samples.get(tp, [])
        i = bisect.bisect_left(samples, (at_ms, -1))
        return samples[i][1] if i < len(samples) else None

    def at_most(self, tp: TP, at_ms: int) -> int | None:
        """At most the records produced by ``at_ms``: the last sample at or before it."""
        samples = self._samples.get(tp, [])
        i = bisect.bisect_right(samples, (at_ms, float("inf")))
        return samples[i - 1][1] if i > 0 else None

    def produced_between(self, tp: TP, offset: int) -> tuple[int | None, int | None]:
        """(after, by): record ``offset`` was produced after the latest sample at which the log ended
        at or before it, and by the earliest sample past it (None: no such sample)."""
        samples = self._samples.get(tp, [])
        after = [t for t, end in samples if end <= offset]
        by = [t for t, end in samples if end > offset]
        return (max(after) if after else None), (min(by) if by else None)


class CommitLog:
    """A group's offset commits per partition, in log order (a deletion: ``committed_offset`` None)."""

    def __init__(self, rows: Iterable[dict[str, Any]]) -> None:
        by_tp: dict[TP, list[dict[str, Any]]] = defaultdict(list)
        for r in rows:
            by_tp[(r["topic"], r["partition"])].append(r)
        self._commits = {tp: sorted(c, key=lambda r: (r["at_ms"], r["offset"])) for tp, c in by_tp.items()}
        self._times = {tp: [c["at_ms"] for c in cs] for tp, cs in self._commits.items()}

    def last_before(self, tp: TP, at_ms: int) -> int | None:
        """The index of the last commit on ``tp`` before ``at_ms``."""
        i = bisect.bisect_left(self._times.get(tp, []), at_ms)
        return i - 1 if i > 0 else None

    def at(self, tp: TP, i: int) -> dict[str, Any]:
        return self._commits[tp][i]

    def read_after_ms(self, tp: TP, since_ms: int, until_ms: int) -> int | None:
        """When the owner of ``tp`` over [since, until) surely still read it: the time of the commit
        before the one that first reached its last committed offset, if both are its own (it handed
        out the records past that commit afterwards); None if its commits do not show it."""
        last = self.last_before(tp, until_ms)
        if last is None or self._commits[tp][last]["at_ms"] < since_ms:
            return None
        first = last_advance(self._commits[tp], last)
        before, reached = (self._commits[tp][first - 1] if first > 0 else None), self._commits[tp][last]
        if before is None or before["at_ms"] < since_ms or None in (before["committed_offset"],
                                                                     reached["committed_offset"]):
            return None
        return before["at_ms"] if before["committed_offset"] < reached["committed_offset"] else None

    def rate_per_ms(self, tp: TP, since_ms: int, until_ms: int) -> tuple[float, dict[str, Any]] | None:
        """(records per ms, the commit that first reached the last offset) of the owner over
        [since, until): its last advance over the time since the commit before it."""
        last = self.last_before(tp, until_ms)
        if last is None:
            return None
        first = last_advance(self._commits[tp], last)
        if first == 0:
            return None
        before, reached = self._commits[tp][first - 1], self._commits[tp][first]
        if before["at_ms"] < since_ms or before["committed_offset"] is None or reached["at_ms"] <= before["at_ms"]:
            return None
        per_ms = (reached["committed_offset"] - before["committed_offset"]) / (reached["at_ms"] - before["at_ms"])
        return per_ms, reached

    def first_advance(self, tp: TP, after_ms: int, past: int | None, until_ms: int | None) -> dict[str, Any] | None:
        """The first commit on ``tp`` at or after ``after_ms`` (and before ``until_ms``) past offset ``past``."""
        times = self._times.get(tp, [])
        for commit in self._commits.get(tp, [])[bisect.bisect_left(times, after_ms):]:
            if until_ms is not None and commit["at_ms"] >= until_ms:
                return None
            offset = commit["committed_offset"]
            if offset is not None and (past is None or offset > past):
                return commit
        return None


@dataclass(frozen=True)
class StopWindow:
    """When the previous owner stopped reading a partition: after ``after_ms``, by ``by_ms``;
    ``about_ms``: when it stopped by the log's best guess, where the log says (told to let go,
    it stops right after; a static member's leave is sent right after it stopped)."""

    after_ms: int
    by_ms: int
    about_ms: int | None


def stop_window(change: dict[str, Any], read_after_ms: int | None) -> StopWindow:
    """The previous owner's stop window of a handoff row (the module docstring says why each end holds)."""
    after = max(change["previous_since_ms"], read_after_ms or change["previous_since_ms"])
    kind, released, told, about = change["release_kind"], change["released_ms"], None, None
    if change["protocol"] == "consumer":
        by = released if released is not None else change["at_ms"]
        if kind == "revoked" and change["revoke_requested_ms"] is not None:
            told = change["revoke_requested_ms"]
        elif kind == "static_leave":
            about = released
    else:
        joined = change["join_completed_ms"] if change["join_completed_ms"] is not None else change["at_ms"]
        if change["kind"] == "replaced":
            by = change["at_ms"]
        elif kind == "removed":
            by = min(released, joined)
        else:
            by = joined
        if kind == "revoked":
            told = released
    if told is not None:
        after, about = max(after, told), told
    return StopWindow(min(after, by), by, about)


def release_by_ms(change: dict[str, Any]) -> int | None:
    """When the owner a ``released`` row let go surely had stopped: its record for KIP-848 and for
    a classic owner that left; a classic cooperative revocation only at the next round's join (not here)."""
    if change["protocol"] == "consumer" or change["release_kind"] == "removed":
        return change["at_ms"]
    return None


@dataclass(frozen=True)
class _Next:
    """What follows a handoff on its partition: when the next change came (the new owner's commits
    are the ones before it) and by when the new owner had surely stopped, if it let go."""

    at_ms: int | None
    by_ms: int | None


def _seconds(later: int, earlier: int) -> float:
    return max(0.0, (later - earlier) / 1000.0)


def _clip(value: float | None, low: float, high: float | None) -> float | None:
    if value is None:
        return None
    return max(low, value if high is None else min(high, value))


@dataclass(frozen=True)
class _Start:
    """Where the new owner starts (C_B, or the log start without a commit) and what the log says of it."""

    committed: int | None  # C_B: the last commit before its assignment
    previous: int | None  # c_A: the previous owner's last commit in its tenure
    earliest: int | None  # C_B, or the log start
    produced_after: int | None  # record C_B was produced after this sample time ...
    produced_by: int | None  # ... and by this one


def _start(change: dict[str, Any], commits: CommitLog, ends: LogEnds) -> _Start:
    tp, since = (change["topic"], change["partition"]), change["previous_since_ms"]
    last = commits.last_before(tp, change["at_ms"])
    commit = commits.at(tp, last) if last is not None else None
    committed = commit["committed_offset"] if commit else None
    previous = committed if commit and commit["at_ms"] >= since else None
    after, by = ends.produced_between(tp, committed) if committed is not None else (None, None)
    earliest = committed if committed is not None else ends.at_most(tp, LOG_START_MS)
    return _Start(committed, previous, earliest, after, by)


def _bounds(change: dict[str, Any], window: StopWindow, start: _Start, nxt: _Next, commits: CommitLog,
            ends: LogEnds) -> dict[str, Any]:
    """duplicates, duplicates_upper, pause_s, pause_upper_s of one handoff (the module docstring's formulas)."""
    tp, assigned = (change["topic"], change["partition"]), change["at_ms"]
    low = max(0, start.previous - start.committed) if None not in (start.previous, start.committed) else 0
    log_end = ends.at_least(tp, window.by_ms)
    high = None if log_end is None or start.earliest is None else max(low, log_end - start.earliest)
    waited = start.produced_by is not None and start.produced_by <= assigned
    pause = _seconds(assigned, max(window.by_ms, start.produced_by)) if waited else 0.0
    advance = commits.first_advance(tp, assigned, start.committed, nxt.at_ms)
    end = advance["at_ms"] if advance is not None else nxt.by_ms
    begin = max(window.after_ms, start.produced_after or window.after_ms)
    upper = None if end is None else max(pause, _seconds(end, begin))
    return {"duplicates": low, "duplicates_upper": high, "pause_s": pause, "pause_upper_s": upper,
            "first_commit_ms": None if advance is None else advance["at_ms"]}


def _estimates(change: dict[str, Any], window: StopWindow, start: _Start, bounds: dict[str, Any],
               commits: CommitLog, ends: LogEnds) -> dict[str, Any]:
    """duplicates_estimate and pause_estimate_s, where the log says when the previous owner stopped."""
    about, tp = window.about_ms, (change["topic"], change["partition"])
    if about is None or start.committed is None:
        return {"duplicates_estimate": None, "pause_estimate_s": None}
    waited_from = max(about, start.produced_after or about)
    pause = _clip(_seconds(change["at_ms"], waited_from), bounds["pause_s"], bounds["pause_upper_s"])
    reach = ends.at_least(tp, about)
    rate = commits.rate_per_ms(tp, change["previous_since_ms"], change["at_ms"])
    if reach is not None and rate is not None:
        per_ms, reached = rate
        reach = min(reach, reached["committed_offset"] + round(per_ms * max(0, about - reached["at_ms"])))
    dups = None if reach is None else _clip(reach - start.committed, bounds["duplicates"], bounds["duplicates_upper"])
    return {"duplicates_estimate": None if dups is None else int(dups), "pause_estimate_s": pause}


def _ordered(changes: Iterable[dict[str, Any]]) -> dict[TP, list[dict[str, Any]]]:
    """Each named partition's changes in log order (a topic id without a name matches no commit: left out)."""
    by_tp: dict[TP, list[dict[str, Any]]] = defaultdict(list)
    for c in changes:
        if c["topic"] is not None:
            by_tp[(c["topic"], c["partition"])].append(c)
    return {tp: continued(sorted(cs, key=lambda c: (c["at_ms"], c["offsets_partition"], c["offset"])))
            for tp, cs in by_tp.items()}


def continued(changes: list[dict[str, Any]], window_ms: int = CONVERSION_MS) -> list[dict[str, Any]]:
    """One partition's changes (log order) with each owner's tenure carried across a conversion between
    the classic and consumer protocols: the group's records are rewritten (the old kind's released, the
    new kind's assigned without a previous owner) while its members hold on; a member that stopped before
    the conversion (a static member between its close and its replacement) did so in its first tenure."""
    ended: dict[str, tuple[int, int, str]] = {}  # member -> (released at, since, protocol) of its last tenure
    carried: dict[tuple[str, int], int] = {}  # (member, since in the new records) -> since before the conversion
    pending: dict[str, Any] | None = None  # the last release nobody has been given the partition after
    out = []
    for c in changes:
        if c["previous_owner"] is not None and c["release_kind"] is not None:
            ended[c["previous_owner"]] = (c["released_ms"], c["previous_since_ms"], c["protocol"])
        before = ended.get(c["owner"]) if c["previous_owner"] is None and c["owner"] is not None else None
        if before and before[2] != c["protocol"] and abs(c["at_ms"] - before[0]) <= window_ms:
            carried[(c["owner"], c["at_ms"])] = carried.get((c["owner"], before[1]), before[1])
        elif _across(pending, c, window_ms):
            c = {**c, **{f: pending[f] for f in RELEASE_FIELDS}}  # another member takes it at the conversion
        since = carried.get((c["previous_owner"], c["previous_since_ms"]))
        out.append(c if since is None else {**c, "previous_since_ms": since})
        pending = c if c["kind"] == "released" else None if c["owner"] is not None else pending
    return out


# What a release hands on to the assignment after it (``ownership_changes.OwnerBook``'s row fields).
RELEASE_FIELDS = ("previous_owner", "previous_instance_id", "previous_since_ms", "revoke_requested_ms",
                  "released_ms", "release_kind")


def _across(release: dict[str, Any] | None, change: dict[str, Any], window_ms: int) -> bool:
    """``change`` gives the partition to a member of the other protocol's records right as the conversion
    released it from another: one book wrote the release, the other the assignment, so neither wrote the
    handoff (a release and an assignment of one protocol are joined by its own book)."""
    return (release is not None and change["kind"] == "assigned" and change["previous_owner"] is None
            and change["owner"] is not None and release["protocol"] != change["protocol"]
            and release["previous_owner"] != change["owner"]
            and abs(change["at_ms"] - release["released_ms"]) <= window_ms)


def _is_handoff(change: dict[str, Any]) -> bool:
    return change["kind"] in HANDOFF_KINDS and change["previous_owner"] is not None


def _windows(changes: list[dict[str, Any]], commits: CommitLog) -> dict[int, StopWindow]:
    """index in ``changes`` (one partition's) -> the stop window of each handoff."""
    return {i: stop_window(c, commits.read_after_ms((c["topic"], c["partition"]), c["previous_since_ms"], c["at_ms"]))
            for i, c in enumerate(changes) if _is_handoff(c)}


def _next_of(changes: list[dict[str, Any]], i: int, windows: dict[int, StopWindow]) -> _Next:
    """What follows handoff ``i``: the next change's time, and the new owner's own stop by, if it let go."""
    owner = changes[i]["owner"]
    at = changes[i + 1]["at_ms"] if i + 1 < len(changes) else None
    for j in range(i + 1, len(changes)):
        if changes[j]["previous_owner"] != owner:
            if changes[j]["previous_owner"] is not None:
                break  # someone else let it go: the new owner's tenure had ended unseen
            continue
        if j in windows:
            return _Next(at, windows[j].by_ms)
        if changes[j]["kind"] == "released" and release_by_ms(changes[j]) is not None:
            return _Next(at, release_by_ms(changes[j]))
    return _Next(at, None)


def log_end_requests(changes: Iterable[dict[str, Any]],
                     commits: Iterable[dict[str, Any]]) -> list[tuple[str, int, int]]:
    """The (topic, partition, at_ms) log ends a group's handoffs are priced from (``LOG_END_FIELDS``):
    each partition's log start, and per handoff its stop window's ends, its best guess and its assignment."""
    log = CommitLog(commits)
    wanted: set[tuple[str, int, int]] = set()
    for tp, ordered in _ordered(changes).items():
        for i, window in _windows(ordered, log).items():
            times = (LOG_START_MS, window.after_ms, window.by_ms, window.about_ms, ordered[i]["at_ms"])
            wanted.update((*tp, t) for t in times if t is not None)
    return sorted(wanted)


def broker_handoffs(changes: Iterable[dict[str, Any]], commits: Iterable[dict[str, Any]],
                    log_ends: Iterable[dict[str, Any]], cluster_id: str = "") -> list[dict[str, Any]]:
    """One group's handoffs priced from its broker history (the module docstring), as ``gold/handoffs`` rows
    with ``source`` "broker" and the previous owner's stop window; causes are ``broker_causes``'."""
    log, ends = CommitLog(commits), LogEnds(log_ends)
    out = []
    for ordered in _ordered(changes).values():
        windows = _windows(ordered, log)
        for i, window in sorted(windows.items()):
            change = ordered[i]
            start = _start(change, log, ends)
            bounds = _bounds(change, window, start, _next_of(ordered, i, windows), log, ends)
            out.append(handoff_row(change, window, start, {**bounds, **_estimates(change, window, start, bounds,
                                                                                   log, ends)}, cluster_id))
    return out


def handoff_row(change: dict[str, Any], window: StopWindow, start: _Start, figures: dict[str, Any],
                cluster_id: str) -> dict[str, Any]:
    """A ``gold/handoffs`` row: what the broker knows of the handoff, and its figures (none of the
    agent's own: first fetch, processed offsets, callbacks)."""
    prev, nxt = change["previous_owner"], change["owner"]
    return {
        "handoff_id": f"broker:{prev}@{change['previous_since_ms']}>{nxt}@{change['at_ms']}:"
                      f"{change['topic']}/{change['partition']}",
        "cluster_id": cluster_id, "group_id": change["group_id"], "topic": change["topic"],
        "partition": change["partition"], "prev_agent_id": None, "prev_member_id": prev, "next_agent_id": None,
        "next_member_id": nxt, "same_owner": prev == nxt, "prev_assigned_ms": change["previous_since_ms"],
        "generation": change["generation"] if change["protocol"] == "classic" else change["member_epoch"],
        "release_kind": "revoked" if change["release_kind"] == "revoked" or change["kind"] == "reassigned" else None,
        "revoke_ms": change["released_ms"], "assigned_ms": change["at_ms"], "first_fetch_ms": None,
        "first_fetch_offset": None, "first_fetch_window_ms": None, "first_fetch_timestamp_ms": None,
        "last_processed_at_revoke": None, "committed_at_revoke": start.previous, "uncommitted_at_revoke": None,
        "revoke_callback_ms": None, "revoke_event_id": None, "commit_in_revoke": None,
        "duplicates": figures["duplicates"], "duplicates_upper": figures["duplicates_upper"],
        "pause_s": figures["pause_s"], "pause_upper_s": figures["pause_upper_s"],
        "duplicates_estimate": figures["duplicates_estimate"], "pause_estimate_s": figures["pause_estimate_s"],
        # an estimate's interval where the log gives no narrower one: the bounds themselves
        "duplicates_estimate_low": figures["duplicates"], "duplicates_estimate_high": figures["duplicates_upper"],
        "pause_estimate_low_s": figures["pause_s"], "pause_estimate_high_s": figures["pause_upper_s"],
        "stopped_after_ms": window.after_ms, "stopped_by_ms": window.by_ms, "start_offset": start.committed,
        "first_commit_ms": figures["first_commit_ms"], "protocol": change["protocol"],
        "broker_release": change["release_kind"], "change_kind": change["kind"],
        "revoke_requested_ms": change["revoke_requested_ms"], "source": "broker",
        "episode_id": None, "episode_start_ms": None, "cause": None, "cause_confidence": None, "unseen_owner": None,
    }
