"""Owners the agent cannot see, and the share of a group's partition-time it did see (coverage).

A fleet adopts the agent member by member: a member on the plain client emits nothing. Gold
must not pretend a partition went straight from the last instrumented owner to the next one
across such an owner (one long false pause, or duplicates nobody can attribute). What the
instrumented members do see gives the unseen owner away:

- **rounds**: the group's rebalances as the instrumented members saw them (their assignments
  and releases, clustered in time; ``rounds_of``). An eager round (classic, non-incremental
  assignments) hands out every partition: a partition released before a round and not assigned
  to an instrumented member in it went to a member without the agent;
- **offsets**: the next instrumented owner starts past everything the previous one processed
  or committed (``first_fetch_offset > max(last processed + 1, committed)``): someone else
  consumed and committed in between, whatever the protocol.

Such a handoff is split in two (``split``), and neither part is priced across the unseen owner:

- previous owner -> unseen: the duplicates the revoke left are bounded from what the revoking
  member reported: the unseen owner starts at the group's committed offset, at most the
  previous owner's highest commit (``uncommitted_at_revoke`` records re-read, the lower
  bound) and at least the commit it reported at the revoke (else where it started itself);
  exactly 0 when it handed out none of the partition's records, and at least 0 when it made no
  commit the agent saw; the pause is unknown (when the unseen owner first read is not seen);
- unseen -> next owner: the pause is at least the next owner's own wait (assignment to first
  record), its upper bound and the duplicates unknown.

Both carry ``unseen_owner`` and a ``handoff_id`` of the pair's plus ``~unseen``/``unseen~``, so
a later run that refolds the pair replaces its parts (``_base``).

**Coverage** (``coverage_by_hour``) is the share of the group's partition-time owned by
instrumented members: ``covered_s`` (their ownership intervals, each from its assignment to its
release; a crashed owner's to its last sign of life) over ``owned_s`` (``covered_s`` plus the
spans unseen owners held: from the end of the round that gave them the partition to the
start of the round that took it back, or to the group's last event). The window is what the
agent watched: from the first round that gave an instrumented member a partition of the group
(who held the partitions before it, and since when, nothing the agent sends can say: a
generation number before it may or may not have assigned anything). Time inside a round,
when nobody holds an eager group's partitions, counts for neither, as in the ground truth.
The unseen spans are estimates of when a member nobody instruments held a partition: a
member's leave reaches the others at their next heartbeat, so a span ends half a heartbeat
before the round it started (the middle of that window; measured on the built-in
partial-adoption runs: within 0.5 percentage point of the truth). A partition numbered above
every partition the instrumented members ever held is not known to exist and counts nowhere.
"""
from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pipelines.catalog import HANDOFFS
from pipelines.gold.causes import Bodies
from pipelines.gold.handoffs import bounded_estimates, handed_out_nothing

ROUND_GAP_MS = 1_000  # a round's events follow each other this closely (the ground truth's rebalance gap)
HOUR_MS = 3_600_000
CHANGES = ("partitions_assigned", "partitions_revoked", "partitions_lost")
TP = tuple[str, int]
HANDOFF_COLUMNS = HANDOFFS.column_names()


@dataclass(frozen=True)
class Round:
    """One rebalance as the instrumented members saw it: from its first release (or assignment)
    to its last assignment, what they were assigned in it, whether that was an eager round."""

    start_ms: int
    end_ms: int
    assigned: frozenset[TP]
    eager: bool
    generation: int
    triggered: bool  # an instrumented member did something that started it (``causes.triggers_of``)


