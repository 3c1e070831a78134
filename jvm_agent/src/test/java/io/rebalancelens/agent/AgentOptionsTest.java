package io.rebalancelens.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The lens.* options: the spec's keys, types and defaults; bad ones refused naming the key. */
class AgentOptionsTest {
    private static Map<String, Object> config(Object... keysAndValues) {
        Map<String, Object> config = new HashMap<>(Map.of("bootstrap.servers", "b:9092", "group.id", "g",
                "lens.telemetry.topic", "t"));
        for (int i = 0; i < keysAndValues.length; i += 2) {
            config.put((String) keysAndValues[i], keysAndValues[i + 1]);
        }
        return config;
    }

    private static String refused(Object... keysAndValues) {
        return assertThrows(IllegalArgumentException.class, () -> AgentOptions.parse(config(keysAndValues)))
                .getMessage();
    }

    @Test
    void defaultsAreTheSpecs() {
        AgentOptions options = AgentOptions.parse(config());
        AgentSpec spec = AgentSpec.get();
        assertEquals(spec.options().get("lens.commit.on.revoke").defaultValue(), options.commitOnRevoke());
        assertEquals(30_000, options.commitOnRevokeTimeoutMs());
        assertEquals("on_next_poll", options.processing());
        assertFalse(options.explicitProcessing());
        assertEquals(5_000, options.progressIntervalMs());
        assertEquals(10_000, options.bufferMaxEvents());
        assertEquals(Map.of("bootstrap.servers", "b:9092"), options.producerConfig());
        assertEquals(options.producerConfig(), options.clusterConfig());
    }

    @Test
    void valuesAreReadAsTheirTypesFromStringsOrValues() {
        AgentOptions options = AgentOptions.parse(config("lens.commit.on.revoke", "TRUE", "lens.processing",
                "explicit", "lens.progress.interval.ms", " 200", "lens.buffer.max.events", 7));
        assertTrue(options.commitOnRevoke() && options.explicitProcessing());
        assertEquals(200, options.progressIntervalMs());
        assertEquals(7, options.bufferMaxEvents());
    }

    @Test
    void theProducerInheritsTheClusterUnlessTheTelemetryNamesAnother() {
        AgentOptions options = AgentOptions.parse(config("security.protocol", "SASL_SSL", "sasl.jaas.config", "j",
                "lens.telemetry.bootstrap.servers", "other:9092", "lens.telemetry.linger.ms", "5"));
        assertEquals(Map.of("bootstrap.servers", "other:9092", "security.protocol", "SASL_SSL",
                "sasl.jaas.config", "j", "linger.ms", "5"), options.producerConfig());
        assertEquals("b:9092", options.clusterConfig().get("bootstrap.servers"));
        assertFalse(AgentOptions.clientConfig(config()).containsKey("lens.telemetry.topic"));
    }

    @Test
    void noClusterNamedMeansTelemetryOff() {
        Map<String, Object> config = config();
        config.remove("bootstrap.servers");
        AgentOptions options = AgentOptions.parse(config);
        assertNull(options.producerConfig());
        assertNull(options.clusterConfig());
    }

    @Test
    void badOptionsAreRefusedNamingTheKey() {
        assertTrue(refused("lens.comit.on.revoke", "true").startsWith("Unknown agent option 'lens.comit.on.revoke'; "
                + "known: lens.telemetry.topic, lens.telemetry.<producer setting>, lens.buffer.max.events, "
                + "lens.commit.on.revoke, lens.commit.on.revoke.timeout.ms, lens.processing, "
                + "lens.progress.interval.ms."));
        assertEquals("lens.commit.on.revoke must be true or false, got yes", refused("lens.commit.on.revoke", "yes"));
        assertEquals("lens.buffer.max.events must be a positive integer, got 0", refused("lens.buffer.max.events", 0));
        assertEquals("lens.progress.interval.ms must be a positive integer, got soon",
                refused("lens.progress.interval.ms", "soon"));
        assertEquals("lens.processing must be one of on_next_poll, explicit, committed, got later",
                refused("lens.processing", "later"));
        assertTrue(refused("lens.telemetry.topic", "").contains("\"lens.telemetry.topic\""));
    }
}
