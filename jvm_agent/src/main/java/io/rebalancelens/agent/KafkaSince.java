package io.rebalancelens.agent;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * The method uses what kafka-clients has only since {@link #value} (a Consumer method of a newer interface, or a
 * call made only after {@link KafkaClients} found it): it runs only where that exists, so the javaagent's reference
 * check (javaagent.References) does not ask an older kafka-clients for it. Everything else the agent's classes use
 * must be in every version it supports.
 */
@Retention(RetentionPolicy.CLASS)
@Target(ElementType.METHOD)
public @interface KafkaSince {
    /** The first kafka-clients version that has what the method uses. */
    String value();
}