def rounds_of(bodies: Bodies, trigger_times: list[int]) -> list[Round]:
    """The rounds among ``bodies`` (in time order): partition changes clustered by ``ROUND_GAP_MS``;
    a cluster of releases only (the rest of its round came later) starts the next round.
    ``trigger_times``: when instrumented members triggered rebalances (sorted)."""
    clusters: list[list[tuple[dict[str, Any], dict[str, Any]]]] = []
    for e, b in bodies:
        if e["kind"] not in CHANGES:
            continue
        if clusters and e["event_time_ms"] - clusters[-1][-1][0]["event_time_ms"] <= ROUND_GAP_MS:
            clusters[-1].append((e, b))
        else:
            clusters.append([(e, b)])
    out: list[Round] = []
    start = None
    for cluster in clusters:
        start = cluster[0][0]["event_time_ms"] if start is None else start
        assigns = [(e, b) for e, b in cluster if e["kind"] == "partitions_assigned"]
        if not assigns:
            continue
        end = assigns[-1][0]["event_time_ms"]
        after = out[-1].end_ms if out else -1
        triggered = bisect.bisect_right(trigger_times, end) > bisect.bisect_right(trigger_times, after)
        out.append(Round(start, end,
                         frozenset((p["topic"], p["partition"]) for _, b in assigns for p in b["partitions"]),
                         not any(b["incremental"] for _, b in assigns), max(e["generation"] for e, _ in assigns),
                         triggered))
        start = None
    return out


def _round_at(rounds: list[Round], time_ms: int) -> int:
    """The index of the first round that ends at or after ``time_ms`` (len(rounds) if none): a search by
    key, not over a list of the ends built per call (that grew with handoffs times rounds, a second of a
    30 h eager group's pass)."""
    return bisect.bisect_left(rounds, time_ms, key=lambda r: r.end_ms)


def _release_ms(h: dict[str, Any]) -> int | None:
    if h["release_kind"] == "lost":
        return min(h["revoke_ms"], h["assigned_ms"])
    return h["revoke_ms"]


def spans_unseen(h: dict[str, Any], rounds: list[Round]) -> bool:
    """Whether an owner without the agent held the partition between ``h``'s owners."""
    start = h["first_fetch_offset"]
    frontier = [o for o in (h["committed_at_revoke"], None if h["last_processed_at_revoke"] is None
                            else h["last_processed_at_revoke"] + 1) if o is not None]
    if start is not None and frontier and start > max(frontier) and h["release_kind"] != "crash":
        return True  # someone consumed and committed between them
    released = _release_ms(h)
    if released is None:
        return False
    i = _round_at(rounds, released)
    return i < len(rounds) and rounds[i].eager and _round_at(rounds, h["assigned_ms"]) > i


def _dups(last: int | None, start: int | None) -> int | None:
    return None if last is None or start is None else max(0, last + 1 - start)


def _to_unseen(h: dict[str, Any], prev: dict[str, Any] | None, rounds: list[Round]) -> dict[str, Any]:
    """The part of ``h`` from its previous owner (interval ``prev``) to an unseen one."""
    i = _round_at(rounds, _release_ms(h) or h["assigned_ms"])
    taken = rounds[i] if i < len(rounds) else None
    reported = None if prev is None else (prev["committed_at_release"] if prev["committed_at_release"] is not None
                                          else prev["first_fetch_offset"])
    if prev is not None and h["release_kind"] != "crash" and handed_out_nothing(prev):
        lower = upper = 0  # nothing of its own can be read again (``handoffs.handed_out_nothing``)
    else:
        upper = _dups(h["last_processed_at_revoke"], reported)
        # no commit seen (the owner made none before the release): at least none, at most all it processed
        lower = 0 if h["uncommitted_at_revoke"] is None and upper is not None else h["uncommitted_at_revoke"]
    part = {
        **h, "handoff_id": f"{h['handoff_id']}~unseen", "unseen_owner": True, "same_owner": False,
        "next_agent_id": None, "next_member_id": None,
        "assigned_ms": taken.end_ms if taken else h["assigned_ms"],
        "generation": taken.generation if taken else h["generation"],
        "first_fetch_ms": None, "first_fetch_offset": None, "first_fetch_window_ms": None,
        "first_fetch_timestamp_ms": None, "pause_s": None, "pause_upper_s": None, "duplicates": lower,
        "duplicates_upper": None if upper is None else max(upper, lower or 0)}
    return {**part, **bounded_estimates(part)}


