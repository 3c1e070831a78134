package io.rebalancelens.testapps.streams;

import io.rebalancelens.testapps.kit.Member;
import java.util.Collection;
import java.util.Map;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.streams.KafkaClientSupplier;

/**
 * Streams' own clients, but the main consumer tells the ground truth about its callbacks: Streams keeps its
 * rebalance listener to itself, so this consumer wraps it at subscribe and records each callback once Streams'
 * handling returned (a revoked task is suspended and its processed offsets committed by then). Still a plain
 * {@code KafkaConsumer}, built through its public constructor, as Streams' default supplier builds its clients.
 */
final class TruthClientSupplier implements KafkaClientSupplier {
    private final Member member;

    TruthClientSupplier(Member member) {
        this.member = member;
    }

    @Override
    public Admin getAdmin(Map<String, Object> config) {
        return Admin.create(config);
    }

    @Override
    public Producer<byte[], byte[]> getProducer(Map<String, Object> config) {
        return new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer());
    }

    @Override
    public Consumer<byte[], byte[]> getConsumer(Map<String, Object> config) {
        return new TruthConsumer(config, member);
    }

    @Override
    public Consumer<byte[], byte[]> getRestoreConsumer(Map<String, Object> config) {
        return new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    @Override
    public Consumer<byte[], byte[]> getGlobalConsumer(Map<String, Object> config) {
        return new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    private static final class TruthConsumer extends KafkaConsumer<byte[], byte[]> {
        private final Member member;

        TruthConsumer(Map<String, Object> config, Member member) {
            super(config, new ByteArrayDeserializer(), new ByteArrayDeserializer());
            this.member = member;
        }

        @Override
        public void subscribe(Collection<String> topics, ConsumerRebalanceListener streams) {
            super.subscribe(topics, new Truth(streams));
        }

        @Override
        public void subscribe(Pattern pattern, ConsumerRebalanceListener streams) {
            super.subscribe(pattern, new Truth(streams));
        }

        private final class Truth implements ConsumerRebalanceListener {
            private final ConsumerRebalanceListener streams;

            Truth(ConsumerRebalanceListener streams) {
                this.streams = streams;
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                streams.onPartitionsAssigned(partitions);
                member.assigned(partitions, groupMetadata().memberId());
            }

            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                streams.onPartitionsRevoked(partitions);
                member.revoked(partitions, groupMetadata().memberId());
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> partitions) {
                streams.onPartitionsLost(partitions);
                member.lost(partitions, groupMetadata().memberId());
            }
        }
    }
}
