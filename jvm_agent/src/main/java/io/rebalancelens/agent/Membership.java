package io.rebalancelens.agent;

import static io.rebalancelens.agent.Envelope.body;
import static io.rebalancelens.agent.Processed.OFFSET_UNKNOWN;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.UnknownServerException;
import org.apache.kafka.common.protocol.Errors;

/**
 * The member as the agent sees it (consumer_agent/membership.py): lifecycle state, subscription, owned
 * partitions and commits, and the member_config, state_transition, partitions_*, commit and client_error
 * events that report them. Runs on the application thread; the consumer calls it through its guard.
 */
final class Membership {
    /** The state_transition reasons of a member leaving on purpose (the agent spec's). */
    static final String CLOSE = MemberStates.reason("close");
    static final String UNSUBSCRIBE = MemberStates.reason("unsubscribe");
    private static final String SUBSCRIBE = MemberStates.reason("subscribe");
    private static final String REJOIN = MemberStates.reason("rejoin");
    private static final String ASSIGN = MemberStates.reason("assign");
    private static final String ASSIGNED = MemberStates.reason("assigned");
    private static final String REVOKE = MemberStates.reason("revoke");
    private static final String REVOKED = MemberStates.reason("revoked");
    private static final String REVOKED_LEAVING = MemberStates.reason("revoked_leaving");
    private static final String LOST = MemberStates.reason("lost");
    private static final String LOST_DONE = MemberStates.reason("lost_done");

    private final Envelope envelope;
    private final Processed processed;
    private final MemberStates.Lifecycle lifecycle;
    private final boolean classic;
    private final boolean cooperative;
    private final AgentOptions options;
    private final Map<String, Object> config;
    private final Map<String, String> snapshot;
    private String state;
    private List<String> reportedTopics;
    private String reportedPattern;
    private boolean subscribed;
    private boolean leaving;
    private boolean inRevoke;
    private final Set<TopicPartition> owned = new HashSet<>();
    private final Map<TopicPartition, Long> committed = new HashMap<>();
    /** Per partition polled, sought or assigned: its position and hand-out count ({@link PartitionSlot}). */
    private final Map<TopicPartition, PartitionSlot> slots = new HashMap<>();
    private TopicPartition lastPartition;  // slot()'s last answer: only dropReleased() removes slots, and forgets it
    private PartitionSlot lastSlot;
    /** Assigned, no record handed out yet: when (System.nanoTime()). */
    private final Map<TopicPartition, Long> awaitingFirst = new HashMap<>();

    Membership(Envelope envelope, Processed processed, String groupProtocol,
               boolean cooperative, AgentOptions options, Map<String, Object> config) {
        this.envelope = envelope;
        this.processed = processed;
        this.lifecycle = MemberStates.of(groupProtocol);
        this.classic = !"consumer".equals(groupProtocol);
        this.cooperative = cooperative;
        this.options = options;
        this.config = config;
        this.snapshot = Redaction.redacted(config);
        this.state = lifecycle.initial();
    }

    boolean stable() {
        return subscribed && !leaving && lifecycle.stable().contains(state);
    }

    /** The partitions owned now (read-only). */
    Set<TopicPartition> owned() {
        return Collections.unmodifiableSet(owned);
    }

    /** The last offset this member committed of {@code tp} while owning it, or OFFSET_UNKNOWN. */
    long committed(TopicPartition tp) {
        return committed.getOrDefault(tp, OFFSET_UNKNOWN);
    }

    /** A revoke callback starts ({@code true}) or ends: its commits are in_revoke. */
    void revoking(boolean now) {
        inRevoke = now;
    }

    /** Some assigned partition has handed out no record yet. */
    boolean awaitsFirstFetch() {
        return !awaitingFirst.isEmpty();
    }

    /** When {@code tp} was assigned (System.nanoTime()) if this is its first record since; null otherwise. */
    Long firstFetched(TopicPartition tp) {
        return awaitingFirst.remove(tp);
    }

    /** The poll path's per-partition slots (read-only map; the slots themselves are the poll path's to update). */
    Map<TopicPartition, PartitionSlot> slots() {
        return Collections.unmodifiableMap(slots);
    }

    // ------------------------------------------------------------------ state machine
    private void enter(List<String> path, String reason) {
        for (String next : path) {
            if (next.equals(state)) {
                continue;
            }
            envelope.emit("state_transition", body("from_state", state, "to_state", next, "reason", reason,
                    "allowed", lifecycle.allowed(state, next)));
            state = next;
        }
    }

    void enterAssign() {
        if (lifecycle.rejoinFrom().contains(state)) {
            enter(lifecycle.subscribed(), REJOIN);
        }
        enter(lifecycle.inAssign(), ASSIGN);
    }

    void enterRevoke() {
        if (!leaving) {
            enter(lifecycle.inRevoke(), REVOKE);
        }
    }