def _from_unseen(h: dict[str, Any]) -> dict[str, Any]:
    """The part of ``h`` from an unseen owner to its next owner: only the next owner's own wait is known."""
    waited = None
    if h["first_fetch_ms"] is not None and h["first_fetch_window_ms"] is not None:
        produced = h["first_fetch_timestamp_ms"]
        begin = h["assigned_ms"] if produced is None else max(h["assigned_ms"], produced)
        waited = max(0.0, (h["first_fetch_ms"] - h["first_fetch_window_ms"] - begin) / 1000.0)
    part = {
        **h, "handoff_id": f"unseen~{h['handoff_id']}", "unseen_owner": True, "same_owner": False,
        "prev_agent_id": None, "prev_member_id": None, "prev_assigned_ms": None, "release_kind": None,
        "revoke_ms": None, "last_processed_at_revoke": None, "committed_at_revoke": None,
        "uncommitted_at_revoke": None, "revoke_callback_ms": None, "revoke_event_id": None,
        "commit_in_revoke": False, "pause_s": waited, "pause_upper_s": None, "duplicates": None,
        "duplicates_upper": None}
    return {**part, **bounded_estimates(part)}


def _left_to_unseen(i: dict[str, Any], rounds: list[Round]) -> bool:
    """Whether interval ``i``, the last an instrumented member held of its partition, went on to an
    unseen owner: released before a round that gave it to no instrumented member (an eager round
    gives every partition to someone; in an incremental group, a later round shows the group went on)."""
    if i["release_kind"] not in ("revoked", "lost") or i["next_assigned_ms"] is not None:
        return False
    k = _round_at(rounds, i["released_ms"])
    return k < len(rounds) and (i["topic"], i["partition"]) not in rounds[k].assigned and (
        rounds[k].eager or k + 1 < len(rounds))


def _leaving(i: dict[str, Any]) -> dict[str, Any]:
    """Interval ``i``'s handoff to a next owner nobody saw, before it is cut (``_to_unseen``)."""
    committed = max((o for o in (i["committed_at_release"], i["committed_max"]) if o is not None), default=None)
    row = dict.fromkeys(HANDOFF_COLUMNS)
    row.update(handoff_id=f"{i['assign_event_id']}>:{i['topic']}/{i['partition']}", cluster_id=i["cluster_id"],
               group_id=i["group_id"],
               topic=i["topic"], partition=i["partition"], prev_agent_id=i["agent_id"],
               prev_member_id=i["member_id"], prev_assigned_ms=i["assigned_ms"], release_kind=i["release_kind"],
               revoke_ms=i["released_ms"], assigned_ms=i["released_ms"],
               last_processed_at_revoke=i["last_processed_at_release"], committed_at_revoke=committed,
               uncommitted_at_revoke=_dups(i["last_processed_at_release"], committed),
               revoke_callback_ms=i["callback_ms"], revoke_event_id=i["release_event_id"],
               commit_in_revoke=i["commit_in_revoke"])
    return row


def _arriving(i: dict[str, Any]) -> dict[str, Any]:
    """Interval ``i``'s handoff from a previous owner nobody saw, before it is cut (``_from_unseen``)."""
    row = dict.fromkeys(HANDOFF_COLUMNS)
    row.update({c: i[c] for c in ("cluster_id", "group_id", "topic", "partition", "assigned_ms", "generation",
                                  "first_fetch_ms", "first_fetch_offset", "first_fetch_window_ms",
                                  "first_fetch_timestamp_ms")},
               handoff_id=f">{i['assign_event_id']}:{i['topic']}/{i['partition']}", next_agent_id=i["agent_id"],
               next_member_id=i["member_id"])
    return row


def _first_rounds(rounds: list[Round]) -> dict[str, int]:
    """Per topic, the first round that assigned any of its partitions to an instrumented member."""
    first: dict[str, int] = {}
    for k, r in enumerate(rounds):
        for topic, _ in r.assigned:
            first.setdefault(topic, k)
    return first


def _came_from_unseen(i: dict[str, Any], rounds: list[Round], first_round: dict[str, int]) -> bool:
    """Whether interval ``i``, the first an instrumented member held of its partition, came from an
    unseen owner: it began in a later round than the topic's first (someone held it before)."""
    return _round_at(rounds, i["assigned_ms"]) > first_round.get(i["topic"], len(rounds))


def _prev_key(h: dict[str, Any]) -> tuple[str, str, int]:
    return h["handoff_id"].split(">", 1)[0], h["topic"], h["partition"]


def _next_key(h: dict[str, Any]) -> tuple[str, str, int]:
    return _base(h["handoff_id"]).split(">", 1)[1].split(":", 1)[0], h["topic"], h["partition"]


