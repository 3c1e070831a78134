import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.rebalancelens.agent.InstrumentedConsumer;
import io.rebalancelens.scenarios.TruthWriter;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;

/**
 * One scenario member on the JVM: lens_scenarios/member.py's application loop around the Java client, with
 * jvm_agent's InstrumentedConsumer (or, for a member declared {@code agent: false}, the plain KafkaConsumer).
 *
 * <p>Started by the fleet as {@code java -cp <this class>:<agent classpath> JavaMember '<json spec>'} with the spec
 * the Python member gets (its config already in the Java client's words: lens_scenarios/java_member.py). Same
 * stdin commands, same stdout lines, same truth log (lens_scenarios/truth_log.py's three files, byte for byte in
 * format, by the Java members' one writer: java/io/rebalancelens/scenarios/TruthWriter.java), so the fleet, the
 * timeline and the ground truth cannot tell the two apart. System.nanoTime is
 * CLOCK_MONOTONIC on Linux, the clock Python's time.monotonic_ns reads, so both runtimes' times compare.
 */
public final class JavaMember {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration POLL_TIMEOUT = Duration.ofMillis(100);
    private static final long REPORT_EVERY_NS = 500_000_000L;

    private final JsonNode spec;
    private final boolean agent;
    private final TruthWriter truth;
    private final Consumer<String, String> consumer;
    private final LinkedBlockingQueue<JsonNode> inbox = new LinkedBlockingQueue<>();
    private final Set<TopicPartition> assigned = new HashSet<>();
    /** The next offset of each partition this process read: all processed, as the loop processes before it polls. */
    private final Map<TopicPartition, OffsetAndMetadata> frontier = new HashMap<>();
    private long delivered;
    private long uncommitted;
    private boolean stopping;
    private boolean quiesced;

    private JavaMember(JsonNode spec) throws IOException {
        this.spec = spec;
        this.agent = spec.path("agent").asBoolean(true);
        List<String> topics = strings(spec.get("topics"));
        this.truth = new TruthWriter(Path.of(spec.get("run_dir").asText()), spec.get("member").asText(),
                spec.get("process").asText(), topics, agent, spec.get("config").path("group.protocol").asText(null));
        Map<String, Object> config = JSON.convertValue(spec.get("config"), JSON.getTypeFactory()
                .constructMapType(LinkedHashMap.class, String.class, Object.class));
        this.consumer = agent ? new InstrumentedConsumer<>(config) : new KafkaConsumer<>(config);
    }

