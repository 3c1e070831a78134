package io.rebalancelens.javaagent;

import java.lang.ref.WeakReference;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Collections;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.ObjLongConsumer;

/**
 * What the advice inlined into KafkaConsumer calls, by reflection through the system class loader (where
 * {@code -javaagent} puts this jar, whichever loader defined KafkaConsumer). It names no Kafka type: it finds
 * the helpers that link against the calling KafkaConsumer's kafka-clients ({@link #helpersOf}) and hands them the
 * constructor's config. Public because the advice runs in KafkaConsumer's package.
 */
public final class Hook {
    static final String HELPER_PACKAGE = "io.rebalancelens.javaagent.helper.";
    static final String INSTRUMENTER = HELPER_PACKAGE + "Instrumenter";
    static final String CONSUMER = "org.apache.kafka.clients.consumer.KafkaConsumer";
    private static final Set<String> SAID = ConcurrentHashMap.newKeySet();
    /** Per KafkaConsumer class (per kafka-clients copy in the JVM): its helpers' entry point. */
    private static final ClassValue<Method> BEGIN = new ClassValue<>() {
        @Override
        protected Method computeValue(Class<?> consumer) {
            try {
                return Class.forName(INSTRUMENTER, true, helpersOf(consumer))
                        .getMethod("begin", Object.class, Map.class, Consumer.class, String.class, BiConsumer.class);
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException("the agent's helpers did not load: " + e, e);
            }
        }
    };
    private static final String METRICS = "org.apache.kafka.common.metrics.Metrics";
    /**
     * Each client coordinator built (classic or KIP-848, {@link CoordinatorAdvice}): the client Metrics it was built
     * with; each instrumented consumer's Metrics: where its coordinator's steps go. Weak both ways: a consumer's
     * Metrics refers to its coordinator (a gauge), and the consumer to both.
     */
    private static final Map<Object, WeakReference<Object>> METRICS_OF =
            Collections.synchronizedMap(new WeakHashMap<>());
    private static final Map<Object, WeakReference<ObjLongConsumer<String>>> STEPS_OF =
            Collections.synchronizedMap(new WeakHashMap<>());
    private static volatile Map<String, Object> options;
    private static volatile AgentJar jar;

    private Hook() {
    }

    /** The javaagent's {@code lens.*} options, already checked: from now on consumers are instrumented. */
    static void configure(Map<String, Object> checked, AgentJar agentJar) {
        jar = agentJar;
        options = Map.copyOf(checked);
    }

    /**
     * The loader of the helpers for {@code consumer}: the agent's own copy when it links to this very KafkaConsumer
     * (a flat class path: one copy of the library, shared with an application that also builds InstrumentedConsumers
     * itself), else a {@link HelperLoader} beside the loader that defined it.
     */
    static ClassLoader helpersOf(Class<?> consumer) {
        ClassLoader application = consumer.getClassLoader();
        Class<?> own = loadOrNull(INSTRUMENTER, application);
        if (own != null && loadOrNull(CONSUMER, own.getClassLoader()) == consumer) {
            return own.getClassLoader();
        }
        return new HelperLoader(application, jar);
    }

    private static Class<?> loadOrNull(String name, ClassLoader loader) {
        try {
            return Class.forName(name, false, loader);
        } catch (ClassNotFoundException | LinkageError e) {
            return null;
        }
    }

    /**
     * Entry of the constructor of {@code consumer} (KafkaConsumer), advised for version {@code family}
     * ({@link Family}): {the config to build with, a {@code Function<Object, Object>} from what the constructor
     * built to what the advice keeps}, or null: leave it alone.
     */
    public static Object[] begin(Class<?> consumer, Object config, String family) {
        if (options == null) {
            return null;
        }
        try {
            return (Object[]) BEGIN.get(consumer).invoke(null, config, options, (Consumer<String>) Hook::tell, family,
                    (BiConsumer<Object, ObjLongConsumer<String>>) Hook::timed);
        } catch (InvocationTargetException e) {
            say("not instrumenting a KafkaConsumer: " + e.getCause());
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            say("not instrumenting a KafkaConsumer: " + e);
        }
        return null;
    }

    /** A client coordinator was built with these constructor arguments: among them, its consumer's Metrics. */
    public static void built(Object coordinator, Object[] arguments) {
        for (Object argument : arguments) {
            if (argument != null && argument.getClass().getName().equals(METRICS)) {
                METRICS_OF.put(coordinator, new WeakReference<>(argument));
            }
        }
    }

    /** A step of a client coordinator's rebalance, now: to its consumer's timing if the agent instruments it. */
    public static void step(Object coordinator, String step) {
        long now = System.nanoTime();
        WeakReference<Object> metrics = METRICS_OF.get(coordinator);
        WeakReference<ObjLongConsumer<String>> steps = metrics == null ? null : STEPS_OF.get(metrics.get());
        ObjLongConsumer<String> sink = steps == null ? null : steps.get();
        if (sink != null) {
            sink.accept(step, now);
        }
    }

    /** The instrumented consumer whose client has {@code metrics} takes its coordinator's steps in {@code steps}. */
    static void timed(Object metrics, ObjLongConsumer<String> steps) {
        if (metrics != null) {
            STEPS_OF.put(metrics, new WeakReference<>(steps));
        }
    }

    /** Why the agent stands aside, in one line (once): the application runs without it. */
    static void say(String message) {
        tell(message + "; the application runs without it.");
    }

    /** One line on stderr, once per message: the host's output is not the agent's to fill. */
    static void tell(String message) {
        if (SAID.add(message)) {
            System.err.println("rebalance-lens javaagent: " + message);
        }
    }
}
