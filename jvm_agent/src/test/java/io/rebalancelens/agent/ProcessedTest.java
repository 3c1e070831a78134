package io.rebalancelens.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/** The processed-position rules of the three modes (consumer_agent/processed.py's and inflight.py's). */
class ProcessedTest {
    private static final TopicPartition TP = new TopicPartition("orders", 0);
    private static final long UNKNOWN = Processed.OFFSET_UNKNOWN;

    @Test
    void theDefaultModeFollowsThePosition() {
        Processed processed = processed("on_next_poll");
        assertEquals(10, processed.frontier(TP, 10));
        assertEquals(9, processed.lastOffset(TP, 10));
        assertEquals(UNKNOWN, processed.frontier(TP, UNKNOWN));
        assertEquals(UNKNOWN, processed.lastOffset(TP, 0));  // nothing read yet
        processed.mark(TP, 3);  // ignored: the next poll counts it
        assertTrue(processed.awaitDrained(List.of(TP), 0));
    }

    @Test
    void committedModeFollowsTheLastCommitNotThePosition() {
        long[] committed = {UNKNOWN};
        Processed processed = new Processed("committed", tp -> committed[0]);
        assertEquals(UNKNOWN, processed.frontier(TP, 40));  // handed out, nothing committed: nothing known processed
        assertEquals(UNKNOWN, processed.lastOffset(TP, 40));
        PartitionSlot slot = new PartitionSlot();
        assertEquals(Map.of(TP, 0L), processed.takeCounts(Map.of(TP, slot), records(0)));
        committed[0] = 12;
        assertEquals(12, processed.frontier(TP, 40));
        assertEquals(11, processed.lastOffset(TP, 40));
        assertEquals(Map.of(TP, 0L), processed.takeCounts(Map.of(TP, slot), records(0)));  // from unknown: no count
        committed[0] = 30;
        assertEquals(Map.of(TP, 18L), processed.takeCounts(Map.of(TP, slot), records(0)));
    }

    @Test
    void explicitModeStopsAtTheLowestUnfinishedRecord() {
        Processed processed = processed("explicit");
        for (long offset = 5; offset <= 7; offset++) {
            processed.handedOut(TP, offset);
        }
        assertEquals(5, processed.frontier(TP, 8));  // none processed: a commit may say 5, not the position
        assertEquals(4, processed.lastOffset(TP, 8));
        processed.mark(TP, 7);  // out of order: 5 and 6 still running
        assertEquals(5, processed.frontier(TP, 8));
        assertEquals(4, processed.lastOffset(TP, 8));
        assertFalse(processed.awaitDrained(List.of(TP), 20));
        processed.mark(TP, 5);
        processed.mark(TP, 6);
        assertEquals(8, processed.frontier(TP, 8));
        assertTrue(processed.awaitDrained(List.of(TP), 20));
        processed.forget(List.of(TP));
        processed.mark(TP, 9);  // not handed out (or revoked since): ignored
        assertEquals(UNKNOWN, processed.frontier(TP, 10));
    }

    @Test
    void aMarkFromAnotherThreadEndsTheWait() throws InterruptedException {
        Processed processed = processed("explicit");
        processed.handedOut(TP, 0);
        Thread worker = new Thread(() -> {
            sleep(50);
            processed.mark(TP, 0);
        });
        worker.start();
        assertTrue(processed.awaitDrained(List.of(TP), 10_000));
        worker.join();
    }

    @Test
    void theDefaultModeCountsWhatWasHandedOutBeforeTheLastPoll() {
        Processed processed = processed("on_next_poll");
        PartitionSlot slot = new PartitionSlot();
        slot.handedOut = 12;  // 5 of them by the poll that just returned: processed by the next one
        ConsumerRecords<byte[], byte[]> last = records(5);
        assertEquals(Map.of(TP, 7L), processed.takeCounts(Map.of(TP, slot), last));
        slot.handedOut = 15;
        assertEquals(Map.of(TP, 8L), processed.takeCounts(Map.of(TP, slot), records(0)));
    }

    @Test
    void explicitModeCountsTheMarks() {
        Processed processed = processed("explicit");
        processed.handedOut(TP, 0);
        processed.handedOut(TP, 1);
        processed.mark(TP, 1);
        assertEquals(Map.of(TP, 1L), processed.takeCounts(Map.of(), records(0)));
        assertEquals(Map.of(), processed.takeCounts(Map.of(), records(0)));
    }

    private static ConsumerRecords<byte[], byte[]> records(int count) {
        List<ConsumerRecord<byte[], byte[]>> batch = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            batch.add(new ConsumerRecord<>(TP.topic(), TP.partition(), i, null, null));
        }
        return count == 0 ? ConsumerRecords.empty()
                : new ConsumerRecords<>(Map.of(TP, batch), Map.of(TP, new OffsetAndMetadata(count)));
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** {@code mode}'s Processed, for a member that committed nothing. */
    private static Processed processed(String mode) {
        return new Processed(mode, tp -> Processed.OFFSET_UNKNOWN);
    }
}
