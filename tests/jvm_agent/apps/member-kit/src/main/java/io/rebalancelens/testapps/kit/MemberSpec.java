package io.rebalancelens.testapps.kit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The JSON a scenario member is started with (lens_scenarios/runner.py's {@code spec_for}, the one the Python and
 * Java members take): where to write truth, who it is, what to read, its client config (the Java client's words,
 * lens_scenarios/java_member.py) and how long a record takes to process. An application's own knobs (which
 * listener, which acknowledgement) sit under {@code "app"}, which the scenario members ignore.
 *
 * <p>{@link #config} leaves out the {@code lens.*} options a scenario gives its agent members: these applications
 * know nothing of rebalance-lens, and the javaagent takes its options from the JVM's command line instead.
 */
public final class MemberSpec {
    static final ObjectMapper JSON = new ObjectMapper();

    public final Path runDir;
    public final String member;
    public final String process;
    public final boolean agent;
    public final List<String> topics;
    public final List<String> subscribe;
    public final Map<String, Object> config;
    public final double processingMs;
    private final JsonNode app;

    private MemberSpec(JsonNode spec) {
        runDir = Path.of(spec.get("run_dir").asText());
        member = spec.get("member").asText();
        process = spec.get("process").asText();
        agent = spec.path("agent").asBoolean(true);
        topics = strings(spec.get("topics"));
        subscribe = spec.has("subscribe") ? strings(spec.get("subscribe")) : topics;
        Map<String, Object> client = JSON.convertValue(spec.get("config"),
                JSON.getTypeFactory().constructMapType(LinkedHashMap.class, String.class, Object.class));
        client.keySet().removeIf(key -> key.startsWith("lens."));
        config = Collections.unmodifiableMap(client);
        processingMs = spec.path("processing_ms").asDouble(0);
        app = spec.path("app");
    }

    /** The spec in {@code json}; an IllegalArgumentException naming what is missing. */
    public static MemberSpec parse(String json) {
        try {
            return new MemberSpec(JSON.readTree(json));
        } catch (IOException e) {
            throw new UncheckedIOException("the member spec is not JSON: " + e.getMessage(), e);
        } catch (NullPointerException e) {
            throw new IllegalArgumentException("the member spec lacks run_dir, member, process, topics or config", e);
        }
    }

    /** The application's own setting {@code key} (under "app"), else {@code fallback}. */
    public String app(String key, String fallback) {
        JsonNode value = app.get(key);
        return value == null || value.isNull() ? fallback : value.asText();
    }

    /** The application's settings under "app" whose names start with {@code prefix}, without it. */
    public Map<String, String> appSettings(String prefix) {
        Map<String, String> out = new LinkedHashMap<>();
        app.fields().forEachRemaining(field -> {
            if (field.getKey().startsWith(prefix)) {
                out.put(field.getKey().substring(prefix.length()), field.getValue().asText());
            }
        });
        return out;
    }

    /** The consumer's group.protocol as configured (null: the client's default), for the truth log's meta. */
    public String groupProtocol() {
        Object protocol = config.get("group.protocol");
        return protocol == null ? null : protocol.toString();
    }

    private static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(node -> out.add(node.asText()));
        return Collections.unmodifiableList(out);
    }
}
