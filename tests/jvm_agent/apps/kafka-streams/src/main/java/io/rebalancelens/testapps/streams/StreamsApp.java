package io.rebalancelens.testapps.streams;

import io.rebalancelens.scenarios.TruthWriter.Delivery;
import io.rebalancelens.testapps.kit.Member;
import io.rebalancelens.testapps.kit.MemberSpec;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;

/**
 * A Kafka Streams application on the classic group protocol: one stream thread (one group member per process)
 * whose processor handles each record of the subscribed topics. "Processed" is Streams' own: a record is processed
 * when the processor returns, and Streams commits the processed offsets every {@code commit.interval.ms}, on
 * revocation and on close (the application never commits). The ground truth is written per record, before it is
 * processed; the callbacks come from {@link TruthClientSupplier}.
 *
 * <p>Settings: the spec's client config (its {@code group.id} is the {@code application.id}; group-membership
 * settings go to the main consumer) and, under "app", {@code streams.<any StreamsConfig>}, e.g.
 * {@code streams.processing.guarantee=exactly_once_v2}.
 */
public final class StreamsApp implements Member.Application {
    /** Settings Streams owns or forbids for its consumers: not passed through from the member's config. */
    private static final Set<String> STREAMS_OWNED = Set.of("group.id", "key.deserializer", "value.deserializer",
            "partition.assignment.strategy", "enable.auto.commit", "group.protocol");
    private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(30);

    private final KafkaStreams streams;

    private StreamsApp(Member member) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(member.spec().subscribe, Consumed.with(Serdes.String(), Serdes.String()))
                .process(() -> new Recorder(member));
        streams = new KafkaStreams(builder.build(), config(member.spec()), new TruthClientSupplier(member));
    }

    /** The Streams config for {@code spec}; an IllegalArgumentException for a protocol this app does not run. */
    static Properties config(MemberSpec spec) {
        String protocol = spec.groupProtocol();
        if (protocol != null && !protocol.equalsIgnoreCase("classic")) {
            throw new IllegalArgumentException("group.protocol=" + protocol + ": this application runs Kafka Streams "
                    + "on the classic protocol only (leave group.protocol unset or classic)");
        }
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, spec.config.get("group.id"));
        props.put(StreamsConfig.STATE_DIR_CONFIG, spec.runDir.resolve("streams-state").resolve(spec.process).toString());
        for (Map.Entry<String, Object> e : spec.config.entrySet()) {
            String key = e.getKey();
            if (key.equals("bootstrap.servers") || key.equals("client.id")) {
                props.put(key, e.getValue());
            } else if (!STREAMS_OWNED.contains(key)) {
                props.put(StreamsConfig.mainConsumerPrefix(key), e.getValue());
            }
        }
        props.putAll(spec.appSettings("streams."));
        return props;
    }

    @Override
    public void start() {
        streams.start();
    }

    @Override
    public void quiesce() {
        streams.pause();
    }

    @Override
    public void close() {
        streams.close(CLOSE_TIMEOUT);
    }

    /** Each record: written down, then processed (the member's processing time). */
    private static final class Recorder implements Processor<String, String, Void, Void> {
        private final Member member;
        private ProcessorContext<Void, Void> context;

        Recorder(Member member) {
            this.member = member;
        }

        @Override
        public void init(ProcessorContext<Void, Void> context) {
            this.context = context;
        }

        @Override
        public void process(Record<String, String> record) {
            RecordMetadata source = context.recordMetadata().orElseThrow();
            try {
                member.process(List.of(new Delivery(source.topic(), source.partition(), source.offset(),
                        record.value(), record.timestamp())));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    public static void main(String[] args) throws Exception {
        Member member = Member.of(args);
        member.run(new StreamsApp(member));
    }
}
