"""A scenario is data: a YAML file naming the fleet, its topics, its load and a churn timeline.

Loading validates every key and raises a LensError that names the key and the fix,
so a user's own fleet file fails with a sentence, not a KeyError. The runner only
ever sees a validated ``Scenario``.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from consumer_agent.contract import GROUP_PROTOCOLS
from lens_runtime.errors import LensError

BUILTIN_DIR = Path(__file__).resolve().parent / "builtin"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,48}$")

# action -> (required keys, optional keys with defaults)
ACTION_KEYS: dict[str, tuple[frozenset[str], dict[str, Any]]] = {
    "rolling_restart": (frozenset(), {"members": None, "down_s": 0.5, "interval_s": 6.0}),
    "scale_out": (frozenset({"members"}), {}),
    "scale_in": (frozenset({"members"}), {}),
    "crash": (frozenset({"members"}), {"restart_after_s": None}),
    "slow_processing": (frozenset({"members"}), {"stall_s": None}),
    "subscription_change": (frozenset({"topics"}), {"members": None}),
    "enforce_rebalance": (frozenset({"members"}), {"reason": "scenario timeline"}),
    # a rolling restart whose members come back on another group.protocol (KIP-848 online migration, or its rollback)
    "protocol_migration": (frozenset({"to"}), {"members": None, "down_s": 0.5, "interval_s": 6.0,
                                              "remote_assignor": None}),
}
# The actions that stop members and start them again, one at a time (lens_scenarios.timeline plays both alike).
RESTARTS = ("rolling_restart", "protocol_migration")
# KIP-848's group.remote.assignor on the 4.2.0 broker (pipelines.vocabulary declares them; a test checks)
REMOTE_ASSIGNORS = ("uniform", "range")
# What a member process runs on: confluent-kafka-python (lens_scenarios.member), the Java client with
# jvm_agent's InstrumentedConsumer (lens_scenarios/JavaMember.java), or an application of its own on the JVM
# (``MemberApp``: a Spring Boot jar, a Kafka Streams application...) with the javaagent; the first is the default.
RUNTIMES = ("python", "java", "app")


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    rate_per_partition: float | None = None  # None: the scenario's; a quiet topic gets a record now and then


@dataclass(frozen=True)
class MemberApp:
    """A member that is an application of its own (runtime ``app``), on the JVM with the rebalance-lens javaagent.

    ``command`` starts it (``java ...``); the fleet appends the member's spec (JSON, what
    ``lens_scenarios.member`` takes) as its last argument and, on a member with the agent, adds
    ``-javaagent:`` and the agent's ``-Dlens.*`` options after the ``java`` executable, and nothing else.
    The application speaks the fleet's protocol and keeps the members' truth log
    (lens_scenarios/java/io/rebalancelens/scenarios/TruthWriter.java), so the runner and the ground
    truth cannot tell it from the other members; ``settings`` reach it under the spec's ``app``."""

    command: tuple[str, ...]
    settings: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class MemberSpec:
    name: str
    group_instance_id: str | None = None
    topics: tuple[str, ...] | None = None  # None: the scenario's initial subscription
    agent: bool = True  # False: the plain confluent_kafka client, no telemetry (a fleet mid-adoption)
    group_protocol: str | None = None  # None: the run's; set by a protocol_migration that restarted it
    remote_assignor: str | None = None  # KIP-848's group.remote.assignor (None: the broker's default, uniform)
    runtime: str = RUNTIMES[0]  # python | java | app (the client and agent the member process runs)
    app: MemberApp | None = None  # runtime app: the application


@dataclass(frozen=True)
class Action:
    at_s: float
    kind: str
    members: tuple[MemberSpec, ...] | None  # None: every running member (rolling_restart, subscription_change)
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    topics: tuple[TopicSpec, ...]
    subscribe: tuple[str, ...]
    members: tuple[MemberSpec, ...]
    rate_per_partition: float
    processing_ms: float
    commit_batch_records: int
    max_poll_interval_ms: int
    duration_s: float
    timeline: tuple[Action, ...]
    source: str

    @property
    def partitions(self) -> int:
        """Partitions of the topics the fleet subscribes to at the start."""
        return sum(t.partitions for t in self.topics if t.name in self.subscribe)

    @property
    def fully_instrumented(self) -> bool:
        """Every member it ever starts runs the agent (gold sees the whole fleet)."""
        started = [*self.members, *(m for a in self.timeline if a.kind == "scale_out" for m in a.members or ())]
        return all(m.agent for m in started)

    @property
    def migrations(self) -> frozenset[str]:
        """The group.protocols its protocol_migrations move members to (the runner checks the run allows them)."""
        return frozenset(a.params["to"] for a in self.timeline if a.kind == "protocol_migration")


