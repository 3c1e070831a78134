package io.rebalancelens.agent;

import java.util.Map;
import java.util.function.ObjLongConsumer;
import java.util.function.Supplier;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;

/**
 * The client's own timing of its rebalances: the {@code rebalance_timing} of a partitions_* event (the contract's),
 * taken at the start of each rebalance callback.
 *
 * <p>Two sources. Everywhere (the library and the javaagent, classic protocol): the client's
 * {@code consumer-coordinator-metrics}. Its coordinator records {@code rebalance-latency-total} and
 * {@code rebalance-total} when a SyncGroup succeeds, before it runs the callbacks that follow; their increase since
 * the member's previous callback is the rebalances that ended since, each from its first JoinGroup sent to its
 * SyncGroup answer (the {@code join-time}/{@code sync-time} metrics are windowed: they cannot split one rebalance).
 * With the javaagent, also the coordinator's steps, reported as they happen by its advice on the client's own
 * classes ({@link #accept}, from whichever client thread runs them): classic, each JoinGroup sent, the JoinGroup
 * answer, the leader's assignment done, each SyncGroup answer, the join complete; KIP-848, each member state the
 * client enters (its reconciliation starts when it enters {@code RECONCILING} with a new target assignment and ends
 * after the callbacks, so it is reported at each callback as the time since it began).
 */
public final class RebalanceTiming implements ObjLongConsumer<String> {
    /** The classic coordinator's steps, as the javaagent's advice names them. */
    public static final String JOIN_SENT = "join_sent";
    public static final String JOINED = "joined";
    public static final String ASSIGNED = "assigned";
    public static final String SYNC_ANSWERED = "sync_answered";
    public static final String SYNCED = "synced";
    /** The KIP-848 member state whose entry starts a reconciliation (the client's MemberState name). */
    public static final String RECONCILING = "RECONCILING";
    static final String COORDINATOR = "client_coordinator";
    static final String METRICS = "client_metrics";
    private static final String GROUP = "consumer-coordinator-metrics";
    private static final double NANOS_PER_MS = 1e6;
    private static final long NONE = Long.MIN_VALUE;

    private final Supplier<Map<MetricName, ? extends Metric>> metrics;
    private final boolean classic;
    // application thread only
    private Metric rebalanceTotal;
    private Metric latencyTotal;
    private double countSeen;
    private double latencySeen;
    // the coordinator's steps (any client thread): guarded by this
    private long start = NONE;
    private long joined = NONE;
    private long assigned = NONE;
    private long answered = NONE;
    private long reconciling = NONE;
    private boolean stepped;
    private double joinMs;
    private double assignMs;
    private double syncMs;

    RebalanceTiming(Supplier<Map<MetricName, ? extends Metric>> metrics, boolean classic) {
        this.metrics = metrics;
        this.classic = classic;
    }

    /** One step of the client's coordinator at {@code nanos} (System.nanoTime()): the javaagent's advice. */
    @Override
    public synchronized void accept(String step, long nanos) {
        if (!classic) {
            if (RECONCILING.equals(step)) {
                reconciling = reconciling == NONE ? nanos : reconciling;
            } else {
                reconciling = NONE;
            }
        } else if (JOIN_SENT.equals(step)) {
            start = start == NONE ? nanos : start;  // a retried JoinGroup is the same rebalance, as for the client
        } else if (JOINED.equals(step)) {
            joined = nanos;
            assigned = answered = NONE;
        } else if (ASSIGNED.equals(step)) {
            assigned = nanos;
        } else if (SYNC_ANSWERED.equals(step)) {
            answered = nanos;
        } else if (SYNCED.equals(step) && start != NONE && joined != NONE) {
            long sent = assigned == NONE ? joined : assigned;
            long end = answered == NONE ? nanos : answered;  // the client's end: the successful SyncGroup answer
            joinMs += (joined - start) / NANOS_PER_MS;
            assignMs += (sent - joined) / NANOS_PER_MS;
            syncMs += (end - sent) / NANOS_PER_MS;
            stepped = true;
            start = joined = assigned = answered = NONE;
        }
    }

    /**
     * At the start of a rebalance callback (application thread, {@code nanos} its System.nanoTime()): the timing of
     * what ended since the previous callback (classic), or of the reconciliation under way (KIP-848); null if none.
     */
    Map<String, Object> atCallback(long nanos) {
        if (!classic) {
            synchronized (this) {
                return reconciling == NONE ? null : timing(COORDINATOR, null, null, null, null, null,
                        Math.max(0, nanos - reconciling) / NANOS_PER_MS);
            }
        }
        double[] ended = ended();
        synchronized (this) {
            boolean steps = stepped;
            if (!steps && (ended == null || ended[0] == 0)) {
                return null;
            }
            Map<String, Object> timing = timing(steps ? COORDINATOR : METRICS,
                    ended == null ? null : (long) ended[0], ended == null ? null : ended[1],
                    steps ? joinMs : null, steps ? assignMs : null, steps ? syncMs : null, null);
            stepped = false;
            joinMs = assignMs = syncMs = 0;
            return timing;
        }
    }

    private static Map<String, Object> timing(String source, Long rebalances, Double rebalanceMs, Double joinMs,
                                              Double assignMs, Double syncMs, Double reconcileMs) {
        return Envelope.body("source", source, "rebalances", rebalances, "rebalance_ms", rebalanceMs,
                "join_ms", joinMs, "assign_ms", assignMs, "sync_ms", syncMs, "reconcile_ms", reconcileMs);
    }

    /** {rebalances, their milliseconds} the client recorded since the last call; null if it has no such metrics. */
    private double[] ended() {
        if (rebalanceTotal == null || latencyTotal == null) {
            for (Map.Entry<MetricName, ? extends Metric> metric : metrics.get().entrySet()) {
                if (GROUP.equals(metric.getKey().group()) && "rebalance-total".equals(metric.getKey().name())) {
                    rebalanceTotal = metric.getValue();
                } else if (GROUP.equals(metric.getKey().group())
                        && "rebalance-latency-total".equals(metric.getKey().name())) {
                    latencyTotal = metric.getValue();
                }
            }
            if (rebalanceTotal == null || latencyTotal == null) {
                return null;
            }
        }
        double count = value(rebalanceTotal);
        double latency = value(latencyTotal);
        double[] ended = {Math.max(0, count - countSeen), Math.max(0, latency - latencySeen)};
        countSeen = count;
        latencySeen = latency;
        return ended;
    }

    private static double value(Metric metric) {
        Object value = metric.metricValue();
        return value instanceof Number ? ((Number) value).doubleValue() : 0;
    }
}
