"""A group's staged plan: the configuration that saves the most with every change together (the
target), and the path to it one change at a time, each step priced from the one before it.

The what-if prices every combination of the config-change kinds' values (assignor and
protocol, static membership, commit-on-revoke, the two timeouts: ``pipelines.recommend.candidates``),
so the target and each configuration on the way are already priced: a step's saving is the
replay's figure before it minus after it, on the group's own membership changes. A step is one
kind (``pipelines.recommend.kinds``): the settings it moves, its effort, its rollback wording.

The order is greedy: at each point the step whose saving, divided by what it takes to roll
out (its kind's ``effort``), is the largest goes next; so a one-line change that saves the most
goes first and a protocol migration, with its mixed phase and its readiness checks, goes when
what it adds is worth it. Each step names a canary, then the rest one member at a time, and the
figures that say roll back, in the group's own measured units.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipelines.recommend import kinds
from pipelines.recommend.configuration import Config, longest_restart_ms
from pipelines.recommend.kinds import ROLLBACK_MARGIN
from pipelines.recommend.what_if import WhatIf
from pipelines.simulator.cost_model import Priced

# A migration's member restarts follow each other after one heartbeat of settling, at least.
SETTLE_S = 5.0


@dataclass(frozen=True)
class Step:
    """One change of the plan: its kind (a recommendation kind), the configuration after it, the
    replay's figures before and after."""

    kind: str
    source: Config
    config: Config
    before: Priced
    after: Priced

    @property
    def migrates(self) -> bool:
        """A change of group.protocol: members move one at a time through a mixed phase."""
        return self.source.setup.assignor.split(":")[0] != self.config.setup.assignor.split(":")[0]

    @property
    def upgrades(self) -> bool:
        """A move from the classic protocol to KIP-848's: the one with a priced mixed phase and readiness checks."""
        return self.migrates and self.config.setup.assignor.startswith("consumer:")


def score(base: Priced, p: Priced) -> float:
    """Relative savings, summed: how steps and changes are ranked (to 6 decimals, so two
    configurations priced the same by different sums tie)."""
    return round((base.duplicates - p.duplicates) / max(base.duplicates, 1.0)
                 + (base.pause_s - p.pause_s) / max(base.pause_s, 1.0), 6)


def _priced_as(w: WhatIf, config: Config) -> Config | None:
    """The priced candidate ``config`` is, or the one with its assignor, membership, commits and poll
    interval whose session timeout is nearest (a timeout the grid couples to another setting)."""
    if config in w.priced:
        return config
    alike = [c for c in w.priced if c.same_but(config, "session_timeout_ms")]
    return min(alike, key=lambda c: abs(c.setup.session_timeout_ms - config.setup.session_timeout_ms), default=None)


def effort(a: Config, b: Config) -> int:
    """What it takes to roll out every change from ``a`` to ``b``."""
    return sum(k.effort for k in kinds.moving(a, b))


def target(w: WhatIf, pays: Any) -> Config | None:
    """The priced configuration that saves the most, every change together, if any pays (``pays``:
    the rules' test of a saving worth a rollout); of those that save as much, the one that takes
    the least to roll out; then without each change whose own part of the saving would not pay
    (``_without_free_riders``)."""
    base = w.baseline
    paying = [c for c in w.priced if c != w.current and pays(base, w.priced[c])]
    best = max(paying, key=lambda c: (score(base, w.priced[c]), -effort(w.current, c)), default=None)
    return None if best is None else _without_free_riders(w, best, pays)


def _without_free_riders(w: WhatIf, goal: Config, pays: Any) -> Config:
    """``goal`` without the changes that ride on the others' saving: one whose removal leaves a
    configuration that still pays, and that adds less than a change must save on top of it. The
    hardest goes first: scale-out-in's target was commit-on-revoke plus a move to KIP-848 that added
    0.2 of 2.0 paused partition-seconds (six reruns measured 0.2 ± 0.4), a mixed phase and
    readiness fixes for nothing the rules would claim."""
    for kind in sorted(kinds.moving(w.current, goal), key=lambda k: k.effort, reverse=True):
        without = _priced_as(w, kind.toward(goal, w.current))
        if (without not in (None, goal, w.current) and pays(w.baseline, w.priced[without])
                and not pays(w.priced[without], w.priced[goal])):
            return _without_free_riders(w, without, pays)
    return goal


def path(w: WhatIf, goal: Config) -> list[Step]:
    """The steps from the current configuration to ``goal``, greedily by saving per effort
    (ties: the easier first); empty when a configuration on the way was not priced."""
    at, steps = w.current, []
    left = kinds.moving(at, goal)
    while left and at != goal:  # a step's priced configuration can bring a later change with it
        options = []
        for kind in left:
            nxt = goal if len(left) == 1 else _priced_as(w, kind.toward(at, goal))
            if nxt is None:
                return []
            if nxt != at:  # a change the grid prices only with another one waits for it
                options.append((score(w.priced[at], w.priced[nxt]) / kind.effort, -kind.effort, kind, nxt))
        if not options:  # the changes left are priced only together: one step, named for the hardest
            kind = max(left, key=lambda k: k.effort)
            steps.append(Step(kind.name, at, goal, w.priced[at], w.priced[goal]))
            return steps
        _, _, kind, nxt = max(options, key=lambda o: o[:2])
        steps.append(Step(kind.name, at, nxt, w.priced[at], w.priced[nxt]))
        left.remove(kind)
        at = nxt
    return steps


def per_handoff(p: Priced) -> tuple[float, float]:
    """(duplicates, pause seconds) per handoff of a replay's figures."""
    n = max(p.handoffs, 1)
    return p.duplicates / n, p.pause_s / n


def mixed_phase_s(members: list[dict[str, Any]], migrants: int) -> float:
    """How long a migration's mixed phase lasts, member by member: each restart as long as the
    group's longest measured restart, then ``SETTLE_S`` before the next."""
    return migrants * (longest_restart_ms(members) / 1000.0 + SETTLE_S)


def rollback_criteria(step: Step, today: tuple[float, float]) -> str:
    """When to undo a step, in figures gold measures per handoff, with the closed loop's margin.
    After the step: its predicted figures (``group_daily_costs``). While it rolls out: what its
    kind says (``kinds.ChangeKind.rolling_back``: a migration's mixed phase against the group's own
    measured figures today, ``today``: duplicates, pause seconds per handoff)."""
    duplicates, pause = per_handoff(step.after)
    after = (f"Roll back if, once every member runs it, the group's pause per handoff "
             f"(lens_marts.group_daily_costs) exceeds {ROLLBACK_MARGIN * pause:.2f} s or its duplicates per handoff "
             f"exceed {ROLLBACK_MARGIN * duplicates:.1f} (predicted {pause:.2f} s and {duplicates:.1f}).")
    during = kinds.named(step.kind).rolling_back(step.source, step.config, today)
    return f"{during} {after}" if during else after
