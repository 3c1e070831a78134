package io.rebalancelens.agent;

/**
 * What {@code KafkaConsumer.enforceRebalance(reason)} does under each protocol: the {@code rebalance_requested}
 * event's mechanism text, so that a reader of the telemetry need not know the client (as
 * consumer_agent/enforce_rebalance.py's texts do for the Python agent). Measured with kafka-clients 4.2 on a
 * 4.2 broker, three members, a follower or the leader calling twice (tests/jvm_agent/test_enforce_rebalance.py):
 * under classic, {@code ClassicKafkaConsumer} has its coordinator rejoin on the next poll, and every call moves
 * every member to a new generation, whoever calls (the rejoin's subscription carries the member's current
 * generation, {@code ConsumerCoordinator.metadata}, so it differs from its last JoinGroup's); {@code
 * AsyncKafkaConsumer} (group.protocol=consumer) only logs "Operation not supported in new consumer group
 * protocol" and returns.
 */
enum EnforceOutcome {
    EAGER("KafkaConsumer.enforceRebalance (classic eager: every call moves every member to a new generation; "
            + "each revokes all its partitions first)", true),
    COOPERATIVE("KafkaConsumer.enforceRebalance (classic cooperative: every call moves every member to a new "
            + "generation; nothing revoked)", true),
    UNSUPPORTED("KafkaConsumer.enforceRebalance (KIP-848: not supported by the consumer protocol; the client logs "
            + "a warning and does nothing)", false);

    /** The event's {@code mechanism}. */
    final String mechanism;
    /** Whether the client rebalances at all: {@code accepted} is false for every call when it does not. */
    final boolean rebalances;

    EnforceOutcome(String mechanism, boolean rebalances) {
        this.mechanism = mechanism;
        this.rebalances = rebalances;
    }

    static EnforceOutcome of(boolean classic, boolean cooperative) {
        return !classic ? UNSUPPORTED : cooperative ? COOPERATIVE : EAGER;
    }
}
