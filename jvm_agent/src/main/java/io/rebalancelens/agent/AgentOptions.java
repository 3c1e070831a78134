package io.rebalancelens.agent;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The agent's own {@code lens.*} options, taken out of the consumer config before the client sees it:
 * the same keys and rules as consumer_agent/options.py, so one config works for both agents. A bad
 * option is an IllegalArgumentException naming the key, so a typo never silently turns a feature off.
 *
 * @param producerConfig the telemetry producer's config (the consumer's cluster address and
 *     authentication, overridden by {@code lens.telemetry.*}); null when no cluster is named: telemetry off
 * @param clusterConfig how to reach the consumer's own cluster (to ask its id); null without an address
 */
public record AgentOptions(String telemetryTopic, Map<String, Object> producerConfig,
                           Map<String, Object> clusterConfig, boolean commitOnRevoke, int commitOnRevokeTimeoutMs,
                           boolean explicitProcessing, int progressIntervalMs, int bufferMaxEvents) {
    static final String PREFIX = "lens.";
    static final String TELEMETRY_PREFIX = "lens.telemetry.";
    static final String BOOTSTRAP = "bootstrap.servers";
    /** Consumer settings the telemetry producer inherits: the cluster address and how to authenticate. */
    private static final List<String> INHERITED_PREFIXES =
            List.of(BOOTSTRAP, "security.protocol", "sasl.", "ssl.", "client.dns.lookup");
    private static final List<String> KNOWN = List.of("lens.buffer.max.events", "lens.commit.on.revoke",
            "lens.commit.on.revoke.timeout.ms", "lens.processing", "lens.progress.interval.ms");

    /** The config without the agent's keys: what the wrapped KafkaConsumer gets. */
    public static Map<String, Object> clientConfig(Map<String, ?> config) {
        Map<String, Object> client = new HashMap<>();
        config.forEach((key, value) -> {
            if (!key.startsWith(PREFIX)) {
                client.put(key, value);
            }
        });
        return client;
    }

    /** Parse and validate the {@code lens.*} keys of {@code config}. */
    public static AgentOptions parse(Map<String, ?> config) {
        Object topic = config.get("lens.telemetry.topic");
        if (!(topic instanceof String name) || name.isEmpty()) {
            throw new IllegalArgumentException("Set \"lens.telemetry.topic\" (e.g. \"rebalance-lens-telemetry\") in "
                    + "the consumer config: it names the topic the agent writes its telemetry to.");
        }
        boolean commitOnRevoke = false;
        boolean explicit = false;
        int revokeTimeoutMs = 30_000;
        int progressMs = 5_000;
        int bufferMax = 10_000;
        Map<String, Object> overrides = new HashMap<>();
        for (Map.Entry<String, ?> entry : config.entrySet()) {
            String key = entry.getKey();
            Object value = entry.getValue();
            if (!key.startsWith(PREFIX) || key.equals("lens.telemetry.topic")) {
                continue;
            }
            switch (key) {
                case "lens.commit.on.revoke" -> commitOnRevoke = asBool(key, value);
                case "lens.commit.on.revoke.timeout.ms" -> revokeTimeoutMs = asPositiveInt(key, value);
                case "lens.progress.interval.ms" -> progressMs = asPositiveInt(key, value);
                case "lens.buffer.max.events" -> bufferMax = asPositiveInt(key, value);
                case "lens.processing" -> explicit = processing(key, value);
                default -> {
                    if (!key.startsWith(TELEMETRY_PREFIX)) {
                        throw new IllegalArgumentException("Unknown agent option '" + key + "'; known: "
                                + "lens.telemetry.topic, lens.telemetry.<producer setting>, " + String.join(", ", KNOWN)
                                + ".");
                    }
                    overrides.put(key.substring(TELEMETRY_PREFIX.length()), value);
                }
            }
        }
        Map<String, Object> inherited = new HashMap<>();
        config.forEach((key, value) -> {
            if (!key.startsWith(PREFIX) && INHERITED_PREFIXES.stream().anyMatch(key::startsWith)) {
                inherited.put(key, value);
            }
        });
        Map<String, Object> cluster = hasAddress(inherited) ? Map.copyOf(inherited) : null;
        if (overrides.containsKey(BOOTSTRAP)) {  // the telemetry cluster is another one
            inherited.remove(BOOTSTRAP);
        }
        Map<String, Object> producer = new HashMap<>(inherited);
        producer.putAll(overrides);
        return new AgentOptions(name, hasAddress(producer) ? producer : null, cluster, commitOnRevoke, revokeTimeoutMs,
                explicit, progressMs, bufferMax);
    }

    private static boolean hasAddress(Map<String, Object> config) {
        Object servers = config.get(BOOTSTRAP);
        return servers != null && !String.valueOf(servers).isEmpty();
    }

    private static boolean asBool(String key, Object value) {
        if (value instanceof Boolean flag) {
            return flag;
        }
        if (value instanceof String text && (text.equalsIgnoreCase("true") || text.equalsIgnoreCase("false"))) {
            return Boolean.parseBoolean(text);
        }
        throw new IllegalArgumentException(key + " must be true or false, got " + value);
    }

    private static int asPositiveInt(String key, Object value) {
        try {
            int number = value instanceof Number n ? n.intValue() : Integer.parseInt(String.valueOf(value).trim());
            if (number > 0) {
                return number;
            }
        } catch (NumberFormatException ignored) {
            // reported below with the key
        }
        throw new IllegalArgumentException(key + " must be a positive integer, got " + value);
    }

    private static boolean processing(String key, Object value) {
        if ("on_next_poll".equals(value) || "explicit".equals(value)) {
            return "explicit".equals(value);
        }
        throw new IllegalArgumentException(key + " must be one of on_next_poll, explicit, got " + value);
    }
}
