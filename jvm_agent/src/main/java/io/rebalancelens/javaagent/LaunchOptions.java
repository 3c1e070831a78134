package io.rebalancelens.javaagent;

import io.rebalancelens.agent.AgentSpec;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;

/**
 * The javaagent's {@code lens.*} options, from the JVM's system properties and the environment: the application's
 * code and config are not the agent's to change. A system property {@code -Dlens.x.y=v} is the library's option
 * {@code lens.x.y} as is (every {@code lens.*} property is one, checked as the library checks it); an environment
 * variable {@code LENS_X_Y} is {@code lens.x.y} for the library's keys and {@code LENS_TELEMETRY_<PRODUCER SETTING>}
 * only, since other {@code LENS_*} variables are the rebalance-lens command line's. A property wins over a variable.
 */
final class LaunchOptions {
    private static final AgentSpec SPEC = AgentSpec.get();
    /** The library's keys (the agent spec's options) an environment variable may set, besides lens.telemetry.*. */
    private static final Set<String> ENV_KEYS = SPEC.options().keySet();
    private static final String PREFIX = SPEC.optionPrefix();
    /** {@code LENS_TELEMETRY_}: the spec's producer prefix as an environment variable's. */
    private static final String ENV_TELEMETRY_PREFIX = SPEC.producerPrefix().toUpperCase(Locale.ROOT).replace('.', '_');

    private LaunchOptions() {
    }

    /** The {@code lens.*} options that {@code properties} and {@code environment} set. */
    static Map<String, Object> read(Properties properties, Map<String, String> environment) {
        Map<String, Object> options = new TreeMap<>();
        environment.forEach((name, value) -> {
            String key = name.toLowerCase(Locale.ROOT).replace('_', '.');
            if (name.startsWith(ENV_TELEMETRY_PREFIX) || ENV_KEYS.contains(key)) {
                options.put(key, value);
            }
        });
        for (String name : properties.stringPropertyNames()) {
            if (name.startsWith(PREFIX)) {
                options.put(name, properties.getProperty(name));
            }
        }
        return options;
    }
}
