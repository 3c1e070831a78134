package io.rebalancelens.agent;

import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;

/**
 * The v1 envelope around every body (consumer_agent/contract.py's {@code event}): identity, a per-agent
 * sequence number without gaps, and the member's generation and id as the client has them when the event
 * is made. Events are made on the application thread only (the consumer is single-threaded), so the
 * sequence is the order the member lived it.
 */
final class Envelope {
    static final int SCHEMA_VERSION = AgentSpec.get().contractVersion();

    final String agentId;
    private final Map<String, Object> identity;
    private final Supplier<ConsumerGroupMetadata> metadata;
    private final TelemetryEmitter emitter;
    private long seq;
    private int lastGeneration = (int) AgentSpec.get().longConstant("generation_unknown");
    private String lastMemberId;

    Envelope(String agentId, Map<String, Object> identity, Supplier<ConsumerGroupMetadata> metadata,
             TelemetryEmitter emitter) {
        this.agentId = agentId;
        this.identity = identity;
        this.metadata = metadata;
        this.emitter = emitter;
    }

    /** The identity fields from the client config: group, instance, client id, host, pid, protocols, assignor. */
    static Map<String, Object> identity(Map<String, Object> config, String groupProtocol, String rebalanceProtocol,
                                        String assignor) {
        Map<String, Object> id = new LinkedHashMap<>();
        id.put("group_id", String.valueOf(config.getOrDefault("group.id", "")));
        Object instance = config.get("group.instance.id");
        id.put("group_instance_id", instance == null ? null : String.valueOf(instance));
        id.put("client_id", String.valueOf(config.getOrDefault("client.id", "")));
        id.put("host", hostName());
        id.put("pid", ProcessHandle.current().pid());
        id.put("group_protocol", groupProtocol);
        id.put("rebalance_protocol", rebalanceProtocol);
        id.put("assignor", assignor);
        return id;
    }

    /** A body with its fields in the given order: {@code body("a", 1, "b", 2)}. */
    static Map<String, Object> body(Object... keysAndValues) {
        Map<String, Object> body = new LinkedHashMap<>();
        for (int i = 0; i < keysAndValues.length; i += 2) {
            body.put((String) keysAndValues[i], keysAndValues[i + 1]);
        }
        return body;
    }

    void emit(String kind, Map<String, Object> body) {
        if (!emitter.enabled()) {
            return;
        }
        try {
            ConsumerGroupMetadata group = metadata.get();
            lastGeneration = group.generationId();
            lastMemberId = group.memberId() == null || group.memberId().isEmpty() ? null : group.memberId();
        } catch (RuntimeException closedOrNotInGroup) {
            // after close() the client answers nothing: the last values seen stand in (the agent spec's envelope
            // rule, the Python agent's too)
        }
        Map<String, Object> event = new LinkedHashMap<>();
        event.put("event_id", UUID.randomUUID().toString().replace("-", ""));
        event.put("schema_version", SCHEMA_VERSION);
        event.put("kind", kind);
        event.put("event_time_ms", System.currentTimeMillis());
        event.put("agent_id", agentId);
        event.put("seq", seq++);
        event.put("member_id", lastMemberId);
        event.put("generation", lastGeneration);
        event.putAll(identity);
        event.put("body", body);
        emitter.offer(event);
    }

    /** The host's name as the OS has it (Python's socket.gethostname()): no DNS lookup in the host's constructor. */
    private static String hostName() {
        try {  // Linux: the kernel's node name, what gethostname() returns
            return java.nio.file.Files.readString(java.nio.file.Path.of("/proc/sys/kernel/hostname")).strip();
        } catch (java.io.IOException | RuntimeException notLinux) {
            // below
        }
        String windows = System.getenv("COMPUTERNAME");
        if (windows != null && !windows.isBlank()) {
            return windows;
        }
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (Exception e) {
            return ManagementFactory.getRuntimeMXBean().getName().replaceFirst("^\\d+@", "");
        }
    }
}
