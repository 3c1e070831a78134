import io.rebalancelens.agent.InstrumentedConsumer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * tests/jvm_agent/test_progress_counts.py's application: one default-mode InstrumentedConsumer alone in its group
 * reads a pre-filled topic a record per poll (max.poll.records=1) with a progress tick every 5 ms, pausing past
 * the interval every few records so that ticks fall inside the stream (a tick whose own poll returned a record);
 * then it keeps polling, idle, for a while (ticks with every record
 * processed), and closes.
 *
 * Arguments: bootstrap topic group telemetry-topic records
 */
public final class ProgressDriver {
    private static final long IDLE_MS = 500;
    private static final long PAUSE_EVERY = 25;

    public static void main(String[] args) throws InterruptedException {
        String bootstrap = args[0], topic = args[1], group = args[2], telemetry = args[3];
        long records = Long.parseLong(args[4]);
        Map<String, Object> config = Map.of("bootstrap.servers", bootstrap, "group.id", group,
                "auto.offset.reset", "earliest", "max.poll.records", 1, "lens.telemetry.topic", telemetry,
                "lens.progress.interval.ms", 5,
                "key.deserializer", ByteArrayDeserializer.class, "value.deserializer", ByteArrayDeserializer.class);
        try (InstrumentedConsumer<byte[], byte[]> consumer = new InstrumentedConsumer<>(config)) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 120_000;
            for (long seen = 0; seen < records; ) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("read " + seen + " of " + records + " records in 120 s");
                }
                int count = consumer.poll(Duration.ofMillis(100)).count();
                seen += count;
                if (count > 0 && seen % PAUSE_EVERY == 0) {
                    Thread.sleep(20);  // well past the interval: the next poll, which returns a buffered record, ticks
                }
            }
            for (long idleUntil = System.currentTimeMillis() + IDLE_MS; System.currentTimeMillis() < idleUntil; ) {
                consumer.poll(Duration.ofMillis(10));
            }
        }
    }
}