def _base(handoff_id: str) -> str:
    return handoff_id.removesuffix("~unseen").removeprefix("unseen~")


def split(handoffs: list[dict[str, Any]], intervals: list[dict[str, Any]], rounds: list[Round]
          ) -> list[dict[str, Any]]:
    """``handoffs`` with each one that spans an unseen owner replaced by its two parts, a part to an
    unseen owner for each last interval of a partition that went on to one, and a part from one for
    each first interval of a partition that came from one. Parts stored by an earlier run stay
    unless this run brings their pair again, or a seen owner's handoff their ``~unseen`` part's
    previous owner left by or their ``unseen~`` part's next owner came by (a late owner's
    events can land on either side of an unseen owner, or show there was none)."""
    fresh = [h for h in handoffs if not h.get("unseen_owner")]
    prev_of = {(i["assign_event_id"], i["topic"], i["partition"]): i for i in intervals}
    leaving = [(_leaving(i), i) for i in intervals if _left_to_unseen(i, rounds)]
    first_round, firsts = _first_rounds(rounds), {}
    for i in intervals:  # each partition's first instrumented interval
        key = (i["topic"], i["partition"])
        if key not in firsts or i["assigned_ms"] < firsts[key]["assigned_ms"]:
            firsts[key] = i
    arriving = [_arriving(i) for i in firsts.values() if _came_from_unseen(i, rounds, first_round)]
    redone = {h["handoff_id"] for h in (*fresh, *arriving)} | {h["handoff_id"] for h, _ in leaving}
    moved_on = {_prev_key(h) for h in fresh} | {_prev_key(h) for h, _ in leaving}
    came_by = {_next_key(h) for h in fresh}
    out = [h for h in handoffs if h.get("unseen_owner") and _base(h["handoff_id"]) not in redone
           and not (h["handoff_id"].endswith("~unseen") and _prev_key(h) in moved_on)
           and not (h["handoff_id"].startswith("unseen~") and _next_key(h) in came_by)]
    out += [_to_unseen(h, i, rounds) for h, i in leaving] + [_from_unseen(h) for h in arriving]
    for h in fresh:
        if spans_unseen(h, rounds):
            out += [_to_unseen(h, prev_of.get(_prev_key(h)), rounds), _from_unseen(h)]
        else:
            out.append({**h, "unseen_owner": False})
    return out


def _end_ms(i: dict[str, Any], last_seen: dict[str, int], group_end: int) -> int:
    """When an interval's owner stopped holding its partition (see the module docstring)."""
    if i["release_kind"] == "revoked":
        return i["released_ms"]
    if i["release_kind"] == "lost":
        return min(i["released_ms"], i["next_assigned_ms"] or i["released_ms"])
    alive = last_seen.get(i["agent_id"], group_end)
    return min(alive, i["next_assigned_ms"]) if i["release_kind"] == "unreleased" else alive


def _until_round(r: Round, heartbeat_ms: int) -> int:
    """When an unseen owner let go of a partition the round ``r`` moved: at its start, or, when no
    instrumented member started it (the unseen owner left: the others heard of it at their next
    heartbeat, up to ``heartbeat_ms`` later), half a heartbeat before it (the middle of that window)."""
    return r.start_ms if r.triggered else r.start_ms - heartbeat_ms // 2


def _minus_rounds(start: int, end: int, rounds: list[Round], heartbeat_ms: int) -> list[tuple[int, int]]:
    """[start, end) without the eager rounds inside it, each from when the unseen owner let go
    (``_until_round``) to its end: nobody holds an eager group's partitions mid-round (an
    incremental round leaves the partitions it does not move where they are)."""
    out, at = [], start
    for r in rounds:
        cut = _until_round(r, heartbeat_ms)
        if not r.eager or r.end_ms <= at or cut >= end:
            continue
        if cut > at:
            out.append((at, cut))
        at = max(at, r.end_ms)
    if at < end:
        out.append((at, end))
    return out


