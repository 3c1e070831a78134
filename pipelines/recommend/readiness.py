"""The KIP-848 readiness lint: what in a group's configuration and code breaks, or changes meaning,
when its members move to ``group.protocol=consumer``, read from what the agent sees.

Each check is a small pure function over the group's gold member rows (``gold/members``: the
names of the settings a member set, its client and version, regex subscription, the assignment
calls its rebalance callbacks made, its client errors, its enforce calls, instance id and
assignor) returning findings; a finding names the member, the evidence (the value observed) and
the fix. The rules and their words follow the member's client (``Client``: librdkafka or the Java
client), each quoting what that client does: its own refusal text, its versions, how it matches a
regex, what its enforced rebalance does. The codes and their severities are declared once
(``pipelines.vocabulary.FINDING_KINDS``). A ``blocking`` finding is fixed before the first member
moves: the client refuses to start, the broker refuses the upgrade, or the group breaks.

What telemetry cannot show: the broker's ``group.consumer.migration.policy`` and its list of
assignors (not in any event, nor readable by the Python Admin client). A consumer-protocol member
the cluster refused is the one trace of them (``cluster_refused``). The facts quoted here are
librdkafka 2.16's, kafka-clients 4.2.0's (read from its classes and run against them) and Kafka
4.2's (docs/measured.md, "The KIP-848 migration"). Not yet linted: a Java member's version, until
gold/members carries the agents' ``client_version`` (the Java agent's ``kafka-clients <version>``)
and the readiness query reads it; ``old_client`` reads it where a row has it.
"""
from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pipelines.vocabulary import FINDING_CODES, FINDING_SEVERITIES, classic_strategy, finding_kind

Row = dict[str, Any]


@dataclass(frozen=True)
class Client:
    """What one client library does when a member moves to ``group.protocol=consumer``: the facts its
    findings quote, in that client's own words (librdkafka 2.16's, kafka-clients 4.2.0's)."""

    name: str  # in words
    library: str  # what its version numbers are of
    refuses: str  # how it refuses a key it does not take under the consumer protocol
    refused_keys: dict[str, str]  # key -> its error text when the key is set at all (the default value included)
    package: str  # what to upgrade
    ga: tuple[int, ...]  # the consumer protocol generally available from
    fixed: tuple[int, ...] | None  # its known KIP-848 bugs fixed from (None: none known)
    before_ga: str  # what the consumer protocol is before ``ga``
    enforce: str  # what enforcing a rebalance does under the consumer protocol


# librdkafka refuses these at construction when group.protocol=consumer: confluent-kafka's Consumer() raises
# KafkaException with these exact words.
LIBRDKAFKA = Client(
    name="librdkafka", library="librdkafka", refuses="librdkafka refuses to create the consumer",
    refused_keys={
        "session.timeout.ms": "`session.timeout.ms` is not supported for `group.protocol=consumer` or share consumer. "
                              "It is defined broker side",
        "partition.assignment.strategy": "`partition.assignment.strategy` is not supported for "
                                         "`group.protocol=consumer`. Use `group.remote.assignor` instead",
        "group.protocol.type": "`group.protocol.type` is not supported for `group.protocol=consumer` or share consumer",
        "heartbeat.interval.ms": "`heartbeat.interval.ms` is not supported for `group.protocol=consumer` or share "
                                 "consumer. It is defined broker side"},
    package="confluent-kafka (and librdkafka)", ga=(2, 12), fixed=(2, 15), before_ga="not generally available",
    enforce="KIP-848 has no enforced rebalance (librdkafka: not supported), and the agent's subscription toggle gives "
            "every member a new epoch, which in a mixed group makes each eager classic member revoke all its "
            "partitions")
# The Java client's ConsumerConfig refuses these (CONSUMER_PROTOCOL_UNSUPPORTED_CONFIGS, checked when the key is
# set at all): new KafkaConsumer(...) throws ConfigException "<key> cannot be set when group.protocol=CONSUMER".
# It has no group.protocol.type.
JAVA = Client(
    name="the Java client", library="kafka-clients", refuses="new KafkaConsumer(...) throws ConfigException",
    refused_keys={k: f"{k} cannot be set when group.protocol=CONSUMER"
                  for k in ("session.timeout.ms", "partition.assignment.strategy", "heartbeat.interval.ms")},
    package="kafka-clients", ga=(4, 0), fixed=None, before_ga="early access (3.7) or a preview (3.8, 3.9)",
    enforce="under group.protocol=consumer the Java client's enforceRebalance() only logs \"Operation not supported "
            "in new consumer group protocol\" and returns: the rebalances the calls asked for stop happening")
