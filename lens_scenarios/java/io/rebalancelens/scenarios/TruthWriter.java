package io.rebalancelens.scenarios;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.kafka.common.TopicPartition;

/**
 * lens_scenarios/truth_log.py's TruthWriter on the JVM, the one both kinds of Java member use (JavaMember.java and
 * the applications of tests/jvm_agent/apps/, through their member kit): {@code <process>.meta.json},
 * {@code <process>.records} (fixed {@code <HIqqqqq} rows, one write() per batch straight to the kernel, before the
 * batch is processed, so a SIGKILL loses at most the batch in hand) and {@code <process>.events.jsonl}.
 * System.nanoTime is CLOCK_MONOTONIC on Linux, the clock Python's time.monotonic_ns reads, so both runtimes' times
 * compare. Synchronized: a framework may call back from more than one thread.
 */
public final class TruthWriter {
    private static final int ROW = 2 + 4 + 5 * 8;  // struct "<HIqqqqq"
    private static final ObjectMapper JSON = new ObjectMapper();
    private final Map<String, Integer> index = new HashMap<>();
    private final FileOutputStream records;
    private final FileOutputStream events;

    /** One record handed to the application: where it came from, the feeder's record id (its value), its time. */
    public static final class Delivery {
        final String topic;
        final int partition;
        final long offset;
        final long recordId;
        final long timestampMs;

        /** {@code value}: the record's value, the feeder's record id as ASCII digits (lens_scenarios/feeder.py). */
        public Delivery(String topic, int partition, long offset, String value, long timestampMs) {
            this.topic = topic;
            this.partition = partition;
            this.offset = offset;
            this.recordId = Long.parseLong(value);
            this.timestampMs = timestampMs;
        }
    }

    /** The process's three files in {@code <runDir>/truth}, its meta written now. */
    public TruthWriter(Path runDir, String member, String process, List<String> topics, boolean agent,
                       String groupProtocol) throws IOException {
        Path folder = runDir.resolve("truth");
        Files.createDirectories(folder);
        for (int i = 0; i < topics.size(); i++) {
            index.put(topics.get(i), i);
        }
        Map<String, Object> meta = new LinkedHashMap<>();
        meta.put("member", member);
        meta.put("process", process);
        meta.put("pid", ProcessHandle.current().pid());
        meta.put("topics", topics);
        meta.put("agent", agent);
        meta.put("group_protocol", groupProtocol);
        Files.writeString(folder.resolve(process + ".meta.json"), JSON.writeValueAsString(meta));
        records = new FileOutputStream(folder.resolve(process + ".records").toFile(), true);
        events = new FileOutputStream(folder.resolve(process + ".events.jsonl").toFile(), true);
    }

    private static long wallNs() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000_000L + now.getNano();
    }

    /** One write() of a batch's rows, stamped now, before the batch is processed; returns how many. */
    public synchronized int records(List<Delivery> batch) {
        if (batch.isEmpty()) {
            return 0;
        }
        long mono = System.nanoTime();
        long wall = wallNs();
        ByteBuffer rows = ByteBuffer.allocate(ROW * batch.size()).order(ByteOrder.LITTLE_ENDIAN);
        for (Delivery d : batch) {
            rows.putShort((short) (int) index.get(d.topic)).putInt(d.partition).putLong(d.offset)
                    .putLong(d.recordId).putLong(mono).putLong(wall).putLong(d.timestampMs);
        }
        write(records, rows.array());
        return batch.size();
    }

    /** A callback (assign, revoke, lost) or the process's own start, closing, exit; {@code memberId} if known. */
    public synchronized void event(String kind, Collection<TopicPartition> partitions, String memberId) {
        Map<String, Object> row = new LinkedHashMap<>();
        row.put("kind", kind);
        row.put("partitions", partitions.stream().map(tp -> List.of(tp.topic(), tp.partition()))
                .collect(Collectors.toList()));
        row.put("mono_ns", System.nanoTime());
        row.put("wall_ns", wallNs());
        if (memberId != null && !memberId.isEmpty()) {
            row.put("member_id", memberId);
        }
        try {
            write(events, (JSON.writeValueAsString(row) + "\n").getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void write(FileOutputStream out, byte[] data) {
        try {
            out.write(data);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public synchronized void close() {
        try {
            records.close();
            events.close();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
