"""The config-change kinds, each declared once: its title, the settings it moves, its rollout
effort, its rollback wording, the consumer settings that make it and its simulator effect.

The what-if's grid (``candidates``), the rules (``recommendations``), the staged plan (``plan``,
``plan_rows``) and, through their rows, the report read this table; adding a kind is an entry
here (with its effect), its name in ``pipelines.vocabulary`` and its test. ``INSTRUMENT`` is the one
change that is no setting of the group's: running the agent on it, which changes what is known of its
rebalances, not what they cost (``AgentKind``). A kind without a rule
of its own is recommended on the what-if's evidence alone (``recommendations.priced_rule``).

``KINDS`` lists them in the order the what-if's grid nests their values, outermost first: a kind's
values may depend on the kinds above it (the session timeouts priced depend on the assignor and the
membership). The rules and the plan take them in the vocabulary's order (``in_order``).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pipelines import vocabulary
from pipelines.policy import TOLERANCE
from pipelines.recommend.configuration import BrokerGroups, Config, longest_restart_ms, longest_stall_ms
from pipelines.simulator.assignors import ASSIGNORS

MIN_SESSION_TIMEOUT_MS = 6_000  # the broker's group.min.session.timeout.ms default
# How much longer than the longest restart (static) or stall (max.poll.interval.ms) the new
# timeout is: room for a slower restart than any seen, without hiding a real crash for long.
HEADROOM = 2.0
# Roll back when a step's figure per handoff comes out this much worse than predicted: the
# closed loop's own tolerance (a prediction within 25% holds).
ROLLBACK_MARGIN = 1 + TOLERANCE

Members = list[dict[str, Any]]


@dataclass(frozen=True)
class Basis:
    """What a kind's priced values are read from: the group's configuration now, its members'
    ``gold/members`` rows and the brokers' KIP-848 group settings."""

    current: Config
    members: Members
    broker: BrokerGroups


@dataclass(frozen=True)
class Effect:
    """How the what-if applies a kind. ``values``: the values of its setting the what-if prices,
    for a configuration whose outer kinds' settings the grid has set. A setting the simulator does
    not read itself (not a ``Setup`` field nor the commit flag) also says what the group runs with
    now (``now``) and the membership timeline the replay sees under a value (``replayed``)."""

    values: Callable[[Basis, Config], Iterable[Any]]
    now: Callable[[Members], Any] | None = None
    replayed: Callable[[Any, Members], Members] | None = None


def _nothing_while_rolling(source: Config, config: Config, today: tuple[float, float]) -> str:
    return ""


@dataclass(frozen=True)
class ChangeKind:
    """One config-change kind. ``settings``: the ``Config`` settings it moves, its own first, then
    those it brings along (a new assignor brings its session timeout). ``effort``: what it takes to
    roll out, in rolling restarts' worth of work and risk. ``title``: a recommendation's, given the
    configuration it moves to; ``step``: a plan step's words from one configuration to the next;
    ``lines``: the consumer settings that make it; ``rolling_back``: what says roll back while it
    rolls out, from the group's figures per handoff today ("" where the figures after it say it)."""

    name: str  # its recommendation kind (``pipelines.vocabulary``)
    settings: tuple[str, ...]
    effort: int
    title: Callable[[Config], str]
    step: Callable[[Config, Config], str]
    lines: Callable[[Config, Config], list[str]]
    effect: Effect
    rolling_back: Callable[[Config, Config, tuple[float, float]], str] = _nothing_while_rolling

    @property
    def setting(self) -> str:
        return self.settings[0]

    def toward(self, config: Config, target: Config) -> Config:
        """``config`` with this kind's settings taken from ``target``."""
        return config.having(**{s: target.value(s) for s in self.settings})


def _round_up_s(ms: float) -> int:
    return int(math.ceil(ms / 1000.0) * 1000)


def _protocol(config: Config) -> str:
    return config.setup.assignor.split(":")[0]


def static_session_timeout_ms(current: Config, members: Members) -> int:
    """A session timeout a static member's restart fits in: the current one if it does."""
    need = _round_up_s(longest_restart_ms(members) * HEADROOM)
    return max(current.setup.session_timeout_ms, need, MIN_SESSION_TIMEOUT_MS)


def crash_session_timeout_ms(current: Config, members: Members) -> int | None:
    """A shorter session timeout when members crashed: three heartbeat intervals (the least
    that survives two lost heartbeats), never under the broker's minimum; None when the
    group had no crash or is at that already."""
    if not any(m["crashed"] for m in members) or current.setup.assignor.startswith("consumer:"):
        return None  # KIP-848's broker minimum (group.consumer.min.session.timeout.ms) is its 45 s default
    heartbeats = [m["heartbeat_interval_ms"] for m in members if m["heartbeat_interval_ms"]]
    shorter = max(MIN_SESSION_TIMEOUT_MS, 3 * max(heartbeats, default=3_000))
    return shorter if shorter < current.setup.session_timeout_ms else None