# What the Java agent reports as a member's librdkafka_version (docs/jvm-agent.md): how gold/members tells the two
# clients apart.
JAVA_LIBRDKAFKA_VERSION = "none (Java client)"
REFUSED_KEY_FIX: dict[str, str] = {
    "session.timeout.ms": "the broker's group.consumer.session.timeout.ms sets it",
    "partition.assignment.strategy": "set group.remote.assignor (uniform or range) instead",
    "group.protocol.type": "the consumer protocol has no protocol type",
    "heartbeat.interval.ms": "the broker's group.consumer.heartbeat.interval.ms sets it",
}
# librdkafka's _STATE error for assign()/unassign() once the rebalance protocol is COOPERATIVE (always, under KIP-848).
ASSIGN_REFUSED = ("Changes to the current assignment must be made using incremental_assign() or "
                  "incremental_unassign() when rebalance protocol type is COOPERATIVE")
EAGER_CALLS = ("assign", "unassign")
# Client errors by which a cluster refuses a consumer-protocol member: no KIP-848 coordinator (a broker
# before 4.0, or the protocol disabled), the online upgrade refused (fatal GROUP_ID_NOT_FOUND), an
# assignor the broker does not run, or librdkafka's fatal error that carries them. Both agents name a
# broker error by the protocol's name (the Java agent: ``Errors.forException``).
REFUSAL_ERRORS = ("GROUP_ID_NOT_FOUND", "UNSUPPORTED_VERSION", "_UNSUPPORTED_FEATURE", "UNSUPPORTED_ASSIGNOR",
                  "_FATAL")
MEMBERS_SHOWN = 5  # members named in one evidence line; the rest are counted


@dataclass(frozen=True)
class Finding:
    """One thing to fix or know before the migration: ``member`` names who (client id and agent),
    ``evidence`` says what was observed in one sentence, ``fix`` what to do in one sentence."""

    code: str
    severity: str
    member: str
    evidence: str
    fix: str

    def __post_init__(self) -> None:
        if self.code not in FINDING_CODES or finding_kind(self.code).severity != self.severity:
            raise ValueError(f"undeclared finding {self.code!r} ({self.severity}): "
                             "declare it in pipelines/vocabulary.py")


def _finding(code: str, m: Row, evidence: str, fix: str) -> Finding:
    return Finding(code, finding_kind(code).severity, member_label(m), evidence, fix)


def member_label(m: Row) -> str:
    """How a finding names a member: its client.id and its agent (the process)."""
    return f"{m['client_id']} (agent {m['agent_id'][-8:]})"


def client_version(text: str | None) -> tuple[int, ...] | None:
    """``"2.16.1"`` or ``"kafka-clients 4.2.0"`` as (2, 16, 1), (4, 2, 0); None when unreadable."""
    numbers = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text or "")
    return tuple(int(n) for n in numbers.groups() if n is not None) if numbers else None


def client_of(m: Row) -> Client:
    """The member's client library, from what its agent reported."""
    return JAVA if m["librdkafka_version"] == JAVA_LIBRDKAFKA_VERSION else LIBRDKAFKA


def _classic(m: Row) -> bool:
    return m["group_protocol"] == "classic"


def refused_keys(m: Row) -> list[Finding]:
    """A classic member that sets a key its client refuses under the consumer protocol: as configured,
    it will not start with group.protocol=consumer."""
    client = client_of(m)
    keys = [k for k in client.refused_keys if k in (m["config_keys"] or ())] if _classic(m) else []
    return [_finding("refused_config_key", m, f"It sets {k}; with group.protocol=consumer {client.refuses}: "
                     f"\"{client.refused_keys[k]}\".",
                     f"Remove {k} from its configuration in the deploy that sets group.protocol=consumer "
                     f"({REFUSED_KEY_FIX[k]}).") for k in keys]


def _running(m: Row, client: Client) -> str | None:
    """The version a member's client reported (the Java client's, once gold carries ``client_version``)."""
    return m["librdkafka_version"] if client is LIBRDKAFKA else m.get("client_version")


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def old_client(m: Row) -> list[Finding]:
    """A client before the consumer protocol is generally available blocks; one before its known KIP-848
    bugs were fixed (librdkafka 2.15) warns."""
    client = client_of(m)
    version = client_version(_running(m, client))
    if version is None or version >= (client.fixed or client.ga):
        return []
    fix = f"Upgrade {client.package} to {_dotted(client.fixed or client.ga)} or later before the migration."
    if version < client.ga:
        return [_finding("client_too_old", m, f"It runs {client.library} {_dotted(version)}: the consumer protocol "
                         f"is generally available from {_dotted(client.ga)} only (before: {client.before_ga}).", fix)]
    return [_finding("client_known_bugs", m, f"It runs librdkafka {_dotted(version)}: before 2.15 the consumer "
                     "protocol has known bugs (INVALID_REQUEST on max.poll.interval.ms, heartbeat loops).", fix)]


