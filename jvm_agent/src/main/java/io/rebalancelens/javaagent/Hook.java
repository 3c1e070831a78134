package io.rebalancelens.javaagent;

import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What the advice inlined into KafkaConsumer calls. It names no Kafka type, so it loads wherever KafkaConsumer
 * does; {@link Instrumenter} (which does) may not link when kafka-clients is not on the application class path
 * (a nested jar): then one line, and the consumer is left as it is. Public because the advice runs in
 * KafkaConsumer's package.
 */
public final class Hook {
    private static final Set<String> SAID = ConcurrentHashMap.newKeySet();
    private static volatile Map<String, Object> options;

    private Hook() {
    }

    /** The javaagent's {@code lens.*} options, already checked: from now on consumers are instrumented. */
    static void configure(Map<String, Object> checked) {
        options = Map.copyOf(checked);
    }

    static Map<String, Object> options() {
        return options;
    }

    /** Entry of the constructor: {config to build with, what {@link #instrument} needs}, or null: leave it alone. */
    public static Object[] begin(Object config) {
        if (options == null) {
            return null;
        }
        try {
            return Instrumenter.begin(config);
        } catch (LinkageError e) {
            say("kafka-clients is not on the application class path (" + e + "; a nested jar, as in Spring Boot's "
                    + "executable jar?): run the application from a flat class path (java -cp, an unpacked jar) to "
                    + "use the agent");
            return null;
        } catch (RuntimeException e) {
            say("not instrumenting a KafkaConsumer: " + e);
            return null;
        }
    }

    /** Exit of the constructor: the delegate to keep, the instrumented one or {@code delegate} itself. */
    public static Object instrument(Object pending, Object delegate) {
        try {
            return Instrumenter.instrument(pending, delegate);
        } catch (RuntimeException | LinkageError e) {
            say("not instrumenting a KafkaConsumer: " + e);
            return delegate;
        } finally {
            Instrumenter.end();
        }
    }

    /** One line on stderr, once per message: the host's output is not the agent's to fill. */
    static void say(String message) {
        if (SAID.add(message)) {
            System.err.println("rebalance-lens javaagent: " + message + "; the application runs without it.");
        }
    }
}
