package io.rebalancelens.testapps.kit;

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
 * lens_scenarios/truth_log.py's TruthWriter for the test applications: {@code <process>.meta.json},
 * {@code <process>.records} (fixed {@code <HIqqqqq} rows, one write() per batch straight to the kernel, before the
 * batch is processed, so a SIGKILL loses at most the batch in hand) and {@code <process>.events.jsonl}.
 * System.nanoTime is CLOCK_MONOTONIC on Linux, the clock the Python members and the runner read.
 * Synchronized: a framework may call back from more than one thread.
 */
final class TruthLog {
    private static final int ROW = 2 + 4 + 5 * 8;
    private final Map<String, Integer> index = new HashMap<>();
    private final FileOutputStream records;
    private final FileOutputStream events;

    TruthLog(MemberSpec spec) throws IOException {
        Path folder = spec.runDir.resolve("truth");
        Files.createDirectories(folder);
        for (int i = 0; i < spec.topics.size(); i++) {
            index.put(spec.topics.get(i), i);
        }
        Map<String, Object> meta = new LinkedHashMap<>();
        meta.put("member", spec.member);
        meta.put("process", spec.process);
        meta.put("pid", ProcessHandle.current().pid());
        meta.put("topics", spec.topics);
        meta.put("agent", spec.agent);
        meta.put("group_protocol", spec.groupProtocol());
        Files.writeString(folder.resolve(spec.process + ".meta.json"), MemberSpec.JSON.writeValueAsString(meta));
        records = new FileOutputStream(folder.resolve(spec.process + ".records").toFile(), true);
        events = new FileOutputStream(folder.resolve(spec.process + ".events.jsonl").toFile(), true);
    }

    private static long wallNs() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000_000L + now.getNano();
    }

    synchronized void records(List<Delivered> batch) {
        if (batch.isEmpty()) {
            return;
        }
        long mono = System.nanoTime();
        long wall = wallNs();
        ByteBuffer rows = ByteBuffer.allocate(ROW * batch.size()).order(ByteOrder.LITTLE_ENDIAN);
        for (Delivered d : batch) {
            rows.putShort((short) (int) index.get(d.topic)).putInt(d.partition).putLong(d.offset)
                    .putLong(d.recordId).putLong(mono).putLong(wall).putLong(d.timestampMs);
        }
        write(records, rows.array());
    }

    synchronized void event(String kind, Collection<TopicPartition> partitions, String memberId) {
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
            write(events, (MemberSpec.JSON.writeValueAsString(row) + "\n").getBytes(StandardCharsets.UTF_8));
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

    synchronized void close() throws IOException {
        records.close();
        events.close();
    }
}
