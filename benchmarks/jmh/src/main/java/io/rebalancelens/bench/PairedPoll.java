package io.rebalancelens.bench;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.Deserializer;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.infra.Blackhole;

/**
 * The javaagent's poll path and the plain client's, paired in one thread: each operation is a chunk of
 * {@link #CHUNK} polls of a plain KafkaConsumer, then as many of one the javaagent would have made, each chunk's
 * polling-thread CPU time counted apart. Interleaved every few milliseconds, both see the same machine, so a shared
 * machine's load drifts out of their ratio (the forks with and without {@code -javaagent}, {@link ConsumerPoll},
 * see it drift between them).
 *
 * <p>The javaagent's consumer is built as its constructor advice builds one, without the agent attached: the
 * javaagent's jar on the class path, its helper Instrumenter gives the config to build with and what turns the
 * delegate into the instrumented one, set into KafkaConsumer's {@code delegate} field. From then on its poll path is
 * the javaagent's: KafkaConsumer, the generated delegate, InstrumentedConsumer, the client's own delegate.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class PairedPoll {
    static final int CHUNK = 256;
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    private static final Duration TIMEOUT = Duration.ofSeconds(1);
    private static final String INSTRUMENTER = "io.rebalancelens.javaagent.helper.Instrumenter";
    /** kafka-clients 3.7 and later: KafkaConsumer's delegate is swapped (javaagent.Family). */
    private static final String DELEGATE_FAMILY = "delegate";
    /** Where the agent hands its coordinator's steps (no advice here: the rebalance timing is not on a poll path). */
    private static final BiConsumer<Object, Object> NO_TIMING = (metrics, steps) -> {
    };

    @Param("")
    public String bootstrap;
    @Param("")
    public String topic;
    @Param("")
    public String telemetry;
    @Param({"1", "500"})
    public int maxPollRecords;

    private Reader plain;
    private Reader agent;
    private boolean agentFirst;

    /** Per iteration, each consumer's polling-thread CPU and wall nanoseconds and the records of its chunks. */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.EVENTS)
    public static class Counts {
        public long plainCpuNanos;
        public long plainWallNanos;
        public long plainRecords;
        public long agentCpuNanos;
        public long agentWallNanos;
        public long agentRecords;

        @Setup(Level.Iteration)
        public void reset() {
            plainCpuNanos = plainWallNanos = plainRecords = agentCpuNanos = agentWallNanos = agentRecords = 0;
        }
    }

    /** One consumer over the whole topic, again from the beginning once it has read every record. */
    private static final class Reader {
        private final KafkaConsumer<byte[], byte[]> consumer;
        private final long total;
        private long seen;

        Reader(KafkaConsumer<byte[], byte[]> consumer, String topic) {
            this.consumer = consumer;
            consumer.subscribe(List.of(topic));
            total = consumer.endOffsets(consumer.partitionsFor(topic).stream()
                    .map(p -> new TopicPartition(p.topic(), p.partition())).collect(Collectors.toList()))
                    .values().stream().mapToLong(Long::longValue).sum();
            while ((seen = consumer.poll(TIMEOUT).count()) == 0) {
                // joined and fetching
            }
        }

        /** {@link #CHUNK} polls: the records they handed out. */
        long chunk(Blackhole hole) {
            long records = 0;
            for (int i = 0; i < CHUNK; i++) {
                ConsumerRecords<byte[], byte[]> batch = consumer.poll(TIMEOUT);
                for (ConsumerRecord<byte[], byte[]> record : batch) {
                    hole.consume(record);
                }
                records += batch.count();
                seen += batch.count();
                if (seen >= total) {
                    consumer.seekToBeginning(consumer.assignment());
                    seen = 0;
                }
            }
            return records;
        }
    }

    private Map<String, Object> config() {
        return new HashMap<>(Map.of("bootstrap.servers", bootstrap, "group.id", "bench-paired-" + UUID.randomUUID(),
                "auto.offset.reset", "earliest", "max.poll.records", maxPollRecords,
                "key.deserializer", ByteArrayDeserializer.class, "value.deserializer", ByteArrayDeserializer.class));
    }

    @Setup(Level.Trial)
    public void open() throws ReflectiveOperationException {
        plain = new Reader(new KafkaConsumer<>(config()), topic);
        agent = new Reader(asTheJavaagentBuildsIt(config(), telemetry), topic);
    }

    /** What the javaagent's constructor advice does around {@code KafkaConsumer(ConsumerConfig, ...)}. */
    @SuppressWarnings("unchecked")
    private static KafkaConsumer<byte[], byte[]> asTheJavaagentBuildsIt(Map<String, Object> config, String telemetry)
            throws ReflectiveOperationException {
        Object[] started = (Object[]) Class.forName(INSTRUMENTER).getMethod("begin", Object.class, Map.class,
                        java.util.function.Consumer.class, String.class, BiConsumer.class)
                .invoke(null, new ConsumerConfig(config), Map.of("lens.telemetry.topic", telemetry),
                        (java.util.function.Consumer<String>) System.err::println, DELEGATE_FAMILY, NO_TIMING);
        Constructor<KafkaConsumer> built = KafkaConsumer.class.getDeclaredConstructor(ConsumerConfig.class,
                Deserializer.class, Deserializer.class);
        built.setAccessible(true);
        KafkaConsumer<byte[], byte[]> consumer = built.newInstance(started[0], null, null);
        Field delegate = KafkaConsumer.class.getDeclaredField("delegate");
        delegate.setAccessible(true);
        delegate.set(consumer, ((Function<Object, Object>) started[1]).apply(delegate.get(consumer)));
        return consumer;
    }

    /** A chunk of each, the one first that went second last time (neither always finds the other's caches). */
    @Benchmark
    public void chunks(Counts counts, Blackhole hole) {
        agentFirst = !agentFirst;
        if (agentFirst) {
            agent(counts, hole);
            plain(counts, hole);
        } else {
            plain(counts, hole);
            agent(counts, hole);
        }
    }

    private void plain(Counts counts, Blackhole hole) {
        long cpu = THREADS.getCurrentThreadCpuTime();
        long wall = System.nanoTime();
        counts.plainRecords += plain.chunk(hole);
        counts.plainWallNanos += System.nanoTime() - wall;
        counts.plainCpuNanos += THREADS.getCurrentThreadCpuTime() - cpu;
    }

    private void agent(Counts counts, Blackhole hole) {
        long cpu = THREADS.getCurrentThreadCpuTime();
        long wall = System.nanoTime();
        counts.agentRecords += agent.chunk(hole);
        counts.agentWallNanos += System.nanoTime() - wall;
        counts.agentCpuNanos += THREADS.getCurrentThreadCpuTime() - cpu;
    }

    @TearDown(Level.Trial)
    public void close() {
        plain.consumer.close();
        agent.consumer.close();
    }
}
