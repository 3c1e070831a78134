package io.rebalancelens.javaagent.helper;

import io.rebalancelens.agent.AgentOptions;
import io.rebalancelens.agent.CommitWitness;
import io.rebalancelens.agent.InstrumentedConsumer;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.Map;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.internals.ConsumerDelegate;

/**
 * The delegate family (kafka-clients 3.7 and later, where KafkaConsumer is a facade over a {@code ConsumerDelegate}
 * field, the classic or the async consumer): the delegate becomes a {@code ConsumerDelegate} whose {@code Consumer}
 * methods go to an {@link InstrumentedConsumer} around the original (the client's internal ones straight to the
 * original). A proxy rather than a class: no second copy of the Consumer interface's forwarding, and it follows the
 * interface the application's kafka-clients has.
 */
final class DelegateSwap {
    private DelegateSwap() {
    }

    static Object swap(CommitWitness.Slot slot, Map<String, Object> clientConfig, AgentOptions options,
                       Object delegate) {
        ConsumerDelegate<?, ?> original = (ConsumerDelegate<?, ?>) delegate;
        Consumer<?, ?> instrumented = InstrumentedConsumer.around(original, slot, clientConfig, options);
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
}
