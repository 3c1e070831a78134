import io.rebalancelens.agent.InstrumentedConsumer;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * benchmarks/jvm_agent_throughput.py's measurement (java's single-file launcher, one JVM): a plain KafkaConsumer
 * and an InstrumentedConsumer read the same pre-filled topic in turns, each run a new group that reads it twice:
 * the first pass untimed (the join, the agent's emitter starting, its first fetches), the second, after a seek
 * to the beginning, timed: the steady state an application runs in. Two loop shapes: poll per record (max.poll.records=1) and batch (the default 500).
 * One untimed run of each warms the JIT; then {@code rounds} runs each, alternating who goes first. Prints the
 * medians: records/s, the ratio instrumented/plain, the mean time of a poll that returned records (us, wall
 * clock), and the polling thread's CPU time per poll (us; steadier than the wall clock on a shared machine).
 *
 * Arguments: bootstrap topic records rounds telemetry-topic
 */
public final class JvmAgentThroughput {
    private static final Duration POLL = Duration.ofSeconds(1);
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    /** One run: records per second, the mean nanoseconds of a poll() that returned records, and the polling
     * thread's CPU nanoseconds per such poll (everything it did from the first record on, divided by the polls). */
    private record Run(double recordsPerS, double pollNanos, double cpuPerPollNanos) {
    }

    public static void main(String[] args) {
        String bootstrap = args[0], topic = args[1], telemetry = args[4];
        long records = Long.parseLong(args[2]);
        int rounds = Integer.parseInt(args[3]);
        for (Map.Entry<String, Map<String, Object>> shape : List.of(
                Map.entry("poll per record", Map.<String, Object>of("max.poll.records", 1)),
                Map.entry("batch (500)", Map.<String, Object>of()))) {
            Map<Boolean, List<Run>> runs = Map.of(false, new ArrayList<>(), true, new ArrayList<>());
            read(bootstrap, topic, telemetry, shape.getValue(), false, records);  // JIT warm-up, not counted
            read(bootstrap, topic, telemetry, shape.getValue(), true, records);
            for (int round = 0; round < rounds; round++) {
                for (boolean instrumented : round % 2 == 0 ? List.of(false, true) : List.of(true, false)) {
                    runs.get(instrumented).add(read(bootstrap, topic, telemetry, shape.getValue(), instrumented,
                            records));
                }
            }
            double plain = median(runs.get(false), Run::recordsPerS);
            double agent = median(runs.get(true), Run::recordsPerS);
            double plainPoll = median(runs.get(false), Run::pollNanos) / 1000;
            double agentPoll = median(runs.get(true), Run::pollNanos) / 1000;
            double plainCpu = median(runs.get(false), Run::cpuPerPollNanos) / 1000;
            double agentCpu = median(runs.get(true), Run::cpuPerPollNanos) / 1000;
            System.out.printf("%-16s plain %,12.0f rec/s  instrumented %,12.0f rec/s  ratio %.3f  "
                    + "poll() us: plain %.2f instrumented %.2f (%+.2f)  CPU per poll us: plain %.2f "
                    + "instrumented %.2f (ratio %.3f)%n", shape.getKey(), plain, agent, agent / plain, plainPoll,
                    agentPoll, agentPoll - plainPoll, plainCpu, agentCpu, plainCpu / agentCpu);
        }
    }

    private static Run read(String bootstrap, String topic, String telemetry, Map<String, Object> shape,
                            boolean instrumented, long records) {
        Map<String, Object> config = new HashMap<>(Map.of("bootstrap.servers", bootstrap,
                "group.id", "bench-jvm-" + UUID.randomUUID(), "auto.offset.reset", "earliest",
                "key.deserializer", ByteArrayDeserializer.class, "value.deserializer", ByteArrayDeserializer.class));
        config.putAll(shape);
        if (instrumented) {
            config.put("lens.telemetry.topic", telemetry);
        }
        try (Consumer<byte[], byte[]> consumer = instrumented ? new InstrumentedConsumer<>(config)
                : new KafkaConsumer<>(config)) {
            consumer.subscribe(List.of(topic));
            for (long seen = 0; seen < records; ) {
                seen += consumer.poll(POLL).count();
            }
            consumer.seekToBeginning(consumer.assignment());
            long seen = 0, polls = 0, inPoll = 0, start = 0, cpuStart = 0;
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
                } else {
                    inPoll += after - before;
                    polls++;
                }
                seen += batch.count();
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            double cpu = THREADS.getCurrentThreadCpuTime() - cpuStart;
            return new Run(records / seconds, polls == 0 ? 0 : (double) inPoll / polls, polls == 0 ? 0 : cpu / polls);
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