def _unseen_spans(mine: list[dict[str, Any]], tp: TP, handoffs: list[dict[str, Any]], rounds: list[Round],
                  first_round: int, group_end: int, heartbeat_ms: int) -> list[tuple[int, int]]:
    """The spans unseen owners held partition ``tp``, from its instrumented intervals ``mine``
    (in assignment order, possibly none) and its handoffs ``handoffs`` (after ``split``)."""
    if first_round >= len(rounds):
        return []
    spans = []
    if not mine:
        return _minus_rounds(rounds[first_round].end_ms, group_end, rounds, heartbeat_ms)
    first = _round_at(rounds, mine[0]["assigned_ms"])
    if first > first_round:  # held by someone unseen since the topic's first round
        spans += _minus_rounds(rounds[first_round].end_ms, _until_round(rounds[first], heartbeat_ms), rounds,
                               heartbeat_ms)
    back_of = {_base(o["handoff_id"]): o for o in handoffs if o["handoff_id"].startswith("unseen~")}
    for h in handoffs:
        if h["handoff_id"].endswith("~unseen"):
            i = _round_at(rounds, h["assigned_ms"])
            back = back_of.get(_base(h["handoff_id"]))
            end = _until_round(rounds[_round_at(rounds, back["assigned_ms"])], heartbeat_ms) if back else group_end
            if i < len(rounds):
                spans += _minus_rounds(rounds[i].end_ms, end, rounds, heartbeat_ms)
    last = mine[-1]
    released = last["release_kind"] in ("revoked", "lost") and last["released_ms"] is not None
    if released and not any(h["handoff_id"].endswith("~unseen") and h["prev_assigned_ms"] == last["assigned_ms"]
                            for h in handoffs):
        i = _round_at(rounds, last["released_ms"])
        if i < len(rounds) and tp not in rounds[i].assigned and (rounds[i].eager or i + 1 < len(rounds)):
            # nobody instrumented took it back
            spans += _minus_rounds(rounds[i].end_ms, group_end, rounds, heartbeat_ms)
    return spans


def _by_hour(spans: Iterable[tuple[int, int]]) -> dict[int, float]:
    """Seconds of ``spans`` per UTC hour (hour start in ms)."""
    out: dict[int, float] = defaultdict(float)
    for start, end in spans:
        while start < end:
            hour = start // HOUR_MS * HOUR_MS
            cut = min(end, hour + HOUR_MS)
            out[hour] += (cut - start) / 1000.0
            start = cut
    return out


def coverage_by_hour(intervals: list[dict[str, Any]], handoffs: list[dict[str, Any]], rounds: list[Round],
                     last_seen: dict[str, int], heartbeat_ms: int) -> list[dict[str, Any]]:
    """Per UTC hour: (hour_start_ms, covered_s, owned_s) of one group (see the module docstring);
    ``heartbeat_ms``: the members' heartbeat interval (0 when unknown)."""
    if not intervals:
        return []
    group_end = max(last_seen.values(), default=max(i["assigned_ms"] for i in intervals))
    count: dict[str, int] = defaultdict(int)
    for i in intervals:
        count[i["topic"]] = max(count[i["topic"]], i["partition"] + 1)
    by_tp: dict[TP, list[dict[str, Any]]] = defaultdict(list)
    for i in intervals:
        by_tp[(i["topic"], i["partition"])].append(i)
    handoffs_of: dict[TP, list[dict[str, Any]]] = defaultdict(list)
    for h in handoffs:
        handoffs_of[(h["topic"], h["partition"])].append(h)
    covered = _by_hour((i["assigned_ms"], max(i["assigned_ms"], _end_ms(i, last_seen, group_end)))
                       for i in intervals)
    unseen: list[tuple[int, int]] = []
    for topic, n in count.items():
        first_round = next((k for k, r in enumerate(rounds) if any(t == topic for t, _ in r.assigned)), len(rounds))
        for p in range(n):
            mine = sorted(by_tp.get((topic, p), []), key=lambda i: i["assigned_ms"])
            unseen += _unseen_spans(mine, (topic, p), handoffs_of.get((topic, p), []), rounds, first_round, group_end,
                                    heartbeat_ms)
    owned = _by_hour(unseen)
    for hour, seconds in covered.items():
        owned[hour] += seconds
    return [{"hour_start_ms": hour, "covered_s": round(covered.get(hour, 0.0), 3), "owned_s": round(owned[hour], 3)}
            for hour in sorted(owned)]
