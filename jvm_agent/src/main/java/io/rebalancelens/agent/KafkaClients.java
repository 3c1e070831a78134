package io.rebalancelens.agent;

import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecords;

/**
 * The kafka-clients the agent runs against (3.5 to 4.x): its version, and what it has of the API that changed
 * within that range, found once by looking rather than by parsing the version, so a vendor build is judged by what
 * it has. Code that uses a newer method calls it only when the flag says it is there ({@link KafkaSince}).
 */
final class KafkaClients {
    /** The version the client's jar declares (what its AppInfoParser reports; that class moved in 4.4). */
    static final String VERSION = ClientVersion.of(Consumer.class.getClassLoader());
    /** {@code ConsumerRecords.nextOffsets()} (4.0): the position after each partition's batch, without records. */
    static final boolean NEXT_OFFSETS = has(ConsumerRecords.class, "nextOffsets");

    private KafkaClients() {
    }

    private static boolean has(Class<?> type, String method, Class<?>... parameters) {
        try {
            type.getMethod(method, parameters);
            return true;
        } catch (NoSuchMethodException e) {
            return false;
        }
    }
}
