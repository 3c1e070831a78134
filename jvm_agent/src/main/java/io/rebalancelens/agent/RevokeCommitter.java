package io.rebalancelens.agent;

import static io.rebalancelens.agent.Envelope.body;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * Commit-on-revoke ({@code lens.commit.on.revoke=true}, KIP-957's case; consumer_agent/commit_on_revoke.py):
 * commit what was processed before a partition moves, so the next owner does not read it again.
 *
 * <p>The revoke callback runs on the polling thread, so no new record of the revoked partitions is handed out
 * while it holds the rebalance. With {@code lens.processing=explicit} it first waits, at most
 * {@code lens.commit.on.revoke.timeout.ms}, for the records still in flight on other threads to be marked; then
 * it commits the processed frontier synchronously (never past an unmarked record, so a timeout costs duplicates,
 * never losses). In the default mode the records of the previous poll are processed: the frontier is the
 * position. The outcome is the partitions_revoked event's {@code commit_on_revoke}; the commit itself is a
 * commit event with {@code in_revoke} true. close() commits the same frontier first ({@link #commitBeforeClose}).
 */
final class RevokeCommitter {
    private final ConsumerView consumer;
    private final Processed processed;
    private final long timeoutMs;

    /** {@code consumer}: positions, committed offsets and the instrumented synchronous commit. */
    RevokeCommitter(ConsumerView consumer, Processed processed, long timeoutMs) {
        this.consumer = consumer;
        this.processed = processed;
        this.timeoutMs = timeoutMs;
    }

    /** Wait (bounded) for in-flight work on {@code partitions}, commit its frontier; the hold's report. */
    Map<String, Object> commitBeforeHandover(Collection<TopicPartition> partitions) {
        long start = System.nanoTime();
        boolean drained = processed.awaitDrained(partitions, timeoutMs);
        double waitedMs = (System.nanoTime() - start) / 1e6;
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (TopicPartition tp : partitions) {
            long next = processed.frontier(tp, consumer.position(tp));
            if (next >= 0 && next != consumer.committed(tp)) {
                offsets.put(tp, new OffsetAndMetadata(next));
            }
        }
        String error = null;
        if (!offsets.isEmpty()) {
            try {
                consumer.commitSync(offsets);
            } catch (RuntimeException e) {  // the next owner re-reads; the host's revoke goes on as without us
                error = e.toString();
            }
        }
        return body("waited_ms", waitedMs, "timed_out", !drained, "committed", error == null, "error", error);
    }

    /**
     * Before close(): commit the owned partitions' processed frontier while the member is still in the group, as
     * the Python agent does (the agent spec's lens.commit.on.revoke). The revoke close() then runs finds nothing
     * left to commit; a commit that fails here is tried again there, its error on the partitions_revoked event.
     */
    void commitBeforeClose() {
        if (!consumer.owned().isEmpty()) {
            commitBeforeHandover(new ArrayList<>(consumer.owned()));
        }
    }
}