def _session_timeouts(g: Basis, at: Config) -> list[int]:
    """The brokers' group.consumer.session.timeout.ms under KIP-848; else crashes found as soon as
    now, a static member's restart within it, and a shorter one where members crashed."""
    if at.setup.assignor.startswith("consumer:"):
        return [g.broker.session_timeout_ms]
    base = max(g.current.setup.session_timeout_ms, MIN_SESSION_TIMEOUT_MS)
    timeouts = {max(base, static_session_timeout_ms(g.current, g.members)) if at.setup.static else base}
    shorter = crash_session_timeout_ms(g.current, g.members)
    if shorter is not None and not at.setup.static:
        timeouts.add(shorter)
    return sorted(timeouts)


def _poll_intervals(g: Basis, at: Config) -> list[int]:
    """Now's, and room for the longest stall where one outlasted it."""
    now, stall = g.current.setup.max_poll_interval_ms, longest_stall_ms(g.members)
    return sorted({now, max(now, _round_up_s(stall * HEADROOM))} if stall >= now else {now})


def _assignor_title(config: Config) -> str:
    return f"Switch to {config.setup.assignor.replace('consumer:', 'KIP-848 ').replace('classic:', '')}"


def _assignor_step(source: Config, config: Config) -> str:
    protocol, name = config.setup.assignor.split(":")
    if _protocol(source) != protocol:
        return f"migrate to KIP-848 {name}" if protocol == "consumer" else f"move back to the classic protocol ({name})"
    return f"switch to {'KIP-848 ' if protocol == 'consumer' else ''}{name}"


def _assignor_lines(a: Config, b: Config) -> list[str]:
    if a.setup.assignor == b.setup.assignor:
        return []
    protocol, name = b.setup.assignor.split(":")
    if protocol == "consumer":
        removed = (["# remove partition.assignment.strategy, session.timeout.ms and heartbeat.interval.ms: the "
                    "broker owns them under KIP-848"] if _protocol(a) == "classic" else [])
        return ["group.protocol=consumer", f"group.remote.assignor={name}", *removed]
    back = (["group.protocol=classic", f"session.timeout.ms={b.setup.session_timeout_ms}"]
            if _protocol(a) == "consumer" else [])
    return [*back, f"partition.assignment.strategy={name}"]


def _mixed_phase_rollback(source: Config, config: Config, today: tuple[float, float]) -> str:
    """A protocol migration's: the mixed phase's pause per handoff against the group's today, since
    each epoch bump in it makes an eager classic member give everything back as a classic rebalance
    does now (docs/measured.md)."""
    if _protocol(source) == _protocol(config):
        return ""
    return (f"During the mixed phase, roll back (restart the migrated members with group.protocol=classic) if its "
            f"pause_per_handoff_s (lens_marts.group_protocol_phases) exceeds {ROLLBACK_MARGIN * today[1]:.2f} s, "
            f"{100 * (ROLLBACK_MARGIN - 1):.0f}% over today's {today[1]:.2f} s, or a migrated member stops with a "
            f"fatal GROUP_ID_NOT_FOUND (the broker refused the online upgrade).")


def _static_lines(a: Config, b: Config) -> list[str]:
    if b.setup.static and not a.setup.static:
        return ["group.instance.id=<a name unique in the group and stable across restarts, e.g. the pod name>"]
    if a.setup.static and not b.setup.static:  # a plan's target can be dynamic: KIP-848 moves a leaver's partitions
        return ["# remove group.instance.id: each member joins as a new dynamic member"]
    return []


def _session_lines(a: Config, b: Config) -> list[str]:
    if b.setup.session_timeout_ms == a.setup.session_timeout_ms or _protocol(a) != _protocol(b):
        return []  # across protocols, the assignor's lines say it
    if _protocol(b) == "classic":
        return [f"session.timeout.ms={b.setup.session_timeout_ms}"]
    return [f"group.consumer.session.timeout.ms={b.setup.session_timeout_ms} "
            "# a group config on the broker (kafka-configs --entity-type groups)"]


def _said(text: str) -> Callable[..., str]:
    """A title or step that reads the same whatever the configurations."""
    return lambda *_: text


