package io.rebalancelens.agent;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * The agent's own {@code lens.*} options, taken out of the consumer config before the client sees it: the keys,
 * types and defaults of the agent spec (consumer_agent/agent-spec-v1.json, the Python agent's too), so one config
 * works for both agents. A bad option is an IllegalArgumentException naming the key, so a typo never silently
 * turns a feature off. The fields after the two configs are the spec's keys, camel-cased
 * ({@code lens.commit.on.revoke.timeout.ms}: {@code commitOnRevokeTimeoutMs}), each read by the method of its
 * name; a test keeps them so. A class rather than a record: the agent is Java 11 bytecode, as kafka-clients.
 */
public final class AgentOptions {
    private static final AgentSpec SPEC = AgentSpec.get();
    static final String PREFIX = SPEC.optionPrefix();
    static final String TELEMETRY_PREFIX = SPEC.producerPrefix();
    static final String TOPIC = "lens.telemetry.topic";
    /** The cluster address's names; the Java client knows the first only. */
    private static final List<String> BOOTSTRAP_KEYS = SPEC.bootstrapKeys();
    static final String BOOTSTRAP = BOOTSTRAP_KEYS.get(0);
    /** Consumer settings the telemetry producer inherits: the cluster address and how to authenticate. */
    private static final List<String> INHERITED_PREFIXES = SPEC.inheritedPrefixes();

    private final String telemetryTopic;
    private final Map<String, Object> producerConfig;
    private final Map<String, Object> clusterConfig;
    private final boolean commitOnRevoke;
    private final int commitOnRevokeTimeoutMs;
    private final String processing;
    private final int progressIntervalMs;
    private final int bufferMaxEvents;

    /**
     * {@code producerConfig}: the telemetry producer's config (the consumer's cluster address and authentication,
     * overridden by {@code lens.telemetry.*}), null when no cluster is named: telemetry off; {@code clusterConfig}:
     * how to reach the consumer's own cluster (to ask its id), null without an address.
     */
    public AgentOptions(String telemetryTopic, Map<String, Object> producerConfig, Map<String, Object> clusterConfig,
                        boolean commitOnRevoke, int commitOnRevokeTimeoutMs, String processing,
                        int progressIntervalMs, int bufferMaxEvents) {
        this.telemetryTopic = telemetryTopic;
        this.producerConfig = producerConfig;
        this.clusterConfig = clusterConfig;
        this.commitOnRevoke = commitOnRevoke;
        this.commitOnRevokeTimeoutMs = commitOnRevokeTimeoutMs;
        this.processing = processing;
        this.progressIntervalMs = progressIntervalMs;
        this.bufferMaxEvents = bufferMaxEvents;
    }

    public String telemetryTopic() {
        return telemetryTopic;
    }

    public Map<String, Object> producerConfig() {
        return producerConfig;
    }

    public Map<String, Object> clusterConfig() {
        return clusterConfig;
    }

    public boolean commitOnRevoke() {
        return commitOnRevoke;
    }

    public int commitOnRevokeTimeoutMs() {
        return commitOnRevokeTimeoutMs;
    }

    public String processing() {
        return processing;
    }

    public int progressIntervalMs() {
        return progressIntervalMs;
    }

    public int bufferMaxEvents() {
        return bufferMaxEvents;
    }

    /** {@code lens.processing=explicit}: records are processed when the application marks them. */
    public boolean explicitProcessing() {
        return "explicit".equals(processing);
    }

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
        Object topic = config.get(TOPIC);
        String name = topic instanceof String ? (String) topic : "";
        if (name.isEmpty()) {
            throw new IllegalArgumentException("Set \"" + TOPIC + "\" (e.g. \""
                    + SPEC.textConstant("default_telemetry_topic") + "\") in the consumer config: it names the topic "
                    + "the agent writes its telemetry to.");
        }
        Map<String, Object> values = new HashMap<>();
        SPEC.options().forEach((key, option) -> values.put(key, option.defaultValue()));
        Map<String, Object> overrides = new HashMap<>();
        config.forEach((key, value) -> {
            if (!key.startsWith(PREFIX) || key.equals(TOPIC)) {
                return;
            }
            AgentSpec.Option option = SPEC.options().get(key);
            if (option != null) {
                values.put(key, checked(option, value));
            } else if (key.startsWith(TELEMETRY_PREFIX)) {
                overrides.put(key.substring(TELEMETRY_PREFIX.length()), value);
            } else {
                TreeSet<String> known = new TreeSet<>(SPEC.options().keySet());
                known.remove(TOPIC);
                throw new IllegalArgumentException("Unknown agent option '" + key + "'; known: " + TOPIC + ", "
                        + TELEMETRY_PREFIX + "<producer setting>, " + String.join(", ", known) + ".");
            }
        });
        Map<String, Object> producer = producerConfig(config, overrides);
        return new AgentOptions(name, hasAddress(producer) ? producer : null, clusterConfig(config),
                (Boolean) values.get("lens.commit.on.revoke"), (Integer) values.get("lens.commit.on.revoke.timeout.ms"),
                (String) values.get("lens.processing"), (Integer) values.get("lens.progress.interval.ms"),
                (Integer) values.get("lens.buffer.max.events"));
    }

    /** The consumer's cluster address and authentication, or null without an address. */
    private static Map<String, Object> clusterConfig(Map<String, ?> config) {
        Map<String, Object> inherited = inherited(config);
        return hasAddress(inherited) ? Map.copyOf(inherited) : null;
    }

    /** The inherited settings, with {@code overrides} ({@code lens.telemetry.*}) on top. */
    private static Map<String, Object> producerConfig(Map<String, ?> config, Map<String, Object> overrides) {
        Map<String, Object> producer = inherited(config);
        if (BOOTSTRAP_KEYS.stream().anyMatch(overrides::containsKey)) {  // the telemetry cluster is another one
            BOOTSTRAP_KEYS.forEach(producer::remove);
        }
        producer.putAll(overrides);
        return producer;
    }

    private static Map<String, Object> inherited(Map<String, ?> config) {
        Map<String, Object> inherited = new HashMap<>();
        config.forEach((key, value) -> {
            if (!key.startsWith(PREFIX) && INHERITED_PREFIXES.stream().anyMatch(key::startsWith)) {
                inherited.put(key, value);
            }
        });
        return inherited;
    }

    private static boolean hasAddress(Map<String, Object> config) {
        return BOOTSTRAP_KEYS.stream().map(config::get).anyMatch(servers -> servers != null
                && !String.valueOf(servers).isEmpty());
    }

    /** {@code value} of {@code option}, checked against its type. */
    static Object checked(AgentSpec.Option option, Object value) {
        switch (option.type()) {
            case "boolean":
                return asBool(option.key(), value);
            case "positive_integer":
                return asPositiveInt(option.key(), value);
            case "choice":
                return asChoice(option, value);
            default:
                throw new IllegalStateException("rebalance-lens: the agent spec's option " + option.key()
                        + " has a type this agent does not know: " + option.type());
        }
    }

    private static boolean asBool(String key, Object value) {
        if (value instanceof Boolean) {
            return (Boolean) value;
        }
        String text = String.valueOf(value);
        if (value instanceof String && (text.equalsIgnoreCase("true") || text.equalsIgnoreCase("false"))) {
            return Boolean.parseBoolean(text);
        }
        throw new IllegalArgumentException(key + " must be true or false, got " + value);
    }

    private static int asPositiveInt(String key, Object value) {
        try {
            int number = value instanceof Number ? ((Number) value).intValue()
                    : Integer.parseInt(String.valueOf(value).trim());
            if (number > 0) {
                return number;
            }
        } catch (NumberFormatException ignored) {
            // reported below with the key
        }
        throw new IllegalArgumentException(key + " must be a positive integer, got " + value);
    }

    private static String asChoice(AgentSpec.Option option, Object value) {
        if (value instanceof String && option.choices().contains(value)) {
            return (String) value;
        }
        throw new IllegalArgumentException(option.key() + " must be one of " + String.join(", ", option.choices())
                + ", got " + value);
    }
}
