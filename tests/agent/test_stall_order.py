"""The member state around a stall, in both orders librdkafka serves it (no broker needed: the
membership is plain bookkeeping on the application thread).

Usually the poll after a stall returns ``_MAX_POLL_EXCEEDED`` before the lost callback: the member
is stale until the lost callback. Under load librdkafka can serve the lost callback, the rejoin and
the new assignment first and return the error last (a CI run of slow-processing: the error 80 ms
after the new assignment); the member is back, and stays so."""
from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, TopicPartition

from consumer_agent.membership import Membership
from consumer_agent.options import AgentOptions
from consumer_agent.processed import Processed

pytestmark = pytest.mark.fast


class _Positions:
    """A consumer that knows no positions (the partition events carry unknown ones)."""

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        return partitions


def _member(events: list[tuple[str, object]]) -> Membership:
    return Membership(_Positions(), lambda kind, body: events.append((kind, body)), Processed("on_next_poll"),
                      group_protocol="classic", cooperative=False, options=AgentOptions(telemetry_topic="t"),
                      config={"max.poll.interval.ms": 7_000}, config_snapshot={})


def _states(events: list[tuple[str, object]]) -> list[str]:
    return [body.to_state for kind, body in events if kind == "state_transition"]


def _stalled_member(events: list[tuple[str, object]]) -> tuple[Membership, list[TopicPartition]]:
    member = _member(events)
    parts = [TopicPartition("orders", 0)]
    member.enter_assign()
    member.record_assign(parts, 0.1, [])
    events.clear()
    return member, parts


def test_an_error_before_the_lost_callback_makes_the_member_stale_until_it():
    events: list[tuple[str, object]] = []
    member, parts = _stalled_member(events)
    member.record_poll_error(KafkaError(KafkaError._MAX_POLL_EXCEEDED))
    member.enter_lost()
    member.record_release("partitions_lost", parts, 0.1, None, [])
    member.enter_assign()
    assert _states(events) == ["stale", "joining", "assigning"]


def test_an_error_after_the_return_leaves_the_member_where_the_return_put_it():
    events: list[tuple[str, object]] = []
    member, parts = _stalled_member(events)
    member.enter_lost()
    member.record_release("partitions_lost", parts, 0.1, None, [])
    member.enter_assign()
    member.record_assign(parts, 0.1, [])
    member.record_poll_error(KafkaError(KafkaError._MAX_POLL_EXCEEDED))
    assert _states(events) == ["lost", "joining", "assigning", "stable"]
    assert [kind for kind, _ in events][-1] == "client_error"  # reported all the same
