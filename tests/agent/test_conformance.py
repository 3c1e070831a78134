"""Conformance: the same programs played through both agents on the broker, their event streams compared
kind by kind and field by field (ids and times aside), so the Python agent (consumer_agent/) and the Java
agent (jvm_agent/) cannot drift apart where they read one agent spec and where they do not.

Programs (tests/support/conformance.py, played by its Player and by tests/jvm_agent/ConformanceDriver.java):
- a member's life under classic range: assign, a synchronous and an asynchronous commit, a gap without a poll
  (a progress tick after it), commit-on-revoke when its subscription changes (revoke), a stall past
  max.poll.interval.ms (lost, assigned again), close;
- an auto-committing member: the client's own commits (mode auto) when its subscription changes and at close;
- a broker-less config: a consumer whose cluster never answers, its telemetry sent to one that does.
What only one client has (client errors, callback_calls, versions, each client's own config keys) is set
aside in conformance.py, each with its reason; the rest must be equal, generation included.
"""
from __future__ import annotations

from typing import Any

from consumer_agent.redaction import REDACTED
from tests.support import conformance


def _same(python: list, java: list, programs: dict[str, dict[str, Any]], aside: frozenset[str] = frozenset()) -> None:
    """Kind by kind, then as one stream (so a difference is shown where it is)."""
    py = conformance.comparable(python, programs["python"]["topics"], aside)
    jv = conformance.comparable(java, programs["java"]["topics"], aside)
    for kind in sorted({k for k, _ in py} | {k for k, _ in jv}):
        assert [e for k, e in py if k == kind] == [e for k, e in jv if k == kind], kind
    assert py == jv


def _topics(kafka, unique: str, partitions: dict[str, int]) -> dict[str, dict[str, str]]:
    """Each agent's own topics, named in the program as ``partitions``' keys."""
    return {agent: {name: kafka.create_topic(f"conformance-{agent}-{name}-{unique}", partitions=n)
                    for name, n in partitions.items()} for agent in ("python", "java")}


def test_a_members_life_reads_the_same_through_both_agents(kafka, unique, tmp_path):
    programs = {agent: conformance.life(kafka.bootstrap_servers, topics)
                for agent, topics in _topics(kafka, unique, {"t1": 2, "t2": 2}).items()}
    telemetry = kafka.create_topic(f"conformance-telemetry-{unique}")
    python, java = conformance.play_both(kafka, tmp_path, programs, telemetry, unique)
    _same(python, java, programs)
    kinds = {e["kind"] for e in java}
    assert kinds == {"member_config", "state_transition", "partitions_assigned", "partitions_revoked",
                     "partitions_lost", "first_fetch", "commit", "progress"}, kinds
    commits = [(c["body"]["sync"], c["body"]["in_revoke"]) for c in java if c["kind"] == "commit"]
    assert commits == [(True, False), (False, False), (True, True), (True, False)]  # the last before close
    # The only client error: librdkafka's report of the stall, which the Java client does not make.
    assert conformance.client_errors(python) == ["_MAX_POLL_EXCEEDED"] and conformance.client_errors(java) == []
    py_config, java_config = conformance.shared_config(python, java)
    assert py_config == java_config and py_config["ssl.key.password"] == REDACTED
    assert {"client.id", "enable.auto.commit", "session.timeout.ms", "max.poll.interval.ms"} <= set(py_config)
    after_close = [e["generation"] for e in java if e["kind"] == "state_transition"][-1]
    assert after_close >= 1  # the decided rule: the last generation stands in where the client cannot answer
    # A tick right after each assignment's first records, each tick with the interval it promises, and
    # (compared above with the revokes and losses) whether each released partition handed out a record.
    for events in (python, java):
        assert set(conformance.ticks_after_first_records(events)) <= {"first_record", "timer"}, events
        ticks = [e["body"] for e in events if e["kind"] == "progress"]
        assert {t["next_due_ms"] for t in ticks} == {conformance.PROGRESS_INTERVAL_MS} and {
            "first_record", "poll_gap"} <= {t["cause"] for t in ticks}  # the 4.5 s gap after the first commit
    assert {ps.get("handed_out") for e in java if e["kind"] in ("partitions_revoked", "partitions_lost")
            for ps in e["body"]["partitions"]} == {True}


def test_an_auto_committing_member_reads_the_same_through_both_agents(kafka, unique, tmp_path):
    """Both agents report the client's own commits (mode auto): what was read when the subscription changed, then
    when the member closed; the rest of the stream as for any member, but for the revoked partitions' committed
    offset: librdkafka commits what was read when it unassigns, after the revoke callback, the Java client right
    before it (``maybeAutoCommitOffsetsSync``), so each revoke tells its own client's truth (-1001 and 5)."""
    topics = _topics(kafka, unique, {"t1": 2, "t2": 2})
    programs = {agent: conformance.auto_committing(kafka.bootstrap_servers, topics[agent]) for agent in topics}
    telemetry = kafka.create_topic(f"conformance-telemetry-{unique}")
    python, java = conformance.play_both(kafka, tmp_path, programs, telemetry, unique)
    _same(python, java, programs, aside=frozenset({"committed_offset"}))
    auto = {agent: conformance.auto_commits(events, topics[agent]) for agent, events in
            (("python", python), ("java", java))}
    read = [{"t1": 5}, {"t2": 4}]
    assert auto["python"] == auto["java"] == [
        {"mode": "auto", "sync": False, "in_revoke": False, "error": None,
         "offsets": [{"topic": t, "partition": p, "offset": n, "error": None} for p in (0, 1)]}
        for step in read for t, n in step.items()]
    assert not [e for e in java if e["kind"] == "commit" and e["body"]["mode"] == "manual"]


def test_a_broker_less_config_reads_the_same_through_both_agents(kafka, unique, tmp_path):
    programs = {agent: conformance.broker_less(kafka.bootstrap_servers, {"t1": f"conformance-away-{agent}-{unique}"})
                for agent in ("python", "java")}  # topics on a cluster that is not there
    telemetry = kafka.create_topic(f"conformance-telemetry-{unique}")
    python, java = conformance.play_both(kafka, tmp_path, programs, telemetry, unique)
    _same(python, java, programs)
    assert [(e["kind"], e["generation"]) for e in java] == [
        ("member_config", -1), ("state_transition", -1), ("state_transition", -1), ("state_transition", -1)]
    assert all("cluster_id" not in e for e in python + java)  # the consumer's cluster never answered
