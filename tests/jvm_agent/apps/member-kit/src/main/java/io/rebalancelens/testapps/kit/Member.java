package io.rebalancelens.testapps.kit;

import io.rebalancelens.scenarios.TruthWriter;
import io.rebalancelens.scenarios.TruthWriter.Delivery;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.TopicPartition;

/**
 * One member process of a scenario group, whatever framework consumes for it: it speaks the fleet's protocol
 * (lens_scenarios/fleet.py; JavaMember.java and member.py speak the same), keeps the ground truth of what the
 * application was handed and of its rebalance callbacks, and processes records as the scenario says.
 *
 * <p>Protocol: started as {@code java ... '<spec json>'}; JSON lines on stdin ({@code quiesce}: read nothing more
 * but stay in the group; {@code stop} or the end of stdin: close and exit); JSON lines on stdout ({@code started},
 * one per callback, {@code progress} twice a second, {@code exit}), whose {@code assigned} and {@code delivered}
 * counts the runner waits on. The truth log records {@code start}, the callbacks, {@code closing} and {@code exit}.
 */
public final class Member {
    private static final long REPORT_EVERY_MS = 500;

    /** What the application does on the fleet's commands; its framework's threads do the consuming. */
    public interface Application {
        /** Start consuming; returns once the framework runs. */
        void start() throws Exception;

        /** Read nothing more, staying in the group (the runner's end of a run: Fleet.stop_all). */
        void quiesce() throws Exception;

        /** Leave the group and release everything. */
        void close() throws Exception;
    }

    private final MemberSpec spec;
    private final TruthWriter truth;
    private final Set<TopicPartition> assigned = ConcurrentHashMap.newKeySet();
    private final AtomicLong delivered = new AtomicLong();

    private Member(MemberSpec spec) throws IOException {
        this.spec = spec;
        this.truth = new TruthWriter(spec.runDir, spec.member, spec.process, spec.topics, spec.agent,
                spec.groupProtocol());
    }

    /** The member the command line names: {@code args[0]} is its spec. */
    public static Member of(String[] args) throws IOException {
        if (args.length < 1) {
            throw new IllegalArgumentException("usage: <application> '<member spec json>' (lens_scenarios/runner.py)");
        }
        return new Member(MemberSpec.parse(args[0]));
    }

    public MemberSpec spec() {
        return spec;
    }

    /** A batch handed to the application: written down first (the truth log's durability bound), then processed. */
    public void process(List<Delivery> batch) throws InterruptedException {
        truth.records(batch);
        delivered.addAndGet(batch.size());
        TimeUnit.NANOSECONDS.sleep((long) (spec.processingMs * 1_000_000 * batch.size()));
    }

    public void assigned(Collection<TopicPartition> partitions, String memberId) {
        assigned.addAll(partitions);
        callback("assign", partitions, memberId);
    }

    /** Call once the application let the partitions go (after its own commit on revoke, if it makes one). */
    public void revoked(Collection<TopicPartition> partitions, String memberId) {
        assigned.removeAll(partitions);
        callback("revoke", partitions, memberId);
    }

    /** The application cannot go on: the runner sees a client error and the process ends (non-zero). */
    public void fail(Throwable error) {
        error.printStackTrace();
        say("ev", "client_error", "error", String.valueOf(error), "code", -1);
        System.exit(1);
    }

    public void lost(Collection<TopicPartition> partitions, String memberId) {
        assigned.removeAll(partitions);
        callback("lost", partitions, memberId);
    }

    private void callback(String kind, Collection<TopicPartition> partitions, String memberId) {
        truth.event(kind, partitions, memberId);
        say("ev", kind, "partitions", partitions.size(), "assigned", assigned.size(), "delivered", delivered.get());
    }

    /** Run {@code app} under the fleet's protocol until {@code stop} or the end of stdin, then end the JVM. */
    public void run(Application app) throws Exception {
        truth.event("start", List.of(), null);
        app.start();
        say("ev", "started");
        Thread reporter = new Thread(this::report, "member-progress");
        reporter.setDaemon(true);
        reporter.start();
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                if (line.isBlank()) {
                    continue;
                }
                String cmd = MemberSpec.JSON.readTree(line).path("cmd").asText();
                if (cmd.equals("stop")) {
                    break;
                } else if (cmd.equals("quiesce")) {
                    app.quiesce();
                    say("ev", "done", "cmd", cmd);
                } else {
                    say("ev", "unsupported", "cmd", cmd);
                }
            }
        }
        truth.event("closing", List.of(), null);
        app.close();
        truth.event("exit", List.of(), null);
        truth.close();
        say("ev", "exit", "delivered", delivered.get());
        System.exit(0);  // a framework's non-daemon threads must not keep a finished member alive
    }

    private void report() {
        while (true) {
            say("ev", "progress", "assigned", assigned.size(), "delivered", delivered.get());
            try {
                Thread.sleep(REPORT_EVERY_MS);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    /** One JSON line on stdout: the runner's view of this member. */
    public static void say(Object... fields) {
        Map<String, Object> line = new LinkedHashMap<>();
        for (int i = 0; i < fields.length; i += 2) {
            line.put((String) fields[i], fields[i + 1]);
        }
        try {
            String text = MemberSpec.JSON.writeValueAsString(line);
            synchronized (System.out) {
                System.out.println(text);
                System.out.flush();
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
