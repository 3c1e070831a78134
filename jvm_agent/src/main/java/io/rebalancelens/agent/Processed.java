package io.rebalancelens.agent;

import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeSet;
import java.util.function.ToLongFunction;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.TopicPartition;

/**
 * What the application has processed on a partition, as consumer_agent/processed.py and inflight.py.
 *
 * <p>The default mode ({@code on_next_poll}) counts every record handed out before the current poll as processed,
 * so the position says it all and nothing is tracked per record. Committed mode ({@code committed}) takes what the
 * application committed as what it processed: a framework's consumer (Kafka Streams buffers records per partition
 * and commits what its tasks processed; Spring Kafka's container commits what the listener acknowledged), whose
 * next poll says nothing about processing. Explicit mode ({@code lens.processing=explicit}) is for records
 * finished out of order on other threads ({@link InstrumentedConsumer#markProcessed}): the safe point is the
 * lowest unfinished offset, or one past the highest finished. Only explicit mode pays for this bookkeeping;
 * its methods are synchronized because workers mark from their own threads, and a mark wakes a revoke that
 * waits for the partition's in-flight records (commit-on-revoke, {@link RevokeCommitter}).
 */
final class Processed {
    /** An offset the member does not know (the agent spec's offset_unknown). */
    static final long OFFSET_UNKNOWN = AgentSpec.get().longConstant("offset_unknown");

    static final String EXPLICIT = "explicit";
    static final String COMMITTED = "committed";

    final boolean explicit;
    final boolean committedBasis;
    /** The member's last commit of a partition (committed mode's frontier), or OFFSET_UNKNOWN. */
    private final ToLongFunction<TopicPartition> committed;
    /** Committed mode: each partition's committed offset at the last progress tick. */
    private final Map<TopicPartition, Long> committedAtTick = new HashMap<>();
    private final Map<TopicPartition, TreeSet<Long>> pending = new HashMap<>();
    private final Map<TopicPartition, Long> done = new HashMap<>();
    /** Explicit mode: records marked since the last progress event, per partition (the progress body's
     * {@code processed}); a mutable cell per partition. */
    private final Map<TopicPartition, long[]> counted = new HashMap<>();

    /** {@code mode}: lens.processing's value; {@code committed}: the member's last commit of a partition. */
    Processed(String mode, ToLongFunction<TopicPartition> committed) {
        this.explicit = EXPLICIT.equals(mode);
        this.committedBasis = COMMITTED.equals(mode);
        this.committed = committed;
    }

    synchronized void handedOut(TopicPartition tp, long offset) {
        pending.computeIfAbsent(tp, k -> new TreeSet<>()).add(offset);
    }

    /** Explicit mode: the record is processed; offsets not handed out (or forgotten) are ignored. */
    synchronized void mark(TopicPartition tp, long offset) {
        TreeSet<Long> open = pending.get(tp);
        if (open == null || !open.remove(offset)) {
            return;
        }
        done.merge(tp, offset, Math::max);
        counted.computeIfAbsent(tp, k -> new long[1])[0]++;
        if (open.isEmpty()) {
            notifyAll();  // a revoke may be waiting for this partition to drain
        }
    }

    /**
     * Explicit mode: wait until no record of {@code partitions} is in flight (handed out, not marked), at most
     * {@code timeoutMs}; true when drained. The default mode has nothing in flight inside a poll.
     */
    synchronized boolean awaitDrained(Collection<TopicPartition> partitions, long timeoutMs) {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000;
        while (explicit && partitions.stream().anyMatch(tp -> pending.containsKey(tp) && !pending.get(tp).isEmpty())) {
            long remainingMs = (deadline - System.nanoTime()) / 1_000_000;
            if (remainingMs <= 0) {
                return false;
            }
            try {
                wait(remainingMs);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();  // the host's to act on; stop holding the rebalance
                return false;
            }
        }
        return true;
    }

    /**
     * The next offset to read that loses no unprocessed record (what a commit may say), or OFFSET_UNKNOWN when
     * nothing is known processed: the position in the default mode, the last commit in committed mode, else the
     * lowest in-flight offset or one past the highest processed.
     */
    synchronized long frontier(TopicPartition tp, long position) {
        if (committedBasis) {
            long last = committed.applyAsLong(tp);
            return last >= 0 ? last : OFFSET_UNKNOWN;
        }
        if (!explicit) {
            return position >= 0 ? position : OFFSET_UNKNOWN;
        }
        TreeSet<Long> open = pending.get(tp);
        Long next = open != null && !open.isEmpty() ? open.first() : done.containsKey(tp) ? done.get(tp) + 1 : null;
        return next == null ? OFFSET_UNKNOWN : next;
    }

    /**
     * The processed counts since the last call, reset. Explicit mode: the marks. Default mode: every record
     * handed out before {@code unprocessed} (the poll just returned, processed by the next), derived from the
     * slots' cumulative hand-out counts, so that a poll counts nothing but its own records.
     */
    Map<TopicPartition, Long> takeCounts(Map<TopicPartition, PartitionSlot> slots,
                                         ConsumerRecords<?, ?> unprocessed) {
        if (explicit) {
            return takeMarks();
        }
        if (committedBasis) {
            return takeCommitted(slots);
        }
        Map<TopicPartition, Long> counts = new HashMap<>();
        slots.forEach((tp, slot) -> {
            long processedTotal = slot.handedOut - unprocessed.records(tp).size();
            counts.put(tp, processedTotal - slot.processedAtTick);
            slot.processedAtTick = processedTotal;
        });
        return counts;
    }

    /** Committed mode: how far each partition's commits moved since the last tick. */
    private Map<TopicPartition, Long> takeCommitted(Map<TopicPartition, PartitionSlot> slots) {
        Map<TopicPartition, Long> counts = new HashMap<>();
        for (TopicPartition tp : slots.keySet()) {
            long now = committed.applyAsLong(tp);
            Long before = committedAtTick.put(tp, now);
            counts.put(tp, now >= 0 && before != null && before >= 0 ? Math.max(0, now - before) : 0L);
        }
        committedAtTick.keySet().retainAll(slots.keySet());
        return counts;
    }

    private synchronized Map<TopicPartition, Long> takeMarks() {
        Map<TopicPartition, Long> copy = new HashMap<>();
        counted.forEach((tp, count) -> copy.put(tp, count[0]));
        counted.clear();
        return copy;
    }

    /** The offset of the last processed record, or OFFSET_UNKNOWN. */
    synchronized long lastOffset(TopicPartition tp, long position) {
        long next = frontier(tp, position);
        return next <= 0 ? OFFSET_UNKNOWN : next - 1;
    }

    synchronized void forget(Collection<TopicPartition> partitions) {
        for (TopicPartition tp : partitions) {
            pending.remove(tp);
            done.remove(tp);
        }
    }
}