def sticky_user_data(m: Row) -> list[Finding]:
    """A classic member on librdkafka's cooperative-sticky: its assignments carry user data, which a
    Kafka 4.x broker refuses to convert, so the first consumer-protocol member dies (measured). The Java
    client's assignors put none in an assignment: its cooperative-sticky groups convert."""
    if not (_classic(m) and client_of(m) is LIBRDKAFKA and "cooperative-sticky" in (m["assignor"] or "")):
        return []
    return [_finding("sticky_user_data", m, f"It runs partition.assignment.strategy={m['assignor']} on librdkafka: the "
                     "sticky assignor's user data rides in the group's assignments, and the broker refuses the "
                     "online upgrade: each consumer-protocol member dies of a fatal GROUP_ID_NOT_FOUND "
                     "(measured on Kafka 4.2, docs/measured.md).",
                     "Migrate offline (stop every member, start them all with group.protocol=consumer), or move the "
                     "group to range first (one full stop) and then migrate online.")]


def cluster_refused(m: Row) -> list[Finding]:
    """A consumer-protocol member that reported an error by which the cluster refuses it."""
    errors = [name for name in (m["client_errors"] or ()) if name in REFUSAL_ERRORS]
    if m["group_protocol"] != "consumer" or not errors:
        return []
    return [_finding("cluster_refused", m, f"It ran with group.protocol=consumer and reported {', '.join(errors)}: the "
                     "cluster refused it (no KIP-848 coordinator, a migration policy that forbids the upgrade, or a "
                     "group the broker cannot convert); the policy itself is not in telemetry.",
                     "Check the brokers (Kafka 4.0+, group.coordinator.rebalance.protocols includes consumer, "
                     "group.consumer.migration.policy bidirectional or upgrade) and the sticky_user_data finding, "
                     "then restart it on the classic protocol until they allow it.")]


def eager_assign_calls(m: Row) -> list[Finding]:
    """librdkafka rebalance callbacks that call assign()/unassign(): the consumer protocol is incremental
    only. (The Java client applies an assignment itself; a listener has no such call to make.)"""
    calls = [c for c in (m["callback_calls"] or ()) if c in EAGER_CALLS]
    if not calls or client_of(m) is not LIBRDKAFKA:
        return []
    return [_finding("eager_assign_calls", m, f"Its rebalance callbacks call {' and '.join(f'{c}()' for c in calls)}; "
                     f"under group.protocol=consumer librdkafka fails them with _STATE: \"{ASSIGN_REFUSED}\".",
                     "Remove the assign()/unassign() calls from the callbacks (confluent-kafka then makes the right "
                     "call itself, on either protocol), or call incremental_assign()/incremental_unassign() once "
                     "on a cooperative protocol; deploy that before the migration.")]


def regex_full_match(m: Row, topics: Iterable[str]) -> list[Finding]:
    """A classic librdkafka member's regex subscription: librdkafka matches it anywhere in a name, the
    broker (RE2/J) matches whole names only; the topics seen that would stop matching, by Python's ``re``
    (an approximation of both engines). The Java client matches a ``java.util.regex.Pattern`` itself,
    against whole names, under either protocol (``Pattern.matcher(topic).matches()``; only a
    ``SubscriptionPattern`` goes to the broker): its members' subscriptions do not change."""
    pattern = m["pattern"]
    if not (_classic(m) and pattern and client_of(m) is LIBRDKAFKA):
        return []
    try:
        compiled = re.compile(pattern)
        lost = sorted(t for t in set(topics) if compiled.search(t) and not compiled.fullmatch(t))
    except re.error:
        lost = None
    if lost is None:
        seen = "Python's re cannot read it, so which of the topics seen change is undecided"
    elif lost:
        seen = f"of the topics seen, {', '.join(lost)} would no longer match"
    else:
        seen = "every topic seen matches it whole, so none of them changes"
    whole = f" (e.g. {pattern}.*)" if pattern.startswith("^") and not re.search(r"[|()$]|\.\*$", pattern) else ""
    return [_finding("regex_full_match", m, f"It subscribes to the pattern {pattern}; under "
                     "group.protocol=consumer the broker matches it against whole topic names (RE2), librdkafka "
                     f"matched it anywhere: {seen}.",
                     f"Write the pattern to match whole topic names{whole}, in RE2 syntax.")]


