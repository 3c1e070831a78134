"""A group's protocol phases from its members' group.protocol: classic, mixed while it migrates
member by member, consumer; and back on a rollback."""
from __future__ import annotations

from pipelines.gold.protocol_phases import Phase, protocol_phases, transitions
from pipelines.vocabulary import GROUP_PHASES


def _member(protocol: str | None, joined: int | None, left: int | None = None, *, crashed: bool = False,
            last_seen: int | None = None) -> dict:
    return {"group_protocol": protocol, "joined_ms": joined, "left_ms": left, "crashed": crashed,
            "last_seen_ms": last_seen}


def _migration() -> list[dict]:
    """kip848-migration's shape: four classic members from 0; each restarted on consumer in turn
    (down 500 ms, 5 s apart, from 2 s); then m1 and m2 back to classic (from 26 s)."""
    members = []
    for i in range(4):
        down = 2_000 + i * 5_000
        members.append(_member("classic", 0, down))
        back = down + 500
        rollback = 26_000 + i * 5_000 if i < 2 else None
        members.append(_member("consumer", back, rollback))
        if rollback is not None:
            members.append(_member("classic", rollback + 500))
    return members


def test_a_migration_and_its_partial_rollback():
    phases = protocol_phases(_migration())
    # the last classic member stops at 17 s: the group is consumer's from then, while it restarts
    assert phases == [Phase("classic", 0, 2_500), Phase("mixed", 2_500, 17_000), Phase("consumer", 17_000, 26_500),
                      Phase("mixed", 26_500, None)]
    assert transitions(phases) == [(2_500, "classic", "mixed"), (17_000, "mixed", "consumer"),
                                   (26_500, "consumer", "mixed")]
    assert {p.phase for p in phases} <= set(GROUP_PHASES)


def test_a_whole_rollback_converts_the_group_back_to_classic():
    members = [_member("classic", 0), _member("classic", 0, 1_000), _member("consumer", 1_500, 9_000),
               _member("classic", 9_500)]
    assert protocol_phases(members) == [Phase("classic", 0, 1_500), Phase("mixed", 1_500, 9_000),
                                        Phase("classic", 9_000, None)]


def test_joins_and_leaves_of_one_instant_count_together():
    """A static member replaced on the other protocol at the same instant (R3: no epoch bump) moves
    the phase once, with no empty span between."""
    members = [_member("classic", 0, 5_000), _member("consumer", 5_000)]
    assert protocol_phases(members) == [Phase("classic", 0, 5_000), Phase("consumer", 5_000, None)]


def test_a_span_without_a_live_member_has_no_phase_and_a_crash_ends_at_the_last_sign_of_life():
    members = [_member("classic", 0, crashed=True, last_seen=3_000), _member("consumer", 10_000, 12_000),
               _member(None, 0), _member("classic", None)]
    phases = protocol_phases(members)
    assert phases == [Phase("classic", 0, 3_000), Phase("consumer", 10_000, 12_000)]
    assert transitions(phases) == []
