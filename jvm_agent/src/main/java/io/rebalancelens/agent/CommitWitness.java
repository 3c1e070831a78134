package io.rebalancelens.agent;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerInterceptor;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * The offsets a no-argument {@code commitSync()} really committed. The client computes them itself (every
 * position it holds, some no poll has shown yet) and tells only its interceptors, right before commitSync
 * returns on the application's thread (a successful synchronous commit is the last to report before it returns).
 * The agent puts this interceptor first in {@code interceptor.classes}; the client builds it inside the
 * KafkaConsumer constructor, on the thread that holds the agent's {@link Slot}. Records pass through untouched.
 */
public final class CommitWitness implements ConsumerInterceptor<Object, Object> {
    private static final ThreadLocal<Slot> CONSTRUCTING = new ThreadLocal<>();
    private final Slot slot;

    /** Where one consumer's witness leaves the offsets of its last successful commit. */
    public static final class Slot {
        /** Set while InstrumentedConsumer builds its own client (which the javaagent then leaves alone). */
        private final boolean library;
        private volatile Map<TopicPartition, OffsetAndMetadata> committed;

        private Slot(boolean library) {
            this.library = library;
        }

        /** The offsets committed since the last call, or null; cleared. */
        Map<TopicPartition, OffsetAndMetadata> take() {
            Map<TopicPartition, OffsetAndMetadata> last = committed;
            committed = null;
            return last;
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
        if (app instanceof String names && !names.isBlank()) {
            classes.addAll(Arrays.stream(names.split(",")).map(String::trim).toList());
        } else if (app instanceof List<?> list) {
            classes.addAll(list);
        } else if (app instanceof Class<?> type) {
            classes.add(type);
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
        slot.committed = new HashMap<>(offsets);
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