    private static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(node -> out.add(node.asText()));
        return out;
    }

    private static void say(Object... fields) {
        Map<String, Object> line = new LinkedHashMap<>();
        for (int i = 0; i < fields.length; i += 2) {
            line.put((String) fields[i], fields[i + 1]);
        }
        try {
            synchronized (System.out) {
                System.out.println(JSON.writeValueAsString(line));
                System.out.flush();
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The callbacks record (and, committing on revoke, commit what was processed); the client does the assign. */
    private final class Listener implements ConsumerRebalanceListener {
        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            assigned.addAll(partitions);
            callback("assign", partitions);
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            if ("revoke".equals(spec.get("commit").asText())) {
                commitRevoked(partitions);  // the Java agent has no lens.commit.on.revoke yet: the application's own
            }
            assigned.removeAll(partitions);
            callback("revoke", partitions);
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            assigned.removeAll(partitions);
            callback("lost", partitions);
        }
    }

    private void commitRevoked(Collection<TopicPartition> partitions) {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        partitions.forEach(tp -> {
            OffsetAndMetadata next = frontier.get(tp);
            if (next != null) {
                offsets.put(tp, next);
            }
        });
        if (!offsets.isEmpty()) {
            try {
                consumer.commitSync(offsets);
            } catch (KafkaException e) {
                say("ev", "commit_failed", "error", String.valueOf(e));
            }
        }
    }

    private void callback(String kind, Collection<TopicPartition> partitions) {
        String memberId = consumer.groupMetadata().memberId();
        truth.event(kind, partitions, memberId == null || memberId.isEmpty() ? null : memberId);
        say("ev", kind, "partitions", partitions.size(), "assigned", assigned.size(), "delivered", delivered);
    }

    private void subscribe(List<String> topics) {
        consumer.subscribe(topics, new Listener());
    }

    private void handle(JsonNode command) throws InterruptedException {
        String cmd = command.get("cmd").asText();
        switch (cmd) {
            case "stop" -> stopping = true;
            case "quiesce" -> quiesced = true;
            case "stall" -> {
                // processing one record takes longer than max.poll.interval.ms: no poll meanwhile
                truth.event("stall", List.of(), null);
                Thread.sleep((long) (command.get("seconds").asDouble() * 1000));
            }
            case "subscribe" -> {
                truth.event("subscribe", List.of(), null);
                subscribe(strings(command.get("topics")));
            }
            case "enforce" -> {
                truth.event("enforce", List.of(), null);
                consumer.enforceRebalance(command.path("reason").asText("scenario"));
            }
            default -> { }
        }
        say("ev", "done", "cmd", cmd);
    }

    private void commit() {
        try {
            consumer.commitSync();
        } catch (KafkaException e) {
            // commits can fail around a rebalance: the uncommitted records are then duplicates by design
            say("ev", "commit_failed", "error", String.valueOf(e));
        }
    }

    private void run() throws InterruptedException {
        truth.event("start", List.of(), null);
        subscribe(strings(spec.get("subscribe")));
        say("ev", "started");
        double processingMs = spec.get("processing_ms").asDouble();
        boolean batchCommits = List.of("batch", "revoke").contains(spec.get("commit").asText());
        long commitBatch = spec.get("commit_batch_records").asLong();
        long lastReport = 0;
        while (!stopping) {
            for (JsonNode command = inbox.poll(); command != null; command = inbox.poll()) {
                handle(command);
            }
            if (stopping) {
                break;
            }
            if (quiesced) {
                Thread.sleep(POLL_TIMEOUT.toMillis());
                continue;
            }
            ConsumerRecords<String, String> records;
            try {
                records = consumer.poll(POLL_TIMEOUT);
            } catch (KafkaException e) {
                say("ev", "client_error", "error", String.valueOf(e), "code", -1);
                continue;
            }
            List<TruthWriter.Delivery> batch = new ArrayList<>(records.count());
            for (ConsumerRecord<String, String> r : records) {
                batch.add(new TruthWriter.Delivery(r.topic(), r.partition(), r.offset(), r.value(), r.timestamp()));
            }
            int rows = truth.records(batch);
            delivered += rows;
            if (rows > 0) {
                for (ConsumerRecord<String, String> r : records) {
                    frontier.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                long sleepNs = (long) (processingMs * 1_000_000 * rows);
                TimeUnit.NANOSECONDS.sleep(sleepNs);
                uncommitted += rows;
            }
            if (batchCommits && uncommitted >= commitBatch) {
                commit();
                uncommitted = 0;
            }
            long now = System.nanoTime();
            if (now - lastReport >= REPORT_EVERY_NS) {
                say("ev", "progress", "assigned", assigned.size(), "delivered", delivered);
                lastReport = now;
            }
        }
        truth.event("closing", List.of(), null);
        consumer.close();
        truth.event("exit", List.of(), null);
        truth.close();
        say("ev", "exit", "delivered", delivered);
    }

    /** End of stdin means the runner is gone: stop, as the Python member does. */
    private void readCommands() {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                if (!line.isBlank()) {
                    inbox.put(JSON.readTree(line));
                }
            }
        } catch (IOException | InterruptedException e) {
            // the runner's pipe broke: treated as its end
        }
        inbox.add(JSON.createObjectNode().put("cmd", "stop").put("why", "stdin closed"));
    }

    public static void main(String[] args) throws Exception {
        JavaMember member = new JavaMember(JSON.readTree(args[0]));
        Thread commands = new Thread(member::readCommands, "commands");
        commands.setDaemon(true);
        commands.start();
        member.run();
        System.exit(0);  // the agent's and the client's non-daemon threads must not keep a finished member alive
    }
}
