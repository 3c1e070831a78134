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
import java.util.Map;
import java.util.function.BiConsumer;
import java.util.function.ObjLongConsumer;
import net.bytebuddy.ByteBuddy;
import net.bytebuddy.description.modifier.FieldManifestation;
import net.bytebuddy.description.modifier.Visibility;
import net.bytebuddy.dynamic.loading.ClassLoadingStrategy;
import net.bytebuddy.implementation.FieldAccessor;
import net.bytebuddy.implementation.MethodCall;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.internals.ConsumerDelegate;

/**
 * The delegate family (kafka-clients 3.7 and later, where KafkaConsumer is a facade over a {@code ConsumerDelegate}
 * field, the classic or the async consumer): the delegate becomes a {@code ConsumerDelegate} whose {@code Consumer}
 * methods go to an {@link InstrumentedConsumer} around the original (the client's internal ones straight to the
 * original). Its class is generated from the application's own {@code ConsumerDelegate} ({@link #routed}): it
 * follows the interface that kafka-clients has, and forwards each call directly (a {@code java.lang.reflect.Proxy}
 * did the same with an argument array and a reflective call per call; benchmarks/jmh's DelegateRouting measures
 * both, docs/jvm-agent.md has the figures).
 */
final class DelegateSwap {
    private static final String INSTRUMENTED = "instrumented";
    private static final String ORIGINAL = "original";
    private static Constructor<?> routed;  // guarded by DelegateSwap.class

    private DelegateSwap() {
    }

    /** {@code delegate}, instrumented; its coordinator's steps ({@code timed}) keyed by its client Metrics. */
    static Object swap(CommitWitness.Slot slot, Map<String, Object> clientConfig, AgentOptions options,
                       Object delegate, BiConsumer<Object, ObjLongConsumer<String>> timed) {
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
                    .name(DelegateSwap.class.getName() + "$Routed")
                    .implement(ConsumerDelegate.class)
                    .defineField(INSTRUMENTED, Consumer.class, Visibility.PRIVATE, FieldManifestation.FINAL)
                    .defineField(ORIGINAL, ConsumerDelegate.class, Visibility.PRIVATE, FieldManifestation.FINAL)
                    .defineConstructor(Visibility.PUBLIC).withParameters(Consumer.class, ConsumerDelegate.class)
                    .intercept(MethodCall.invoke(Object.class.getConstructor())
                            .andThen(FieldAccessor.ofField(INSTRUMENTED).setsArgumentAt(0))
                            .andThen(FieldAccessor.ofField(ORIGINAL).setsArgumentAt(1)))
                    .method(isAbstract().or(isDefaultMethod()).or(isEquals()).or(isHashCode()).or(isToString()))
                    .intercept(MethodCall.invokeSelf().onField(ORIGINAL).withAllArguments())
                    .method(isDeclaredBy(Consumer.class))  // declared later: it wins where both match
                    .intercept(MethodCall.invokeSelf().onField(INSTRUMENTED).withAllArguments())
                    .make()
                    .load(DelegateSwap.class.getClassLoader(), ClassLoadingStrategy.Default.WRAPPER)
                    .getLoaded();
            routed = type.getConstructor(Consumer.class, ConsumerDelegate.class);
        }
        return routed;
    }
}
