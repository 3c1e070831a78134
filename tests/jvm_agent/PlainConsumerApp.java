import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * tests/jvm_agent/test_javaagent.py's application: a plain KafkaConsumer that knows nothing of rebalance-lens
 * (run with java's single-file launcher, with or without -javaagent). It prints one JSON line per listener call
 * and per non-empty poll (with the time), commits after each, and closes when the stop file appears.
 *
 * Arguments: bootstrap topic group group-protocol (classic|consumer) stop-file
 */
public final class PlainConsumerApp {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2], protocol = args[3];
        Path stop = Path.of(args[4]);
        Map<String, Object> config = Map.of("bootstrap.servers", bootstrap, "group.id", group,
                "group.protocol", protocol, "auto.offset.reset", "earliest", "enable.auto.commit", false,
                "key.deserializer", StringDeserializer.class, "value.deserializer", StringDeserializer.class);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(config)) {
            consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    print("assigned", partitions);
                }

                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    print("revoked", partitions);
                }

                @Override
                public void onPartitionsLost(Collection<TopicPartition> partitions) {
                    print("lost", partitions);
                }
            });
            while (!Files.exists(stop)) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(100));
                if (!records.isEmpty()) {
                    System.out.println("{\"callback\": \"records\", \"count\": " + records.count()
                            + ", \"at_ms\": " + System.currentTimeMillis() + "}");
                    consumer.commitSync();
                }
            }
        }
        System.out.println("{\"callback\": \"closed\"}");
    }

    private static void print(String callback, Collection<TopicPartition> partitions) {
        String numbers = partitions.stream().map(TopicPartition::partition).sorted().map(String::valueOf)
                .collect(Collectors.joining(", "));
        System.out.println("{\"callback\": \"" + callback + "\", \"partitions\": [" + numbers + "], \"at_ms\": "
                + System.currentTimeMillis() + "}");
    }
}
