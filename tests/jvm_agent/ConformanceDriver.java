import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.rebalancelens.agent.InstrumentedConsumer;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * tests/agent/test_conformance.py's Java player (tests/support/jvm_drivers.py runs it): plays a conformance program
 * (tests/support/conformance.py writes it as JSON) on an InstrumentedConsumer, step by step as the Python player
 * plays it on consumer_agent's, and writes the agent id and what the application's listener saw.
 *
 * Arguments: bootstrap program.json out.json
 */
public final class ConformanceDriver {
    private static final Duration POLL = Duration.ofMillis(100);
    private static final long STEP_TIMEOUT_MS = 60_000;
    private static final CallLog LOG = new CallLog();

    private final String bootstrap;
    private final JsonNode program;
    private final InstrumentedConsumer<byte[], byte[]> consumer;
    private int asyncCommits;
    private long lastPoll = System.nanoTime();

    private ConformanceDriver(String bootstrap, JsonNode program) {
        this.bootstrap = bootstrap;
        this.program = program;
        Map<String, Object> config = new HashMap<>();
        for (String part : List.of("common", "java")) {
            JsonNode settings = program.path("config").path(part);
            settings.fieldNames().forEachRemaining(key -> config.put(key, settings.get(key).asText()));
        }
        config.put("key.deserializer", ByteArrayDeserializer.class);
        config.put("value.deserializer", ByteArrayDeserializer.class);
        this.consumer = new InstrumentedConsumer<>(config);
    }

    public static void main(String[] args) throws Exception {
        JsonNode program = new ObjectMapper().readTree(new File(args[1]));
        ConformanceDriver driver = new ConformanceDriver(args[0], program);
        for (JsonNode step : program.path("steps")) {
            driver.play(step);
        }
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("agent_id", driver.consumer.agentId());
        result.put("calls", LOG.calls());
        new ObjectMapper().writeValue(new File(args[2]), result);
    }

    private String topic(String logical) {
        return program.path("topics").path(logical).asText();
    }

    private void play(JsonNode step) throws InterruptedException {
        LOG.mark(Map.of("role", "", "callback", "step", "partitions", List.of(), "step", step.toString()));
        switch (step.path("do").asText()) {
            case "produce" -> produce(topic(step.path("topic").asText()), step.path("partition").asInt(),
                    step.path("count").asInt());
            case "subscribe" -> {
                List<String> topics = new ArrayList<>();
                step.path("topics").forEach(t -> topics.add(topic(t.asText())));
                consumer.subscribe(topics, LOG.listener("m"));
            }
            case "read" -> read(step.path("records").asInt());
            case "commit" -> commit(step.path("sync").asBoolean());
            case "stall" -> stall(step.path("ms").asLong());
            case "await" -> await(step.path("callbacks"), step.path("records").asInt());
            case "close" -> consumer.close();
            default -> throw new IllegalArgumentException("unknown step " + step);
        }
    }

    private void produce(String topic, int partition, int count) {
        Map<String, Object> config = Map.of("bootstrap.servers", bootstrap, "linger.ms", 5);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config, new ByteArraySerializer(),
                new ByteArraySerializer())) {
            for (int i = 0; i < count; i++) {
                byte[] value = (topic + "-" + partition + "-" + i).getBytes(StandardCharsets.UTF_8);
                producer.send(new ProducerRecord<>(topic, partition, null, value));
            }
            producer.flush();
        }
    }

    private ConsumerRecords<byte[], byte[]> poll() {
        ConsumerRecords<byte[], byte[]> batch = consumer.poll(POLL);
        lastPoll = System.nanoTime();
        return batch;
    }

    /** No poll until {@code ms} after the last: the steps since (a commit, a produce) are part of the gap. */
    private void stall(long ms) throws InterruptedException {
        long left = lastPoll + ms * 1_000_000 - System.nanoTime();
        if (left > 0) {
            Thread.sleep(left / 1_000_000, (int) (left % 1_000_000));
        }
    }

    private void read(int records) {
        int[] seen = {0};
        until("read " + records + " records", () -> {
            ConsumerRecords<byte[], byte[]> batch = poll();
            seen[0] += batch.count();
            return seen[0] >= records;
        });
    }

    private void commit(boolean sync) {
        if (sync) {
            consumer.commitSync();
            return;
        }
        int before = asyncCommits;
        consumer.commitAsync((offsets, error) -> asyncCommits++);
        until("the asynchronous commit's callback", () -> {
            poll();
            return asyncCommits > before;
        });
    }

    /** Poll until the listener made the given calls, in this order, and ``records`` records came, since the step
     *  began (as the Python player's await: closing before the reassigned partitions were read again left the
     *  Java stream without close()'s commit, a flaky difference of the driver's, not of the agents'). */
    private void await(JsonNode callbacks, int records) {
        int from = LOG.calls().size();
        int[] seen = {0};
        List<String> wanted = new ArrayList<>();
        callbacks.forEach(c -> wanted.add(c.asText()));
        until("the callbacks " + wanted + " and " + records + " records", () -> {
            seen[0] += poll().count();
            List<String> made = LOG.calls().subList(from, LOG.calls().size()).stream()
                    .map(call -> String.valueOf(call.get("callback"))).filter(wanted::contains).toList();
            return seen[0] >= records && made.size() >= wanted.size() && made.subList(0, wanted.size()).equals(wanted);
        });
    }

    private static void until(String what, BooleanSupplier done) {
        long deadline = System.currentTimeMillis() + STEP_TIMEOUT_MS;
        while (!done.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("timed out: " + what);
            }
        }
    }
}