def builtin_names(*, fully_instrumented: bool = False, migrations: bool | None = None) -> list[str]:
    """The built-in scenarios; ``fully_instrumented``: only those whose every member runs the agent
    (what a gold-against-truth check can hold to exact figures until gold prices unseen owners);
    ``migrations``: only those that move members between protocols (True), or none of them (False:
    each of those runs under a classic assignor of its own, not one a test cycles through)."""
    names = sorted(p.stem for p in BUILTIN_DIR.glob("*.yaml"))
    return [n for n in names if (not fully_instrumented or load(n).fully_instrumented)
            and (migrations is None or migrations == bool(load(n).migrations))]


def resolve(name_or_file: str) -> Path:
    """A built-in name or a path to a YAML file; a LensError listing the built-ins otherwise."""
    path = Path(name_or_file)
    if path.suffix in (".yaml", ".yml") or path.exists():
        if not path.is_file():
            raise LensError(f"Scenario file {path} does not exist. Pass an existing YAML file or a built-in name "
                            f"({', '.join(builtin_names())}).")
        return path
    builtin = BUILTIN_DIR / f"{name_or_file}.yaml"
    if not builtin.is_file():
        raise LensError(f"No built-in scenario is named {name_or_file!r}. Built-ins: {', '.join(builtin_names())}; "
                        "or pass the path of your own scenario file (see `rebalance-lens scenario list`).")
    return builtin


def load(name_or_file: str) -> Scenario:
    path = resolve(name_or_file)
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise LensError(f"{path} is not valid YAML: {err}. Fix the syntax (indentation, colons).") from err
    return parse(data, source=str(path))


def _fail(source: str, key: str, problem: str, fix: str) -> LensError:
    return LensError(f"{source}: `{key}` {problem}. {fix}")


def _number(data: dict, key: str, source: str, default: float | None, minimum: float, maximum: float,
            integer: bool = False) -> float:
    value = data.get(key, default)
    kind = "an integer" if integer else "a number"
    if value is None:
        raise _fail(source, key, "is missing", f"Add `{key}:` with {kind} between {minimum} and {maximum}.")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
        raise _fail(source, key, f"is {value!r}", f"Set it to {kind} between {minimum} and {maximum}.")
    if not minimum <= value <= maximum:
        raise _fail(source, key, f"is {value}, outside [{minimum}, {maximum}]",
                    f"Set it to {kind} between {minimum} and {maximum}.")
    return value


def _name(value: Any, key: str, source: str) -> str:
    if not isinstance(value, str) or not NAME_RE.match(value):
        raise _fail(source, key, f"is {value!r}",
                    "Use a name of letters, digits, '.', '_' or '-' (at most 49 characters).")
    return value


def _check_keys(data: Any, key: str, source: str, allowed: set[str]) -> dict:
    if not isinstance(data, dict):
        raise _fail(source, key, f"is {type(data).__name__}", "It must be a mapping of `key: value` lines.")
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise _fail(source, f"{key}.{unknown[0]}" if key else unknown[0], "is not a known key",
                    f"Remove it or use one of: {', '.join(sorted(allowed))}.")
    return data


def _topics(data: dict, source: str) -> tuple[TopicSpec, ...]:
    raw = data.get("topics")
    if not isinstance(raw, list) or not raw:
        raise _fail(source, "topics", "is missing or empty",
                    "List the topics, e.g. `topics: [{name: orders, partitions: 6}]`.")
    topics = []
    for i, item in enumerate(raw):
        key = f"topics[{i}]"
        _check_keys(item, key, source, {"name", "partitions", "rate_per_partition"})
        rate = _number(item, "rate_per_partition", source, None, 0.01, 2000) if "rate_per_partition" in item else None
        topics.append(TopicSpec(_name(item.get("name"), f"{key}.name", source),
                                int(_number(item, "partitions", source, None, 1, 64, integer=True)), rate))
    names = [t.name for t in topics]
    if len(set(names)) != len(names):
        raise _fail(source, "topics", "names a topic twice", "Give every topic a distinct name.")
    return tuple(topics)


def _topic_list(value: Any, key: str, source: str, known: set[str]) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise _fail(source, key, f"is {value!r}", "List one or more topic names from `topics`.")
    for name in value:
        if name not in known:
            raise _fail(source, key, f"names {name!r}, which is not under `topics`",
                        f"Use one of: {', '.join(sorted(known))}, or declare it under `topics`.")
    return tuple(value)


