package io.rebalancelens.agent;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerInterceptor;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * Every commit the client really made, as its interceptors hear of it: the application's (a no-argument
 * {@code commitSync()} commits every position the client holds, some no poll has shown yet) and the client's own
 * auto commits ({@code enable.auto.commit}: from its poll, right before a rebalance's revoke callback, at close),
 * which nothing else reports, in both consumer implementations. The classic client calls {@code onCommit} on the
 * thread that completes the request (the application's or its heartbeat thread), the async one on the application's
 * thread at its next poll or commit; this interceptor only queues the offsets ({@link Slot}), and the agent reads
 * them on the application's thread ({@link CommitLedger}). The agent puts it first in {@code interceptor.classes};
 * the client builds it inside the KafkaConsumer constructor, on the thread that holds the agent's Slot. Records
 * pass through untouched.
 */
public final class CommitWitness implements ConsumerInterceptor<Object, Object> {
    private static final ThreadLocal<Slot> CONSTRUCTING = new ThreadLocal<>();
    private final Slot slot;

    /** Where one consumer's witness leaves the offsets of each successful commit, oldest first. */
    public static final class Slot {
        /** Set while InstrumentedConsumer builds its own client (which the javaagent then leaves alone). */
        private final boolean library;
        private final ConcurrentLinkedQueue<Map<TopicPartition, OffsetAndMetadata>> committed =
                new ConcurrentLinkedQueue<>();

        private Slot(boolean library) {
            this.library = library;
        }

        /** Whether a commit was witnessed since the last {@link #drain} (a volatile read: the poll path asks). */
        boolean pending() {
            return !committed.isEmpty();
        }

        /** The commits witnessed since the last call, oldest first; cleared. */
        List<Map<TopicPartition, OffsetAndMetadata>> drain() {
            List<Map<TopicPartition, OffsetAndMetadata>> out = new ArrayList<>();
            for (Map<TopicPartition, OffsetAndMetadata> next = committed.poll(); next != null;
                 next = committed.poll()) {
                out.add(next);
            }
            return out;
        }
    }

    /** Built by the client (reflection, no arguments), inside {@link #around} or {@link #begin}. */
    public CommitWitness() {
        Slot agents = CONSTRUCTING.get();
        this.slot = agents != null ? agents : new Slot(false);
    }

    /** Build the consumer ({@code construct}) with this interceptor before {@code config}'s own; its slot. */
    static Slot around(Map<String, Object> config, Runnable construct) {
        Slot slot = begin(config, true);
        try {
            construct.run();
        } finally {
            CONSTRUCTING.remove();
        }
        return slot;
    }

    /**
     * The javaagent's half of {@link #around}, for a KafkaConsumer the application is constructing on this thread:
     * {@code config} gets the interceptor; null (and nothing changed) when the library itself is building it.
     * {@link #end} after the constructor; a constructor that threw leaves a slot the next call replaces.
     */
    public static Slot begin(Map<String, Object> config) {
        Slot current = CONSTRUCTING.get();
        return current != null && current.library ? null : begin(config, false);
    }

    /** The consumer {@link #begin} prepared is built (or failed). */
    public static void end() {
        CONSTRUCTING.remove();
    }

    private static Slot begin(Map<String, Object> config, boolean library) {
        Object app = config.get("interceptor.classes");
        List<Object> classes = new ArrayList<>(List.of(CommitWitness.class));
        if (app instanceof String && !((String) app).isBlank()) {
            classes.addAll(Arrays.stream(((String) app).split(",")).map(String::trim).collect(Collectors.toList()));
        } else if (app instanceof List<?>) {
            classes.addAll((List<?>) app);
        } else if (app instanceof Class<?>) {
            classes.add(app);
        }
        config.put("interceptor.classes", classes);
        Slot slot = new Slot(library);
        CONSTRUCTING.set(slot);
        return slot;
    }

    @Override
    public ConsumerRecords<Object, Object> onConsume(ConsumerRecords<Object, Object> records) {
        return records;
    }

    @Override
    public void onCommit(Map<TopicPartition, OffsetAndMetadata> offsets) {
        slot.committed.add(new HashMap<>(offsets));
    }

    @Override
    public void close() {
        // holds nothing
    }

    @Override
    public void configure(Map<String, ?> configs) {
        // the agent wires it, not the client config
    }
}
