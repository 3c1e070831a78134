"""The member ids a replay gives a group's members: those it was seen with, or a draw of the ids a
rerun under another setup would get.

The assignors order members by their ids (classic range and roundrobin sort them, the KIP-848
uniform assignor takes them in Java hash order; ``java_order``), and who gives up a partition
among equal members, or where a joiner's block falls, follows that order. A member's id is drawn
when it starts: a classic member's is its ``client.id``, a dash and a random UUID; a KIP-848
member's a random UUID the client makes (22 characters of base64). So the observed period's ids
are one draw, and a candidate that restarts the members is priced over several
(``what_if.price_all``): scale-out-in's KIP-848 step, replayed with the observed ids, always took
the joiner's partition from the member that later left with one, a move fewer than the broker made
in 5 of 6 reruns (docs/measured.md).

Not drawn: static members (range orders them by their ``group.instance.id``, the user's) and classic
ids whose ``client.id`` prefixes already order them (the scenarios' ``...-m3.1``). How many draws a
group gets is bounded by ``DRAW_BUDGET``, in members x partitions over all of a setup's replays (a
replay's cost grows with both: scale-out-in's takes 0.2 ms, a large group's seconds a round): a
large group gets one replay, the observed ids, and its order decides a small share of its moves.
"""
from __future__ import annotations

import base64
import random
import re
from collections.abc import Iterable

# scale-out-in's KIP-848 moves over 3,000 draws: 3.73 a run, a standard deviation of 0.45; 64 draws
# put the mean within 0.06 of it (16 draws of one seed gave 3.94)
ORDER_DRAWS = 64
DRAW_BUDGET = 16_000
_CLASSIC_ID = re.compile(r"^(?P<client_id>.*)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")

Renaming = dict[str, str]  # observed member id -> the id it has in a draw


def _client_id(member_id: str) -> str | None:
    match = _CLASSIC_ID.match(member_id)
    return match["client_id"] if match else None


def _order_is_drawn(member_ids: list[str], consumer_protocol: bool) -> bool:
    if consumer_protocol:
        return True
    prefixes = [_client_id(i) for i in member_ids]
    return None not in prefixes and len(set(prefixes)) < len(prefixes)


def _fresh(member_id: str, consumer_protocol: bool, rng: random.Random) -> str:
    if consumer_protocol:
        return base64.urlsafe_b64encode(rng.randbytes(16)).decode().rstrip("=")
    uuid_hex = f"{rng.getrandbits(128):032x}"
    return (f"{_client_id(member_id)}-{uuid_hex[:8]}-{uuid_hex[8:12]}-{uuid_hex[12:16]}-"
            f"{uuid_hex[16:20]}-{uuid_hex[20:]}")


def draws(member_ids: Iterable[str], consumer_protocol: bool, static: bool, partitions: int) -> list[Renaming]:
    """The renamings to replay a setup under: the observed ids first (the identity), then, where the
    order is a draw, seeded draws up to ``ORDER_DRAWS`` within ``DRAW_BUDGET`` (the same on every
    run: a recommendation is reproducible)."""
    ids = sorted(set(member_ids))
    identity = {i: i for i in ids}
    count = min(ORDER_DRAWS, DRAW_BUDGET // max(1, len(ids) * partitions))
    if static or count <= 1 or not _order_is_drawn(ids, consumer_protocol):
        return [identity]
    rng = random.Random(0)
    return [identity] + [{i: _fresh(i, consumer_protocol, rng) for i in ids} for _ in range(count - 1)]
