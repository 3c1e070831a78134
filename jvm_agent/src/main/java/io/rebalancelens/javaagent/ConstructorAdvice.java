package io.rebalancelens.javaagent;

import java.util.function.Function;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.implementation.bytecode.assign.Assigner;

/**
 * Inlined into {@code KafkaConsumer(ConsumerConfig, Deserializer, Deserializer)}, the constructor every public
 * one goes through, in the delegate family (kafka-clients 3.7 and later). Entry: the config with the agent's
 * CommitWitness among its interceptors, and what turns the delegate into the instrumented one (null when this
 * consumer is left alone). Exit: the delegate the constructor built, swapped. The inlined code names only JDK types
 * and reaches {@link Hook} through the system class loader, so it links in whatever loader defined KafkaConsumer.
 * Nothing here may throw into the host ({@code suppress}).
 */
final class ConstructorAdvice {
    static final String HOOK = "io.rebalancelens.javaagent.Hook";

    private ConstructorAdvice() {
    }

    @Advice.OnMethodEnter(suppress = Throwable.class)
    static Object enter(@Advice.Origin Class<?> consumer,
                        @Advice.Argument(value = 0, readOnly = false, typing = Assigner.Typing.DYNAMIC) Object config)
            throws ReflectiveOperationException {
        Object[] started = (Object[]) ClassLoader.getSystemClassLoader().loadClass(HOOK)
                .getMethod("begin", Class.class, Object.class, String.class).invoke(null, consumer, config, "delegate");
        if (started == null) {
            return null;
        }
        config = started[0];
        return started[1];
    }

    @Advice.OnMethodExit(suppress = Throwable.class)
    @SuppressWarnings("unchecked")
    static void exit(@Advice.Enter Object finish,
                     @Advice.FieldValue(value = LensJavaAgent.DELEGATE_FIELD, readOnly = false,
                             typing = Assigner.Typing.DYNAMIC) Object delegate) {
        if (finish != null) {
            delegate = ((Function<Object, Object>) finish).apply(delegate);
        }
    }
}
