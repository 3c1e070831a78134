package io.rebalancelens.javaagent;

import java.util.function.BiFunction;
import java.util.function.Function;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.implementation.bytecode.assign.Assigner;

/**
 * The facade family (kafka-clients 3.5 and 3.6: KafkaConsumer is the consumer itself, with no delegate to swap).
 * The constructor's exit keeps a router in a field the agent adds ({@link #ROUTER}); every {@code Consumer} method
 * of KafkaConsumer asks it first and, when it answers, returns its result (or throws its exception) instead of
 * running the client's code, which the router runs itself through the library's InstrumentedConsumer
 * (javaagent.helper.FacadeRouter). Inlined code names only JDK types; nothing here may throw into the host.
 */
final class FacadeAdvice {
    /** The field the agent adds to KafkaConsumer: its router, a {@code BiFunction<String, Object[], Object[]>}. */
    static final String ROUTER = "rebalanceLens$router";
    /** KafkaConsumer's own field (3.5, 3.6): the client {@code Metrics} its coordinator is built with. */
    static final String METRICS = "metrics";

    private FacadeAdvice() {
    }

    /**
     * The exit of {@code KafkaConsumer(ConsumerConfig, Deserializer, Deserializer)} (its entry: ConstructorAdvice's):
     * the router of this KafkaConsumer, handed it and its client {@code Metrics} ({@link #METRICS}), by which the
     * consumer's coordinator steps reach it (javaagent.CoordinatorAdvice).
     */
    static final class ConstructorExit {
        private ConstructorExit() {
        }

        @Advice.OnMethodExit(suppress = Throwable.class)
        @SuppressWarnings("unchecked")
        static void exit(@Advice.Enter Object finish, @Advice.This Object self,
                         @Advice.FieldValue(METRICS) Object metrics,
                         @Advice.FieldValue(value = ROUTER, readOnly = false) Object router) {
            if (finish != null) {
                router = ((Function<Object, Object>) finish).apply(new Object[] {self, metrics});
            }
        }
    }

    /** On each of KafkaConsumer's public {@code Consumer} methods. */
    static final class Method {
        private Method() {
        }

        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class, suppress = Throwable.class)
        @SuppressWarnings("unchecked")
        static Object[] enter(@Advice.FieldValue(ROUTER) Object router, @Advice.Origin("#m#d") String method,
                              @Advice.AllArguments Object[] args) {
            return router == null ? null : ((BiFunction<String, Object[], Object[]>) router).apply(method, args);
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit(@Advice.Enter Object[] routed,
                         @Advice.Return(readOnly = false, typing = Assigner.Typing.DYNAMIC) Object returned,
                         @Advice.Thrown(readOnly = false) Throwable thrown) {
            if (routed != null && routed[1] != null) {
                thrown = (Throwable) routed[1];
            } else if (routed != null) {
                returned = routed[0];
            }
        }
    }
}
