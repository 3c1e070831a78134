"""Matching gold's handoffs with a run's ground truth, handoff by handoff, and what may
differ between them: shared by the tests that hold gold against truth (the session's
scenarios, and the same pipeline on a multi-executor cluster)."""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import Any

from lens_scenarios.ground_truth import Handoff

TOLERANCE_S = 0.1
PROCESS = re.compile(r"(.+?\.\d+)(?:-.*)?$")  # <member>.<incarnation>, then what a framework appended
def gold_for_run(landed: dict[str, Any], run_id: str) -> dict[tuple, list[dict[str, Any]]]:
    """This run's gold handoffs keyed like truth's: (topic, partition, previous and next process, first offset at next),
    each key's in time order.

    The previous owner is part of the key: an owner revoked before its first record and
    the owner after it can both hand over to the same process at the same offset. Truth is
    built from delivered records, so a chain through owners that read nothing (assigned,
    then revoked before their first record: the group forming, or a KIP-848 assignment
    taken back at once) is one handoff to it: the chain's duplicates are its first link's
    (gold confirms them at the first owner that reads), its pause and bounds the sums of
    its links'.

    A part to an owner without the agent (``unseen_owner``, next agent null) ends a chain; the
    part from it is keyed with no previous process.

    A key can hold several handoffs: two eager rebalances in quick succession (members that
    re-subscribe at different moments) give a process its partition back twice, and when it
    commits nothing in between it reads from the same committed offset both times.
    """
    process = processes(landed["clients"], run_id)
    by_partition: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for h in landed["handoffs"]:
        by_partition[(h["topic"], h["partition"])].append(h)
    keyed = {}
    for links in by_partition.values():
        links.sort(key=lambda h: h["assigned_ms"])
        chain: list[dict[str, Any]] = []
        for h in links:
            chain.append(h)
            if h["first_fetch_ms"] is None and h["next_agent_id"] is not None:  # it read nothing: the chain goes on
                continue
            h = through(chain)
            chain = []
            if h["next_agent_id"] in process:
                h = {**h, "prev_process": process.get(h["prev_agent_id"]), "next_process": process[h["next_agent_id"]]}
                keyed.setdefault((h["topic"], h["partition"], h["prev_process"], h["next_process"],
                                  h["first_fetch_offset"]), []).append(h)
    return keyed


def processes(clients: dict[str, str], run_id: str) -> dict[str, str]:
    """Each agent's member process (``m1.2``) from its client id, which the runner sets to ``<run id>-<process>``; a
    framework adds to it what names its own consumer (Spring's ``-0``, Streams' ``-StreamThread-1-consumer``)."""
    prefix = f"{run_id}-"
    out = {}
    for agent, client in clients.items():
        named = PROCESS.match(client[len(prefix):]) if client.startswith(prefix) else None
        if named:
            out[agent] = named.group(1)
    return out


def through(chain: list[dict[str, Any]]) -> dict[str, Any]:
    """One handoff from the first link's previous owner to the last link's next owner."""
    first, last = chain[0], chain[-1]

    def total(column: str) -> float | None:
        values = [h[column] for h in chain]
        return None if None in values else sum(values)

    return {**first, "next_agent_id": last["next_agent_id"], "first_fetch_offset": last["first_fetch_offset"],
            "first_fetch_ms": last["first_fetch_ms"],
            **{c: total(c) for c in ("pause_s", "pause_upper_s")}}


def _key(h: Handoff) -> tuple:
    return (h.topic, h.partition, h.prev_process, h.next_process, h.first_offset_next)


def matched(handoffs: list[Handoff], gold: dict[tuple, list[dict[str, Any]]]
             ) -> list[tuple[Handoff, dict[str, Any] | None]]:
    """Each truth handoff with its gold row (None if gold lacks it): the handoffs of one key
    pair up in time order (truth's come in the order of the next owner's first record, gold's
    in the order of the assignments)."""
    taken: Counter = Counter()
    pairs = []
    for h in handoffs:
        key = _key(h)
        rows, i = gold.get(key, []), taken[key]
        taken[key] += 1
        pairs.append((h, rows[i] if i < len(rows) else None))
    return pairs


def check(truth: Handoff, gold: dict[str, Any]) -> list[str]:
    """What differs between one truth handoff and its gold row (empty when they agree)."""
    where = f"{truth.topic}/{truth.partition} {truth.prev_process}->{truth.next_process} ({truth.released_by})"
    problems = [] if gold["cause"] == truth.cause or truth.cause == "start" else \
        [f"{where}: cause gold {gold['cause']} != truth {truth.cause}"]
    if truth.released_by in ("revoke", "exit", "lost"):  # exact: the bounds meet at the truth
        if not gold["duplicates"] == gold["duplicates_upper"] == truth.duplicates:
            problems.append(f"{where}: duplicates gold [{gold['duplicates']}, {gold['duplicates_upper']}] "
                            f"!= truth {truth.duplicates}")
    elif not gold["duplicates"] <= truth.duplicates <= gold["duplicates_upper"]:
        problems.append(f"{where}: truth duplicates {truth.duplicates} outside "
                        f"[{gold['duplicates']}, {gold['duplicates_upper']}]")
    if truth.released_by in ("revoke", "exit"):  # exact
        pause = gold["pause_s"] if gold["pause_s"] == gold["pause_upper_s"] else None
        if pause is None or abs(pause - truth.pause_s) > TOLERANCE_S:
            problems.append(f"{where}: pause gold [{gold['pause_s']}, {gold['pause_upper_s']}] s "
                            f"vs truth {truth.pause_s:.3f} s")
    else:
        low, high = gold["pause_s"], gold["pause_upper_s"]
        if low is None or high is None or not low - TOLERANCE_S <= truth.pause_s <= high + TOLERANCE_S:
            problems.append(f"{where}: truth pause {truth.pause_s:.3f} s outside [{low}, {high}]")
    return problems


def mismatches(truth: list[Handoff], gold: dict[tuple, list[dict[str, Any]]]) -> list[str]:
    """Every way gold's handoffs of a run differ from its truth handoffs (empty when they agree)."""
    problems = []
    for handoff, row in matched(truth, gold):
        problems.extend([f"gold lacks {handoff}"] if row is None else check(handoff, row))
    return problems
