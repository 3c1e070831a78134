package io.rebalancelens.javaagent;

import static net.bytebuddy.matcher.ElementMatchers.isConstructor;
import static net.bytebuddy.matcher.ElementMatchers.isMethod;
import static net.bytebuddy.matcher.ElementMatchers.isOverriddenFrom;
import static net.bytebuddy.matcher.ElementMatchers.isPublic;
import static net.bytebuddy.matcher.ElementMatchers.isStatic;
import static net.bytebuddy.matcher.ElementMatchers.named;
import static net.bytebuddy.matcher.ElementMatchers.not;
import static net.bytebuddy.matcher.ElementMatchers.takesArguments;

import java.util.List;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.description.method.MethodDescription;
import net.bytebuddy.description.modifier.FieldManifestation;
import net.bytebuddy.description.modifier.Ownership;
import net.bytebuddy.description.modifier.Visibility;
import net.bytebuddy.dynamic.DynamicType;
import net.bytebuddy.matcher.ElementMatcher;

/**
 * The kafka-clients version families, as OpenTelemetry's muzzle matches them: each is a way of reaching the
 * consumer, with the advice it applies and the helpers it loads, and it fits a kafka-clients when everything those
 * use resolves there ({@link References}), not by the version string. The first family that fits is applied.
 *
 * <ul>
 *   <li>{@link #DELEGATE}: kafka-clients 3.7 and later. KafkaConsumer is a facade over a {@code ConsumerDelegate}
 *   field (the classic or the async consumer); the constructor's advice swaps it ({@link ConstructorAdvice}).</li>
 *   <li>{@link #FACADE}: kafka-clients 3.5 and 3.6. KafkaConsumer is the consumer itself; each of its
 *   {@code Consumer} methods is routed through the library ({@link FacadeAdvice}).</li>
 * </ul>
 */
enum Family {
    DELEGATE(Hook.HELPER_PACKAGE + "FacadeRouter", List.of(constructor(),
            new References.Reference(References.Kind.FIELD, Family.KAFKA_CONSUMER, LensJavaAgent.DELEGATE_FIELD,
                    "Lorg/apache/kafka/clients/consumer/internals/ConsumerDelegate;", null))) {
        @Override
        DynamicType.Builder<?> advise(DynamicType.Builder<?> builder) {
            return builder.visit(constructorAdvice(ConstructorAdvice.class).on(THE_CONSTRUCTOR));
        }
    },
    FACADE(Hook.HELPER_PACKAGE + "DelegateSwap", List.of(constructor(),
            new References.Reference(References.Kind.FIELD, Family.KAFKA_CONSUMER, FacadeAdvice.METRICS,
                    "Lorg/apache/kafka/common/metrics/Metrics;", null))) {
        @Override
        DynamicType.Builder<?> advise(DynamicType.Builder<?> builder) {
            return builder.defineField(FacadeAdvice.ROUTER, Object.class, Visibility.PRIVATE, Ownership.MEMBER,
                            FieldManifestation.VOLATILE)
                    .visit(constructorAdvice(FacadeAdvice.ConstructorExit.class).on(THE_CONSTRUCTOR))
                    .visit(Advice.to(FacadeAdvice.Method.class).on(CONSUMER_METHODS));
        }
    };

    static final String KAFKA_CONSUMER = "org/apache/kafka/clients/consumer/KafkaConsumer";
    static final String CONFIG = "org/apache/kafka/clients/consumer/ConsumerConfig";
    private static final String DESERIALIZER = "org/apache/kafka/common/serialization/Deserializer";
    /** {@code KafkaConsumer(ConsumerConfig, Deserializer, Deserializer)}: every public constructor goes through it. */
    static final ElementMatcher<MethodDescription> THE_CONSTRUCTOR = isConstructor().and(takesArguments(3)).and(
            m -> m.getParameters().get(0).getType().asErasure().getInternalName().equals(CONFIG));
    private static final ElementMatcher<MethodDescription> CONSUMER_METHODS = isMethod().and(isPublic())
            .and(not(isStatic())).and(isOverriddenFrom(named("org.apache.kafka.clients.consumer.Consumer")));

    /** The other family's helper, whose references this family does not need. */
    final String otherHelper;
    /** What the advice itself needs of KafkaConsumer. */
    final List<References.Reference> advice;

    Family(String otherHelper, List<References.Reference> advice) {
        this.otherHelper = otherHelper;
        this.advice = advice;
    }

    /** KafkaConsumer with this family's advice. */
    abstract DynamicType.Builder<?> advise(DynamicType.Builder<?> builder);

    /** ConstructorAdvice's entry, told this family's name, with {@code exit}'s exit. */
    Advice constructorAdvice(Class<?> exit) {
        return Advice.withCustomMapping().bind(ConstructorAdvice.FamilyName.class, helperName())
                .to(ConstructorAdvice.class, exit);
    }

    /** The family's name, as the helpers take it (javaagent.helper.Instrumenter). */
    String helperName() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }

    private static References.Reference constructor() {
        return new References.Reference(References.Kind.METHOD, KAFKA_CONSUMER, "<init>",
                "(L" + CONFIG + ";L" + DESERIALIZER + ";L" + DESERIALIZER + ";)V", null);
    }
}
