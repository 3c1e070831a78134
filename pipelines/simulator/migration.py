"""A staged KIP-848 migration's mixed phase: every member of a classic group restarted on
``group.protocol=consumer`` one at a time, as the Kafka 4.2 broker runs it (its
``group.consumer.migration.policy`` bidirectional, the default).

The rules, each observed on the embedded broker (docs/measured.md, "The KIP-848 migration"):
- the first consumer-protocol member to join converts the group with nothing moved: the classic
  assignment becomes the target, and from then on one broker-side assignor (the consumer
  members' ``group.remote.assignor``, else uniform) computes each target from the previous one;
  the classic members' own assignor never runs again;
- a dynamic member that leaves a still classic group is a classic rebalance; one that leaves
  or joins a converted group bumps its epoch;
- at every epoch bump each eager classic member gives back all it holds and takes back its
  share one Join/Sync later (a handoff to itself when it keeps a partition), a cooperative one
  what moves, a consumer-protocol member what moves;
- a static member restarted on the other protocol with the same topics replaces its old self:
  no epoch bump, only its own partitions wait for it.

Pure: rounds of ``SimHandoff`` in, each priced by the cost model under the gainer's protocol.
"""
from __future__ import annotations

from dataclasses import dataclass

from pipelines.simulator.assignors import ASSIGNORS, assign
from pipelines.simulator.cost_model import Fitted, Priced, price
from pipelines.simulator.group import Assignment, Member
from pipelines.simulator.handoff import owners
from pipelines.simulator.replay import SimHandoff, SimRebalance

CONSUMER = "consumer"


@dataclass
class _Group:
    classic: str  # the classic assignor (its rebalance protocol: eager or cooperative)
    remote: str  # the consumer protocol's assignor, ``consumer:<name>``
    members: list[Member]
    protocol: dict[str, str]  # member id -> classic | consumer
    owned: Assignment
    converted: bool = False


def _handoffs(g: _Group, then: Assignment) -> list[tuple[SimHandoff, str]]:
    """What one rebalance from ``g.owned`` to ``then`` hands over, each with the protocol kind it is
    priced by (the gainer's): classic members of an eager group give back everything they hold."""
    eager = ASSIGNORS[g.classic].rebalance_protocol == "eager"
    after = owners(then)
    out = []
    for member, tps in g.owned.items():
        everything = g.protocol.get(member) != CONSUMER and eager
        for tp in sorted(tps):
            to = after.get(tp, "")
            if to == member and not everything:
                continue
            gainer = g.protocol.get(to, CONSUMER) if g.converted else "classic"
            kind = CONSUMER if gainer == CONSUMER else ASSIGNORS[g.classic].rebalance_protocol
            out.append((SimHandoff(tp, "graceful", to != member, to=to), kind))
    return out


def _rebalance(g: _Group, members: list[Member], at_ms: int, counts: dict[str, int]) -> list[tuple[SimRebalance, str]]:
    then = assign(g.remote if g.converted else g.classic, members, counts, g.owned if g.converted else None)
    moved = _handoffs(g, then)
    g.members, g.owned = members, {m.member_id: set(then.get(m.member_id, ())) for m in members}
    by_kind: dict[str, list[SimHandoff]] = {}
    for h, kind in moved:
        by_kind.setdefault(kind, []).append(h)
    return [(SimRebalance(at_ms, "protocol_migration", tuple(hs)), kind) for kind, hs in by_kind.items()]


def mixed_phase_rounds(members: list[Member], owned: Assignment, counts: dict[str, int], classic: str,
                       remote: str, down_s: float) -> list[tuple[SimRebalance, str]]:
    """The rebalances of migrating ``members`` (in rollout order) from ``owned`` (the classic
    layout now), each with the protocol kind its handoffs are priced by."""
    g = _Group(classic, remote, list(members), {m.member_id: "classic" for m in members},
               {m.member_id: set(owned.get(m.member_id, ())) for m in members})
    rounds: list[tuple[SimRebalance, str]] = []
    for i, m in enumerate(members):
        at = i * 2
        if m.group_instance_id is not None:  # replaces its old self: its partitions wait, nothing else moves
            g.protocol[m.member_id] = CONSUMER
            g.converted = True
            back = tuple(SimHandoff(tp, "bounce", False, down_s, m.member_id) for tp in sorted(g.owned[m.member_id]))
            rounds.append((SimRebalance(at, "protocol_migration", back, group_rebalance=False), CONSUMER))
            continue
        rest = [x for x in g.members if x.member_id != m.member_id]
        rounds += _rebalance(g, rest, at, counts)  # it leaves
        g.protocol[m.member_id] = CONSUMER
        g.converted = True  # its join converts a classic group (nothing moves) and bumps the epoch
        rounds += _rebalance(g, [*rest, m], at + 1, counts)
    return rounds


def mixed_phase_cost(members: list[Member], owned: Assignment, counts: dict[str, int], classic: str, remote: str,
                     down_s: float, fitted: Fitted, commit_on_revoke: bool) -> Priced:
    """What the mixed phase costs: its rounds priced by the group's fitted cost model, each
    handoff under the protocol kind of the member that takes it."""
    rounds = mixed_phase_rounds(members, owned, counts, classic, remote, down_s)
    parts = [price([rebalance], fitted, kind, commit_on_revoke, 0) for rebalance, kind in rounds]
    return Priced(len({r.at_ms for r, _ in rounds if r.group_rebalance}), sum(p.handoffs for p in parts),
                  sum(p.partitions_moved for p in parts), sum(p.duplicates for p in parts),
                  sum(p.pause_s for p in parts))


def current_layout(intervals: list[dict], live: list[str]) -> Assignment:
    """Who holds what now: the open ownership intervals of the live members."""
    return {a: {(i["topic"], int(i["partition"])) for i in intervals if i["agent_id"] == a and i["release_kind"] is None}
            for a in live}

