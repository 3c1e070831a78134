"""Commit-on-revoke (``lens.commit.on.revoke``): commit what was processed before a partition moves.

Whatever the old owner processed but did not commit, the new owner reads again: the
duplicates of a rebalance. In the revoke callback, before the application's own, the
agent waits (bounded) for the records still in flight on the revoked partitions, then
commits their processed frontier synchronously; the outcome rides on the
partitions_revoked event as its ``commit_on_revoke``. ``close`` commits the same frontier
before librdkafka leaves the group (``commit_before_close``).
"""
from __future__ import annotations

import time

from confluent_kafka import KafkaException, TopicPartition

from consumer_agent import contract
from consumer_agent.consumer_view import ConsumerView
from consumer_agent.membership import Membership
from consumer_agent.processed import Processed

_monotonic = time.monotonic


class RevokeCommitter:
    """Commits the processed frontier of partitions being revoked.

    Args:
        consumer: the instrumented consumer's view: its ``commit`` records the commit (``in_revoke``).
        timeout_s: how long to wait for in-flight records (explicit mode) before committing anyway.
    """

    def __init__(self, consumer: ConsumerView, member: Membership, processed: Processed,
                 timeout_s: float) -> None:
        self._consumer = consumer
        self._member = member
        self._processed = processed
        self._timeout_s = timeout_s

    def commit_before_handover(self, partitions: list[TopicPartition]) -> contract.CommitOnRevoke:
        """Wait (bounded) for in-flight work on ``partitions``, then commit it synchronously."""
        keys = [(tp.topic, tp.partition) for tp in partitions]
        start = _monotonic()
        drained = self._processed.wait_drained(keys, self._timeout_s)
        waited_ms = (_monotonic() - start) * 1000
        offsets = []
        for tp in self._consumer.position([TopicPartition(t, p) for t, p in keys]):
            key = (tp.topic, tp.partition)
            offset = self._processed.frontier(key, tp.offset)
            if offset is not None and offset >= 0 and offset != self._member.committed.get(key):
                offsets.append(TopicPartition(tp.topic, tp.partition, offset))
        if not offsets:
            return contract.CommitOnRevoke(waited_ms=waited_ms, timed_out=not drained, committed=True, error=None)
        try:
            result = self._consumer.commit(offsets=offsets, asynchronous=False) or []
        except KafkaException as exc:
            return contract.CommitOnRevoke(waited_ms=waited_ms, timed_out=not drained, committed=False,
                                           error=str(exc))
        failed = [f"{tp.topic}[{tp.partition}]: {tp.error}" for tp in result if tp.error is not None]
        return contract.CommitOnRevoke(waited_ms=waited_ms, timed_out=not drained, committed=not failed,
                                       error="; ".join(failed) or None)

    def commit_before_close(self) -> None:
        """Commit the owned partitions' processed frontier while the member is still in the group.

        An eager revoke already queued when ``close`` starts (another member left or joined) is
        served by librdkafka only after it has left the group, so the commit in that callback
        fails with UNKNOWN_MEMBER_ID and the next owner re-reads everything since the last
        commit. Committed here first, the callback finds nothing left to commit; a commit that
        fails here is tried again there, and its error is reported on the partitions_revoked event.
        """
        if self._member.owned and not self._member.partitions_taken:
            self.commit_before_handover([TopicPartition(t, p) for t, p in sorted(self._member.owned)])
