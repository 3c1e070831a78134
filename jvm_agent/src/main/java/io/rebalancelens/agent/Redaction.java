package io.rebalancelens.agent;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Secrets never leave the process: the agent spec's secrets (consumer_agent/agent-spec-v1.json, the Python agent's
 * too). A key naming a secret has its value replaced; the userinfo of a URL is replaced in any value.
 */
final class Redaction {
    static final String REDACTED = AgentSpec.get().redacted();
    /** Broad on purpose: one redaction too many costs nothing, one leak costs a lot. */
    private static final List<String> SECRET_MARKERS = AgentSpec.get().secretKeyMarkers();
    private static final List<Pattern> VALUE_PATTERNS = AgentSpec.get().secretValuePatterns();

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

    /** {@code text} with the parts the spec's value patterns match replaced. */
    static String redactedValue(String text) {
        for (Pattern pattern : VALUE_PATTERNS) {
            text = pattern.matcher(text).replaceAll(Matcher.quoteReplacement(REDACTED));
        }
        return text;
    }

    /** A string-valued copy of {@code config} with secret values replaced; classes and objects shown by name. */
    static Map<String, String> redacted(Map<String, ?> config) {
        Map<String, String> snapshot = new TreeMap<>();
        config.forEach((key, value) -> snapshot.put(key, isSecret(key) ? REDACTED : redactedValue(shown(value))));
        return snapshot;
    }

    private static String shown(Object value) {
        if (value instanceof Class<?>) {
            return ((Class<?>) value).getName();
        }
        if (value == null || value instanceof String || value instanceof Number || value instanceof Boolean
                || value instanceof java.util.Collection<?>) {
            return String.valueOf(value);
        }
        return "<object " + value.getClass().getName() + ">";
    }
}
