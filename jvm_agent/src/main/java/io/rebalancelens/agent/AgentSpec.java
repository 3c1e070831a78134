package io.rebalancelens.agent;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The agent spec, consumer_agent/agent-spec-v1.json: what both agents do the same way, declared once (the member
 * state machines and their paths, the {@code lens.*} options, the secrets, the contract's constants). The pom copies
 * the file into this jar beside this class; it is read once, when the agent's first class needs it, and handed on
 * as plain Java values (Jackson stays in here).
 *
 * <p>Why read at start rather than generate Java tables at build time: one file and no generator to keep current,
 * and the jar carries exactly the contract's file. The lookup works from any class loader: the one that defined
 * this class first (the library's jar, the javaagent's), then the system class loader, on whose path a
 * {@code -javaagent} jar always is, so agent classes injected into an application's own class loader (a Spring Boot
 * nested jar) still find it.
 */
public final class AgentSpec {
    static final String RESOURCE = "io/rebalancelens/agent/agent-spec-v1.json";
    private static final AgentSpec SPEC = load();

    /** One {@code lens.*} option: its type (string, boolean, positive_integer, choice) and default. */
    public static final class Option {
        private final String key;
        private final String type;
        private final boolean required;
        private final Object defaultValue;
        private final List<String> choices;

        Option(String key, String type, boolean required, Object defaultValue, List<String> choices) {
            this.key = key;
            this.type = type;
            this.required = required;
            this.defaultValue = defaultValue;
            this.choices = choices;
        }

        public String key() {
            return key;
        }

        public String type() {
            return type;
        }

        public boolean required() {
            return required;
        }

        public Object defaultValue() {
            return defaultValue;
        }

        public List<String> choices() {
            return choices;
        }
    }

    private final JsonNode root;
    private final Map<String, Option> options;

    AgentSpec(JsonNode root) {
        this.root = root;
        Map<String, Option> read = new LinkedHashMap<>();
        JsonNode keys = root.path("options").path("keys");
        keys.fieldNames().forEachRemaining(key -> read.put(key, option(key, keys.get(key))));  // any Jackson 2
        this.options = Collections.unmodifiableMap(read);
    }

    /** The spec this jar carries. */
    public static AgentSpec get() {
        return SPEC;
    }

    static AgentSpec load() {
        try (InputStream in = open()) {
            return new AgentSpec(new ObjectMapper().readTree(in));
        } catch (IOException e) {
            throw new IllegalStateException("rebalance-lens: cannot read the agent spec " + RESOURCE + ": " + e, e);
        }
    }

    private static InputStream open() {
        ClassLoader own = AgentSpec.class.getClassLoader();
        InputStream in = own != null ? own.getResourceAsStream(RESOURCE) : null;
        if (in == null) {
            in = ClassLoader.getSystemResourceAsStream(RESOURCE);
        }
        if (in == null) {
            throw new IllegalStateException("rebalance-lens: the agent spec " + RESOURCE + " is missing from the "
                    + "agent's jar and the class path; rebuild the jar (jvm_agent/pom.xml copies it in)");
        }
        return in;
    }

    private static Option option(String key, JsonNode entry) {
        JsonNode fallback = entry.path("default");
        Object value = fallback.isBoolean() ? (Object) fallback.booleanValue()
                : fallback.isInt() ? (Object) fallback.intValue() : fallback.isTextual() ? fallback.textValue() : null;
        return new Option(key, entry.path("type").asText(), entry.path("required").asBoolean(false), value,
                strings(entry.path("choices")));
    }

