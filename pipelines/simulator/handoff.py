"""What a new assignment takes away and moves, under the eager and the cooperative protocols.

Eager: every member revokes all it owns before rejoining, and gets its new partitions when
the round ends. Cooperative (librdkafka cooperative-sticky, and every KIP-848 assignor): a
member revokes only what it loses; a partition that changes owner is withheld in the first
round and assigned in a second one (classic), or once the loser has revoked it (KIP-848).
"""
from __future__ import annotations

from dataclasses import dataclass

from pipelines.simulator.assignors import RebalanceProtocol, assign
from pipelines.simulator.group import Assignment, Member, TopicPartition


@dataclass(frozen=True)
class Handoff:
    revoked: dict[str, set[TopicPartition]]  # member -> what it gives up at the start of the rebalance
    moved: dict[TopicPartition, tuple[str, str]]  # partition -> (previous owner, new owner)
    second_round: frozenset[TopicPartition]  # assigned only after its previous owner revoked it


def owners(assignment: Assignment) -> dict[TopicPartition, str]:
    return {tp: member for member, tps in assignment.items() for tp in tps}


def handoff(previous: Assignment, new: Assignment, protocol: RebalanceProtocol) -> Handoff:
    """Members of ``previous`` missing from ``new`` left the group: they give up everything."""
    before, after = owners(previous), owners(new)
    moved = {tp: (before[tp], after[tp]) for tp in before.keys() & after.keys() if before[tp] != after[tp]}
    if protocol == "eager":
        return Handoff({m: set(tps) for m, tps in previous.items()}, moved, frozenset())
    revoked = {m: set(tps) - new.get(m, set()) for m, tps in previous.items()}
    return Handoff(revoked, moved, frozenset(tp for tp, (src, _) in moved.items() if src in new))


def after_first_round(previous: Assignment, new: Assignment) -> Assignment:
    """What each member owns after a cooperative first round: ``new`` without the withheld moves."""
    withheld = handoff(previous, new, "cooperative").second_round
    return {m: tps - withheld for m, tps in new.items()}


def classic_cooperative_rounds(assignor: str, members: list[Member], partitions: dict[str, int],
                               previous: Assignment | None, max_rounds: int = 10) -> list[Assignment]:
    """What members own after each rebalance of a classic cooperative group until nothing is withheld.

    Each round the leader assigns from what members own; ``rd_kafka_cooperative_protocol_adjust_assignment``
    withholds partitions that change owner, their owners revoke them and rejoin, and the next
    round hands them over. A move therefore costs (at least) two rounds."""
    owned, rounds = previous or {}, []
    for _ in range(max_rounds):
        target = assign(assignor, members, partitions, owned)
        owned = after_first_round(owned, target)
        rounds.append(owned)
        if owned == target:
            break
    return rounds
