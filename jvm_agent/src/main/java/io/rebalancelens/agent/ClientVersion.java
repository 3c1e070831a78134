package io.rebalancelens.agent;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

/**
 * The kafka-clients version a class loader sees, from the client's own {@code kafka/kafka-version.properties} (what
 * its AppInfoParser reads; that class moved in 4.4), without loading a class: the javaagent names it before any
 * Kafka class is loaded, the library for its member_config. Names no Kafka type.
 */
public final class ClientVersion {
    static final String UNKNOWN = "unknown";
    private static final String FILE = "kafka/kafka-version.properties";

    private ClientVersion() {
    }

    /** The version {@code loader} (null: the system loader) sees, or {@code unknown}. */
    public static String of(ClassLoader loader) {
        try (InputStream in = loader == null ? ClassLoader.getSystemResourceAsStream(FILE)
                : loader.getResourceAsStream(FILE)) {
            Properties properties = new Properties();
            if (in != null) {
                properties.load(in);
            }
            return properties.getProperty("version", UNKNOWN);
        } catch (IOException e) {
            return UNKNOWN;
        }
    }
}