def _agent(item: dict, key: str, source: str) -> bool | None:
    value = item.get("agent")
    if value is not None and not isinstance(value, bool):
        raise _fail(source, f"{key}.agent", f"is {value!r}",
                    "Set it to true (the rebalance-lens agent) or false (the plain confluent_kafka client).")
    return value


def _runtime(item: dict, key: str, source: str) -> str:
    value = item.get("runtime", RUNTIMES[0])
    if value not in RUNTIMES:
        raise _fail(source, f"{key}.runtime", f"is {value!r}",
                    "Set it to python (confluent-kafka-python, the default), java (the Java client with "
                    "the JVM agent) or app (an application of its own, with `app: {command: [java, ...]}`).")
    return value


def _app(item: dict, key: str, source: str, runtime: str) -> MemberApp | None:
    """A runtime-app member's application: its command (a list of words, starting with java) and settings."""
    value = item.get("app")
    if runtime != "app":
        if value is not None:
            raise _fail(source, f"{key}.app", "is set on a member that is not `runtime: app`",
                        "Add `runtime: app`, or remove `app`.")
        return None
    if value is None:
        raise _fail(source, f"{key}.app", "is missing for `runtime: app`",
                    "Add `app: {command: [java, -jar, /path/to/app.jar]}`: the application the member runs.")
    _check_keys(value, f"{key}.app", source, {"command", "settings"})
    command = value.get("command")
    if not isinstance(command, list) or not command or not all(isinstance(w, str) for w in command) \
            or Path(command[0]).name != "java":
        raise _fail(source, f"{key}.app.command", f"is {command!r}",
                    "List the words that start the application, the java executable first, e.g. "
                    "`command: [java, -jar, /path/to/app.jar]`.")
    settings = value.get("settings") or {}
    if not isinstance(settings, dict):
        raise _fail(source, f"{key}.app.settings", f"is {settings!r}",
                    "Make it a mapping of the application's own settings (`settings: {listener: batch}`).")
    return MemberApp(tuple(command), tuple(sorted((str(k), str(v)) for k, v in settings.items())))


def _member(item: Any, key: str, source: str, known: set[str]) -> MemberSpec:
    """A member as declared; ``agent`` and ``runtime`` left out mean instrumented and python
    (``_check_members`` then lets a restart inherit what the running member runs)."""
    if isinstance(item, str):
        item = {"name": item}
    _check_keys(item, key, source, {"name", "group_instance_id", "topics", "agent", "runtime", "app"})
    gid = item.get("group_instance_id")
    if gid is not None:
        gid = _name(gid, f"{key}.group_instance_id", source)
    topics = item.get("topics")
    agent = _agent(item, key, source)
    runtime = _runtime(item, key, source)
    return MemberSpec(_name(item.get("name"), f"{key}.name", source), gid,
                      None if topics is None else _topic_list(topics, f"{key}.topics", source, known),
                      True if agent is None else agent, runtime=runtime, app=_app(item, key, source, runtime))


def _action(item: Any, index: int, source: str, topics: set[str]) -> Action:
    key = f"timeline[{index}]"
    if not isinstance(item, dict):
        raise _fail(source, key, f"is {item!r}", "Each timeline entry is a mapping with `at` and `action`.")
    kind = item.get("action")
    if kind not in ACTION_KEYS:
        raise _fail(source, f"{key}.action", f"is {kind!r}", f"Use one of: {', '.join(ACTION_KEYS)}.")
    required, optional = ACTION_KEYS[kind]
    _check_keys(item, key, source, {"at", "action", *required, *optional})
    for name in sorted(required):
        if name not in item:
            raise _fail(source, f"{key}.{name}", f"is missing for action {kind}", f"Add `{name}:` to the entry.")
    at = _number(item, "at", source, None, 0, 3600)
    members = item.get("members")
    parsed: tuple[MemberSpec, ...] | None = None
    if members is not None:
        if not isinstance(members, list) or not members:
            raise _fail(source, f"{key}.members", f"is {members!r}", "List member names, e.g. `members: [m1]`.")
        parsed = tuple(_member(m, f"{key}.members[{i}]", source, topics) for i, m in enumerate(members))
        if kind != "scale_out":
            for i, m in enumerate(members):
                for inherited in ("agent", "runtime", "app"):
                    if isinstance(m, dict) and inherited in m:
                        raise _fail(source, f"{key}.members[{i}].{inherited}", f"is set on a {kind} action",
                                    f"Remove it: a restart keeps what the member runs; declare `{inherited}` "
                                    "under `members` or on the scale_out that adds the member.")
    params = {name: item.get(name, default) for name, default in optional.items() if name != "members"}
    if kind == "subscription_change":
        params["topics"] = _topic_list(item["topics"], f"{key}.topics", source, topics)
    if kind == "protocol_migration":
        params.update(_migration(item, key, source))
    for name in ("down_s", "interval_s", "restart_after_s", "stall_s"):
        if params.get(name) is not None:
            params[name] = _number(params, name, f"{source}: {key}", None, 0, 600)
    return Action(at_s=float(at), kind=kind, members=parsed, params=params)


