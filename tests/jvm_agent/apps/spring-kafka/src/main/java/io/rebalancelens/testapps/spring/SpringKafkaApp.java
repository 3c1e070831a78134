package io.rebalancelens.testapps.spring;

import io.rebalancelens.testapps.kit.Member;
import io.rebalancelens.testapps.kit.MemberSpec;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.springframework.boot.SpringApplication;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.listener.MessageListenerContainer;

/**
 * A Spring Boot application whose {@code @KafkaListener} consumes for one scenario member (one container, one
 * consumer). It is configured as any Boot application is, through Boot's {@code spring.kafka.*} properties, which
 * the member's spec supplies as defaults ({@link #properties}); Spring Kafka's container polls, calls the listener
 * and commits.
 *
 * <p>Under "app" in the spec: {@code listener} {@code record} (default) or {@code batch}; {@code ack-mode} one of
 * Spring's AckMode names ({@code batch}, the default, or {@code record}: the container commits after the listener
 * returned; {@code manual} or {@code manual_immediate}: the listener acknowledges each record or batch it processed).
 */
public final class SpringKafkaApp implements Member.Application {
    private final Member member;
    private ConfigurableApplicationContext context;

    private SpringKafkaApp(Member member) {
        this.member = member;
    }

    /** Boot's properties for {@code spec}: the client config as {@code spring.kafka.*}, the listener's kind. */
    static Map<String, Object> properties(MemberSpec spec) {
        Map<String, Object> properties = new HashMap<>();
        spec.config.forEach((key, value) -> properties.put(key.equals("bootstrap.servers")
                ? "spring.kafka.bootstrap-servers" : "spring.kafka.consumer.properties[" + key + "]", String.valueOf(value)));
        String ackMode = spec.app("ack-mode", "batch");
        String kind = spec.app("listener", "record") + "-" + (ackMode.startsWith("manual") ? "manual" : "container");
        properties.put("spring.kafka.listener.ack-mode", ackMode);
        properties.put("spring.kafka.listener.concurrency", "1");
        properties.put("spring.main.banner-mode", "off");
        properties.put("app.topics", String.join(",", spec.subscribe));
        for (String listener : List.of("record-container", "record-manual", "batch-container", "batch-manual")) {
            properties.put("app." + listener, String.valueOf(listener.equals(kind)));
        }
        return properties;
    }

    @Override
    public void start() {
        SpringApplication application = new SpringApplication(ListenerApplication.class);
        application.setDefaultProperties(properties(member.spec()));
        application.addInitializers(context -> context.getBeanFactory().registerSingleton("member", member));
        context = application.run();
    }

    @Override
    public void quiesce() {
        context.getBean(KafkaListenerEndpointRegistry.class).getListenerContainers()
                .forEach(MessageListenerContainer::pause);
    }

    @Override
    public void close() {
        context.close();
    }

    public static void main(String[] args) throws Exception {
        Member member = Member.of(args);
        member.run(new SpringKafkaApp(member));
    }
}
