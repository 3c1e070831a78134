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
    static final class Slot {
        private volatile Map<TopicPartition, OffsetAndMetadata> committed;

        /** The offsets committed since the last call, or null; cleared. */
        Map<TopicPartition, OffsetAndMetadata> take() {
            Map<TopicPartition, OffsetAndMetadata> last = committed;
            committed = null;
            return last;
        }
    }

    /** Built by the client (reflection, no arguments), inside {@link #around}. */
    public CommitWitness() {
        Slot agents = CONSTRUCTING.get();
        this.slot = agents != null ? agents : new Slot();
    }

    /** Build the consumer ({@code construct}) with this interceptor before {@code config}'s own; its slot. */
    static Slot around(Map<String, Object> config, Runnable construct) {
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
        Slot slot = new Slot();
        CONSTRUCTING.set(slot);
        try {
            construct.run();
        } finally {
            CONSTRUCTING.remove();
        }
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
