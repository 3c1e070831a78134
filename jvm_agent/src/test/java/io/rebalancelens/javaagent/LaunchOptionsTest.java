package io.rebalancelens.javaagent;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;

/** The javaagent's options: -Dlens.* as they are, LENS_* for the spec's keys and producer settings only. */
class LaunchOptionsTest {
    @Test
    void propertiesAndTheSpecsEnvironmentVariablesAreRead() {
        Properties properties = new Properties();
        properties.setProperty("lens.telemetry.topic", "from-property");
        properties.setProperty("lens.made.up", "checked later, by the library's parser");
        properties.setProperty("other", "x");
        Map<String, String> environment = Map.of("LENS_TELEMETRY_TOPIC", "from-environment",
                "LENS_COMMIT_ON_REVOKE", "true", "LENS_TELEMETRY_BOOTSTRAP_SERVERS", "t:9092",
                "LENS_LAKE_PATH", "the command line's", "PATH", "/bin");
        assertEquals(Map.of("lens.telemetry.topic", "from-property", "lens.made.up",
                "checked later, by the library's parser", "lens.commit.on.revoke", "true",
                "lens.telemetry.bootstrap.servers", "t:9092"), LaunchOptions.read(properties, environment));
    }
}
