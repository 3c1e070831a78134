package io.rebalancelens.agent;

/**
 * What the poll path keeps per partition, mutated in place: a poll updates a partition with one map lookup and
 * allocates nothing (no boxed Long per position, no count map per poll). Polling thread only, so no lock.
 * Kept across a revoke (a partition revoked and assigned back before the next progress tick keeps its count,
 * as the progress body says); {@link Membership#dropReleased} drops slots nothing refers to any more.
 */
final class PartitionSlot {
    /** The next offset the application reads (a poll's next offsets, a seek), or OFFSET_UNKNOWN. */
    long position = Processed.OFFSET_UNKNOWN;
    /** Records polls handed out on this partition, cumulative (the default mode's progress counts). */
    long handedOut;
    /** How many of them were processed at the last progress tick. */
    long processedAtTick;
}
