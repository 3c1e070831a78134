package io.rebalancelens.javaagent.helper;

import io.rebalancelens.agent.AgentOptions;
import io.rebalancelens.agent.CommitWitness;
import io.rebalancelens.agent.InstrumentedConsumer;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.function.BiConsumer;
import java.util.function.BiFunction;
import java.util.function.ObjLongConsumer;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetCommitCallback;
import org.apache.kafka.common.TopicPartition;

/**
 * The facade family (kafka-clients 3.5 and 3.6, where KafkaConsumer is the consumer itself, no delegate to swap):
 * advice on each of KafkaConsumer's {@code Consumer} methods asks this router first (javaagent.FacadeAdvice), and it
 * runs the call through an {@link InstrumentedConsumer} instead. That consumer's own delegate is the same
 * KafkaConsumer, reached through {@link #direct}: while the agent's call of a method runs, the advice lets the
 * client's code run as written (its own calls of its public methods included). The application's code that the
 * client calls back from inside (rebalance listeners, commit callbacks) is routed again, so a commit in a revoke
 * callback is the agent's to see, as in the delegate family.
 */
public final class FacadeRouter implements BiFunction<String, Object[], Object[]> {
    /** Consumer's methods by name + JVM descriptor (what the advice names), per kafka-clients copy. */
    private static final ClassValue<Map<String, Method>> METHODS = new ClassValue<>() {
        @Override
        protected Map<String, Method> computeValue(Class<?> consumerInterface) {
            Map<String, Method> byDescriptor = new HashMap<>();
            for (Method method : consumerInterface.getMethods()) {
                byDescriptor.put(method.getName() + descriptor(method), method);
            }
            return byDescriptor;
        }
    };
    private static final Map<Class<?>, String> PRIMITIVES = Map.of(boolean.class, "Z", byte.class, "B",
            char.class, "C", short.class, "S", int.class, "I", long.class, "J", float.class, "F", double.class, "D",
            void.class, "V");
    /** Set while the agent's own call of a client method runs on this thread: the advice then stands aside. */
    private final ThreadLocal<Boolean> direct = new ThreadLocal<>();
    private final InstrumentedConsumer<?, ?> instrumented;

    private FacadeRouter(Consumer<?, ?> client, CommitWitness.Slot slot, Map<String, Object> clientConfig,
                         AgentOptions options) {
        Consumer<?, ?> itself = (Consumer<?, ?>) Proxy.newProxyInstance(Consumer.class.getClassLoader(),
                new Class<?>[] {Consumer.class}, new Direct(client));
        this.instrumented = InstrumentedConsumer.around(itself, slot, clientConfig, options);
    }

    /**
     * The router of {@code built}: {the KafkaConsumer, its client Metrics} (javaagent.FacadeAdvice reads the field);
     * the coordinator's steps ({@code timed}) keyed by that Metrics, which the coordinator was built with.
     */
    static Object route(CommitWitness.Slot slot, Map<String, Object> clientConfig, AgentOptions options,
                        Object[] built, BiConsumer<Object, ObjLongConsumer<String>> timed) {
        FacadeRouter router = new FacadeRouter((Consumer<?, ?>) built[0], slot, clientConfig, options);
        timed.accept(built[1], router.instrumented.coordinatorSteps());
        return router;
    }

    /**
     * The advice's question for a call of {@code method} (name + descriptor) with {@code args}: null, run the client's
     * code as written; else {result, thrown} of the instrumented call, which the advice returns or throws instead.
     */
    @Override
    public Object[] apply(String method, Object[] args) {
        if (direct.get() != null) {
            return null;
        }
        Method called = METHODS.get(Consumer.class).get(method);
        if (called == null) {
            return null;
        }
        try {
            return new Object[] {called.invoke(instrumented, args), null};
        } catch (InvocationTargetException e) {
            return new Object[] {null, e.getCause()};
        } catch (IllegalAccessException | IllegalArgumentException e) {
            return null;
        }
    }

    static String descriptor(Method method) {
        StringBuilder out = new StringBuilder("(");
        for (Class<?> parameter : method.getParameterTypes()) {
            out.append(descriptor(parameter));
        }
        return out.append(')').append(descriptor(method.getReturnType())).toString();
    }

    private static String descriptor(Class<?> type) {
        if (type.isPrimitive()) {
            return PRIMITIVES.get(type);
        }
        return type.isArray() ? type.getName().replace('.', '/') : "L" + type.getName().replace('.', '/') + ";";
    }

    /** The KafkaConsumer itself, its code run as written; the application's callbacks passed in are routed again. */
    private final class Direct implements InvocationHandler {
        private final Consumer<?, ?> client;

        Direct(Consumer<?, ?> client) {
            this.client = client;
        }

        @Override
        public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
            Object[] passed = args == null ? null : args.clone();
            for (int i = 0; passed != null && i < passed.length; i++) {
                if (passed[i] instanceof ConsumerRebalanceListener) {
                    passed[i] = new Reopened((ConsumerRebalanceListener) passed[i], null);
                } else if (passed[i] instanceof OffsetCommitCallback) {
                    passed[i] = new Reopened(null, (OffsetCommitCallback) passed[i]);
                }
            }
            Boolean before = direct.get();
            direct.set(Boolean.TRUE);
            try {
                return method.invoke(client, passed);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            } finally {
                restore(before);
            }
        }
    }

    private void restore(Boolean before) {
        if (before == null) {
            direct.remove();
        } else {
            direct.set(before);
        }
    }

    /** A callback the client makes from inside its own code: the application's calls in it are routed again. */
    private final class Reopened implements ConsumerRebalanceListener, OffsetCommitCallback {
        private final ConsumerRebalanceListener listener;
        private final OffsetCommitCallback callback;

        Reopened(ConsumerRebalanceListener listener, OffsetCommitCallback callback) {
            this.listener = listener;
            this.callback = callback;
        }

        private void reopened(Runnable call) {
            Boolean before = direct.get();
            direct.remove();
            try {
                call.run();
            } finally {
                restore(before);
            }
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            reopened(() -> listener.onPartitionsAssigned(partitions));
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            reopened(() -> listener.onPartitionsRevoked(partitions));
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            reopened(() -> listener.onPartitionsLost(partitions));
        }

        @Override
        public void onComplete(Map<TopicPartition, OffsetAndMetadata> offsets, Exception exception) {
            reopened(() -> callback.onComplete(offsets, exception));
        }
    }
}