# Efforts: a setting the agent or client reads (one rolling restart, nothing changes on the wire)
# is 1; a unique group.instance.id per member is 2; a new assignor is 3 (a classic change of
# strategy stops the whole group; a protocol change runs a mixed phase and needs the readiness
# checks first).
KINDS: tuple[ChangeKind, ...] = (
    ChangeKind("assignor", ("assignor", "session_timeout_ms"), 3, _assignor_title, _assignor_step, _assignor_lines,
               Effect(lambda g, at: ASSIGNORS), _mixed_phase_rollback),
    ChangeKind("static_membership", ("static", "session_timeout_ms"), 2,
               _said("Use static membership (group.instance.id)"),
               lambda a, b: ("static membership (group.instance.id)" if b.setup.static else
                             "dynamic membership (remove group.instance.id)"),
               _static_lines, Effect(lambda g, at: (False, True))),
    ChangeKind("session_timeout", ("session_timeout_ms",), 1,
               _said("Find crashed members sooner: lower session.timeout.ms"), _said("the session timeout"),
               _session_lines, Effect(_session_timeouts)),
    ChangeKind("commit_on_revoke", ("commit_on_revoke",), 1, _said("Commit processed offsets on revoke"),
               lambda a, b: "commit processed offsets on revoke" if b.commit_on_revoke else "stop committing on revoke",
               lambda a, b: ([f"lens.commit.on.revoke={str(b.commit_on_revoke).lower()}"]
                             if a.commit_on_revoke != b.commit_on_revoke else []),
               Effect(lambda g, at: sorted({g.current.commit_on_revoke, True}))),
    ChangeKind("max_poll_interval", ("max_poll_interval_ms",), 1,
               _said("Give slow batches room: raise max.poll.interval.ms"), _said("raise max.poll.interval.ms"),
               lambda a, b: ([f"max.poll.interval.ms={b.setup.max_poll_interval_ms}"]
                             if a.setup.max_poll_interval_ms != b.setup.max_poll_interval_ms else []),
               Effect(_poll_intervals)),
)


@dataclass(frozen=True)
class AgentKind:
    """A change of what the lens sees, not of how the group rebalances: running the agent on its members.
    No simulator effect: a group's rebalances cost the same with the agent, whose figures are exact where
    the broker's log gave bounds, so the what-if's grid has no setting for it and no rule of
    ``recommendations`` prices it (``instrument`` judges it on how wide the group's bounds are).
    ``settings``: the lines that run the agent, given the telemetry topic; ``effort`` on the config
    changes' scale; ``rolling_back``: what undoes it."""

    name: str  # its recommendation kind (``pipelines.vocabulary``)
    title: str
    settings: Callable[[str], tuple[str, ...]]
    effort: int
    rolling_back: str


def _agent_lines(topic: str) -> tuple[str, ...]:
    return ("# Python (confluent-kafka): from consumer_agent import InstrumentedConsumer as Consumer",
            f"lens.telemetry.topic={topic}",
            "# Java (kafka-clients 4.2): add -javaagent:rebalance-lens-javaagent.jar "
            f"-Dlens.telemetry.topic={topic} to the command line")


# Effort 2, as static membership's: a new dependency on every member (the package, or the jar on its command
# line) and a rolling restart.
INSTRUMENT = AgentKind("instrument", "Instrument this group: run the agent on its members", _agent_lines, 2,
                       "Roll back by removing the agent (the import, or the -javaagent flag) and restarting the "
                       "members: they run as before, and the broker's bounds price the group again.")


def named(name: str) -> ChangeKind:
    """The kind ``name``; KeyError for any other."""
    return {k.name: k for k in KINDS}[name]


def in_order() -> list[ChangeKind]:
    """The kinds in the vocabulary's order (the rules' and the plan's); every one declared there."""
    declared = vocabulary.RECOMMENDATION_KIND_NAMES
    undeclared = [k.name for k in KINDS if k.name not in declared]
    if undeclared:
        raise ValueError(f"config-change kind {undeclared[0]!r} is not a recommendation kind: "
                         "declare it in pipelines/vocabulary.py")
    return sorted(KINDS, key=lambda k: declared.index(k.name))


def moving(a: Config, b: Config) -> list[ChangeKind]:
    """The kinds that move ``a`` to ``b``, in the vocabulary's order: each whose own setting differs,
    but for a setting another of them brings along (static membership brings its session timeout,
    and KIP-848's is the brokers')."""
    differ = [k for k in in_order() if a.value(k.setting) != b.value(k.setting)]
    brought = {s for k in differ for s in k.settings[1:]}
    return [k for k in differ if k.setting not in brought]


def changes(current: Config, to: Config) -> list[str]:
    """The consumer settings (``key=value``) that move a group from ``current`` to ``to``, kind by kind."""
    return [line for kind in KINDS for line in kind.lines(current, to)]
