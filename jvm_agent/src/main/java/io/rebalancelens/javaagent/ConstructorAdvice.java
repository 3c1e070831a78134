package io.rebalancelens.javaagent;

import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.util.function.Function;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.implementation.bytecode.assign.Assigner;

/**
 * Inlined into {@code KafkaConsumer(ConsumerConfig, Deserializer, Deserializer)}, the constructor every public
 * one goes through. Entry (both version families, {@link FamilyName} bound to the family's name): the config with
 * the agent's CommitWitness among its interceptors, and what turns what the constructor builds into what the advice
 * keeps (null when this consumer is left alone). Exit here, the delegate family's (kafka-clients 3.7 and later):
 * the delegate the constructor built, swapped ({@link FacadeAdvice.ConstructorExit} is the facade family's). The
 * inlined code names only JDK types and reaches {@link Hook} through the system class loader, so it links in
 * whatever loader defined KafkaConsumer. Nothing here may throw into the host ({@code suppress}).
 */
final class ConstructorAdvice {
    static final String HOOK = "io.rebalancelens.javaagent.Hook";

    /** The version family's name, a constant the advice is bound with ({@link Family}). */
    @Retention(RetentionPolicy.RUNTIME)
    @interface FamilyName {
    }

    private ConstructorAdvice() {
    }

    @Advice.OnMethodEnter(suppress = Throwable.class)
    static Object enter(@Advice.Origin Class<?> consumer, @FamilyName String family,
                        @Advice.Argument(value = 0, readOnly = false, typing = Assigner.Typing.DYNAMIC) Object config)
            throws ReflectiveOperationException {
        Object[] started = (Object[]) ClassLoader.getSystemClassLoader().loadClass(HOOK)
                .getMethod("begin", Class.class, Object.class, String.class).invoke(null, consumer, config, family);
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
