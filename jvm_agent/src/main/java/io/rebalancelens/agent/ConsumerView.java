package io.rebalancelens.agent;

import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * What the agent's helpers ({@link RevokeCommitter}, {@link Progress}) may ask of the consumer they watch: a narrow
 * view, not the consumer nor its client (consumer_agent/consumer_view.py's ConsumerView). {@link InstrumentedConsumer}
 * implements it privately, so none of it joins the Consumer interface the application sees.
 */
interface ConsumerView {
    /** The partitions the member owns now, by its rebalance listener's account (read-only). */
    Set<TopicPartition> owned();

    /** Where the application reads {@code tp} next, as the agent last saw it (a poll, a seek), or OFFSET_UNKNOWN. */
    long position(TopicPartition tp);

    /** The last offset this member committed of {@code tp}, or OFFSET_UNKNOWN. */
    long committed(TopicPartition tp);

    /** The client's lag on {@code tp}, from what it fetched (no request), if it knows it. */
    OptionalLong currentLag(TopicPartition tp);

    /** The instrumented synchronous commit (recorded as every commitSync is); may throw the client's error. */
    void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets);
}
