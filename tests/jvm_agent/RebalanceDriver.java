import com.fasterxml.jackson.databind.ObjectMapper;
import io.rebalancelens.agent.InstrumentedConsumer;
import java.io.File;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.HashSet;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * tests/jvm_agent/test_contract.py's consumer application (tests/support/jvm_drivers.py runs it): members a and
 * b of one group through a rebalance (b joins, b leaves), with commits, an enforced rebalance and a client error,
 * on InstrumentedConsumer or, with "plain", on KafkaConsumer. Member c (agent only) has a one-event buffer, to
 * drop telemetry and report it. Writes what the application's listeners saw, and the agent ids, as JSON.
 *
 * Arguments: bootstrap topic group telemetry-topic group-protocol (classic|consumer) mode (agent|plain) out.json
 */
public final class RebalanceDriver {
    static final long MARKED_BELOW = 10;
    private static final Duration POLL = Duration.ofMillis(100);
    private static final long STEP_TIMEOUT_MS = 60_000;
    private static final CallLog LOG = new CallLog();

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2], telemetry = args[3], protocol = args[4];
        boolean plain = "plain".equals(args[5]);
        Map<String, Object> result = new LinkedHashMap<>();
        Map<String, String> agents = new LinkedHashMap<>();

        Consumer<byte[], byte[]> a = consumer(bootstrap, group, telemetry, protocol, plain, "a", Map.of());
        a.subscribe(List.of(topic), LOG.listener("a"));
        // a reads every partition before committing, so that b, which has no reset policy, starts from a's commits.
        Set<Integer> read = new HashSet<>();
        until("a owns and has read every partition", () -> {
            read.addAll(poll(a));
            return LOG.owned("a") == 4 && read.size() == 4;
        });
        a.commitSync();
        a.commitAsync();

        // b processes on "other threads": it marks only the records below offset MARKED_BELOW as processed.
        Consumer<byte[], byte[]> b = consumer(bootstrap, group, telemetry, protocol, plain, "b",
                Map.of("auto.offset.reset", "none", "lens.processing", "explicit"));
        b.subscribe(List.of(topic), LOG.listener("b"));
        until("a and b share the partitions", () -> {
            poll(a);
            poll(b);
            return LOG.owned("a") > 0 && LOG.owned("b") > 0 && LOG.owned("a") + LOG.owned("b") == 4;
        });
        a.commitSync();
        b.commitSync();

        // A client error the application sees from poll: b's position past the end, with no reset policy.
        TopicPartition moved = b.assignment().iterator().next();
        b.seek(moved, 1_000_000_000L);
        until("b's poll refuses the position", () -> {
            try {
                b.poll(POLL);
                poll(a);
                return false;
            } catch (OffsetOutOfRangeException expected) {
                result.put("client_error", expected.getClass().getName());
                return true;
            }
        });
        b.seekToBeginning(List.of(moved));

        if ("classic".equals(protocol)) {  // the consumer protocol does not support enforceRebalance (KIP-848)
            a.enforceRebalance("driver asks");
        }
        long end = System.currentTimeMillis() + 3_000;  // both read on (an enforced rebalance settles) for 3 s
        until("the group settles", () -> {
            poll(a);
            poll(b);
            return System.currentTimeMillis() > end && LOG.owned("a") > 0 && LOG.owned("b") > 0
                    && LOG.owned("a") + LOG.owned("b") == 4;
        });

        agents.put("b", agentId(b));
        b.close();
        until("a owns every partition again", () -> {
            poll(a);
            return LOG.owned("a") == 4;
        });
        a.commitSync();
        agents.put("a", agentId(a));
        a.close();

        if (!plain) {
            Consumer<byte[], byte[]> c = consumer(bootstrap, group + "-c", telemetry, protocol, false, "c",
                    Map.of("lens.buffer.max.events", "1"));
            c.subscribe(List.of(topic));
            until("c owns every partition", () -> {
                poll(c);
                return c.assignment().size() == 4;
            });
            agents.put("c", agentId(c));
            c.close();
        }
        result.put("calls", LOG.calls());
        result.put("agents", agents);
        new ObjectMapper().writeValue(new File(args[6]), result);
    }

    private static Consumer<byte[], byte[]> consumer(String bootstrap, String group, String telemetry, String protocol,
                                                     boolean plain, String role, Map<String, Object> extra) {
        Map<String, Object> config = new HashMap<>(Map.of("bootstrap.servers", bootstrap, "group.id", group,
                "client.id", role, "group.protocol", protocol, "auto.offset.reset", "earliest",
                "enable.auto.commit", "false", "key.deserializer", ByteArrayDeserializer.class,
                "value.deserializer", ByteArrayDeserializer.class));
        config.putAll(extra);
        if (plain) {
            config.keySet().removeIf(key -> key.startsWith("lens."));
            return new KafkaConsumer<>(config);
        }
        config.put("lens.telemetry.topic", telemetry);
        config.put("lens.progress.interval.ms", "200");
        return new InstrumentedConsumer<>(config);
    }

    private static String agentId(Consumer<?, ?> consumer) {
        return consumer instanceof InstrumentedConsumer<?, ?> agent ? agent.agentId() : null;
    }

    /** One poll, its records "processed"; the partitions it returned records of. */
    private static Set<Integer> poll(Consumer<byte[], byte[]> consumer) {
        Set<Integer> partitions = new HashSet<>();
        for (ConsumerRecord<byte[], byte[]> record : consumer.poll(POLL)) {
            partitions.add(record.partition());
            if (consumer instanceof InstrumentedConsumer<?, ?> agent && record.offset() < MARKED_BELOW) {
                agent.markProcessed(record);
            }
        }
        return partitions;
    }

    /** Poll (in {@code done}) until it holds; then mark the step's end among the listener calls. */
    private static void until(String what, BooleanSupplier done) {
        long deadline = System.currentTimeMillis() + STEP_TIMEOUT_MS;
        while (!done.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("timed out: " + what);
            }
        }
        LOG.mark(Map.of("role", "", "callback", "step", "partitions", List.of(), "step", what));
    }
}
