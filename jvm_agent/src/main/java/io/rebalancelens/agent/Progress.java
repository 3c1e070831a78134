package io.rebalancelens.agent;

import static io.rebalancelens.agent.Envelope.body;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * The poll path (consumer_agent/progress.py's job): what a poll hands out, first_fetch for newly assigned
 * partitions, and every progress interval a progress event per owned partition plus agent_health while drops or
 * errors are unreported. It runs after the client's poll only: a poll per record is about 3 us of CPU
 * (benchmarks/jvm_agent_throughput.py), so every 30 ns is 1%. In the default mode's steady state a poll costs a
 * volatile read (no clock: {@link TickTimer}) and, per partition it returned, one lookup of the agent's own
 * ({@link PartitionSlot}) and two field updates: what was processed since the last tick is derived at the tick.
 * Per record, only explicit mode tracks anything.
 */
final class Progress {
    /** The progress body's cap on partitions (the rest counted in {@code truncated}), as the Python agent. */
    static final int MAX_PARTITIONS = (int) AgentSpec.get().longConstant("progress_max_partitions");
    /** Why a tick came (the schema's progress cause): the timer, a first record, a poll after a long gap. */
    static final String TIMER = "timer";
    static final String FIRST_RECORD = "first_record";
    static final String POLL_GAP = "poll_gap";

    private final ConsumerView consumer;
    private final Membership member;
    private final Processed processed;
    private final Envelope envelope;
    private final TelemetryEmitter emitter;
    private final TickTimer timer;
    private final double intervalMs;
    private long lastTick = System.nanoTime();
    private boolean firstRecord;  // this poll handed out a newly assigned partition's first record

    /** {@code consumer}: what the tick reports (owned partitions, positions, commits, lags); {@code member}: the
     * poll path's per-partition slots and first fetches. */
    Progress(ConsumerView consumer, Membership member, Processed processed, Envelope envelope,
             TelemetryEmitter emitter, int intervalMs) {
        this.consumer = consumer;
        this.member = member;
        this.processed = processed;
        this.envelope = envelope;
        this.emitter = emitter;
        this.intervalMs = intervalMs;
        this.timer = new TickTimer(intervalMs * 1_000_000L, AgentSpec.get().doubleConstant("progress_gap_probe_share"));
    }

    /** After the client's poll returned {@code records}: a tick when the timer says so, when the poll handed out a
     * newly assigned partition's first record, or when it came a long gap after a probe (the agent spec's
     * progress_gap_probe_share). */
    void afterPoll(ConsumerRecords<?, ?> records) {
        if (KafkaClients.NEXT_OFFSETS) {
            handedOut(records);
        } else if (!records.isEmpty()) {
            handedOutBefore40(records);
        }
        int due = timer.due();
        if (due != TickTimer.IDLE || firstRecord) {
            long now = System.nanoTime();
            String cause = due == TickTimer.TICK ? TIMER : firstRecord ? FIRST_RECORD
                    : due == TickTimer.PROBE && timer.gapFound(now) ? POLL_GAP : null;
            if (cause != null) {
                tick(now, records, cause);
            }
        }
    }

    /** The consumer closed: no more ticks. */
    void stop() {
        timer.stop();
    }

    /** Hand-out counts and positions; first fetches and (explicit mode) the records in flight only while there is
     * something to see. Walks the next offsets (a small immutable map) rather than {@code records.partitions()}:
     * a HashMap key iterator scans the client's whole table, on every poll (JFR: twice the agent's samples). */
    @KafkaSince("4.0")
    private void handedOut(ConsumerRecords<?, ?> records) {
        Map<TopicPartition, OffsetAndMetadata> nextOffsets = records.nextOffsets();
        if (records.isEmpty() && nextOffsets.isEmpty()) {
            return;
        }
        int withRecords = 0;
        for (Map.Entry<TopicPartition, OffsetAndMetadata> next : nextOffsets.entrySet()) {
            PartitionSlot slot = member.slot(next.getKey());
            slot.position = next.getValue().offset();
            int handed = records.records(next.getKey()).size();
            slot.handedOut += handed;
            withRecords += handed > 0 ? 1 : 0;
        }
        if (withRecords < records.partitions().size()) {  // records without a next offset: an interceptor's own
            for (TopicPartition tp : records.partitions()) {
                if (!nextOffsets.containsKey(tp)) {
                    member.slot(tp).handedOut += records.records(tp).size();
                }
            }
        }
        if (processed.explicit || member.awaitsFirstFetch()) {
            firstFetchesAndInFlight(records);
        }
    }

    /** kafka-clients 3.x has no next offsets: each partition's position is one past the last record handed out. */
    private void handedOutBefore40(ConsumerRecords<?, ?> records) {
        for (TopicPartition tp : records.partitions()) {
            List<? extends ConsumerRecord<?, ?>> batch = records.records(tp);
            PartitionSlot slot = member.slot(tp);
            slot.position = batch.get(batch.size() - 1).offset() + 1;
            slot.handedOut += batch.size();
        }
        if (processed.explicit || member.awaitsFirstFetch()) {
            firstFetchesAndInFlight(records);
        }
    }

    private void firstFetchesAndInFlight(ConsumerRecords<?, ?> records) {
        for (TopicPartition tp : records.partitions()) {
            List<? extends ConsumerRecord<?, ?>> batch = records.records(tp);
            Long assignedAt = member.firstFetched(tp);
            if (assignedAt != null) {
                firstRecord = true;
                ConsumerRecord<?, ?> first = batch.get(0);
                envelope.emit("first_fetch", body("topic", tp.topic(), "partition", tp.partition(),
                        "offset", first.offset(), "since_assign_ms", (System.nanoTime() - assignedAt) / 1e6,
                        "timestamp_ms", first.timestamp() >= 0 ? first.timestamp() : null, "seen", true,
                        "window_ms", 0.0));
            }
            if (processed.explicit) {
                batch.forEach(record -> processed.handedOut(tp, record.offset()));
            }
        }
    }

    /** One progress event for the owned partitions ({@code unprocessed}: the poll just returned), then
     * agent_health if drops or errors are unreported. */
    private void tick(long now, ConsumerRecords<?, ?> unprocessed, String cause) {
        double sinceMs = (now - lastTick) / 1e6;
        lastTick = now;
        firstRecord = false;
        timer.restart();
        Map<TopicPartition, Long> counts = processed.takeCounts(member.slots(), unprocessed);
        member.dropReleased();
        List<Map<String, Object>> partitions = new ArrayList<>();
        int truncated = 0;
        for (TopicPartition tp : consumer.owned()) {
            if (partitions.size() >= MAX_PARTITIONS) {
                truncated++;
                continue;
            }
            long position = consumer.position(tp);
            // Asked only with a known position: for an unknown lag the client requests the end offset (and logs).
            OptionalLong lag = position >= 0 ? consumer.currentLag(tp) : OptionalLong.empty();
            partitions.add(body("topic", tp.topic(), "partition", tp.partition(), "position", position,
                    "last_processed_offset", processed.lastOffset(tp, position),
                    "committed_offset", consumer.committed(tp),
                    "processed", counts.getOrDefault(tp, 0L), "lag", lag.isPresent() ? lag.getAsLong() : null));
        }
        if (!partitions.isEmpty()) {
            envelope.emit("progress", body("interval_ms", sinceMs, "partitions", partitions,
                    "truncated", truncated, "cause", cause, "next_due_ms", intervalMs));
        }
        emitHealth();
    }

    /** agent_health, while drops or emitter errors are unreported (at each tick and on close). */
    void emitHealth() {
        if (!emitter.needsHealthReport()) {
            return;
        }
        long dropped = emitter.droppedTotal();
        long errors = emitter.errorsTotal();
        envelope.emit("agent_health", body("dropped_total", dropped,
                "dropped_since_last", Math.max(0, dropped - emitter.acknowledgedDropped()),
                "buffer_size", emitter.buffered(), "buffer_capacity", emitter.capacity,
                "emitter_errors_total", errors, "last_error", emitter.lastError()));
        emitter.healthReported(errors);
    }
}