    void enterLost() {
        enter(lifecycle.inLost(), LOST);
    }

    void startLeaving(String reason) {
        leaving = true;
        enter(lifecycle.leaveStart(), reason);
    }

    void left(String reason) {
        enter(lifecycle.left(), reason);
    }

    /** The client dropped the subscription (its final revoke ran inside unsubscribe()): the member left. */
    void unsubscribed() {
        subscribed = false;
        left(UNSUBSCRIBE);
    }

    // ------------------------------------------------------------------ observations
    /** The client accepted a subscription: topics, or a regex ({@code pattern} non-null). */
    void recordSubscribe(List<String> topics, String pattern) {
        boolean first = reportedTopics == null;
        boolean changed = first || !topics.equals(reportedTopics)
                || !java.util.Objects.equals(pattern, reportedPattern);
        reportedTopics = topics;
        reportedPattern = pattern;
        subscribed = true;
        leaving = false;
        if (changed) {
            envelope.emit("member_config", memberConfig(first ? "start" : "subscription_changed", topics, pattern));
        }
        enter(lifecycle.subscribed(), SUBSCRIBE);
    }

    private Map<String, Object> memberConfig(String reason, List<String> topics, String pattern) {
        return body("reason", reason, "topics", topics, "pattern", pattern,
                "session_timeout_ms", classic ? intSetting("session.timeout.ms", 45_000) : null,
                "heartbeat_interval_ms", classic ? intSetting("heartbeat.interval.ms", 3_000) : null,
                "max_poll_interval_ms", intSetting("max.poll.interval.ms", 300_000),
                "enable_auto_commit", autoCommit(),
                "auto_commit_interval_ms", intSetting("auto.commit.interval.ms", 5_000),
                // the Java client stores every position it hands out: its offset store is always "auto"
                "enable_auto_offset_store", true,
                "commit_on_revoke", options.commitOnRevoke(), "config", snapshot,
                "agent_version", InstrumentedConsumer.AGENT_VERSION,
                "client_version", "kafka-clients " + KafkaClients.VERSION,
                "librdkafka_version", "none (Java client)");
    }

    boolean autoCommit() {
        return Boolean.parseBoolean(String.valueOf(config.getOrDefault("enable.auto.commit", "true")));
    }

    private int intSetting(String key, int fallback) {
        Object value = config.get(key);
        return value == null ? fallback : Integer.parseInt(String.valueOf(value).trim());
    }

    /**
     * The client's position for a partition, as the agent last saw it (what a poll handed out, a seek), or
     * OFFSET_UNKNOWN. Never asked of the client: {@code KafkaConsumer.position} initializes an unknown position
     * itself (an offset fetch, a reset), which would change where the host starts reading.
     */
    long position(TopicPartition tp) {
        PartitionSlot slot = slots.get(tp);
        return slot == null ? OFFSET_UNKNOWN : slot.position;
    }

    /**
     * The partition's slot, created on first use (an assignment; a poll or seek after a manual assign()). The
     * last one is kept by identity: a poll per record drains one fetch's partition for many polls, all with the
     * same TopicPartition instance, which the map would compare by topic name each time (JFR: a third of the
     * agent's samples).
     */
    PartitionSlot slot(TopicPartition tp) {
        if (tp != lastPartition) {
            PartitionSlot slot = slots.get(tp);
            if (slot == null) {
                slot = new PartitionSlot();
                slots.put(tp, slot);
            }
            lastPartition = tp;
            lastSlot = slot;
        }
        return lastSlot;
    }

    /** The position is the client's to find again (a new owner's start, a seek to the beginning or end). */
    void forgetPosition(TopicPartition tp) {
        PartitionSlot slot = slots.get(tp);
        if (slot != null) {
            slot.position = OFFSET_UNKNOWN;
        }
    }

    /** Every known position, as a commit of them would say it. */
    Map<TopicPartition, OffsetAndMetadata> knownPositions() {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        slots.forEach((tp, slot) -> {
            if (slot.position != OFFSET_UNKNOWN) {
                offsets.put(tp, new OffsetAndMetadata(slot.position));
            }
        });
        return offsets;
    }

    /** At a progress tick, once its counts are taken: slots of partitions neither owned nor positioned go. */
    void dropReleased() {
        lastPartition = null;
        slots.entrySet().removeIf(slot -> slot.getValue().position == OFFSET_UNKNOWN && !owned.contains(slot.getKey()));
    }