    private static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(item -> out.add(item.asText()));
        return Collections.unmodifiableList(out);
    }

    /** The telemetry schema version this spec belongs to (the envelope's schema_version). */
    public int contractVersion() {
        return root.path("contract_version").asInt();
    }

    /** How the envelope's generation is filled where the client cannot answer ("last_seen"). */
    public String generationWhenUnreadable() {
        return root.path("envelope").path("generation_when_unreadable").asText();
    }

    public long longConstant(String name) {
        return constant(name).asLong();
    }

    public double doubleConstant(String name) {
        return constant(name).asDouble();
    }

    public String textConstant(String name) {
        return constant(name).asText();
    }

    private JsonNode constant(String name) {
        JsonNode value = root.path("constants").path(name).path("value");
        if (value.isMissingNode()) {
            throw new IllegalStateException("rebalance-lens: the agent spec has no constant " + name);
        }
        return value;
    }

    // ------------------------------------------------------------------ options
    /** Every {@code lens.*} option, in the spec's order. */
    /**
     * The rebalance protocols of the classic assignor named {@code name} (any name a client knows it by), empty
     * for one the spec does not list; {@code upgradeFrom}: the member's {@code upgrade.from}, which keeps some
     * eager (the spec's client_assignors).
     */
    public List<String> assignorProtocols(String name, Object upgradeFrom) {
        JsonNode assignors = root.path("client_assignors").path("assignors");
        for (Iterator<JsonNode> it = assignors.elements(); it.hasNext(); ) {
            JsonNode assignor = it.next();
            if (!strings(assignor.path("names")).contains(name)) {
                continue;
            }
            String from = upgradeFrom == null ? "" : String.valueOf(upgradeFrom);
            boolean upgrading = !from.isEmpty() && strings(assignor.path("eager_when_upgrading_from")).stream()
                    .anyMatch(from::startsWith);
            return upgrading ? List.of("eager") : strings(assignor.path("protocols"));
        }
        return List.of();
    }

    public Map<String, Option> options() {
        return options;
    }

    public String optionPrefix() {
        return root.path("options").path("prefix").asText();
    }

    /** {@code lens.telemetry.}: the telemetry producer's own settings. */
    public String producerPrefix() {
        return root.path("options").path("producer_prefix").asText();
    }

    /** The cluster address's names (the Java client knows the first only). */
    public List<String> bootstrapKeys() {
        return strings(root.path("options").path("bootstrap_keys"));
    }

    /** The consumer settings the telemetry producer inherits: the cluster address and how to authenticate. */
    public List<String> inheritedPrefixes() {
        return strings(root.path("options").path("inherited_prefixes"));
    }

    // ------------------------------------------------------------------ secrets
    public String redacted() {
        return root.path("secrets").path("replacement").asText();
    }

    /** Substrings of a lower-cased key that make it secret. */
    public List<String> secretKeyMarkers() {
        return strings(root.path("secrets").path("key_markers"));
    }

    /** Parts of any value that are secret (a URL's userinfo). */
    public List<Pattern> secretValuePatterns() {
        List<Pattern> patterns = new ArrayList<>();
        root.path("secrets").path("value_patterns").forEach(p -> patterns.add(Pattern.compile(p.path("pattern")
                .asText())));
        return patterns;
    }

    /** The spec's redaction examples ({@code secret_keys}, {@code kept_keys}), for the tests. */
    List<String> secretExamples(String name) {
        return strings(root.path("secrets").path("examples").path(name));
    }

    /** The spec's {@code {value, shown}} redaction examples, for the tests. */
    Map<String, String> secretValueExamples() {
        Map<String, String> out = new LinkedHashMap<>();
        root.path("secrets").path("examples").path("values").forEach(c -> out.put(c.path("value").asText(),
                c.path("shown").asText()));
        return out;
    }

    // ------------------------------------------------------------------ member states
    /** The protocol's states, each with the states it may be entered from. */
    public Map<String, Set<String>> enteredFrom(String protocol) {
        Map<String, Set<String>> table = new LinkedHashMap<>();
        JsonNode states = root.path("member_states").path(protocol).path("states");
        states.fieldNames().forEachRemaining(state -> table.put(state, Collections.unmodifiableSet(
                new LinkedHashSet<>(strings(states.get(state).path("entered_from"))))));
        return Collections.unmodifiableMap(table);
    }

    /** The names of the lifecycle's paths (subscribed, in_assign, ...). */
    public List<String> pathNames() {
        List<String> names = new ArrayList<>();
        root.path("lifecycle").path("paths").fieldNames().forEachRemaining(names::add);
        return names;
    }

    /** The states an observation leads to, in order. */
    public List<String> path(String name, String protocol) {
        List<String> path = strings(root.path("lifecycle").path("paths").path(name).path(protocol));
        if (path.isEmpty()) {
            throw new IllegalStateException("rebalance-lens: the agent spec has no path " + name + " for " + protocol);
        }
        return path;
    }

    /** States from which a new assignment means the member joined again. */
    public Set<String> rejoinFrom(String protocol) {
        return Set.copyOf(strings(root.path("lifecycle").path("rejoin_from").path(protocol)));
    }

    /** A state_transition reason by the spec's name for it (subscribe, assign, revoked_leaving, close, ...). */
    public String reason(String name) {
        JsonNode reason = root.path("lifecycle").path("reasons").path(name);
        if (!reason.isTextual()) {
            throw new IllegalStateException("rebalance-lens: the agent spec has no reason " + name);
        }
        return reason.textValue();
    }
}
