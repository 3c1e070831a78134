package io.rebalancelens.javaagent.helper;

import java.util.Map;
import java.util.Optional;

/**
 * The frameworks that own their consumers' commits: each commits what it processed (or what the application
 * acknowledged) itself, so for their consumers "processed" is what they committed ({@code lens.processing=committed})
 * and the agent's commit-on-revoke is refused, since a commit of the agent's would not be theirs. Told from the
 * stack that builds the KafkaConsumer (its constructor runs on the framework's thread), and Kafka Streams' main
 * consumer also from its assignor. Consumers an application builds through a framework's factory for its own poll
 * loop (a Spring ConsumerFactory outside a listener container) are the application's.
 */
enum Framework {
    KAFKA_STREAMS("Kafka Streams", "org.apache.kafka.streams.",
            "it commits what its tasks processed itself (under exactly-once inside its transactions, which a commit "
                    + "of the agent's would bypass)"),
    SPRING_KAFKA("Spring Kafka's listener containers", "org.springframework.kafka.listener.",
            "the container commits what the listener acknowledged itself, on revoke too"),
    KAFKA_CONNECT("Kafka Connect", "org.apache.kafka.connect.", "its sink tasks commit what they flushed"),
    REACTOR_KAFKA("Reactor Kafka", "reactor.kafka.receiver.", "it commits what the application acknowledged"),
    SMALLRYE("SmallRye Reactive Messaging", "io.smallrye.reactive.messaging.kafka.",
            "its commit strategy commits what was acknowledged"),
    ALPAKKA("Alpakka Kafka", "akka.kafka.", "its committer commits what the stream passed it"),
    PEKKO("Pekko Connectors Kafka", "org.apache.pekko.kafka.", "its committer commits what the stream passed it"),
    PARALLEL_CONSUMER("Confluent Parallel Consumer", "io.confluent.parallelconsumer.",
            "it commits the offsets its workers completed"),
    MICRONAUT("Micronaut Kafka", "io.micronaut.configuration.kafka.", "its offset strategy commits for the listener");

    private static final String STREAMS_ASSIGNOR = "StreamsPartitionAssignor";

    final String label;
    private final String packagePrefix;
    final String why;

    Framework(String label, String packagePrefix, String why) {
        this.label = label;
        this.packagePrefix = packagePrefix;
        this.why = why;
    }

    /** The framework building the consumer of {@code config} on this thread, if any (its innermost frame wins). */
    static Optional<Framework> building(Map<String, Object> config) {
        if (String.valueOf(config.get("partition.assignment.strategy")).contains(STREAMS_ASSIGNOR)) {
            return Optional.of(KAFKA_STREAMS);
        }
        return StackWalker.getInstance().walk(frames -> frames.map(StackWalker.StackFrame::getClassName)
                .map(Framework::of).filter(Optional::isPresent).map(Optional::get).findFirst());
    }

    private static Optional<Framework> of(String className) {
        for (Framework framework : values()) {
            if (className.startsWith(framework.packagePrefix)) {
                return Optional.of(framework);
            }
        }
        return Optional.empty();
    }

    /**
     * The launch options for a consumer this framework builds: {@code lens.processing=committed} unless the options
     * chose a mode, and commit-on-revoke off, with one line to {@code tell} if they asked for it.
     */
    Map<String, Object> options(Map<String, Object> launch, java.util.function.Consumer<String> tell) {
        Map<String, Object> adjusted = new java.util.HashMap<>(launch);
        adjusted.putIfAbsent("lens.processing", "committed");
        if (Boolean.parseBoolean(String.valueOf(launch.get("lens.commit.on.revoke")))) {
            adjusted.put("lens.commit.on.revoke", "false");
            tell.accept("lens.commit.on.revoke is off for the consumers " + label + " builds: " + why
                    + "; the agent measures them without committing");
        }
        return adjusted;
    }
}