    /** The partitions' offsets; {@code released}: at a revoke or loss, with whether a poll handed out any of a
     * partition's records since its assignment (awaitingFirst holds it until one does; a seek hands out none). */
    private List<Map<String, Object>> partitionStates(Collection<TopicPartition> partitions, boolean released) {
        List<Map<String, Object>> states = new ArrayList<>();
        for (TopicPartition tp : partitions) {
            long position = position(tp);
            Map<String, Object> state = body("topic", tp.topic(), "partition", tp.partition(), "position", position,
                    "last_processed_offset", processed.lastOffset(tp, position),
                    "committed_offset", committed.getOrDefault(tp, OFFSET_UNKNOWN));
            if (released && owned.contains(tp)) {
                state.put("handed_out", !awaitingFirst.containsKey(tp));
            }
            states.add(state);
        }
        return states;
    }

    /**
     * After the assign callback: the partitions are owned and await their first record. {@code rebalance}: the
     * client's timing of the rebalance before it ({@link RebalanceTiming}), or null.
     */
    void recordAssign(Collection<TopicPartition> partitions, double callbackMs, Map<String, Object> rebalance) {
        if (!cooperative) {
            owned.clear();
        }
        owned.addAll(partitions);
        long now = System.nanoTime();
        for (TopicPartition tp : partitions) {
            awaitingFirst.put(tp, now);
            slot(tp).position = OFFSET_UNKNOWN;  // a new owner's start is the client's to find until a poll shows it
        }
        envelope.emit("partitions_assigned", body("partitions", partitionStates(partitions, false),
                "incremental", cooperative, "callback_ms", callbackMs, "assignment_size", owned.size(),
                "commit_on_revoke", null, "rebalance_timing", rebalance));
        enter(lifecycle.stable(), ASSIGNED);
    }

    /**
     * After the revoke ({@code kind} partitions_revoked) or lost callback: the partitions are gone. {@code hold}:
     * how commit-on-revoke went ({@link RevokeCommitter}), null when it did not run; {@code rebalance} as for
     * {@link #recordAssign}.
     */
    void recordRelease(String kind, Collection<TopicPartition> partitions, double callbackMs,
                       Map<String, Object> hold, Map<String, Object> rebalance) {
        List<Map<String, Object>> states = partitionStates(partitions, true);
        if (cooperative) {
            owned.removeAll(partitions);
        } else {
            owned.clear();
        }
        for (TopicPartition tp : partitions) {
            awaitingFirst.remove(tp);
            committed.remove(tp);
            forgetPosition(tp);
        }
        processed.forget(partitions);
        envelope.emit(kind, body("partitions", states, "incremental", cooperative, "callback_ms", callbackMs,
                "assignment_size", owned.size(), "commit_on_revoke", hold, "rebalance_timing", rebalance));
        if (leaving) {
            enter(lifecycle.leaveAfterRevoke(), REVOKED_LEAVING);
        } else if ("partitions_lost".equals(kind)) {
            enter(lifecycle.afterLost(), LOST_DONE);
        } else {
            enter(lifecycle.afterRevoke(), REVOKED);
        }
    }

    /** A commit of the application's: its result ({@code error} is the request's, null on success). */
    void recordCommit(boolean sync, Map<TopicPartition, OffsetAndMetadata> offsets, Exception error,
                      Double durationMs) {
        commit("manual", sync, offsets, error, durationMs);
    }

    /**
     * A commit the client made on its own ({@code enable.auto.commit}): witnessed when it succeeded, reported on the
     * application's thread afterwards; the application did not wait for it (sync false), as the Python agent says.
     */
    void recordAutoCommit(Map<TopicPartition, OffsetAndMetadata> offsets) {
        commit("auto", false, offsets, null, null);
    }

    private void commit(String mode, boolean sync, Map<TopicPartition, OffsetAndMetadata> offsets, Exception error,
                        Double durationMs) {
        List<Map<String, Object>> reported = new ArrayList<>();
        offsets.forEach((tp, offset) -> {
            long next = offset == null ? OFFSET_UNKNOWN : offset.offset();
            if (error == null && next >= 0 && owned.contains(tp)) {
                committed.put(tp, next);
            }
            reported.add(body("topic", tp.topic(), "partition", tp.partition(),
                    "offset", Math.max(next, OFFSET_UNKNOWN), "error", null));
        });
        envelope.emit("commit", body("mode", mode, "sync", sync, "in_revoke", inRevoke, "offsets", reported,
                "error", error == null ? null : error.toString(), "duration_ms", durationMs));
    }

    /** An exception the client threw to the application: reported (the host gets it unchanged). */
    void recordClientError(RuntimeException error, boolean fatal) {
        Errors code = Errors.forException(error);
        // Client-side exceptions (OffsetOutOfRangeException, ...) have no protocol error: named by their class.
        String name = code == Errors.UNKNOWN_SERVER_ERROR && !(error instanceof UnknownServerException)
                ? error.getClass().getSimpleName() : code.name();
        envelope.emit("client_error", body("code", code.code(), "name", name,
                "message", error.getClass().getName() + ": " + error.getMessage(), "fatal", fatal));
    }
}
