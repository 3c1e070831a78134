"""The member as the agent sees it: lifecycle state, subscription, owned partitions and commits.

librdkafka shows Python no member state, so the agent rebuilds it from what the consumer
observes (subscribe, the rebalance callbacks, commits, poll errors, unsubscribe, close),
walks the tables of ``member_states`` along the paths of ``lifecycle``, and reports every
change: member_config, state_transition, partitions_*, commit and client_error events.
Everything here runs on the application thread and may raise: the consumer calls it
through its guard.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import confluent_kafka
from confluent_kafka import KafkaError, TopicPartition

from consumer_agent import contract
from consumer_agent.consumer_view import ConsumerView
from consumer_agent.inflight import Key
from consumer_agent.lifecycle import LIFECYCLES, REASONS
from consumer_agent.member_states import is_allowed
from consumer_agent.options import AgentOptions
from consumer_agent.processed import Processed
from consumer_agent.version import AGENT_VERSION

Emit = Callable[[str, contract.Body], None]

_FENCING_CODES = frozenset(getattr(KafkaError, name) for name in (
    "UNKNOWN_MEMBER_ID", "FENCED_MEMBER_EPOCH", "ILLEGAL_GENERATION", "FENCED_INSTANCE_ID")
    if hasattr(KafkaError, name))
_monotonic = time.monotonic


def _flag(value: Any, default: bool) -> bool:
    if value is None:
        return default
    return value if isinstance(value, bool) else str(value).lower() in ("true", "1")


class Membership:
    """One member's state and per-partition bookkeeping, and the events that report them.

    Args:
        consumer: the consumer whose positions the partition events carry.
        emit: sends one event (the consumer's envelope and emitter).
        processed: what the application processed, per partition.
        config: the consumer config librdkafka got; ``config_snapshot`` its redacted copy.
    """

    def __init__(self, consumer: ConsumerView, emit: Emit, processed: Processed, *, group_protocol: str,
                 cooperative: bool, options: AgentOptions, config: dict[str, Any],
                 config_snapshot: dict[str, str]) -> None:
        self._consumer = consumer
        self._emit = emit
        self._processed = processed
        self._group_protocol = group_protocol
        self._lifecycle = LIFECYCLES[group_protocol]
        self._cooperative = cooperative
        self._options = options
        self._config = config
        self._config_snapshot = config_snapshot
        self._auto_commit = _flag(config.get("enable.auto.commit"), True)
        self._state = self._lifecycle.left[-1]
        self.subscription: list[str] | None = None       # None while unsubscribed
        self._reported_topics: list[str] | None = None   # the subscription of the last member_config event
        self.leaving = False
        self._lost_at: float | None = None  # monotonic time of the last lost callback
        self.in_revoke = False          # set by the consumer while a revoke callback runs
        self.pending_manual_async = 0   # asynchronous manual commits whose on_commit has not come yet
        # Per owned partition; a released partition leaves all of them.
        self.owned: set[Key] = set()
        self.committed: dict[Key, int] = {}
        self.awaiting_first: dict[Key, float] = {}  # assigned (monotonic time), no record handed out yet
        self.unwatched: dict[Key, float] = {}       # the same, after the watch for the first record ended
        self.asked_starts: dict[Key, tuple[float, int]] = {}  # unwatched: (assigned at, committed offset) answered
        self.start_offsets: dict[Key, int] = {}     # unwatched: the committed offset the fetch surely started from
        self.frontier: dict[Key, int] = {}          # processed frontier at the last progress tick

    @property
    def partitions_taken(self) -> bool:
        """The group took this member's partitions (poll interval expired, or fenced) and the
        lost callback has not released them yet: they are still in ``owned`` but no longer its."""
        return self._state in (self._lifecycle.stale[-1], self._lifecycle.fenced[-1])

    @property
    def stable(self) -> bool:
        """Subscribed, not leaving, and no rebalance under way."""
        return self.subscription is not None and not self.leaving and self._state in self._lifecycle.stable

    def _lost_in_this_poll(self) -> bool:
        """The poll returning ``_MAX_POLL_EXCEEDED`` already served the stall's lost callback.

        The error means the poll before returned over max.poll.interval.ms before this one began,
        so a lost callback more recent than that ran inside this poll. librdkafka can serve the
        lost callback, the rejoin and the new assignment there before it returns the error (a
        loaded CI run of slow-processing: the error 80 ms after the new assignment); the member
        is then already rejoining or back, not stale."""
        window_s = int(self._config.get("max.poll.interval.ms", 300_000)) / 1000.0
        return self._lost_at is not None and _monotonic() - self._lost_at < window_s

    # ------------------------------------------------------------------ state machine
    def _enter(self, path: Sequence[str], reason: str) -> None:
        for state in path:
            if state == self._state:
                continue
            allowed = is_allowed(self._group_protocol, self._state, state)
            self._emit("state_transition", contract.StateTransition(from_state=self._state, to_state=state,
                                                                    reason=reason, allowed=allowed))
            self._state = state

    def enter_assign(self) -> None:
        if self._state in self._lifecycle.rejoin_from:
            self._enter(self._lifecycle.subscribed, REASONS["rejoin"])
        self._enter(self._lifecycle.in_assign, REASONS["assign"])

    def enter_revoke(self) -> None:
        if not self.leaving:
            self._enter(self._lifecycle.in_revoke, REASONS["revoke"])

    def enter_lost(self) -> None:
        self._lost_at = _monotonic()
        if self._state not in self._lifecycle.stale:
            self._enter(self._lifecycle.in_lost, REASONS["lost"])

    def start_leaving(self, reason: str) -> None:
        self.leaving = True
        self._enter(self._lifecycle.leave_start, reason)

    def left(self, reason: str) -> None:
        self._enter(self._lifecycle.left, reason)

    # ------------------------------------------------------------------ observations
    def record_subscribe(self, topics: list[str]) -> None:
        changed = topics != self._reported_topics
        reason = "start" if self._reported_topics is None else "subscription_changed"
        self.subscription = self._reported_topics = topics
        self.leaving = False
        if changed:
            self._emit("member_config", self._member_config(reason, topics))
        self._enter(self._lifecycle.subscribed, REASONS["subscribe"])

    def _member_config(self, reason: str, topics: list[str]) -> contract.MemberConfig:
        c = self._config
        classic = self._group_protocol == "classic"
        patterns = [t for t in topics if t.startswith("^")]
        return contract.MemberConfig(
            reason=reason, topics=[t for t in topics if not t.startswith("^")],
            pattern="|".join(patterns) if patterns else None,
            session_timeout_ms=int(c.get("session.timeout.ms", 45_000)) if classic else None,
            heartbeat_interval_ms=int(c.get("heartbeat.interval.ms", 3_000)) if classic else None,
            max_poll_interval_ms=int(c.get("max.poll.interval.ms", 300_000)),
            enable_auto_commit=self._auto_commit,
            auto_commit_interval_ms=int(c.get("auto.commit.interval.ms", 5_000)),
            enable_auto_offset_store=_flag(c.get("enable.auto.offset.store"), True),
            commit_on_revoke=self._options.commit_on_revoke, config=self._config_snapshot,
            agent_version=AGENT_VERSION, client_version=confluent_kafka.version()[0],
            librdkafka_version=confluent_kafka.libversion()[0])

    def _partition_states(self, partitions: list[TopicPartition],
                          released: bool = False) -> list[contract.PartitionState]:
        positions = self._consumer.position([TopicPartition(tp.topic, tp.partition) for tp in partitions])
        return [contract.PartitionState(
                    topic=tp.topic, partition=tp.partition, position=max(tp.offset, contract.OFFSET_UNKNOWN),
                    last_processed_offset=self._processed.last_offset((tp.topic, tp.partition), tp.offset),
                    committed_offset=self.committed.get((tp.topic, tp.partition), contract.OFFSET_UNKNOWN),
                    handed_out=self._handed_out((tp.topic, tp.partition)) if released else None)
                for tp in positions]

    def _handed_out(self, key: Key) -> bool | None:
        """Whether a poll handed out a record of an owned partition since its assignment: the watch for its
        first record sees every poll until one comes (a seek hands out nothing). None once the watch ended
        without one (``progress.FIRST_FETCH_WATCH_S``): a record may have come since the last tick."""
        if key not in self.owned or key in self.unwatched:
            return None
        return key not in self.awaiting_first

    def record_assign(self, partitions: list[TopicPartition], callback_ms: float, callback_calls: list[str]) -> None:
        """After the assign callback: the partitions are owned and await their first record."""
        keys = [(tp.topic, tp.partition) for tp in partitions]
        if not self._cooperative:
            self.owned = set()
        self.owned.update(keys)
        now = _monotonic()
        for key in keys:
            self.awaiting_first[key] = now
            self.unwatched.pop(key, None)
            self.asked_starts.pop(key, None)
            self.start_offsets.pop(key, None)
        self._emit("partitions_assigned", contract.PartitionsChange(
            partitions=self._partition_states(partitions), incremental=self._cooperative, callback_ms=callback_ms,
            assignment_size=len(self.owned), commit_on_revoke=None, callback_calls=callback_calls))
        self._enter(self._lifecycle.stable, REASONS["assigned"])

    def record_release(self, kind: str, partitions: list[TopicPartition], callback_ms: float,
                       hold: contract.CommitOnRevoke | None, callback_calls: list[str]) -> None:
        """After the revoke (``kind`` partitions_revoked) or lost callback: the partitions are gone."""
        keys = [(tp.topic, tp.partition) for tp in partitions]
        states = self._partition_states(partitions, released=True)
        if self._cooperative:
            self.owned.difference_update(keys)
        else:
            self.owned = set()
        for key in keys:
            self.awaiting_first.pop(key, None)
            self.unwatched.pop(key, None)
            self.asked_starts.pop(key, None)
            self.start_offsets.pop(key, None)
            self.frontier.pop(key, None)
            self.committed.pop(key, None)
        self._processed.inflight.forget(keys)
        self._emit(kind, contract.PartitionsChange(
            partitions=states, incremental=self._cooperative, callback_ms=callback_ms,
            assignment_size=len(self.owned), commit_on_revoke=hold, callback_calls=callback_calls))
        if self.leaving:
            self._enter(self._lifecycle.leave_after_revoke, REASONS["revoked_leaving"])
        elif kind == "partitions_lost":
            if self._state not in self._lifecycle.stale:
                self._enter(self._lifecycle.after_lost, REASONS["lost_done"])
        else:
            self._enter(self._lifecycle.after_revoke, REASONS["revoked"])

    def record_commit(self, mode: str, sync: bool, partitions: list[TopicPartition], error: str | None,
                      duration_ms: float | None) -> None:
        offsets = []
        for tp in partitions:
            tp_error = None if tp.error is None else str(tp.error)
            if error is None and tp_error is None and tp.offset >= 0 and (tp.topic, tp.partition) in self.owned:
                self.committed[(tp.topic, tp.partition)] = tp.offset
            offsets.append(contract.CommittedOffset(topic=tp.topic, partition=tp.partition,
                                                    offset=max(tp.offset, contract.OFFSET_UNKNOWN), error=tp_error))
        self._emit("commit", contract.Commit(mode=mode, sync=sync, in_revoke=self.in_revoke, offsets=offsets,
                                             error=error, duration_ms=duration_ms))

    def record_async_commit(self, err: KafkaError | None, partitions: list[TopicPartition]) -> None:
        """librdkafka's on_commit: the result of an asynchronous manual commit or of an auto commit."""
        if err is None or err.code() != KafkaError._NO_OFFSET:
            if self.pending_manual_async > 0:
                self.pending_manual_async -= 1
                mode = "manual"
            else:
                mode = "auto" if self._auto_commit else "manual"
            self.record_commit(mode, False, partitions, None if err is None else str(err), None)

    def record_poll_error(self, err: KafkaError) -> None:
        """An error handed out by poll/consume: reported; an expired poll interval or a fencing moves the state."""
        code = err.code()
        if code == KafkaError._PARTITION_EOF:
            return
        self._emit("client_error", contract.ClientError(code=code, name=err.name(), message=err.str(),
                                                        fatal=err.fatal()))
        if code == KafkaError._MAX_POLL_EXCEEDED:
            if not self._lost_in_this_poll():
                self._enter(self._lifecycle.stale, REASONS["poll_interval_exceeded"])
        elif code in _FENCING_CODES:
            self._enter(self._lifecycle.fenced, REASONS["fenced"] + err.name())
