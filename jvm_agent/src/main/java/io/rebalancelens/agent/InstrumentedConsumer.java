package io.rebalancelens.agent;

import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.consumer.OffsetCommitCallback;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.FencedInstanceIdException;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.metrics.KafkaMetric;

/**
 * A drop-in {@code Consumer<K, V>} that emits the telemetry-v1 contract, as consumer_agent's
 * InstrumentedConsumer does for confluent-kafka-python.
 *
 * <p>The config is a KafkaConsumer's plus the agent's {@code lens.*} keys (consumer_agent/options.py's, stripped
 * before the client sees them). Every subscription gets a listener of the agent's, wrapping the application's if
 * it gave one, so assignments are seen without one. Telemetry never throws into the host and never waits on the
 * network in the host's thread: events go to a bounded buffer drained by a daemon thread ({@link TelemetryEmitter}).
 * Processing semantics: records returned by {@code poll} are processed when the application polls again; with
 * {@code lens.processing=explicit}, when it calls {@link #markProcessed} (from any thread). With
 * {@code lens.commit.on.revoke=true} the revoke callback commits what was processed first ({@link RevokeCommitter}).
 */
public final class InstrumentedConsumer<K, V> implements Consumer<K, V> {
    public static final String AGENT_VERSION = "0.1.0-java";
    private static final long CLOSE_FLUSH_TIMEOUT_MS = AgentSpec.get().longConstant("close_flush_timeout_ms");

    private final Consumer<K, V> delegate;
    private final CommitLedger commits;
    private final TelemetryEmitter emitter;
    private final Envelope envelope;
    private final Processed processed;
    private final Membership member;
    private final Progress progress;
    private final RevokeCommitter revokeCommitter;  // null unless lens.commit.on.revoke
    private final EnforceOutcome enforceOutcome;
    private final RebalanceTiming timing;
    private boolean closed;

    public InstrumentedConsumer(Map<String, Object> config) {
        this(AgentOptions.parse(config), AgentOptions.clientConfig(config));
    }

    private InstrumentedConsumer(AgentOptions options, Map<String, Object> client) {
        this(witnessed(client), options, client);
    }

    /** The client built from {@code client} with the agent's {@link CommitWitness} first among its interceptors. */
    private static <K, V> Witnessed<K, V> witnessed(Map<String, Object> client) {
        Map<String, Object> withWitness = new HashMap<>(client);
        List<KafkaConsumer<K, V>> built = new java.util.ArrayList<>(1);
        CommitWitness.Slot slot = CommitWitness.around(withWitness, () -> built.add(new KafkaConsumer<>(withWitness)));
        return new Witnessed<>(built.get(0), slot);
    }

    /** A client and the slot its CommitWitness reports to. */
    private static final class Witnessed<K, V> {
        final Consumer<K, V> client;
        final CommitWitness.Slot slot;

        Witnessed(Consumer<K, V> client, CommitWitness.Slot slot) {
            this.client = client;
            this.slot = slot;
        }
    }

    /**
     * Instrument a consumer built elsewhere (the javaagent's path: the application's own KafkaConsumer):
     * {@code client} is its config, {@code witness} the slot of the CommitWitness it was built with.
     */
    public static <K, V> InstrumentedConsumer<K, V> around(Consumer<K, V> built, CommitWitness.Slot witness,
                                                           Map<String, Object> client, AgentOptions options) {
        return new InstrumentedConsumer<>(new Witnessed<>(built, witness), options, client);
    }

    private InstrumentedConsumer(Witnessed<K, V> built, AgentOptions options, Map<String, Object> client) {
        this.delegate = built.client;
        String groupProtocol = "consumer".equalsIgnoreCase(String.valueOf(client.get("group.protocol")))
                ? "consumer" : "classic";
        boolean classic = "classic".equals(groupProtocol);
        boolean cooperative = !classic || Assignors.cooperative(client);  // the consumer protocol is incremental
        String assignor = classic ? String.join(",", Assignors.names(client.getOrDefault(
                "partition.assignment.strategy", Assignors.JAVA_DEFAULT)))
                : String.valueOf(client.getOrDefault("group.remote.assignor", "broker-default"));
        String agentId = UUID.randomUUID().toString().replace("-", "");
        this.emitter = new TelemetryEmitter(options.telemetryTopic(), options.producerConfig(), options.clusterConfig(),
                options.bufferMaxEvents(), agentId);
        this.envelope = new Envelope(agentId, Envelope.identity(client, groupProtocol,
                cooperative ? "cooperative" : "eager", assignor), delegate::groupMetadata, emitter);
        ConsumerView view = new View();
        this.processed = new Processed(options.processing(), view::committed);
        this.member = new Membership(envelope, processed, groupProtocol, cooperative, options, client);
        this.commits = new CommitLedger(built.slot, member.autoCommit());
        this.progress = new Progress(view, member, processed, envelope, emitter, options.progressIntervalMs());
        this.enforceOutcome = EnforceOutcome.of(classic, cooperative);
        this.revokeCommitter = options.commitOnRevoke() ? new RevokeCommitter(view, processed,
                options.commitOnRevokeTimeoutMs()) : null;
        this.timing = new RebalanceTiming(delegate::metrics, classic);
    }

