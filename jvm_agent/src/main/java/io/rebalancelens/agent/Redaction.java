package io.rebalancelens.agent;

import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/** Secrets never leave the process: the same rules as consumer_agent/redaction.py. */
final class Redaction {
    static final String REDACTED = "[redacted]";
    /** Broad on purpose: one redaction too many costs nothing, one leak costs a lot. */
    private static final String[] SECRET_MARKERS = {"password", "secret", "key", "token", "jaas", "credentials"};

    private Redaction() {}

    static boolean isSecret(String key) {
        String lowered = key.toLowerCase(Locale.ROOT);
        for (String marker : SECRET_MARKERS) {
            if (lowered.contains(marker)) {
                return true;
            }
        }
        return false;
    }

    /** A string-valued copy of {@code config} with secret values replaced; classes and objects shown by name. */
    static Map<String, String> redacted(Map<String, ?> config) {
        Map<String, String> snapshot = new TreeMap<>();
        config.forEach((key, value) -> snapshot.put(key, isSecret(key) ? REDACTED : shown(value)));
        return snapshot;
    }

    private static String shown(Object value) {
        if (value instanceof Class<?> type) {
            return type.getName();
        }
        if (value == null || value instanceof String || value instanceof Number || value instanceof Boolean
                || value instanceof java.util.Collection<?>) {
            return String.valueOf(value);
        }
        return "<object " + value.getClass().getName() + ">";
    }
}
