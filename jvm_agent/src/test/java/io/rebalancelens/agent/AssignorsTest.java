package io.rebalancelens.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.junit.jupiter.api.Test;

/** A classic member's rebalance protocol from its strategy, by the agent spec's client_assignors. */
class AssignorsTest {
    private static final String STREAMS = "org.apache.kafka.streams.processor.internals.StreamsPartitionAssignor";

    @Test
    void cooperativeOnlyWhenEveryAssignorListedSupportsIt() {
        assertFalse(Assignors.cooperative(Map.of()));  // the Java client's default: range, then cooperative-sticky
        assertTrue(Assignors.cooperative(Map.of("partition.assignment.strategy", CooperativeStickyAssignor.class)));
        assertFalse(Assignors.cooperative(Map.of("partition.assignment.strategy",
                List.of(CooperativeStickyAssignor.class, RangeAssignor.class))));
        assertFalse(Assignors.cooperative(Map.of("partition.assignment.strategy", "com.example.MyAssignor")));
    }

    @Test
    void kafkaStreamsIsCooperativeUnlessUpgradingFromBeforeItWas() {
        assertTrue(Assignors.cooperative(Map.of("partition.assignment.strategy", STREAMS)));
        assertFalse(Assignors.cooperative(Map.of("partition.assignment.strategy", STREAMS, "upgrade.from", "2.3")));
        assertTrue(Assignors.cooperative(Map.of("partition.assignment.strategy", STREAMS, "upgrade.from", "3.4")));
    }

    @Test
    void aStrategyIsNamedWhicheverWayItWasGiven() {
        assertEquals(List.of(RangeAssignor.class.getName(), "b"),
                Assignors.names(List.of(RangeAssignor.class, " b ")));
        assertEquals(List.of("a", "b"), Assignors.names("a, b"));
    }
}