    /** Where the javaagent's advice on the client's coordinator reports its steps ({@link RebalanceTiming}). */
    public java.util.function.ObjLongConsumer<String> coordinatorSteps() {
        return timing;
    }

    /** What the agent's helpers see of this consumer: the member's account of it, the client's lag, its commit. */
    private final class View implements ConsumerView {
        @Override
        public Set<TopicPartition> owned() {
            return member.owned();
        }

        @Override
        public long position(TopicPartition tp) {
            return member.position(tp);
        }

        @Override
        public long committed(TopicPartition tp) {
            return member.committed(tp);
        }

        @Override
        public OptionalLong currentLag(TopicPartition tp) {
            return delegate.currentLag(tp);
        }

        @Override
        public void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets) {
            InstrumentedConsumer.this.commitSync(offsets);
        }
    }

    /** This consumer's agent id: every event it emits carries it, and its seq counts from 0. */
    public String agentId() {
        return envelope.agentId;
    }

    /** Explicit processing mode: {@code record} is processed (any thread). The default mode ignores it. */
    public void markProcessed(ConsumerRecord<?, ?> record) {
        if (processed.explicit) {
            processed.mark(new TopicPartition(record.topic(), record.partition()), record.offset());
        }
    }

    // ------------------------------------------------------------------ subscriptions and the listener
    @Override
    public void subscribe(Collection<String> topics) {
        subscribe(topics, null);
    }

    @Override
    public void subscribe(Collection<String> topics, ConsumerRebalanceListener listener) {
        delegate.subscribe(topics, new Listener(listener));
        guard(() -> member.recordSubscribe(List.copyOf(topics), null));
    }

    @Override
    public void subscribe(Pattern pattern) {
        subscribe(pattern, null);
    }

    @Override
    public void subscribe(Pattern pattern, ConsumerRebalanceListener listener) {
        delegate.subscribe(pattern, new Listener(listener));
        guard(() -> member.recordSubscribe(List.of(), pattern.pattern()));
    }

    @Override
    @KafkaSince("4.0")
    public void subscribe(SubscriptionPattern pattern) {
        subscribe(pattern, null);
    }

    @Override
    @KafkaSince("4.0")
    public void subscribe(SubscriptionPattern pattern, ConsumerRebalanceListener listener) {
        delegate.subscribe(pattern, new Listener(listener));
        guard(() -> member.recordSubscribe(List.of(), pattern.pattern()));
    }

    @Override
    public void unsubscribe() {
        guard(() -> member.startLeaving(Membership.UNSUBSCRIBE));
        delegate.unsubscribe();  // the Java client runs the final revoke inside unsubscribe()
        guard(member::unsubscribed);
    }

    /** The agent's listener: record, call the application's listener with the same partitions, record its time. */
    private final class Listener implements ConsumerRebalanceListener {
        private final ConsumerRebalanceListener app;

        Listener(ConsumerRebalanceListener app) {
            this.app = app;
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            guard(InstrumentedConsumer.this::reportAutoCommits);
            guard(member::enterAssign);
            long start = System.nanoTime();
            Map<String, Object> rebalance = timed(start);
            try {
                if (app != null) {
                    app.onPartitionsAssigned(partitions);
                }
            } finally {
                double ms = (System.nanoTime() - start) / 1e6;
                guard(() -> member.recordAssign(partitions, ms, rebalance));
            }
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            guard(InstrumentedConsumer.this::reportAutoCommits);  // the client's auto commit before a revoke
            guard(member::enterRevoke);
            member.revoking(true);
            Map<String, Object> rebalance = timed(System.nanoTime());
            Map<String, Object> hold = revokeCommitter != null && !partitions.isEmpty() ? holdRevoke(partitions) : null;
            long start = System.nanoTime();
            try {
                if (app != null) {
                    app.onPartitionsRevoked(partitions);
                }
            } finally {
                member.revoking(false);
                double ms = (System.nanoTime() - start) / 1e6;
                guard(() -> member.recordRelease("partitions_revoked", partitions, ms, hold, rebalance));
            }
        }

        /** The client's timing of the rebalance this callback follows or belongs to, or null. */
        private Map<String, Object> timed(long nanos) {
            try {
                return timing.atCallback(nanos);
            } catch (RuntimeException e) {
                noteFailure(e);
                return null;
            }
        }

        /** Commit-on-revoke before the application's listener; a failure of the agent's own never reaches it. */
        private Map<String, Object> holdRevoke(Collection<TopicPartition> partitions) {
            try {
                return revokeCommitter.commitBeforeHandover(partitions);
            } catch (RuntimeException e) {
                emitter.noteError("agent: commit-on-revoke: " + e);
                return null;
            }
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            guard(InstrumentedConsumer.this::reportAutoCommits);
            guard(member::enterLost);
            long start = System.nanoTime();
            Map<String, Object> rebalance = timed(start);
            try {
                if (app != null) {
                    app.onPartitionsLost(partitions);  // its default calls onPartitionsRevoked, as without the agent
                }
            } finally {
                double ms = (System.nanoTime() - start) / 1e6;
                guard(() -> member.recordRelease("partitions_lost", partitions, ms, null, rebalance));
            }
        }
    }

    // ------------------------------------------------------------------ poll and commits
    @Override
    public ConsumerRecords<K, V> poll(Duration timeout) {
        ConsumerRecords<K, V> records;
        try {
            records = delegate.poll(timeout);
        } catch (KafkaException e) {
            throw clientError(e);
        }
        afterPoll(records);
        return records;
    }

    /** kafka-clients 3.x's {@code poll(long)} (removed in 4.0): the client's own, watched as poll(Duration). */
    @SuppressWarnings("unchecked")
    public ConsumerRecords<K, V> poll(long timeoutMs) {
        ConsumerRecords<K, V> records;
        try {
            records = (ConsumerRecords<K, V>) RemovedApi.POLL_LONG.call(delegate, timeoutMs);
        } catch (KafkaException e) {
            throw clientError(e);
        }
        afterPoll(records);
        return records;
    }

    /** What the client threw to the application, recorded unless it is the application's own control flow. */
    private KafkaException clientError(KafkaException e) {
        if (!(e instanceof WakeupException || e instanceof InterruptException)) {
            guard(() -> member.recordClientError(e, isFatal(e)));
        }
        return e;
    }

    private void afterPoll(ConsumerRecords<K, V> records) {
        try {  // guard()'s job without its lambda: the poll path allocates nothing of its own
            if (commits.pending()) {
                reportAutoCommits();
            }
            progress.afterPoll(records);
        } catch (RuntimeException | LinkageError e) {
            noteFailure(e);
        }
    }

    private static boolean isFatal(KafkaException e) {
        return e instanceof FencedInstanceIdException || e instanceof AuthenticationException
                || e instanceof AuthorizationException;
    }

    @Override
    public void commitSync() {
        committing(null, delegate::commitSync);
    }

    @Override
    public void commitSync(Duration timeout) {
        committing(null, () -> delegate.commitSync(timeout));
    }

    @Override
    public void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets) {
        committing(offsets, () -> delegate.commitSync(offsets));
    }

    @Override
    public void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets, Duration timeout) {
        committing(offsets, () -> delegate.commitSync(offsets, timeout));
    }

    /**
     * Run the client's synchronous commit, then record its result and duration. {@code offsets} null: the
     * client's own choice (every position it holds), which its interceptors hear ({@link CommitWitness}); a
     * failed one is reported with the positions the agent saw.
     */
    private void committing(Map<TopicPartition, OffsetAndMetadata> offsets, Runnable commit) {
        guard(this::reportAutoCommits);
        long start = System.nanoTime();
        try {
            commit.run();
        } catch (RuntimeException e) {
            double ms = (System.nanoTime() - start) / 1e6;
            guard(() -> member.recordCommit(true, offsets != null ? offsets : member.knownPositions(), e, ms));
            throw e;
        }
        double ms = (System.nanoTime() - start) / 1e6;
        guard(() -> {
            List<Map<TopicPartition, OffsetAndMetadata>> auto = new java.util.ArrayList<>();
            Map<TopicPartition, OffsetAndMetadata> committed = commits.afterSync(offsets, auto);
            auto.forEach(member::recordAutoCommit);
            member.recordCommit(true, committed, null, ms);
        });
    }

    /** The client's own commits witnessed since the last look, reported (on the application's thread). */
    private void reportAutoCommits() {
        commits.autoCommits().forEach(member::recordAutoCommit);
    }

    @Override
    public void commitAsync() {
        commitAsync(null);
    }

    @Override
    public void commitAsync(OffsetCommitCallback callback) {
        delegate.commitAsync(recorded(null, callback));
    }

    @Override
    public void commitAsync(Map<TopicPartition, OffsetAndMetadata> offsets, OffsetCommitCallback callback) {
        delegate.commitAsync(offsets, recorded(offsets, callback));
    }

    /**
     * The commit's result recorded, then the application's callback (if any) called as without the agent;
     * {@code offsets}: what it commits (null: every position), told apart from the client's auto commits.
     */
    private OffsetCommitCallback recorded(Map<TopicPartition, OffsetAndMetadata> offsets, OffsetCommitCallback app) {
        CommitLedger.Expected commit = commits.asyncStarted(offsets == null ? null : new HashMap<>(offsets));
        return (committed, error) -> {
            guard(() -> {
                commits.asyncDone(commit);
                member.recordCommit(false, committed == null ? Map.of() : committed, error, null);
            });
            if (app != null) {
                app.onComplete(committed, error);
            }
        };
    }

    @Override
    public void enforceRebalance() {
        enforceRebalance(null);
    }

    @Override
    public void enforceRebalance(String reason) {
        boolean stable = member.stable();
        try {
            delegate.enforceRebalance(reason);
        } catch (RuntimeException e) {
            guard(() -> requested(reason, false));
            throw e;
        }
        guard(() -> requested(reason, stable && enforceOutcome.rebalances));
    }

    /**
     * rebalance_requested: {@code accepted} false when a rebalance was already under way, the client refused, or
     * the protocol has the client do nothing (KIP-848); the mechanism says what a call does under this protocol.
     */
    private void requested(String reason, boolean accepted) {
        envelope.emit("rebalance_requested", Envelope.body("reason", reason == null ? "" : reason,
                "mechanism", enforceOutcome.mechanism, "accepted", accepted));
    }

    // ------------------------------------------------------------------ seeks move the position the agent reports
    @Override
    public void seek(TopicPartition tp, long offset) {
        delegate.seek(tp, offset);
        member.slot(tp).position = offset;
    }

    @Override
    public void seek(TopicPartition tp, OffsetAndMetadata offset) {
        delegate.seek(tp, offset);
        member.slot(tp).position = offset.offset();
    }

    @Override
    public void seekToBeginning(Collection<TopicPartition> partitions) {
        delegate.seekToBeginning(partitions);
        partitions.forEach(member::forgetPosition);  // resolved by the client's next poll
    }

    @Override
    public void seekToEnd(Collection<TopicPartition> partitions) {
        delegate.seekToEnd(partitions);
        partitions.forEach(member::forgetPosition);
    }

    // ------------------------------------------------------------------ close
    @Override
    public void close() {
        closing(delegate::close);
    }

    @Override
    public void close(Duration timeout) {
        closing(() -> delegate.close(timeout));
    }

    @Override
    @KafkaSince("4.1")
    public void close(CloseOptions options) {
        closing(() -> delegate.close(options));
    }

    /**
     * The member leaves (with commit-on-revoke, its processed frontier committed first; the client runs the final
     * revoke inside close); then a bounded flush of the telemetry.
     */
    private void closing(Runnable close) {
        if (!closed) {
            guard(() -> member.startLeaving(Membership.CLOSE));
            if (revokeCommitter != null) {
                guard(revokeCommitter::commitBeforeClose);
            }
        }
        try {
            close.run();
        } finally {
            if (!closed) {
                closed = true;
                guard(this::reportAutoCommits);  // the client's last auto commit, on close
                guard(() -> member.left(Membership.CLOSE));
                guard(progress::stop);
                guard(progress::emitHealth);
                emitter.close(CLOSE_FLUSH_TIMEOUT_MS);
            }
        }
    }

    /**
     * Run telemetry code; count and log (once) any failure instead of raising into the host, a kafka-clients that
     * lacks something the agent calls (a LinkageError) included.
     */
    private void guard(Runnable telemetry) {
        try {
            telemetry.run();
        } catch (RuntimeException | LinkageError e) {
            noteFailure(e);
        }
    }

    private void noteFailure(Throwable e) {
        emitter.noteError("agent: " + e);
    }

    // ------------------------------------------------------------------ plain delegation
    @Override public Set<TopicPartition> assignment() { return delegate.assignment(); }
    @Override public Set<String> subscription() { return delegate.subscription(); }
    @Override public void assign(Collection<TopicPartition> partitions) { delegate.assign(partitions); }
    @Override @KafkaSince("4.0") public void registerMetricForSubscription(KafkaMetric metric) {
        delegate.registerMetricForSubscription(metric);
    }
    @Override @KafkaSince("4.0") public void unregisterMetricFromSubscription(KafkaMetric metric) {
        delegate.unregisterMetricFromSubscription(metric);
    }
    @Override public long position(TopicPartition tp) { return delegate.position(tp); }
    @Override public long position(TopicPartition tp, Duration timeout) { return delegate.position(tp, timeout); }
    /** kafka-clients 3.x's {@code committed(TopicPartition)} (removed in 4.0): the client's own. */
    public OffsetAndMetadata committed(TopicPartition tp) {
        return (OffsetAndMetadata) RemovedApi.COMMITTED.call(delegate, tp);
    }
    /** kafka-clients 3.x's {@code committed(TopicPartition, Duration)} (removed in 4.0): the client's own. */
    public OffsetAndMetadata committed(TopicPartition tp, Duration timeout) {
        return (OffsetAndMetadata) RemovedApi.COMMITTED_WITH_TIMEOUT.call(delegate, tp, timeout);
    }
    @Override public Map<TopicPartition, OffsetAndMetadata> committed(Set<TopicPartition> partitions) {
        return delegate.committed(partitions);
    }
    @Override
    public Map<TopicPartition, OffsetAndMetadata> committed(Set<TopicPartition> partitions, Duration timeout) {
        return delegate.committed(partitions, timeout);
    }
    @Override @KafkaSince("3.7") public Uuid clientInstanceId(Duration timeout) {
        return delegate.clientInstanceId(timeout);
    }
    @Override public Map<MetricName, ? extends Metric> metrics() { return delegate.metrics(); }
    @Override public List<PartitionInfo> partitionsFor(String topic) { return delegate.partitionsFor(topic); }
    @Override public List<PartitionInfo> partitionsFor(String topic, Duration timeout) {
        return delegate.partitionsFor(topic, timeout);
    }
    @Override public Map<String, List<PartitionInfo>> listTopics() { return delegate.listTopics(); }
    @Override public Map<String, List<PartitionInfo>> listTopics(Duration timeout) {
        return delegate.listTopics(timeout);
    }
    @Override public Set<TopicPartition> paused() { return delegate.paused(); }
    @Override public void pause(Collection<TopicPartition> partitions) { delegate.pause(partitions); }
    @Override public void resume(Collection<TopicPartition> partitions) { delegate.resume(partitions); }
    @Override public Map<TopicPartition, OffsetAndTimestamp> offsetsForTimes(Map<TopicPartition, Long> timestamps) {
        return delegate.offsetsForTimes(timestamps);
    }
    @Override
    public Map<TopicPartition, OffsetAndTimestamp> offsetsForTimes(Map<TopicPartition, Long> timestamps,
                                                                   Duration timeout) {
        return delegate.offsetsForTimes(timestamps, timeout);
    }
    @Override public Map<TopicPartition, Long> beginningOffsets(Collection<TopicPartition> partitions) {
        return delegate.beginningOffsets(partitions);
    }
    @Override
    public Map<TopicPartition, Long> beginningOffsets(Collection<TopicPartition> partitions, Duration timeout) {
        return delegate.beginningOffsets(partitions, timeout);
    }
    @Override public Map<TopicPartition, Long> endOffsets(Collection<TopicPartition> partitions) {
        return delegate.endOffsets(partitions);
    }
    @Override public Map<TopicPartition, Long> endOffsets(Collection<TopicPartition> partitions, Duration timeout) {
        return delegate.endOffsets(partitions, timeout);
    }
    @Override public OptionalLong currentLag(TopicPartition tp) { return delegate.currentLag(tp); }
    @Override public ConsumerGroupMetadata groupMetadata() { return delegate.groupMetadata(); }
    @Override public void wakeup() { delegate.wakeup(); }
}
