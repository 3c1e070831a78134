package io.rebalancelens.bench;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
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
 * One application thread's poll loop over a pre-filled topic, as an application runs it: a plain
 * {@code KafkaConsumer} of its own group, subscribed, every record handed to a Blackhole. Whether the consumer is the
 * plain client or the javaagent's is the JVM's: benchmarks/javaagent_overhead.py runs this class in forks with and
 * without {@code -javaagent} (the agent instruments every KafkaConsumer of its JVM). With {@code -t N} each of N
 * threads has its own consumer (several consumers per JVM, each with the agent's telemetry producer and thread).
 *
 * <p>Reported per iteration: polls/s (JMH's score), records/s ({@link Records}), and the polling thread's CPU time
 * and the records it covers ({@link Cpu}, sampled every {@link Cpu#EVERY} polls so that reading the clock costs the
 * loop nothing): CPU time is what other jobs on a shared machine do not move. When a consumer has read every record
 * it seeks back to the beginning (before a poll could wait at the end), the same for both.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class ConsumerPoll {
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    private static final Duration TIMEOUT = Duration.ofSeconds(1);

    @Param("")
    public String bootstrap;
    @Param("")
    public String topic;
    /** 1: poll per record; 500: batch (the client's default). */
    @Param({"1", "500"})
    public int maxPollRecords;

    private KafkaConsumer<byte[], byte[]> consumer;
    private long total;
    private long seen;

    /** Records handed out: JMH divides by the iteration's time (records/s). */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    public static class Records {
        public long records;
    }

    /** The polling thread's CPU nanoseconds over whole chunks of polls, and the records of those chunks. */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.EVENTS)
    public static class Cpu {
        static final int EVERY = 256;
        public long cpuNanos;
        public long cpuRecords;
        private long polls;
        private long pending;
        private long last;

        @Setup(Level.Iteration)
        public void start() {
            cpuNanos = cpuRecords = pending = polls = 0;
            last = THREADS.getCurrentThreadCpuTime();
        }

        void polled(int records) {
            pending += records;
            if (++polls % EVERY == 0) {
                long now = THREADS.getCurrentThreadCpuTime();
                cpuNanos += now - last;
                cpuRecords += pending;
                last = now;
                pending = 0;
            }
        }
    }

    @Setup(Level.Trial)
    public void open() {
        consumer = new KafkaConsumer<>(Map.of("bootstrap.servers", bootstrap, "group.id",
                "bench-poll-" + UUID.randomUUID(), "auto.offset.reset", "earliest",
                "max.poll.records", maxPollRecords, "key.deserializer", ByteArrayDeserializer.class,
                "value.deserializer", ByteArrayDeserializer.class));
        consumer.subscribe(List.of(topic));
        total = consumer.endOffsets(consumer.partitionsFor(topic).stream()
                .map(p -> new TopicPartition(p.topic(), p.partition())).collect(Collectors.toList()))
                .values().stream().mapToLong(Long::longValue).sum();
        while ((seen = consumer.poll(TIMEOUT).count()) == 0) {
            // joined and fetching: the warm-up iterations start on records
        }
    }

    @Benchmark
    public int poll(Records records, Cpu cpu, Blackhole hole) {
        ConsumerRecords<byte[], byte[]> batch = consumer.poll(TIMEOUT);
        int count = batch.count();
        seen += count;
        if (seen >= total) {  // every record read: again from the beginning, before a poll would wait at the end
            consumer.seekToBeginning(consumer.assignment());
            seen = 0;
        }
        for (ConsumerRecord<byte[], byte[]> record : batch) {
            hole.consume(record);
        }
        records.records += count;
        cpu.polled(count);
        return count;
    }

    @TearDown(Level.Trial)
    public void close() {
        consumer.close();
    }
}
