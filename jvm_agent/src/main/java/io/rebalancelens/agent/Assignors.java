package io.rebalancelens.agent;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Which rebalance protocol a classic member's {@code partition.assignment.strategy} gives, by the agent spec's
 * client_assignors (the Python agent's rule too): cooperative when every assignor it lists supports it, as the client
 * picks the highest protocol all of them support. So Kafka Streams' StreamsPartitionAssignor is cooperative and
 * the Java client's default list (range, then cooperative-sticky) eager.
 */
final class Assignors {
    /** The Java client's default strategy. */
    static final String JAVA_DEFAULT = "org.apache.kafka.clients.consumer.RangeAssignor,"
            + "org.apache.kafka.clients.consumer.CooperativeStickyAssignor";

    private Assignors() {
    }

    /** Whether a classic member configured with {@code config} rebalances cooperatively. */
    static boolean cooperative(Map<String, ?> config) {
        List<String> names = names(config.containsKey("partition.assignment.strategy")
                ? config.get("partition.assignment.strategy") : JAVA_DEFAULT);
        Object upgradeFrom = config.get("upgrade.from");
        return !names.isEmpty() && names.stream().allMatch(name -> AgentSpec.get().assignorProtocols(name, upgradeFrom)
                .contains("cooperative"));
    }

    /** The assignor names a strategy setting lists: a comma-separated string, a list of names or classes, a class. */
    static List<String> names(Object strategy) {
        List<String> names = new ArrayList<>();
        if (strategy instanceof Class<?>) {
            names.add(((Class<?>) strategy).getName());
        } else if (strategy instanceof List<?>) {
            for (Object item : (List<?>) strategy) {
                names.addAll(names(item));
            }
        } else if (strategy != null) {
            Arrays.stream(String.valueOf(strategy).split(",")).map(String::trim).filter(n -> !n.isEmpty())
                    .forEach(names::add);
        }
        return names;
    }
}
