"""The consumer settings of one fleet member, from the run's assignor/protocol and commit style.

Kept pure (a dict in, a dict out) so that what a member runs with is visible in the
run manifest and testable without a broker.
"""
from __future__ import annotations

from typing import Any

from lens_runtime.errors import LensError

# The run's --assignor words, each with the assignor it runs in the simulator's words
# (``<group.protocol>:<strategy>``, declared in pipelines.vocabulary; a test checks the pair both
# ways). KIP-848 has one word: the broker picks the assignment with its default, uniform.
RUNS: dict[str, str] = {"range": "classic:range", "roundrobin": "classic:roundrobin",
                        "cooperative-sticky": "classic:cooperative-sticky", "consumer": "consumer:uniform"}
ASSIGNORS = tuple(RUNS)
COMMIT_STYLES = ("auto", "batch", "revoke")
# Classic groups only: fast enough for scenario time, slow enough for 2 busy cores.
CLASSIC_SESSION_TIMEOUT_MS = 6000
CLASSIC_HEARTBEAT_MS = 1000
PROGRESS_INTERVAL_MS = 1000  # the members' lens.progress.interval.ms (the agents' default is 5 s)


def check_choice(value: str, allowed: tuple[str, ...], flag: str) -> str:
    if value not in allowed:
        raise LensError(f"{flag} {value!r} is not supported. Use one of: {', '.join(allowed)}.")
    return value


def protocol_of(assignor: str) -> str:
    """The group.protocol an --assignor word runs: 'classic', or 'consumer' (KIP-848)."""
    return RUNS[check_choice(assignor, ASSIGNORS, "--assignor")].split(":", 1)[0]


def assignor_for(assignor: str | None, protocol: str | None) -> str:
    """One run choice from --assignor and --protocol: KIP-848 groups have no client-side assignor.

    ``--protocol consumer`` (or ``--assignor consumer``) runs a KIP-848 group whose
    broker picks the assignment (its default, uniform); ``--protocol classic`` takes a
    classic assignor (range by default).
    """
    if protocol == "consumer":
        if assignor not in (None, "consumer"):
            raise LensError(f"--assignor {assignor} is a classic, client-side assignor, but --protocol consumer "
                            "(KIP-848) lets the broker assign. Drop --assignor, or use --protocol classic.")
        return "consumer"
    if protocol == "classic" and assignor == "consumer":
        raise LensError("--assignor consumer means the KIP-848 protocol, not --protocol classic. "
                        "Pick range, roundrobin or cooperative-sticky, or use --protocol consumer.")
    return assignor or "range"


def member_assignor(run_assignor: str, group_protocol: str | None) -> str:
    """The --assignor word one member runs: the run's, unless a protocol migration moved the member
    to the other group.protocol; then KIP-848's, or, rolled back to classic in a KIP-848 run, range
    (the classic default: a KIP-848 run names no classic assignor to return to)."""
    if group_protocol is None or group_protocol == protocol_of(run_assignor):
        return run_assignor
    return assignor_for(None, group_protocol)


def check_online_upgrade(assignor: str, scenario: str) -> None:
    """Refuse to migrate a librdkafka cooperative-sticky group online: its members put their previous
    assignment in the subscription's user data, the leader copies it into each assignment, and the
    Kafka 4.2 broker refuses to convert a classic group whose assignments carry user data. Each
    member restarted on the consumer protocol then dies of a fatal GROUP_ID_NOT_FOUND, consuming
    nothing, while the group stays classic (observed: docs/measured.md, "The KIP-848 migration")."""
    if assignor == "cooperative-sticky":
        raise LensError(f"Scenario {scenario} migrates members to group.protocol consumer, which the broker refuses "
                        "for a cooperative-sticky group (each migrant dies of a fatal GROUP_ID_NOT_FOUND). "
                        "Run it with --assignor range or roundrobin.")


def member_config(*, bootstrap: str, group_id: str, assignor: str, commit: str, client_id: str,
                  group_instance_id: str | None, max_poll_interval_ms: int, telemetry_topic: str,
                  session_timeout_ms: int = CLASSIC_SESSION_TIMEOUT_MS, agent: bool = True,
                  telemetry_bootstrap: str | None = None, remote_assignor: str | None = None,
                  progress_interval_ms: int = PROGRESS_INTERVAL_MS) -> dict[str, Any]:
    """librdkafka + agent settings for one member process; ``agent=False``: librdkafka's alone
    (a plain ``confluent_kafka.Consumer`` refuses the ``lens.*`` keys). ``telemetry_bootstrap``:
    the telemetry's cluster, when not the consumer's. ``remote_assignor``: a KIP-848 member's
    group.remote.assignor (None: the broker's default).

    KIP-848 refuses session.timeout.ms, heartbeat.interval.ms and
    partition.assignment.strategy on the client; the broker owns them there.
    """
    check_choice(assignor, ASSIGNORS, "--assignor")
    if remote_assignor is not None and protocol_of(assignor) != "consumer":
        raise LensError(f"group.remote.assignor {remote_assignor!r} is KIP-848's, but this member runs the classic "
                        f"{assignor}. Drop remote_assignor, or move the member to group.protocol consumer.")
    check_choice(commit, COMMIT_STYLES, "--commit")
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group_id,
        "client.id": client_id,
        "auto.offset.reset": "earliest",
        "max.poll.interval.ms": max_poll_interval_ms,
        "enable.auto.commit": commit == "auto",
        "lens.telemetry.topic": telemetry_topic,
        "lens.commit.on.revoke": commit == "revoke",
        "lens.processing": "on_next_poll",
        "lens.progress.interval.ms": progress_interval_ms,
    }
    if protocol_of(assignor) == "consumer":
        config["group.protocol"] = "consumer"
        if remote_assignor is not None:
            config["group.remote.assignor"] = remote_assignor
    else:
        config.update({"group.protocol": "classic", "partition.assignment.strategy": RUNS[assignor].split(":", 1)[1],
                       "session.timeout.ms": session_timeout_ms,
                       "heartbeat.interval.ms": CLASSIC_HEARTBEAT_MS})
    if group_instance_id is not None:
        config["group.instance.id"] = group_instance_id
    if telemetry_bootstrap is not None:
        config["lens.telemetry.bootstrap.servers"] = telemetry_bootstrap
    if not agent:
        config = {k: v for k, v in config.items() if not k.startswith("lens.")}
    return config
