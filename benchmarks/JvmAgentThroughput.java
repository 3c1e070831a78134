import java.lang.management.ManagementFactory;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * benchmarks/jvm_agent_throughput.py's measurement (java's single-file launcher, one JVM): a plain KafkaConsumer
 * and an InstrumentedConsumer (and, given a baseline jar, a second build of the agent) read the same pre-filled
 * topic in turns, each run a new group that reads it twice: the first pass untimed (the join, the agent's emitter
 * starting, its first fetches), the second, after a seek to the beginning, timed: the steady state an application
 * runs in. Two loop shapes: poll per record (max.poll.records=1) and batch (the default 500). One untimed run of
 * each warms the JIT; then {@code rounds} runs each, the order rotating every round. Prints the medians:
 * records/s, the ratio to plain, the mean time of a poll that returned records (us, wall clock), the polling
 * thread's CPU time per poll (us; steadier than the wall clock on a shared machine) and the bytes it allocated
 * per poll (the one figure other jobs on the machine do not move).
 *
 * <p>Each agent jar is loaded by a class loader of its own over the shared kafka-clients (the classpath), so two
 * builds of the agent run side by side in one JVM; the program reaches them through {@code Consumer} only.
 *
 * Arguments: bootstrap topic records rounds telemetry-topic agent-jar [baseline-agent-jar]
 */
public final class JvmAgentThroughput {
    private static final Duration POLL = Duration.ofSeconds(1);
    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    /** One run: records per second, the mean nanoseconds of a poll() that returned records, and the polling
     * thread's CPU nanoseconds and allocated bytes per such poll (everything it did from the first record on,
     * divided by the polls). */
    private record Run(double recordsPerS, double pollNanos, double cpuPerPollNanos, double bytesPerPoll) {
    }

    /** A consumer under test: its name, whether it gets the agent's config, and how to build one. */
    private record Contender(String name, boolean instrumented,
                             Function<Map<String, Object>, Consumer<byte[], byte[]>> build) {
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], telemetry = args[4];
        long records = Long.parseLong(args[2]);
        int rounds = Integer.parseInt(args[3]);
        List<Contender> contenders = new ArrayList<>(List.of(
                new Contender("plain", false, KafkaConsumer::new), agent("instrumented", args[5])));
        if (args.length > 6) {
            contenders.add(agent("baseline", args[6]));
        }
        for (Map.Entry<String, Map<String, Object>> shape : List.of(
                Map.entry("poll per record", Map.<String, Object>of("max.poll.records", 1)),
                Map.entry("batch (500)", Map.<String, Object>of()))) {
            Map<String, List<Run>> runs = new HashMap<>();
            for (Contender contender : contenders) {  // JIT warm-up, not counted
                read(bootstrap, topic, telemetry, shape.getValue(), contender, records);
            }
            for (int round = 0; round < rounds; round++) {
                for (int i = 0; i < contenders.size(); i++) {
                    Contender contender = contenders.get((round + i) % contenders.size());
                    runs.computeIfAbsent(contender.name(), name -> new ArrayList<>())
                            .add(read(bootstrap, topic, telemetry, shape.getValue(), contender, records));
                }
            }
            double plain = median(runs.get("plain"), Run::recordsPerS);
            for (Contender contender : contenders) {
                List<Run> own = runs.get(contender.name());
                System.out.printf("%-16s %-12s %,12.0f rec/s  ratio %.3f  poll() us %.2f  CPU per poll us %.2f  "
                        + "allocated per poll B %.0f%n", shape.getKey(), contender.name(),
                        median(own, Run::recordsPerS), median(own, Run::recordsPerS) / plain,
                        median(own, Run::pollNanos) / 1000, median(own, Run::cpuPerPollNanos) / 1000,
                        median(own, Run::bytesPerPoll));
            }
        }
    }

    /** The InstrumentedConsumer of {@code jar}, loaded on its own over the classpath's kafka-clients. */
    private static Contender agent(String name, String jar) throws Exception {
        ClassLoader loader = new URLClassLoader(new URL[] {Path.of(jar).toUri().toURL()},
                JvmAgentThroughput.class.getClassLoader());
        var constructor = Class.forName("io.rebalancelens.agent.InstrumentedConsumer", true, loader)
                .getConstructor(Map.class);
        return new Contender(name, true, config -> {
            try {
                @SuppressWarnings("unchecked")
                Consumer<byte[], byte[]> consumer = (Consumer<byte[], byte[]>) constructor.newInstance(config);
                return consumer;
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException(e);
            }
        });
    }

    private static Run read(String bootstrap, String topic, String telemetry, Map<String, Object> shape,
                            Contender contender, long records) {
        Map<String, Object> config = new HashMap<>(Map.of("bootstrap.servers", bootstrap,
                "group.id", "bench-jvm-" + UUID.randomUUID(), "auto.offset.reset", "earliest",
                "key.deserializer", ByteArrayDeserializer.class, "value.deserializer", ByteArrayDeserializer.class));
        config.putAll(shape);
        if (contender.instrumented()) {
            config.put("lens.telemetry.topic", telemetry);
        }
        try (Consumer<byte[], byte[]> consumer = contender.build().apply(config)) {
            consumer.subscribe(List.of(topic));
            for (long seen = 0; seen < records; ) {
                seen += consumer.poll(POLL).count();
            }
            consumer.seekToBeginning(consumer.assignment());
            long seen = 0, polls = 0, inPoll = 0, start = 0, cpuStart = 0, bytesStart = 0;
            while (seen < records) {
                long before = System.nanoTime();
                ConsumerRecords<byte[], byte[]> batch = consumer.poll(POLL);
                long after = System.nanoTime();
                if (batch.isEmpty()) {
                    continue;
                }
                if (start == 0) {
                    start = after;
                    cpuStart = THREADS.getCurrentThreadCpuTime();
                    bytesStart = THREADS.getCurrentThreadAllocatedBytes();
                } else {
                    inPoll += after - before;
                    polls++;
                }
                seen += batch.count();
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            double cpu = THREADS.getCurrentThreadCpuTime() - cpuStart;
            double bytes = THREADS.getCurrentThreadAllocatedBytes() - bytesStart;
            return polls == 0 ? new Run(records / seconds, 0, 0, 0)
                    : new Run(records / seconds, (double) inPoll / polls, cpu / polls, bytes / polls);
        }
    }

    private static double median(List<Run> runs, java.util.function.ToDoubleFunction<Run> field) {
        List<Double> values = new ArrayList<>();
        runs.forEach(run -> values.add(field.applyAsDouble(run)));
        Collections.sort(values);
        int n = values.size();
        return n % 2 == 1 ? values.get(n / 2) : (values.get(n / 2 - 1) + values.get(n / 2)) / 2;
    }
}
