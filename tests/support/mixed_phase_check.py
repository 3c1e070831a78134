"""The mixed-phase model (``pipelines.simulator.mixed_phase``) held against a migrating group's
telemetry (``observed.mixed_steps``), change by change: shared by the slow check on the embedded
broker and the fast one on a recorded run."""
from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass

from pipelines.simulator.handoff import owners
from pipelines.simulator.mixed_phase import Join, Leave, step
from pipelines.simulator.observed import MixedStep


@dataclass(frozen=True)
class Verdict:
    step: MixedStep
    rule: str  # the rule the model applied: classic, R3 (no bump), P2 (a leave's round left to the join), R4, R8
    partitions: int  # partitions whose owner after the change the model placed
    placed: int  # of which the model gave the observed owner
    problems: tuple[str, ...]  # what differed; empty: the change matched

    @property
    def matched(self) -> bool:
        return not self.problems


def judge(observed: MixedStep, counts: dict[str, int]) -> Verdict:
    """The model run from the observed group just before the change, against what followed:
    the epoch it started, the settled assignment, and every staying member's revoke callbacks."""
    group, bump = step(observed.group, observed.change, counts)
    predicted = bump.target if bump else group.target
    after = {m: tps for m, tps in observed.after.items() if tps or m in predicted}
    seen, model = owners(after), owners({m: predicted.get(m, set()) for m in after})
    problems = []
    if (bump.epoch if bump else None) != observed.bumped_to:
        problems.append(f"epoch: predicted {bump.epoch if bump else 'none'}, observed {observed.bumped_to or 'none'}")
    for m in sorted(set(after) | set(predicted)):
        if m in after and set(predicted.get(m, ())) != after[m]:
            problems.append(f"{m} holds {sorted(after[m])}, predicted {sorted(predicted.get(m, ()))}")
    revokes = bump.revokes if bump else {}
    for m in sorted(set(revokes) | set(observed.revokes)):
        if revokes.get(m, ()) != observed.revokes.get(m, ()):
            problems.append(f"{m} revoked {[sorted(s) for s in observed.revokes.get(m, ())]}, "
                            f"predicted {[sorted(s) for s in revokes.get(m, ())]}")
    if isinstance(observed.change, Join) and bump is None and observed.change.member.member.member_id not in after:
        problems.append("the joiner holds nothing")
    quiet = "P2" if isinstance(observed.change, Leave) and not observed.change.settles else "R3"
    return Verdict(observed, bump.rule if bump else quiet, len(seen),
                   sum(1 for tp, m in seen.items() if model.get(tp) == m), tuple(problems))


def summary(verdicts: list[Verdict]) -> str:
    """The match rate as the README's table states it."""
    changes = sum(v.matched for v in verdicts)
    placed, partitions = sum(v.placed for v in verdicts), sum(v.partitions for v in verdicts)
    revokes = sum(len(v.step.revokes.get(m, ())) for v in verdicts for m in v.step.revokes)
    return (f"{changes}/{len(verdicts)} changes matched (epoch, settled assignment and every revoke callback), "
            f"{placed}/{partitions} partitions placed, {revokes} revoke callbacks observed")


RACE_MS = 2_000  # two heartbeats (1 s each, classic and KIP-848 alike here): changes this close may be seen as one


def reason(steps: list[MixedStep], i: int, verdict: Verdict, counts: dict[str, int]) -> str | None:
    """Why the mismatch of ``steps[i]`` is not a wrong rule, or None when nothing known explains it:
    - the model matches with the members taken in another order: their ids share a Java HashMap
      bucket, where the broker's order is its insertion history, which telemetry does not show;
    - a bump started or not where the model says, with the next change within two heartbeats: the
      broker merged the two (a member saw both in one rejoin) or the callbacks straddle them;
    - with the change before or after within two heartbeats, the two judged together match (the
      first's members in any order, as above): the second came before the members had reconciled
      to the first's target (the broker computes from its target, telemetry shows holdings), so a
      callback of one falls in the other's window."""
    observed = verdict.step
    if any(judge(reordered, counts).matched for reordered in _orders(observed)):
        return "matched with the members in another order (ids sharing a Java hash bucket)"
    close = [(a, b) for a, b in ((i - 1, i), (i, i + 1))
             if a >= 0 and b < len(steps) and steps[b].at_ms - steps[a].at_ms < RACE_MS]
    if any(p.startswith("epoch") for p in verdict.problems) and (i, i + 1) in close:
        return "the next change came within two heartbeats: bumps merged or callbacks straddle them"
    if any(_together(first, steps[b], counts) for a, b in close for first in (steps[a], *_orders(steps[a]))):
        return "two changes within two heartbeats whose reconciliations overlapped: judged together, they match"
    return None


def _orders(observed: MixedStep) -> list[MixedStep]:
    """``observed`` with its group's members in every other order (the broker's, for ids sharing a
    hash bucket, is its insertion history)."""
    return [dataclasses.replace(observed, group=dataclasses.replace(observed.group, members=order))
            for order in itertools.permutations(observed.group.members)][1:]


def _together(first: MixedStep, second: MixedStep, counts: dict[str, int]) -> bool:
    """Two changes judged as one: the model over both from the first's group must place every partition
    as the second settled. Callbacks: an eager classic member's must be the model's, bump by bump; a
    member that gives back only what moves must have given back exactly what it held in the window
    and the model takes from it (a partition the first bump gave it and the second took back before
    it arrived is neither held nor revoked)."""
    group, one = step(first.group, first.change, counts)
    group, two = step(group, second.change, counts)
    predicted = two.target if two else group.target
    if any(set(predicted.get(m, ())) != tps for m, tps in second.after.items() if tps or m in predicted):
        return False
    kinds = {m.member.member_id: m.kind for m in (*first.group.members, *group.members)}
    for m in set(first.revokes) | set(second.revokes) | {m for b in (one, two) if b for m in b.revokes}:
        seen = [sorted(s) for r in (first.revokes, second.revokes) for s in r.get(m, ()) if s]
        if kinds.get(m) == "eager":
            if sorted(seen) != sorted(sorted(s) for b in (one, two) if b for s in b.revokes.get(m, ()) if s):
                return False
            continue
        held = set(first.group.target.get(m, ())) | first.after.get(m, set()) | second.after.get(m, set())
        if {tp for s in seen for tp in s} != held - set(predicted.get(m, ())):
            return False
    return True
