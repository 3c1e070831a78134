package io.rebalancelens.javaagent.helper;

import io.rebalancelens.agent.AgentOptions;
import io.rebalancelens.agent.CommitWitness;
import java.util.HashMap;
import java.util.Map;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.ObjLongConsumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;

/**
 * The javaagent's work on one KafkaConsumer under construction: its config gets the CommitWitness, and once built
 * it is instrumented the way its version family allows ({@link DelegateSwap}: 3.7 and later; {@link FacadeRouter}:
 * 3.5 and 3.6), both around the library's {@code InstrumentedConsumer}, which is told its client coordinator's
 * rebalance steps; a consumer a framework builds, and whose commits it owns, is measured by what it committed
 * ({@link Framework}).
 *
 * <p>A helper: loaded in the class loader that defined the application's KafkaConsumer or in one beside it
 * (javaagent.HelperLoader), so it links against that kafka-clients. It is reached by reflection from
 * javaagent.Hook and talks back in JDK types only ({@code tell}: one line on stderr, once; {@code timed}: where a
 * consumer's coordinator steps go); it keeps no reference to the agent's own classes.
 */
public final class Instrumenter {
    /** The version families, as javaagent.LensJavaAgent names them. */
    public static final String DELEGATE = "delegate";
    public static final String FACADE = "facade";

    private Instrumenter() {
    }

    /** The app's config already logged itself once: the rebuilt one stays quiet. */
    private static final class Rebuilt extends ConsumerConfig {
        Rebuilt(Map<String, Object> config) {
            super(config, false);
        }
    }

    /**
     * Entry of the constructor: {the config to build with, what turns what it built into what the advice keeps}, or
     * null when the library itself is building this consumer (it instruments its own). What it built: for the
     * delegate family the delegate; for the facade family {the KafkaConsumer itself, its client Metrics}.
     * {@code timed}: how the instrumented consumer is told its client coordinator's steps (keyed by the client's
     * Metrics, which the coordinator was built with).
     */
    public static Object[] begin(Object config, Map<String, Object> options, Consumer<String> tell, String family,
                                 BiConsumer<Object, ObjLongConsumer<String>> timed) {
        Map<String, Object> client = ((ConsumerConfig) config).originals();
        Map<String, Object> launch = Framework.building(client).map(f -> f.options(options, tell)).orElse(options);
        Map<String, Object> withWitness = new HashMap<>(client);
        CommitWitness.Slot slot = CommitWitness.begin(withWitness);
        if (slot == null) {
            return null;
        }
        Function<Object, Object> finish = built -> {
            try {
                AgentOptions parsed = parse(client, launch);
                return DELEGATE.equals(family) ? DelegateSwap.swap(slot, client, parsed, built, timed)
                        : FacadeRouter.route(slot, client, parsed, (Object[]) built, timed);
            } catch (RuntimeException | LinkageError e) {
                tell.accept("not instrumenting a KafkaConsumer: " + e + "; it runs without the agent");
                return DELEGATE.equals(family) ? built : null;
            } finally {
                CommitWitness.end();
            }
        };
        return new Object[] {new Rebuilt(withWitness), finish};
    }

    /** The launch options over the consumer's config: the telemetry producer inherits the consumer's cluster. */
    private static AgentOptions parse(Map<String, Object> clientConfig, Map<String, Object> launchOptions) {
        Map<String, Object> config = new HashMap<>(clientConfig);
        config.putAll(launchOptions);
        return AgentOptions.parse(config);
    }
}