def _migration(item: dict, key: str, source: str) -> dict[str, Any]:
    """A protocol_migration's ``to`` and ``remote_assignor`` (the broker-side assignor only a KIP-848 member names)."""
    to, remote = item["to"], item.get("remote_assignor")
    if to not in GROUP_PROTOCOLS:
        raise _fail(source, f"{key}.to", f"is {to!r}",
                    "Set it to consumer (migrate to KIP-848) or classic (roll back).")
    if remote is not None and to != "consumer":
        raise _fail(source, f"{key}.remote_assignor", "is set on a migration to classic",
                    "Remove it: a classic member runs the scenario's client-side assignor.")
    if remote is not None and remote not in REMOTE_ASSIGNORS:
        raise _fail(source, f"{key}.remote_assignor", f"is {remote!r}",
                    f"Use one of: {', '.join(REMOTE_ASSIGNORS)}, or leave it out (the broker's default, uniform).")
    return {"to": to, "remote_assignor": remote}


def restarted_as(action: Action, member: MemberSpec) -> MemberSpec:
    """The member a restart action starts again: itself, or on the protocol a migration moves it to."""
    if action.kind != "protocol_migration":
        return member
    return replace(member, group_protocol=action.params["to"], remote_assignor=action.params["remote_assignor"])


SCENARIO_KEYS = {"name", "description", "topics", "subscribe", "members", "rate_per_partition", "processing_ms",
                 "commit_batch_records", "max_poll_interval_ms", "duration_s", "timeline"}


def parse(data: Any, source: str) -> Scenario:
    """Validate a scenario mapping (as read from YAML) into a Scenario."""
    data = _check_keys(data, "", source, SCENARIO_KEYS)
    name = _name(data.get("name"), "name", source)
    topics = _topics(data, source)
    known = {t.name for t in topics}
    subscribe = _topic_list(data.get("subscribe", [topics[0].name]), "subscribe", source, known)
    raw_members = data.get("members")
    if not isinstance(raw_members, list) or not raw_members:
        raise _fail(source, "members", "is missing or empty", "List the fleet, e.g. `members: [m1, m2, m3]`.")
    members = tuple(_member(m, f"members[{i}]", source, known) for i, m in enumerate(raw_members))
    timeline_raw = data.get("timeline", [])
    if not isinstance(timeline_raw, list):
        raise _fail(source, "timeline", f"is {timeline_raw!r}", "List the actions, e.g. `- {at: 5, action: crash, "
                    "members: [m1]}`.")
    timeline = tuple(sorted((_action(a, i, source, known) for i, a in enumerate(timeline_raw)),
                            key=lambda a: a.at_s))
    max_poll = int(_number(data, "max_poll_interval_ms", source, 10_000, 7_000, 600_000, integer=True))
    duration = _number(data, "duration_s", source, None, 5, 600)
    scenario = Scenario(
        name=name, description=str(data.get("description", "")).strip(), topics=topics, subscribe=subscribe,
        members=members,
        rate_per_partition=_number(data, "rate_per_partition", source, 50, 1, 2000),
        processing_ms=_number(data, "processing_ms", source, 1.0, 0, 1000),
        commit_batch_records=int(_number(data, "commit_batch_records", source, 200, 1, 1_000_000, integer=True)),
        max_poll_interval_ms=max_poll, duration_s=duration, timeline=timeline, source=source)
    scenario = replace(scenario, timeline=_check_members(scenario))
    late = [a for a in timeline if a.at_s >= duration]
    if late:
        raise _fail(source, "duration_s", f"is {duration} but an action is at {late[0].at_s} s",
                    "Raise `duration_s` above the last action's `at` (leave time to recover).")
    return scenario


