package io.rebalancelens.javaagent;

import net.bytebuddy.asm.Advice;
import net.bytebuddy.implementation.bytecode.assign.Assigner;

/**
 * Inlined into {@code KafkaConsumer(ConsumerConfig, Deserializer, Deserializer)}, the constructor every public
 * one goes through. Entry: the config with the agent's CommitWitness among its interceptors (null when this
 * consumer is left alone). Exit: the delegate the constructor built, swapped for the instrumented one. Nothing
 * here may throw into the host ({@code suppress}); the calls go to {@link Hook}, which names no Kafka type.
 */
final class ConstructorAdvice {
    private ConstructorAdvice() {
    }

    @Advice.OnMethodEnter(suppress = Throwable.class)
    static Object enter(@Advice.Argument(value = 0, readOnly = false, typing = Assigner.Typing.DYNAMIC) Object config) {
        Object[] started = Hook.begin(config);
        if (started == null) {
            return null;
        }
        config = started[0];
        return started[1];
    }

    @Advice.OnMethodExit(suppress = Throwable.class)
    static void exit(@Advice.Enter Object pending,
                     @Advice.FieldValue(value = LensJavaAgent.DELEGATE_FIELD, readOnly = false,
                             typing = Assigner.Typing.DYNAMIC) Object delegate) {
        if (pending != null) {
            delegate = Hook.instrument(pending, delegate);
        }
    }
}
