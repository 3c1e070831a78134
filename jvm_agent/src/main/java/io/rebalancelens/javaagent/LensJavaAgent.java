package io.rebalancelens.javaagent;

import static net.bytebuddy.matcher.ElementMatchers.isConstructor;
import static net.bytebuddy.matcher.ElementMatchers.named;
import static net.bytebuddy.matcher.ElementMatchers.takesArguments;

import io.rebalancelens.agent.AgentOptions;
import java.lang.instrument.Instrumentation;
import java.util.List;
import java.util.Map;
import net.bytebuddy.agent.builder.AgentBuilder;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.description.field.FieldDescription;
import net.bytebuddy.description.type.TypeDescription;
import net.bytebuddy.dynamic.DynamicType;
import net.bytebuddy.utility.JavaModule;

/**
 * {@code java -javaagent:rebalance-lens-javaagent.jar -Dlens.telemetry.topic=... -jar app.jar}: every
 * {@code KafkaConsumer} the application builds emits the telemetry-v1 contract, with no change to its code.
 *
 * <p>How: KafkaConsumer (kafka-clients 4.x) is a facade over a {@code ConsumerDelegate} field (the classic or
 * the async consumer). Advice on the constructor that builds it puts the agent's CommitWitness among the
 * interceptors on entry and, on exit, swaps the delegate for one that routes every call through the library's
 * {@code io.rebalancelens.agent.InstrumentedConsumer} ({@link Instrumenter}): one code path for both ways of adopting the agent.
 * Telemetry never fails the host: a bad option, an unknown kafka-clients shape or version prints one line and
 * the application runs uninstrumented.
 */
public final class LensJavaAgent {
    static final String CONSUMER = "org.apache.kafka.clients.consumer.KafkaConsumer";
    static final String CONFIG = "org.apache.kafka.clients.consumer.ConsumerConfig";
    static final String DELEGATE_FIELD = "delegate";
    static final String DELEGATE_TYPE = "org.apache.kafka.clients.consumer.internals.ConsumerDelegate";
    /** kafka-clients versions the agent was tested on (tests/jvm_agent/test_javaagent.py), as prefixes. */
    static final List<String> SUPPORTED = List.of("4.2.");

    private LensJavaAgent() {
    }

    public static void premain(String arguments, Instrumentation instrumentation) {
        try {
            Map<String, Object> options = LaunchOptions.read(System.getProperties(), System.getenv());
            if (AgentOptions.parse(options).explicitProcessing()) {  // the library's checks, and this one
                throw new IllegalArgumentException("lens.processing=explicit needs consumer.markProcessed(record), "
                        + "which an application's own KafkaConsumer cannot call: remove it, or build the consumer "
                        + "as an io.rebalancelens.agent.InstrumentedConsumer");
            }
            Hook.configure(options);
            install(instrumentation);
        } catch (IllegalArgumentException bad) {
            Hook.say(bad.getMessage() + " (set as -Dlens.* system property or LENS_* environment variable)");
        } catch (RuntimeException | LinkageError e) {
            Hook.say("could not start (" + e + ")");
        }
    }

    /** Advise KafkaConsumer when it loads. Touches no Kafka class: they are the application's to load first. */
    private static void install(Instrumentation instrumentation) {
        new AgentBuilder.Default()
                .with(AgentBuilder.TypeStrategy.Default.DECORATE)  // inlined advice only: the class keeps its shape
                .with(AgentBuilder.InitializationStrategy.NoOp.INSTANCE)  // and gains no initializer
                .with(new AgentBuilder.Listener.Adapter() {
                    @Override
                    public void onError(String typeName, ClassLoader loader, JavaModule module, boolean loaded,
                                        Throwable error) {
                        Hook.say("could not instrument " + typeName + " (" + error + ")");
                    }
                })
                .type(named(CONSUMER))
                .transform(LensJavaAgent::advise)
                .installOn(instrumentation);
    }

    /** The advice, when KafkaConsumer has the shape it was written for; else one line and the class unchanged. */
    private static DynamicType.Builder<?> advise(DynamicType.Builder<?> builder, TypeDescription type,
                                                 ClassLoader loader, JavaModule module,
                                                 java.security.ProtectionDomain domain) {
        boolean hasDelegate = !type.getDeclaredFields().filter(named(DELEGATE_FIELD)).filter(
                (FieldDescription.InDefinedShape f) -> f.getType().asErasure().getName().equals(DELEGATE_TYPE)).isEmpty();
        boolean hasConstructor = !type.getDeclaredMethods().filter(isConstructor().and(takesArguments(3)).and(
                m -> m.getParameters().get(0).getType().asErasure().getName().equals(CONFIG))).isEmpty();
        if (!hasDelegate || !hasConstructor) {
            Hook.say(CONSUMER + " has no " + DELEGATE_TYPE + " field '" + DELEGATE_FIELD + "' built by a ("
                    + CONFIG + ", Deserializer, Deserializer) constructor: not a kafka-clients version this agent "
                    + "supports (" + SUPPORTED + ")");
            return builder;
        }
        return builder.visit(Advice.to(ConstructorAdvice.class).on(isConstructor().and(takesArguments(3)).and(
                m -> m.getParameters().get(0).getType().asErasure().getName().equals(CONFIG))));
    }
}