def enforce_calls(m: Row, calls: int) -> list[Finding]:
    """``calls`` accepted enforce_rebalance calls by the member's client."""
    if not calls:
        return []
    client = client_of(m)
    call = "enforce_rebalance" if client is LIBRDKAFKA else "enforceRebalance()"
    return [_finding("enforce_rebalance", m, f"It called {call} {calls} times: {client.enforce}.",
                     f"Stop calling {call} before the migration (see the enforce_policy recommendation "
                     "for what it bought).")]


def shared_instance_ids(members: list[Row]) -> list[Finding]:
    """Two live processes with one group.instance.id: the broker fences one (consumer protocol:
    UNRELEASED_INSTANCE_ID; across protocols the newer one replaces the older unconditionally)."""
    by_id: dict[str, list[Row]] = defaultdict(list)
    for m in members:
        if m["group_instance_id"]:
            by_id[m["group_instance_id"]].append(m)
    out = []
    for instance, rows in sorted(by_id.items()):
        rows = sorted(rows, key=lambda m: m["joined_ms"])
        for a, b in zip(rows, rows[1:]):
            overlap_s = (min(_end_ms(a), _end_ms(b)) - b["joined_ms"]) / 1000.0
            if overlap_s > 0:
                out.append(_finding("shared_instance_id", b, f"It ran with group.instance.id={instance} while "
                                    f"{member_label(a)} did, for {overlap_s:.1f} s: one of them is fenced, and a "
                                    "consumer-protocol joiner replaces the other member without a check.",
                                    "Give every member its own group.instance.id (a pod name, a host name plus an "
                                    "index) before the migration."))
    return out


def _end_ms(m: Row) -> int:
    return m["left_ms"] if m["left_ms"] is not None else m["last_seen_ms"]


def range_to_uniform(members: list[Row]) -> list[Finding]:
    """Classic range members, and migrants on the broker's default assignor: after the conversion
    the group runs uniform, which does not keep range's co-partitioning."""
    if not any(_classic(m) and classic_strategy(m["assignor"]) == "range" for m in members):
        return []
    return [_finding("range_to_uniform", m, "It joined a classic range group with group.protocol=consumer and no "
                     "group.remote.assignor: the broker's default (uniform) assigns the group once it converts, "
                     "and uniform does not keep range's co-partitioning of topics.",
                     "Set group.remote.assignor=range on the migrants if the application joins topics by "
                     "partition.")
            for m in members if m["group_protocol"] == "consumer" and not m["remote_assignor"]]


def latest_by_client(members: list[Row]) -> list[Row]:
    """One row per client.id, its latest process: a restarted member is linted as it runs now."""
    latest: dict[str, Row] = {}
    for m in sorted(members, key=lambda m: m["joined_ms"]):
        latest[m["client_id"]] = m
    return list(latest.values())


def findings(members: list[Row], topics: Iterable[str]) -> list[Finding]:
    """Every finding of a group that still has classic members (a group all on the consumer protocol
    has migrated), blocking first; ``topics``: the topics its members were seen owning."""
    if not any(_classic(m) for m in members):
        return []
    topics = list(topics)
    enforced: dict[str, int] = defaultdict(int)
    for m in members:
        enforced[m["client_id"]] += len(m["enforced_ms"] or ())
    found = [f for m in latest_by_client(members)
             for f in (*refused_keys(m), *old_client(m), *sticky_user_data(m), *cluster_refused(m),
                       *eager_assign_calls(m), *regex_full_match(m, topics),
                       *enforce_calls(m, enforced[m["client_id"]]))]
    found += shared_instance_ids(members) + range_to_uniform(latest_by_client(members))
    return sorted(found, key=lambda f: (FINDING_SEVERITIES.index(f.severity), FINDING_CODES.index(f.code)))


def blocking(found: list[Finding]) -> list[Finding]:
    return [f for f in found if f.severity == "blocking"]


def said(found: list[Finding]) -> tuple[str, ...]:
    """One line per distinct (code, evidence, fix), naming every member it holds for:
    ``[severity] code: members: evidence Fix: fix``."""
    grouped: dict[tuple[str, str, str, str], list[str]] = {}
    for f in found:
        grouped.setdefault((f.severity, f.code, f.evidence, f.fix), []).append(f.member)
    lines = []
    for (severity, code, evidence, fix), who in grouped.items():
        named = ", ".join(who[:MEMBERS_SHOWN]) + (f" and {len(who) - MEMBERS_SHOWN} more" if len(who) > MEMBERS_SHOWN
                                                   else "")
        lines.append(f"[{severity}] {code}: {named}: {evidence} Fix: {fix}")
    return tuple(lines)
