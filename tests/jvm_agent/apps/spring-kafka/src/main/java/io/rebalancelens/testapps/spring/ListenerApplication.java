package io.rebalancelens.testapps.spring;

import io.rebalancelens.testapps.kit.Delivered;
import io.rebalancelens.testapps.kit.Member;
import java.util.Collection;
import java.util.List;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.ContainerCustomizer;
import org.springframework.kafka.listener.ConcurrentMessageListenerContainer;
import org.springframework.kafka.listener.ConsumerAwareRebalanceListener;
import org.springframework.kafka.support.Acknowledgment;

/**
 * The listeners, one of four by {@code app.listener-kind} (record or batch, container or manual acknowledgement),
 * and the container's rebalance listener, which writes the callbacks' ground truth. Boot's auto-configured
 * container factory applies the customizer and the {@code spring.kafka.*} properties.
 */
@SpringBootApplication
public class ListenerApplication {
    private static final String TOPICS = "#{'${app.topics}'.split(',')}";

    @Bean
    ContainerCustomizer<Object, Object, ConcurrentMessageListenerContainer<Object, Object>> truthCallbacks(
            Member member) {
        return container -> container.getContainerProperties().setConsumerRebalanceListener(new Callbacks(member));
    }

    @Bean
    @ConditionalOnProperty(name = "app.listener-kind", havingValue = "record-container")
    RecordListener recordListener(Member member) {
        return new RecordListener(member);
    }

    @Bean
    @ConditionalOnProperty(name = "app.listener-kind", havingValue = "record-manual")
    AcknowledgingRecordListener acknowledgingRecordListener(Member member) {
        return new AcknowledgingRecordListener(member);
    }

    @Bean
    @ConditionalOnProperty(name = "app.listener-kind", havingValue = "batch-container")
    BatchListener batchListener(Member member) {
        return new BatchListener(member);
    }

    @Bean
    @ConditionalOnProperty(name = "app.listener-kind", havingValue = "batch-manual")
    AcknowledgingBatchListener acknowledgingBatchListener(Member member) {
        return new AcknowledgingBatchListener(member);
    }

    static Delivered delivered(ConsumerRecord<String, String> r) {
        return new Delivered(r.topic(), r.partition(), r.offset(), r.value(), r.timestamp());
    }

    static List<Delivered> delivered(List<ConsumerRecord<String, String>> records) {
        return records.stream().map(ListenerApplication::delivered).collect(Collectors.toList());
    }

    /** One record per call; the container commits after the listener returned. */
    static final class RecordListener {
        private final Member member;

        RecordListener(Member member) {
            this.member = member;
        }

        @KafkaListener(topics = TOPICS)
        void onRecord(ConsumerRecord<String, String> record) throws InterruptedException {
            member.process(List.of(delivered(record)));
        }
    }

    /** One record per call, acknowledged once processed. */
    static final class AcknowledgingRecordListener {
        private final Member member;

        AcknowledgingRecordListener(Member member) {
            this.member = member;
        }

        @KafkaListener(topics = TOPICS)
        void onRecord(ConsumerRecord<String, String> record, Acknowledgment ack) throws InterruptedException {
            member.process(List.of(delivered(record)));
            ack.acknowledge();
        }
    }

    /** A poll's records per call; the container commits after the listener returned. */
    static final class BatchListener {
        private final Member member;

        BatchListener(Member member) {
            this.member = member;
        }

        @KafkaListener(topics = TOPICS)
        void onBatch(List<ConsumerRecord<String, String>> records) throws InterruptedException {
            member.process(delivered(records));
        }
    }

    /** A poll's records per call, acknowledged once all are processed. */
    static final class AcknowledgingBatchListener {
        private final Member member;

        AcknowledgingBatchListener(Member member) {
            this.member = member;
        }

        @KafkaListener(topics = TOPICS)
        void onBatch(List<ConsumerRecord<String, String>> records, Acknowledgment ack) throws InterruptedException {
            member.process(delivered(records));
            ack.acknowledge();
        }
    }

    /** The ground truth of the callbacks: a revoke once the container committed what was acknowledged. */
    static final class Callbacks implements ConsumerAwareRebalanceListener {
        private final Member member;

        Callbacks(Member member) {
            this.member = member;
        }

        @Override
        public void onPartitionsAssigned(Consumer<?, ?> consumer, Collection<TopicPartition> partitions) {
            member.assigned(partitions, consumer.groupMetadata().memberId());
        }

        @Override
        public void onPartitionsRevokedAfterCommit(Consumer<?, ?> consumer, Collection<TopicPartition> partitions) {
            member.revoked(partitions, consumer.groupMetadata().memberId());
        }

        @Override
        public void onPartitionsLost(Consumer<?, ?> consumer, Collection<TopicPartition> partitions) {
            member.lost(partitions, consumer.groupMetadata().memberId());
        }
    }
}
