import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * tests/jvm_agent/test_rebalance_timing.py's member: one consumer of a group that prints, as JSON lines, each
 * listener call and every change of its client's own rebalance metrics (consumer-coordinator-metrics
 * rebalance-total and rebalance-latency-total, read at each listener call and after each poll), the truth the
 * agent's rebalance_timing is checked against. It closes when the stop file appears.
 *
 * Arguments: bootstrap topic group group-protocol assignor(range|cooperative) mode(plain|library) client-id
 * telemetry-topic stop-file. plain: a KafkaConsumer (run it with -javaagent to have it instrumented); library:
 * io.rebalancelens.agent.InstrumentedConsumer, reached by reflection so that plain needs only kafka-clients.
 */
public final class TimedMember {
    private static Consumer<String, String> consumer;
    private static double rebalances;

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2], protocol = args[3];
        boolean cooperative = "cooperative".equals(args[4]);
        boolean library = "library".equals(args[5]);
        Path stop = Path.of(args[8]);
        Map<String, Object> config = new HashMap<>(Map.of("bootstrap.servers", bootstrap, "group.id", group,
                "group.protocol", protocol, "auto.offset.reset", "earliest", "enable.auto.commit", false,
                "client.id", args[6], "key.deserializer", StringDeserializer.class,
                "value.deserializer", StringDeserializer.class));
        if ("classic".equals(protocol)) {
            config.put("partition.assignment.strategy", cooperative
                    ? "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"
                    : "org.apache.kafka.clients.consumer.RangeAssignor");
        }
        consumer = library ? library(config, args[7]) : new KafkaConsumer<>(config);
        try {
            consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    call("assigned", partitions);
                }

                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    call("revoked", partitions);
                }

                @Override
                public void onPartitionsLost(Collection<TopicPartition> partitions) {
                    call("lost", partitions);
                }
            });
            while (!Files.exists(stop)) {
                if (!consumer.poll(Duration.ofMillis(50)).isEmpty()) {
                    consumer.commitSync();
                }
                metrics();
            }
        } finally {
            consumer.close();
        }
        System.out.println("{\"callback\": \"closed\"}");
    }

    @SuppressWarnings("unchecked")
    private static Consumer<String, String> library(Map<String, Object> config, String telemetry) throws Exception {
        config.put("lens.telemetry.topic", telemetry);
        return (Consumer<String, String>) Class.forName("io.rebalancelens.agent.InstrumentedConsumer")
                .getConstructor(Map.class).newInstance(config);
    }

    private static void call(String callback, Collection<TopicPartition> partitions) {
        long at = System.currentTimeMillis();
        metrics();
        String numbers = partitions.stream().map(TopicPartition::partition).sorted().map(String::valueOf)
                .collect(Collectors.joining(", "));
        System.out.println("{\"callback\": \"" + callback + "\", \"partitions\": [" + numbers + "], \"at_ms\": "
                + at + "}");
    }

    /** A line when the client's rebalance count moved: its totals now. */
    private static void metrics() {
        double count = 0, latency = 0;
        for (Map.Entry<MetricName, ? extends Metric> m : consumer.metrics().entrySet()) {
            if (m.getKey().group().equals("consumer-coordinator-metrics")) {
                if (m.getKey().name().equals("rebalance-total")) {
                    count = ((Number) m.getValue().metricValue()).doubleValue();
                } else if (m.getKey().name().equals("rebalance-latency-total")) {
                    latency = ((Number) m.getValue().metricValue()).doubleValue();
                }
            }
        }
        if (count != rebalances) {
            rebalances = count;
            System.out.println("{\"callback\": \"metrics\", \"rebalances\": " + (long) count + ", \"latency_ms\": "
                    + latency + ", \"at_ms\": " + System.currentTimeMillis() + "}");
        }
    }
}
