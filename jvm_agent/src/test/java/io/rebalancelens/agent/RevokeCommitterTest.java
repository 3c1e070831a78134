package io.rebalancelens.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.junit.jupiter.api.Test;

/** Commit-on-revoke through the narrow view: the processed frontier, committed once, failures in the report. */
class RevokeCommitterTest {
    private static final TopicPartition A = new TopicPartition("orders", 0);
    private static final TopicPartition B = new TopicPartition("orders", 1);

    /** A consumer as the helpers see it: positions and commits of its own, a commit that may fail. */
    private static final class Consumer implements ConsumerView {
        final Map<TopicPartition, Long> positions = new HashMap<>();
        final Map<TopicPartition, Long> committed = new HashMap<>();
        final List<Map<TopicPartition, OffsetAndMetadata>> commits = new ArrayList<>();
        RuntimeException failure;

        @Override
        public Set<TopicPartition> owned() {
            return positions.keySet();
        }

        @Override
        public long position(TopicPartition tp) {
            return positions.getOrDefault(tp, Processed.OFFSET_UNKNOWN);
        }

        @Override
        public long committed(TopicPartition tp) {
            return committed.getOrDefault(tp, Processed.OFFSET_UNKNOWN);
        }

        @Override
        public OptionalLong currentLag(TopicPartition tp) {
            return OptionalLong.empty();
        }

        @Override
        public void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets) {
            commits.add(offsets);
            if (failure != null) {
                throw failure;
            }
        }
    }

    @Test
    void theDefaultModeCommitsThePositionsNotYetCommitted() {
        Consumer consumer = new Consumer();
        consumer.positions.putAll(Map.of(A, 10L, B, 4L));
        consumer.committed.put(B, 4L);
        Map<String, Object> hold = new RevokeCommitter(consumer, processed("on_next_poll"), 1_000)
                .commitBeforeHandover(List.of(A, B));
        assertEquals(List.of(Map.of(A, new OffsetAndMetadata(10))), consumer.commits);
        assertEquals(true, hold.get("committed"));
        assertEquals(false, hold.get("timed_out"));
        assertEquals(null, hold.get("error"));
    }

    @Test
    void nothingNewMeansNoCommit() {
        Consumer consumer = new Consumer();
        consumer.positions.put(A, 3L);
        consumer.committed.put(A, 3L);
        Map<String, Object> hold = new RevokeCommitter(consumer, processed("on_next_poll"), 1_000)
                .commitBeforeHandover(List.of(A, B));  // B: no position known, nothing to commit
        assertTrue(consumer.commits.isEmpty());
        assertEquals(true, hold.get("committed"));
    }

    @Test
    void beforeCloseTheOwnedPartitionsAreCommittedAndNothingWithoutThem() {
        Consumer consumer = new Consumer();
        new RevokeCommitter(consumer, processed("on_next_poll"), 1_000).commitBeforeClose();
        assertTrue(consumer.commits.isEmpty());
        consumer.positions.put(A, 7L);
        new RevokeCommitter(consumer, processed("on_next_poll"), 1_000).commitBeforeClose();
        assertEquals(List.of(Map.of(A, new OffsetAndMetadata(7))), consumer.commits);
    }

    @Test
    void explicitModeWaitsBoundedThenCommitsWhatIsDoneAndReportsAFailure() {
        Consumer consumer = new Consumer();
        consumer.positions.put(A, 3L);
        consumer.failure = new RebalanceInProgressException("rebalancing");
        Processed processed = processed("explicit");
        processed.handedOut(A, 0);
        processed.handedOut(A, 1);
        processed.handedOut(A, 2);
        processed.mark(A, 0);  // 1 and 2 never finish
        Map<String, Object> hold = new RevokeCommitter(consumer, processed, 50).commitBeforeHandover(List.of(A));
        assertEquals(List.of(Map.of(A, new OffsetAndMetadata(1))), consumer.commits);  // never past record 1
        assertEquals(true, hold.get("timed_out"));
        assertTrue((Double) hold.get("waited_ms") >= 45, hold::toString);  // the wait's whole milliseconds
        assertEquals(false, hold.get("committed"));
        assertTrue(String.valueOf(hold.get("error")).contains("rebalancing"));
    }

    /** {@code mode}'s Processed, for a member that committed nothing. */
    private static Processed processed(String mode) {
        return new Processed(mode, tp -> Processed.OFFSET_UNKNOWN);
    }
}
