package io.rebalancelens.testapps.plain;

import io.rebalancelens.scenarios.TruthWriter.Delivery;
import io.rebalancelens.testapps.kit.Member;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * The hand-written consumer most services run: poll, process, poll again, and let the client commit
 * ({@code enable.auto.commit}, its default; every {@code auto.commit.interval.ms} inside poll, before a rebalance
 * and on close). It never commits itself, so the records processed since the last auto commit are the duplicates of
 * a handoff. Its listener only writes the ground truth; it uses only API present since kafka-clients 3.5.
 */
public final class PlainAutoCommitApp implements Member.Application {
    private static final Duration POLL_TIMEOUT = Duration.ofMillis(100);

    private final Member member;
    private final Thread loop = new Thread(this::consume, "poll-loop");
    private volatile boolean quiesced;
    private volatile boolean stopping;

    private PlainAutoCommitApp(Member member) {
        this.member = member;
    }

    /** The spec's client config, auto-committing, with String deserializers unless it names its own. */
    static Map<String, Object> config(Map<String, Object> spec) {
        Map<String, Object> config = new HashMap<>(spec);
        config.put("enable.auto.commit", true);
        config.putIfAbsent("key.deserializer", StringDeserializer.class.getName());
        config.putIfAbsent("value.deserializer", StringDeserializer.class.getName());
        return config;
    }

    @Override
    public void start() {
        loop.start();
    }

    @Override
    public void quiesce() {
        quiesced = true;
    }

    @Override
    public void close() throws InterruptedException {
        stopping = true;
        loop.join();
    }

    private void consume() {
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(config(member.spec().config))) {
            consumer.subscribe(member.spec().subscribe, new Truth(consumer));
            while (!stopping) {
                if (quiesced) {
                    Thread.sleep(POLL_TIMEOUT.toMillis());
                    continue;
                }
                ConsumerRecords<String, String> records = consumer.poll(POLL_TIMEOUT);
                List<Delivery> batch = new ArrayList<>(records.count());
                for (ConsumerRecord<String, String> r : records) {
                    batch.add(new Delivery(r.topic(), r.partition(), r.offset(), r.value(), r.timestamp()));
                }
                member.process(batch);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException | LinkageError e) {
            member.fail(e);
        }
    }

    /** The ground truth of the callbacks; the client does the rest. */
    private final class Truth implements ConsumerRebalanceListener {
        private final KafkaConsumer<String, String> consumer;

        Truth(KafkaConsumer<String, String> consumer) {
            this.consumer = consumer;
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            member.assigned(partitions, consumer.groupMetadata().memberId());
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            member.revoked(partitions, consumer.groupMetadata().memberId());
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            member.lost(partitions, consumer.groupMetadata().memberId());
        }
    }

    public static void main(String[] args) throws Exception {
        Member member = Member.of(args);
        member.run(new PlainAutoCommitApp(member));
    }
}