def _check_members(scenario: Scenario) -> tuple[Action, ...]:
    """Member names must be unique in the fleet, and actions may only touch members that exist then.

    Returns the timeline with every member an action names (other than a scale_out's new ones)
    running what that member runs then (``_as_running``: its client, its instance id, the protocol
    a protocol_migration moved it to), so a restart of a plain member restarts a plain member and
    a migrated one stays migrated."""
    source = scenario.source
    runs = {m.name: m for m in scenario.members}
    alive = set(runs)
    if len(alive) != len(scenario.members):
        raise _fail(source, "members", "names a member twice", "Give every member a distinct name.")
    ever = set(alive)
    timeline = []
    for i, action in enumerate(scenario.timeline):
        names = [m.name for m in action.members or ()]
        if action.kind == "scale_out":
            clash = [n for n in names if n in ever]
            if clash:
                raise _fail(source, f"timeline[{i}].members", f"adds {clash[0]!r}, which already existed",
                            "Give scaled-out members new names.")
            alive.update(names)
            ever.update(names)
            runs.update((m.name, m) for m in action.members or ())
            timeline.append(action)
            continue
        missing = [n for n in names if n not in alive]
        if missing:
            raise _fail(source, f"timeline[{i}].members", f"names {missing[0]!r}, not running at {action.at_s} s",
                        f"Use one of: {', '.join(sorted(alive))}.")
        if action.kind == "scale_in" or (action.kind == "crash" and action.params.get("restart_after_s") is None):
            alive.difference_update(names)
        if action.members is not None:
            action = replace(action, members=tuple(_as_running(m, runs[m.name]) for m in action.members))
        for name in names or sorted(alive):
            runs[name] = restarted_as(action, runs[name])
        timeline.append(action)
    return tuple(timeline)


def with_timeline(scenario: Scenario, timeline: tuple[Action, ...], duration_s: float) -> Scenario:
    """The scenario with another timeline and duration, its members checked and carried as a loaded
    scenario's are (``_check_members``)."""
    changed = replace(scenario, timeline=tuple(sorted(timeline, key=lambda a: a.at_s)), duration_s=duration_s)
    return replace(changed, timeline=_check_members(changed))


def _with_members(scenario: Scenario, change: Callable[[MemberSpec], MemberSpec]) -> Scenario:
    """The scenario with ``change`` made to every member it ever starts (those it starts with and those
    it scales out); restarts and crashes start them again so, as they keep any member's client."""
    timeline = tuple(replace(a, members=tuple(change(m) for m in a.members or ())) if a.kind == "scale_out" else a
                     for a in scenario.timeline)
    changed = replace(scenario, members=tuple(change(m) for m in scenario.members), timeline=timeline)
    return replace(changed, timeline=_check_members(changed))


def on_runtime(scenario: Scenario, runtime: str, names: frozenset[str] | None = None,
               app: MemberApp | None = None) -> Scenario:
    """The scenario with the members ``names`` (None: every member it ever starts) on ``runtime`` (``app``: that
    application, for runtime app)."""
    return _with_members(scenario, lambda m: replace(m, runtime=runtime, app=app)
                         if names is None or m.name in names else m)


def without_agent(scenario: Scenario) -> Scenario:
    """The scenario with every member it ever starts on the plain client: no telemetry at all, a group
    seen only from the broker's log."""
    return _with_members(scenario, lambda m: replace(m, agent=False))


def _as_running(named: MemberSpec, running: MemberSpec) -> MemberSpec:
    """A member an action names, as it runs then: its instance id and topics if the entry gives them,
    else those it runs with, and always its client and protocol (a static member restarted by name
    stays static)."""
    return replace(running, group_instance_id=named.group_instance_id or running.group_instance_id,
                   topics=running.topics if named.topics is None else named.topics)


def with_topic_prefix(scenario: Scenario, prefix: str) -> Scenario:
    """The same scenario on run-private Kafka topics (``<prefix><name>``), so runs never share a topic."""
    def names(topics: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if topics is None else tuple(prefix + t for t in topics)

    def member(m: MemberSpec) -> MemberSpec:
        return replace(m, topics=names(m.topics))

    def action(a: Action) -> Action:
        params = dict(a.params)
        if "topics" in params:
            params["topics"] = names(params["topics"])
        return replace(a, members=None if a.members is None else tuple(member(m) for m in a.members),
                       params=params)

    return replace(scenario, topics=tuple(replace(t, name=prefix + t.name) for t in scenario.topics),
                   subscribe=names(scenario.subscribe), members=tuple(member(m) for m in scenario.members),
                   timeline=tuple(action(a) for a in scenario.timeline))
