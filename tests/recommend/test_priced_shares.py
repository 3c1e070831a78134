"""A large group's replays priced in shares over tasks (``what_if.priced_share``) and joined by its
pass (``what_if``'s ``given``) price every candidate once, exactly as one task's ``price_all`` does; the
pass reads what the shares found, and prices a candidate itself only when a share is missing."""
from __future__ import annotations

import dataclasses

from pipelines.recommend.configuration import BrokerGroups
from pipelines.recommend.what_if import priced_share, what_if
from tests.support.fleets import eager_rolling_restarts
from tests.support.reference_ownership import gold_of_group


def test_shares_cover_every_candidate_once_and_the_pass_reads_them():
    intervals, handoffs, _, members = gold_of_group(eager_rolling_restarts().events, gap_s=10.0)
    whole = what_if(members, handoffs, intervals, BrokerGroups())
    shares = [priced_share(members, handoffs, intervals, BrokerGroups(), (k, 3)) for k in range(3)]
    assert all(shares) and sum(map(len, shares)) == len(whole.replayed)  # 3 shares, none empty, none twice
    given = {i: p for share in shares for i, p in share.items()}
    assert [given[i] for i in range(len(given))] == list(whole.replayed.values())
    assert what_if(members, handoffs, intervals, BrokerGroups(), given) == whole

    planted = {**given, 1: dataclasses.replace(given[1], duplicates=given[1].duplicates + 1000)}
    read = what_if(members, handoffs, intervals, BrokerGroups(), planted)
    assert list(read.replayed.values())[1].duplicates == list(whole.replayed.values())[1].duplicates + 1000

    missing = {i: p for i, p in planted.items() if i != 0}  # a share lost: every candidate priced here
    assert what_if(members, handoffs, intervals, BrokerGroups(), missing) == whole
