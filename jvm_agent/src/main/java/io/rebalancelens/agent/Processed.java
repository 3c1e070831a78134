package io.rebalancelens.agent;

import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.TopicPartition;

/**
 * What the application has processed on a partition, as consumer_agent/processed.py and inflight.py.
 *
 * <p>The default mode counts every record handed out before the current poll as processed, so the position
 * says it all and nothing is tracked per record. Explicit mode ({@code lens.processing=explicit}) is for records
 * finished out of order on other threads ({@link InstrumentedConsumer#markProcessed}): the safe point is the
 * lowest unfinished offset, or one past the highest finished. Only explicit mode pays for this bookkeeping;
 * its methods are synchronized because workers mark from their own threads, and a mark wakes a revoke that
 * waits for the partition's in-flight records (commit-on-revoke, {@link RevokeCommitter}).
 */
final class Processed {
    /** An offset the member does not know (the agent spec's offset_unknown). */
    static final long OFFSET_UNKNOWN = AgentSpec.get().longConstant("offset_unknown");

    final boolean explicit;
    private final Map<TopicPartition, TreeSet<Long>> pending = new HashMap<>();
    private final Map<TopicPartition, Long> done = new HashMap<>();
    /** Explicit mode: records marked since the last progress event, per partition (the progress body's
     * {@code processed}); a mutable cell per partition. */
    private final Map<TopicPartition, long[]> counted = new HashMap<>();

    Processed(boolean explicit) {
        this.explicit = explicit;
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
     * nothing is known processed: the position in the default mode, else the lowest in-flight offset or one past
     * the highest processed.
     */
    synchronized long frontier(TopicPartition tp, long position) {
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
        Map<TopicPartition, Long> counts = new HashMap<>();
        slots.forEach((tp, slot) -> {
            long processedTotal = slot.handedOut - unprocessed.records(tp).size();
            counts.put(tp, processedTotal - slot.processedAtTick);
            slot.processedAtTick = processedTotal;
        });
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
