package io.rebalancelens.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.junit.jupiter.api.Test;

/**
 * What a callback reports of the rebalances before it, from the client's metrics alone (the library) and with the
 * coordinator's steps (the javaagent): on steps and metric values given here. tests/jvm_agent/test_rebalance_timing.py
 * checks the same against a real client and broker.
 */
class RebalanceTimingTest {
    private static final long MS = 1_000_000;
    private final Map<MetricName, Metric> metrics = new HashMap<>();
    /** The client's values now: its metrics read them (the client keeps one metric object and moves its value). */
    private final Map<String, Double> values = new HashMap<>();

    RebalanceTimingTest() {
        for (String name : new String[] {"rebalance-total", "rebalance-latency-total", "join-time-max"}) {
            MetricName key = new MetricName(name, "consumer-coordinator-metrics", "", Map.of("client-id", "c"));
            metrics.put(key, new Metric() {
                @Override
                public MetricName metricName() {
                    return key;
                }

                @Override
                public Object metricValue() {
                    return values.get(name);
                }
            });
        }
    }

    private void client(double rebalances, double latencyMs) {
        values.put("rebalance-total", rebalances);
        values.put("rebalance-latency-total", latencyMs);
        values.put("join-time-max", 99.0);  // windowed: never read
    }

    @Test
    void theLibraryReportsTheClientsRebalancesSinceThePreviousCallback() {
        RebalanceTiming timing = new RebalanceTiming(() -> metrics, true);
        client(0, 0);
        assertNull(timing.atCallback(0));  // nothing ended yet: an eager revoke before the first join
        client(1, 250);
        assertEquals(Envelope.body("source", "client_metrics", "rebalances", 1L, "rebalance_ms", 250.0,
                "join_ms", null, "assign_ms", null, "sync_ms", null, "reconcile_ms", null), timing.atCallback(0));
        assertNull(timing.atCallback(0));  // the assign callback after a cooperative revoke: already reported
        client(3, 400);  // two ended before this callback (one whose own callback the client never ran)
        Map<String, Object> reported = timing.atCallback(0);
        assertEquals(java.util.List.of(2L, 150.0), java.util.List.of(reported.get("rebalances"),
                reported.get("rebalance_ms")));
    }

    @Test
    void theCoordinatorsStepsSplitTheRebalanceAndARetriedJoinKeepsItsStart() {
        RebalanceTiming timing = new RebalanceTiming(() -> metrics, true);
        client(0, 0);
        timing.accept(RebalanceTiming.JOIN_SENT, 0);  // MEMBER_ID_REQUIRED: sent again, the same rebalance
        timing.accept(RebalanceTiming.JOIN_SENT, 10 * MS);
        timing.accept(RebalanceTiming.JOINED, 100 * MS);
        timing.accept(RebalanceTiming.ASSIGNED, 103 * MS);  // the leader
        timing.accept(RebalanceTiming.SYNC_ANSWERED, 120 * MS);
        timing.accept(RebalanceTiming.SYNCED, 121 * MS);
        client(1, 120);
        Map<String, Object> reported = timing.atCallback(122 * MS);
        assertEquals("client_coordinator", reported.get("source"));
        assertEquals(java.util.List.of(100.0, 3.0, 17.0, 120.0), java.util.List.of(reported.get("join_ms"),
                reported.get("assign_ms"), reported.get("sync_ms"), reported.get("rebalance_ms")));
        timing.accept(RebalanceTiming.JOIN_SENT, 200 * MS);  // a follower's next: joined, then synced
        timing.accept(RebalanceTiming.JOINED, 230 * MS);
        timing.accept(RebalanceTiming.SYNC_ANSWERED, 240 * MS);
        timing.accept(RebalanceTiming.SYNCED, 241 * MS);
        client(2, 160);
        reported = timing.atCallback(250 * MS);
        assertEquals(java.util.List.of(30.0, 0.0, 10.0, 40.0), java.util.List.of(reported.get("join_ms"),
                reported.get("assign_ms"), reported.get("sync_ms"), reported.get("rebalance_ms")));
    }

    @Test
    void kip848ReportsEachCallbackOfAReconciliationFromItsStart() {
        RebalanceTiming timing = new RebalanceTiming(() -> metrics, false);
        timing.accept("JOINING", 0);
        assertNull(timing.atCallback(5 * MS));
        timing.accept(RebalanceTiming.RECONCILING, 10 * MS);
        timing.accept(RebalanceTiming.RECONCILING, 12 * MS);  // still the same reconciliation
        assertEquals(30.0, timing.atCallback(40 * MS).get("reconcile_ms"));  // its revoke callback
        assertEquals(50.0, timing.atCallback(60 * MS).get("reconcile_ms"));  // its assign callback
        timing.accept("ACKNOWLEDGING", 70 * MS);
        assertNull(timing.atCallback(80 * MS));  // a callback outside a reconciliation (leaving, fenced)
    }
}
