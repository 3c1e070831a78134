package io.rebalancelens.javaagent.helper;

import io.rebalancelens.agent.AgentOptions;
import io.rebalancelens.agent.CommitWitness;
import io.rebalancelens.agent.InstrumentedConsumer;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.HashMap;
import java.util.Map;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.ObjLongConsumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.internals.ConsumerDelegate;

/**
 * The javaagent's work on one KafkaConsumer under construction: its config gets the CommitWitness, its delegate
 * becomes a {@code ConsumerDelegate} whose {@code Consumer} methods go to an {@link InstrumentedConsumer} around
 * the original (the client's internal ones straight to the original). A proxy rather than a class: no second
 * copy of the Consumer interface's forwarding, and it follows the interface the application's kafka-clients has.
 *
 * <p>A helper: loaded in the class loader that defined the application's KafkaConsumer or in one beside it
 * (javaagent.HelperLoader), so it links against that kafka-clients. It is reached by reflection from
 * javaagent.Hook and talks back in JDK types only ({@code say}); it keeps no reference to the agent's own classes.
 */
public final class Instrumenter {
    private Instrumenter() {
    }

    /** The app's config already logged itself once: the rebuilt one stays quiet. */
    private static final class Rebuilt extends ConsumerConfig {
        Rebuilt(Map<String, Object> config) {
            super(config, false);
        }
    }

    /**
     * Entry of the constructor: {the config to build with, what turns the delegate it built into the instrumented
     * one}, or null when the library itself is building this consumer (it instruments its own). {@code timed}: how
     * the instrumented consumer is told its client coordinator's steps (keyed by the client's Metrics).
     */
    public static Object[] begin(Object config, Map<String, Object> options, Consumer<String> say,
                                 BiConsumer<Object, ObjLongConsumer<String>> timed) {
        Map<String, Object> client = ((ConsumerConfig) config).originals();
        Map<String, Object> withWitness = new HashMap<>(client);
        CommitWitness.Slot slot = CommitWitness.begin(withWitness);
        if (slot == null) {
            return null;
        }
        Function<Object, Object> finish = delegate -> {
            try {
                return instrument(slot, client, options, delegate, timed);
            } catch (RuntimeException | LinkageError e) {
                say.accept("not instrumenting a KafkaConsumer: " + e);
                return delegate;
            } finally {
                CommitWitness.end();
            }
        };
        return new Object[] {new Rebuilt(withWitness), finish};
    }

    private static Object instrument(CommitWitness.Slot slot, Map<String, Object> clientConfig,
                                     Map<String, Object> launchOptions, Object delegate,
                                     BiConsumer<Object, ObjLongConsumer<String>> timed) {
        Map<String, Object> config = new HashMap<>(clientConfig);
        config.putAll(launchOptions);
        AgentOptions options = AgentOptions.parse(config);  // the producer inherits the consumer's cluster
        ConsumerDelegate<?, ?> original = (ConsumerDelegate<?, ?>) delegate;
        InstrumentedConsumer<?, ?> instrumented = InstrumentedConsumer.around(original, slot, clientConfig, options);
        timed.accept(original.metricsRegistry(), instrumented.coordinatorSteps());
        InvocationHandler route = (proxy, method, args) -> {
            Object target = method.getDeclaringClass() == org.apache.kafka.clients.consumer.Consumer.class
                    ? instrumented : original;
            try {
                return method.invoke(target, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        };
        return Proxy.newProxyInstance(ConsumerDelegate.class.getClassLoader(), new Class<?>[] {ConsumerDelegate.class},
                route);
    }
}
