package io.rebalancelens.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/** The spec this jar carries is whole, and the agent's constants and types read it. */
class AgentSpecTest {
    private static final AgentSpec SPEC = AgentSpec.get();

    @Test
    void belongsToTheTelemetryContractsVersion() {
        assertEquals(1, SPEC.contractVersion());
        assertEquals(SPEC.contractVersion(), Envelope.SCHEMA_VERSION);
        assertEquals("last_seen", SPEC.generationWhenUnreadable());
    }

    @Test
    void theConstantsAreTheSpecs() {
        assertEquals(-1001, Processed.OFFSET_UNKNOWN);
        assertEquals(SPEC.longConstant("offset_unknown"), new PartitionSlot().position);
        assertEquals(100, Progress.MAX_PARTITIONS);
        assertEquals("rebalance-lens-telemetry", SPEC.textConstant("default_telemetry_topic"));
    }

    /** lens.commit.on.revoke.timeout.ms -> commitOnRevokeTimeoutMs. */
    static String component(String key) {
        String[] words = key.substring(AgentOptions.PREFIX.length()).split("\\.");
        return words[0] + Arrays.stream(words).skip(1).map(w -> w.substring(0, 1).toUpperCase(Locale.ROOT)
                + w.substring(1)).collect(Collectors.joining());
    }

    @Test
    void theOptionsHaveAFieldPerSpecKey() {
        Set<String> components = Arrays.stream(AgentOptions.class.getDeclaredFields())
                .filter(f -> !Modifier.isStatic(f.getModifiers())).map(Field::getName).collect(Collectors.toSet());
        Set<String> keys = SPEC.options().keySet().stream().map(AgentSpecTest::component).collect(Collectors.toSet());
        keys.add("producerConfig");
        keys.add("clusterConfig");
        assertEquals(keys, components);
    }

    @ParameterizedTest
    @ValueSource(strings = {"classic", "consumer"})
    void everyStateTheSpecNamesIsAStateOfItsProtocol(String protocol) {
        Map<String, Set<String>> table = SPEC.enteredFrom(protocol);
        table.values().forEach(previous -> assertTrue(table.keySet().containsAll(previous), previous::toString));
        for (String path : SPEC.pathNames()) {
            assertTrue(table.keySet().containsAll(SPEC.path(path, protocol)), path);
        }
        assertTrue(table.keySet().containsAll(SPEC.rejoinFrom(protocol)));
        assertFalse(SPEC.reason("fenced").isEmpty());
    }
}
