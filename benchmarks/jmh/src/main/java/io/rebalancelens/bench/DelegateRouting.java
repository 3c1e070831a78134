package io.rebalancelens.bench;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.consumer.internals.ConsumerDelegate;
import org.apache.kafka.common.TopicPartition;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * What the javaagent's routing of each consumer call costs, alone: KafkaConsumer's delegate is the agent's
 * {@code ConsumerDelegate}, which sends {@code Consumer} calls to the instrumented consumer. Here the instrumented
 * consumer is kafka-clients' own MockConsumer (its poll hands out nothing and costs little, so the routing is what
 * is measured), called {@code direct}ly, through the agent's generated delegate class ({@code generated}, the
 * javaagent's helper DelegateSwap's, from its jar on the class path), or through a {@code java.lang.reflect.Proxy}
 * routing as the agent did before ({@code proxy}: an argument array and a reflective call per call). With JMH's gc
 * profiler, the bytes each call allocates do not depend on the machine's load.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class DelegateRouting {
    private static final String DELEGATE_SWAP = "io.rebalancelens.javaagent.helper.DelegateSwap";

    @Param({"direct", "generated", "proxy"})
    public String routing;

    private Consumer<byte[], byte[]> consumer;

    @Setup
    public void build() throws ReflectiveOperationException {
        MockConsumer<byte[], byte[]> mock = new MockConsumer<>("earliest");
        TopicPartition partition = new TopicPartition("t", 0);
        mock.assign(List.of(partition));
        mock.updateBeginningOffsets(Map.of(partition, 0L));
        ConsumerDelegate<?, ?> internals = (ConsumerDelegate<?, ?>) Proxy.newProxyInstance(
                ConsumerDelegate.class.getClassLoader(), new Class<?>[] {ConsumerDelegate.class}, (p, m, a) -> {
                    throw new UnsupportedOperationException(m.getName());
                });
        consumer = switch (routing) {
            case "direct" -> mock;
            case "generated" -> generated(mock, internals);
            default -> proxied(mock, internals);
        };
    }

    @SuppressWarnings("unchecked")
    private static Consumer<byte[], byte[]> generated(Consumer<?, ?> instrumented, ConsumerDelegate<?, ?> original)
            throws ReflectiveOperationException {
        Method routed = Class.forName(DELEGATE_SWAP).getDeclaredMethod("routed");
        routed.setAccessible(true);
        return (Consumer<byte[], byte[]>) ((java.lang.reflect.Constructor<?>) routed.invoke(null))
                .newInstance(instrumented, original);
    }

    @SuppressWarnings("unchecked")
    private static Consumer<byte[], byte[]> proxied(Consumer<?, ?> instrumented, ConsumerDelegate<?, ?> original) {
        InvocationHandler route = (proxy, method, args) -> {
            Object target = method.getDeclaringClass() == Consumer.class ? instrumented : original;
            try {
                return method.invoke(target, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        };
        return (Consumer<byte[], byte[]>) Proxy.newProxyInstance(ConsumerDelegate.class.getClassLoader(),
                new Class<?>[] {ConsumerDelegate.class}, route);
    }

    @Benchmark
    public ConsumerRecords<byte[], byte[]> poll() {
        return consumer.poll(Duration.ZERO);
    }
}
