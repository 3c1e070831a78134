"""Asking the group to rebalance without KIP-568: the sentinel-pattern toggle.

librdkafka has no enforceRebalance (KIP-568 is "Not supported"), and re-subscribing an
unchanged subscription is no change. So each accepted call changes the subscription for
real and back: it subscribes to the application's topics plus a fresh per-member sentinel
pattern ``^__rebalance_lens_<agent_id>_<n>$``, then at once to the application's topics
alone (same callbacks). The pattern can never fully match a real topic (KIP-848 evaluates
it broker-side with RE2/J, full match), so no partition is added or removed; but the
sentinel IS visible outside this process: the broker (KIP-848 SubscribedTopicRegex) and
the group see the subscription change. ``member_config`` telemetry keeps reporting the
application's own topics. What a call does, measured on Kafka 4.2 with librdkafka 2.16
(tests/agent/test_enforce_rebalance.py, two consecutive calls):
- KIP-848 (group.protocol=consumer): every call moves EVERY member to a new member
  epoch; nothing is revoked (the broker's assignors are sticky, owners stay);
- classic cooperative-sticky: the first call rebalances the whole group (new generation
  on every member, nothing revoked); later calls change nothing. librdkafka puts the
  matched topics, not the patterns, in JoinGroup, so a pattern matching nothing is
  invisible to the coordinator; it rejoins only when the new wildcard subscription first
  makes it fetch full-topic metadata;
- classic eager (range, roundrobin): a subscription change makes librdkafka revoke ALL of
  this member's partitions and rejoin, by design of the eager protocol. The group moves
  to a new generation (revoking everyone's partitions) only when this member leads the
  group; otherwise only this member's partitions cycle.
"""
from __future__ import annotations

import time
from collections.abc import Callable

from confluent_kafka import KafkaException

from consumer_agent.consumer_view import ConsumerView
from consumer_agent.group_metadata import generation_from_metadata

SENTINEL_PREFIX = "__rebalance_lens_"
# How long an accepted call blocks the next one unless a callback or a new generation shows its
# rebalance first: KIP-848 members learn a new epoch within a heartbeat (5 s).
ENFORCE_SETTLE_S = 10.0
_monotonic = time.monotonic


def _mechanism(group_protocol: str, cooperative: bool) -> str:
    """The ``rebalance_requested.mechanism`` text: the toggle and what it does under this protocol."""
    if group_protocol == "consumer":
        return "sentinel-pattern-toggle (KIP-848: new member epoch on every member, nothing revoked)"
    if cooperative:
        return ("sentinel-pattern-toggle (cooperative-sticky: the first call rebalances the group without "
                "revocation; later calls change nothing)")
    return ("sentinel-pattern-toggle (eager: revokes this member's partitions and rejoins; "
            "group-wide rebalance only if this member leads the group)")


class RebalanceEnforcer:
    """Issues the toggle, and holds back the next one until the last has shown a rebalance.

    Args:
        consumer: the consumer whose group generation tells whether a rebalance happened.
        subscribe: ``Consumer.subscribe`` with the agent's rebalance callbacks.
    """

    def __init__(self, consumer: ConsumerView, agent_id: str, group_protocol: str, cooperative: bool,
                 subscribe: Callable[[list[str]], None]) -> None:
        self._consumer = consumer
        self._agent_id = agent_id
        self._subscribe = subscribe
        self.mechanism = _mechanism(group_protocol, cooperative)
        self._calls = 0     # accepted calls: numbers the sentinel patterns
        self._enforced_at: tuple[float, int] | None = None  # (monotonic time, generation) of the last one

    def settled(self) -> None:
        """A rebalance callback ran or the application subscribed: the last accepted call is done with."""
        self._enforced_at = None

    def request(self, topics: list[str]) -> bool:
        """Toggle the subscription ``topics``; False, without a toggle, while the last call is pending."""
        if self._pending():
            return False
        self._calls += 1
        self._enforced_at = (_monotonic(), self._generation())
        sentinel = f"^{SENTINEL_PREFIX}{self._agent_id}_{self._calls}$"
        for subscription in ([*topics, sentinel], topics):
            self._subscribe(subscription)
        return True

    def _pending(self) -> bool:
        """The last accepted call has shown no rebalance yet (no callback, same generation), for a while."""
        if self._enforced_at is None:
            return False
        at, generation = self._enforced_at
        if _monotonic() - at > ENFORCE_SETTLE_S or self._generation() != generation:
            self._enforced_at = None
            return False
        return True

    def _generation(self) -> int:
        try:
            return generation_from_metadata(self._consumer.consumer_group_metadata())
        except (RuntimeError, KafkaException):
            return -1
