package io.rebalancelens.javaagent.helper;

import io.rebalancelens.agent.AgentOptions;
import java.util.Map;

/**
 * The javaagent's {@code lens.*} options checked at start-up by the library's own parser, plus what only the
 * javaagent refuses. Names no Kafka type: it runs in the system class loader, where kafka-clients may be absent
 * (a Spring Boot executable jar). Reached by reflection from javaagent.LensJavaAgent.
 */
public final class LaunchCheck {
    private LaunchCheck() {
    }

    /** An IllegalArgumentException naming the key and the fix, if {@code options} are not ones to start with. */
    public static void check(Map<String, Object> options) {
        if (AgentOptions.parse(options).explicitProcessing()) {
            throw new IllegalArgumentException("lens.processing=explicit needs consumer.markProcessed(record), "
                    + "which an application's own KafkaConsumer cannot call: remove it, or build the consumer "
                    + "as an io.rebalancelens.agent.InstrumentedConsumer");
        }
    }
}
