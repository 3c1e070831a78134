package io.rebalancelens.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** The spec's redaction examples, which the Python agent's tests pass too. */
class RedactionTest {
    static List<String> secretKeys() {
        return AgentSpec.get().secretExamples("secret_keys");
    }

    @ParameterizedTest
    @MethodSource("secretKeys")
    void everySecretKeyOfTheSpecIsRedacted(String key) {
        assertEquals(Map.of(key, "[redacted]", "bootstrap.servers", "b:9092"),
                Redaction.redacted(Map.of(key, "s3cr3t", "bootstrap.servers", "b:9092")));
    }

    @Test
    void otherKeysAreKeptAndUrlsLoseTheirUserinfo() {
        AgentSpec.get().secretExamples("kept_keys").forEach(key -> assertFalse(Redaction.isSecret(key), key));
        AgentSpec.get().secretValueExamples().forEach((value, shown) -> assertEquals(
                Map.of("schema.registry.url", shown), Redaction.redacted(Map.of("schema.registry.url", value))));
    }

    @Test
    void classesAndObjectsAreShownByName() {
        Map<String, String> snapshot = Redaction.redacted(Map.of("interceptor.classes", List.of("a.B"),
                "value.deserializer", String.class, "partitioner", new Object(), "retries", 3));
        assertEquals(Map.of("interceptor.classes", "[a.B]", "value.deserializer", "java.lang.String",
                "partitioner", "<object java.lang.Object>", "retries", "3"), snapshot);
    }
}
