package io.rebalancelens.testapps.spring;

import io.rebalancelens.scenarios.TruthWriter.Delivery;
import io.rebalancelens.testapps.kit.Member;
import java.util.Collection;
import java.util.List;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.ContainerCustomizer;
import org.springframework.kafka.listener.ConcurrentMessageListenerContainer;
import org.springframework.kafka.listener.ConsumerAwareRebalanceListener;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.stereotype.Component;

/**
 * The listeners, record or batch, with container or manual acknowledgement, and the containers' rebalance listener,
 * which writes the callbacks' ground truth. Boot's auto-configured container factory applies the customizer and the
 * {@code spring.kafka.*} properties.
 */
@SpringBootApplication
public class ListenerApplication {
    private static final String TOPICS = "#{'${app.topics}'.split(',')}";

    @Bean
    ContainerCustomizer<Object, Object, ConcurrentMessageListenerContainer<Object, Object>> truthCallbacks(
            Member member) {
        return container -> container.getContainerProperties().setConsumerRebalanceListener(new Callbacks(member));
    }

    static Delivery delivered(ConsumerRecord<String, String> r) {
        return new Delivery(r.topic(), r.partition(), r.offset(), r.value(), r.timestamp());
    }

    /**
     * The four listeners; {@code app.<kind>} starts the one the spec asked for (a listener that is not started
     * builds no consumer). Each processes what it was handed; the manual ones then acknowledge it.
     */
    @Component
    static final class Listeners {
        private final Member member;

        Listeners(Member member) {
            this.member = member;
        }

        @KafkaListener(id = "record-container", idIsGroup = false, topics = TOPICS, batch = "false",
                autoStartup = "${app.record-container}")
        void onRecord(ConsumerRecord<String, String> record) throws InterruptedException {
            member.process(List.of(delivered(record)));
        }

        @KafkaListener(id = "record-manual", idIsGroup = false, topics = TOPICS, batch = "false",
                autoStartup = "${app.record-manual}")
        void onRecord(ConsumerRecord<String, String> record, Acknowledgment ack) throws InterruptedException {
            onRecord(record);
            ack.acknowledge();
        }

        @KafkaListener(id = "batch-container", idIsGroup = false, topics = TOPICS, batch = "true",
                autoStartup = "${app.batch-container}")
        void onBatch(List<ConsumerRecord<String, String>> records) throws InterruptedException {
            member.process(records.stream().map(ListenerApplication::delivered).collect(Collectors.toList()));
        }

        @KafkaListener(id = "batch-manual", idIsGroup = false, topics = TOPICS, batch = "true",
                autoStartup = "${app.batch-manual}")
        void onBatch(List<ConsumerRecord<String, String>> records, Acknowledgment ack) throws InterruptedException {
            onBatch(records);
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
