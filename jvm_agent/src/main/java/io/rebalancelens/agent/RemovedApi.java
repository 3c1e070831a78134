package io.rebalancelens.agent;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.time.Duration;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.common.TopicPartition;

/**
 * The Consumer methods of kafka-clients 3.x that 4.0 removed ({@code poll(long)}, {@code committed(TopicPartition)}
 * with and without a timeout): InstrumentedConsumer implements them, as a 3.x application may call them, and reaches
 * the client's own by reflection, since the agent is built against 4.x. Looked up once each.
 */
enum RemovedApi {
    POLL_LONG("poll", long.class),
    COMMITTED("committed", TopicPartition.class),
    COMMITTED_WITH_TIMEOUT("committed", TopicPartition.class, Duration.class);

    private final String name;
    private final Class<?>[] parameters;
    private volatile Method method;

    RemovedApi(String name, Class<?>... parameters) {
        this.name = name;
        this.parameters = parameters;
    }

    /** The client's method on {@code consumer}, as the client would run it (its exceptions unchanged). */
    Object call(Consumer<?, ?> consumer, Object... args) {
        try {
            return method().invoke(consumer, args);
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException) {
                throw (RuntimeException) cause;
            }
            if (cause instanceof Error) {
                throw (Error) cause;
            }
            throw new IllegalStateException(cause);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
    }

    private Method method() {
        Method found = method;
        if (found == null) {
            try {
                found = Consumer.class.getMethod(name, parameters);
            } catch (NoSuchMethodException e) {
                throw new UnsupportedOperationException("kafka-clients " + KafkaClients.VERSION + " has no Consumer."
                        + name + " of these arguments (removed in 4.0)", e);
            }
            method = found;
        }
        return found;
    }
}
