package io.rebalancelens.javaagent;

import io.rebalancelens.agent.AgentOptions;
import io.rebalancelens.agent.CommitWitness;
import io.rebalancelens.agent.InstrumentedConsumer;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.internals.ConsumerDelegate;
import org.apache.kafka.common.utils.AppInfoParser;

/**
 * The javaagent's work on one KafkaConsumer under construction: its config gets the CommitWitness, its delegate
 * becomes a {@code ConsumerDelegate} whose {@code Consumer} methods go to an {@link InstrumentedConsumer} around
 * the original (the client's internal ones straight to the original). A proxy rather than a class: no second
 * copy of the Consumer interface's forwarding, and it follows the interface the application's kafka-clients has.
 */
final class Instrumenter {
    private Instrumenter() {
    }

    /** What the constructor's exit needs: the witness's slot and the application's own config. */
    private record Pending(CommitWitness.Slot slot, Map<String, Object> clientConfig) {
    }

    /** The app's config already logged itself once: the rebuilt one stays quiet. */
    private static final class Rebuilt extends ConsumerConfig {
        Rebuilt(Map<String, Object> config) {
            super(config, false);
        }
    }

    static Object[] begin(Object config) {
        String version = AppInfoParser.getVersion();
        if (LensJavaAgent.SUPPORTED.stream().noneMatch(version::startsWith)) {
            Hook.say("kafka-clients " + version + " is not a version this agent supports (" + LensJavaAgent.SUPPORTED + ")");
            return null;
        }
        Map<String, Object> client = ((ConsumerConfig) config).originals();
        Map<String, Object> withWitness = new HashMap<>(client);
        CommitWitness.Slot slot = CommitWitness.begin(withWitness);
        if (slot == null) {
            return null;  // InstrumentedConsumer is building its own client: instrumented already
        }
        return new Object[] {new Rebuilt(withWitness), new Pending(slot, client)};
    }

    static Object instrument(Object pending, Object delegate) {
        Pending built = (Pending) pending;
        Map<String, Object> config = new HashMap<>(built.clientConfig());
        config.putAll(Hook.options());
        AgentOptions options = AgentOptions.parse(config);  // the producer inherits the consumer's cluster
        ConsumerDelegate<?, ?> original = (ConsumerDelegate<?, ?>) delegate;
        Consumer<?, ?> instrumented = InstrumentedConsumer.around(original, built.slot(), built.clientConfig(), options);
        InvocationHandler route = (proxy, method, args) -> {
            Object target = method.getDeclaringClass() == Consumer.class ? instrumented : original;
            try {
                return method.invoke(target, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        };
        return Proxy.newProxyInstance(ConsumerDelegate.class.getClassLoader(), new Class<?>[] {ConsumerDelegate.class},
                route);
    }

    static void end() {
        CommitWitness.end();
    }
}
