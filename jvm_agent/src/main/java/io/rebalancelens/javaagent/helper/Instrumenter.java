package io.rebalancelens.javaagent.helper;

import static net.bytebuddy.matcher.ElementMatchers.isAbstract;
import static net.bytebuddy.matcher.ElementMatchers.isDeclaredBy;
import static net.bytebuddy.matcher.ElementMatchers.isDefaultMethod;
import static net.bytebuddy.matcher.ElementMatchers.isEquals;
import static net.bytebuddy.matcher.ElementMatchers.isHashCode;
import static net.bytebuddy.matcher.ElementMatchers.isToString;

import io.rebalancelens.agent.AgentOptions;
import io.rebalancelens.agent.CommitWitness;
import io.rebalancelens.agent.InstrumentedConsumer;
import java.lang.reflect.Constructor;
import java.util.HashMap;
import java.util.Map;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.ObjLongConsumer;
import net.bytebuddy.ByteBuddy;
import net.bytebuddy.description.modifier.FieldManifestation;
import net.bytebuddy.description.modifier.Visibility;
import net.bytebuddy.dynamic.loading.ClassLoadingStrategy;
import net.bytebuddy.implementation.FieldAccessor;
import net.bytebuddy.implementation.MethodCall;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.internals.ConsumerDelegate;

/**
 * The javaagent's work on one KafkaConsumer under construction: its config gets the CommitWitness, its delegate
 * becomes a {@code ConsumerDelegate} whose {@code Consumer} methods go to an {@link InstrumentedConsumer} around
 * the original (the client's internal ones straight to the original). Its class is generated from the application's
 * own {@code ConsumerDelegate} ({@link #routed}): it follows the interface that kafka-clients has, and forwards each
 * call directly (a {@code java.lang.reflect.Proxy} did the same with an argument array and a reflective call per call:
 * 64 B allocated per call where this class allocates 16, benchmarks/jmh's DelegateRouting).
 *
 * <p>A helper: loaded in the class loader that defined the application's KafkaConsumer or in one beside it
 * (javaagent.HelperLoader), so it links against that kafka-clients. It is reached by reflection from
 * javaagent.Hook and talks back in JDK types only ({@code say}); it keeps no reference to the agent's own classes.
 */
public final class Instrumenter {
    private static final Class<?> KAFKA_CONSUMER = org.apache.kafka.clients.consumer.Consumer.class;
    private static final String INSTRUMENTED = "instrumented";
    private static final String ORIGINAL = "original";
    private static Constructor<?> routed;  // guarded by Instrumenter.class

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
        try {
            return routed().newInstance(instrumented, original);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("the agent's delegate class did not build: " + e, e);
        }
    }

    /**
     * The constructor of the delegate class, generated once (per kafka-clients copy: a helper is loaded per copy)
     * from the application's own {@code ConsumerDelegate}, so it has exactly that version's methods: the
     * {@code Consumer} ones call the instrumented consumer, the rest (the client's internals, and equals, hashCode,
     * toString) the original delegate. Direct calls: no array of arguments, no reflection, per call.
     */
    private static synchronized Constructor<?> routed() throws NoSuchMethodException {
        if (routed == null) {
            Class<?> type = new ByteBuddy()
                    .subclass(Object.class)
                    .name(Instrumenter.class.getName() + "$RoutedDelegate")
                    .implement(ConsumerDelegate.class)
                    .defineField(INSTRUMENTED, KAFKA_CONSUMER, Visibility.PRIVATE, FieldManifestation.FINAL)
                    .defineField(ORIGINAL, ConsumerDelegate.class, Visibility.PRIVATE, FieldManifestation.FINAL)
                    .defineConstructor(Visibility.PUBLIC).withParameters(KAFKA_CONSUMER, ConsumerDelegate.class)
                    .intercept(MethodCall.invoke(Object.class.getConstructor())
                            .andThen(FieldAccessor.ofField(INSTRUMENTED).setsArgumentAt(0))
                            .andThen(FieldAccessor.ofField(ORIGINAL).setsArgumentAt(1)))
                    .method(isAbstract().or(isDefaultMethod()).or(isEquals()).or(isHashCode()).or(isToString()))
                    .intercept(MethodCall.invokeSelf().onField(ORIGINAL).withAllArguments())
                    .method(isDeclaredBy(KAFKA_CONSUMER))  // declared later: it wins where both match
                    .intercept(MethodCall.invokeSelf().onField(INSTRUMENTED).withAllArguments())
                    .make()
                    .load(Instrumenter.class.getClassLoader(), ClassLoadingStrategy.Default.WRAPPER)
                    .getLoaded();
            routed = type.getConstructor(KAFKA_CONSUMER, ConsumerDelegate.class);
        }
        return routed;
    }
}
