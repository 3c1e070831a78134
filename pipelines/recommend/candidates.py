"""The configurations the what-if prices: every combination of the config-change kinds' values.

Each kind's effect (``kinds.KINDS``) says which values of its setting to price, read from what
the group showed (the longest restart, the longest stall, its crashes), never from a fixed
table, so a recommendation's numbers are the group's own.
"""
from __future__ import annotations

from pipelines.recommend import kinds
from pipelines.recommend.configuration import BrokerGroups, Config
from pipelines.recommend.kinds import Basis, Members


def candidates(current: Config, members: Members, broker: BrokerGroups) -> list[Config]:
    """Every combination the what-if prices, the current configuration first (with the settings
    the group runs with now of the kinds the simulator does not read itself)."""
    now = current.having(**{k.setting: k.effect.now(members) for k in kinds.KINDS if k.effect.now is not None})
    basis = Basis(now, members, broker)
    grid = [now]
    for kind in kinds.KINDS:  # outermost first: a kind's values may depend on the settings above it
        grid = [c.having(**{kind.setting: value}) for c in grid for value in kind.effect.values(basis, c)]
    return [now, *(c for c in grid if c != now)]
