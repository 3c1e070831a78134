import com.fasterxml.jackson.databind.ObjectMapper;
import io.rebalancelens.agent.InstrumentedConsumer;
import java.io.File;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * tests/jvm_agent/test_enforce_rebalance.py's application (tests/support/jvm_drivers.py runs it): members a, b and c of one
 * group join in that order (a leads a classic group: its first member stays leader while it rejoins), read one
 * topic, and once the group is stable the caller calls enforceRebalance twice, the group polled and stable between.
 * Writes the agent ids, each application listener's calls, and per call its window (wall-clock ms) and every
 * member's generation (classic) or member epoch (consumer) before and after, as the client has them.
 *
 * Arguments: bootstrap topic group telemetry-topic protocol (range|cooperative-sticky|consumer) caller (a|b|c)
 * partitions out.json
 */
public final class EnforceDriver {
    private static final List<String> ROLES = List.of("a", "b", "c");
    private static final Duration POLL = Duration.ofMillis(50);
    private static final long STEP_TIMEOUT_MS = 60_000;
    /** Long enough for a classic round (300 ms heartbeats) and for several KIP-848 heartbeats (the broker's 1 s). */
    private static final long WINDOW_MS = 3_000;
    private static final CallLog LOG = new CallLog();
    private static final Map<String, InstrumentedConsumer<byte[], byte[]>> MEMBERS = new LinkedHashMap<>();

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2], telemetry = args[3], protocol = args[4];
        String caller = args[5];
        int partitions = Integer.parseInt(args[6]);
        for (String role : ROLES) {
            InstrumentedConsumer<byte[], byte[]> member = new InstrumentedConsumer<>(config(bootstrap, group, telemetry,
                    protocol, role));
            MEMBERS.put(role, member);
            member.subscribe(List.of(topic), LOG.listener(role));
            pollUntil(() -> shared(partitions));
        }
        long stableUntil = System.currentTimeMillis() + 1_000;
        pollUntil(() -> System.currentTimeMillis() > stableUntil && shared(partitions));

        List<Map<String, Object>> windows = new ArrayList<>();
        for (String reason : List.of("first", "second")) {
            Map<String, Integer> before = generations();
            long start = System.currentTimeMillis();
            MEMBERS.get(caller).enforceRebalance(reason);
            LOG.mark(Map.of("role", caller, "callback", "enforce", "partitions", List.of(), "reason", reason));
            long end = start + WINDOW_MS;
            pollUntil(() -> System.currentTimeMillis() > end && shared(partitions));
            windows.add(Map.of("reason", reason, "start_ms", start, "end_ms", System.currentTimeMillis(),
                    "generation_before", before, "generation_after", generations()));
        }
        Map<String, String> agents = new LinkedHashMap<>();
        MEMBERS.forEach((role, member) -> agents.put(role, member.agentId()));
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("agents", agents);
        result.put("calls", LOG.calls());
        result.put("windows", windows);
        for (InstrumentedConsumer<byte[], byte[]> member : MEMBERS.values()) {
            member.close();
        }
        new ObjectMapper().writeValue(new File(args[7]), result);
    }

    private static Map<String, Object> config(String bootstrap, String group, String telemetry, String protocol,
                                              String role) {
        Map<String, Object> config = new HashMap<>(Map.of("bootstrap.servers", bootstrap, "group.id", group,
                "client.id", role, "auto.offset.reset", "earliest", "enable.auto.commit", "false",
                "key.deserializer", ByteArrayDeserializer.class, "value.deserializer", ByteArrayDeserializer.class,
                "lens.telemetry.topic", telemetry, "lens.progress.interval.ms", "200"));
        if ("consumer".equals(protocol)) {
            config.put("group.protocol", "consumer");
        } else {
            config.put("partition.assignment.strategy", "range".equals(protocol)
                    ? "org.apache.kafka.clients.consumer.RangeAssignor"
                    : "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");
            config.put("session.timeout.ms", "6000");
            config.put("heartbeat.interval.ms", "300");
        }
        return config;
    }

    /** Every member owns some partitions and together they own all: the group is assigned. */
    private static boolean shared(int partitions) {
        int total = 0;
        for (String role : MEMBERS.keySet()) {
            int owned = LOG.owned(role);
            if (owned == 0) {
                return false;
            }
            total += owned;
        }
        return total == partitions;
    }

    private static Map<String, Integer> generations() {
        Map<String, Integer> generations = new LinkedHashMap<>();
        MEMBERS.forEach((role, member) -> generations.put(role, member.groupMetadata().generationId()));
        return generations;
    }

    /** Poll every member in turn until {@code done} holds. */
    private static void pollUntil(java.util.function.BooleanSupplier done) {
        long deadline = System.currentTimeMillis() + STEP_TIMEOUT_MS;
        do {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("timed out; listener calls: " + LOG.calls());
            }
            MEMBERS.values().forEach(member -> member.poll(POLL));
        } while (!done.getAsBoolean());
    }
}
