package io.rebalancelens.javaagent;

import static net.bytebuddy.matcher.ElementMatchers.isConstructor;
import static net.bytebuddy.matcher.ElementMatchers.named;
import static net.bytebuddy.matcher.ElementMatchers.takesArguments;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.lang.instrument.Instrumentation;
import java.lang.reflect.InvocationTargetException;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.WeakHashMap;
import net.bytebuddy.agent.builder.AgentBuilder;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.description.type.TypeDescription;
import net.bytebuddy.dynamic.ClassFileLocator;
import net.bytebuddy.dynamic.DynamicType;
import net.bytebuddy.matcher.ElementMatchers;
import net.bytebuddy.utility.JavaModule;

/**
 * {@code java -javaagent:rebalance-lens-javaagent.jar -Dlens.telemetry.topic=... -jar app.jar}: every
 * {@code KafkaConsumer} the application builds emits the telemetry-v1 contract, with no change to its code.
 *
 * <p>How: KafkaConsumer (kafka-clients 3.7+) is a facade over a {@code ConsumerDelegate} field (the classic or
 * the async consumer). Advice on the constructor that builds it puts the agent's CommitWitness among the
 * interceptors on entry and, on exit, swaps the delegate for one that routes every call through the library's
 * {@code io.rebalancelens.agent.InstrumentedConsumer}: one code path for both ways of adopting the agent. The
 * classes that link against kafka-clients (the helpers) are loaded beside the loader that defined KafkaConsumer
 * ({@link Hook}, {@link HelperLoader}), so a Spring Boot executable jar's nested kafka-clients is instrumented as a
 * flat class path's is; the advice is applied only where the helpers' references resolve ({@link References}).
 * Telemetry never fails the host: a bad option, a kafka-clients that lacks what the agent uses, or a JVM too old
 * for its library prints one line and the application runs uninstrumented.
 *
 * <p>{@code java -jar rebalance-lens-javaagent.jar check kafka-clients-X.jar...} says whether the agent attaches to
 * each, and what it lacks.
 */
public final class LensJavaAgent {
    static final String CONFIG = "org/apache/kafka/clients/consumer/ConsumerConfig";
    static final String DELEGATE_FIELD = "delegate";
    private static final String KAFKA_CONSUMER = "org/apache/kafka/clients/consumer/KafkaConsumer";
    private static final String DELEGATE_TYPE = "org/apache/kafka/clients/consumer/internals/ConsumerDelegate";
    private static final String DESERIALIZER = "org/apache/kafka/common/serialization/Deserializer";
    private static final String LAUNCH_CHECK = "io.rebalancelens.javaagent.helper.LaunchCheck";
    private static final String VERSION_FILE = "kafka/kafka-version.properties";
    /** What the advice itself needs of KafkaConsumer: the constructor it is inlined into and the field it sets. */
    static final List<References.Reference> ADVICE = List.of(
            new References.Reference(References.Kind.METHOD, KAFKA_CONSUMER, "<init>",
                    "(L" + CONFIG + ";L" + DESERIALIZER + ";L" + DESERIALIZER + ";)V", null),
            new References.Reference(References.Kind.FIELD, KAFKA_CONSUMER, DELEGATE_FIELD, "L" + DELEGATE_TYPE + ";",
                    null));

    /** Per class loader that defined a KafkaConsumer: whether the agent attached to it ({@link #advise}). */
    private static final Map<Object, Boolean> ATTACHED = Collections.synchronizedMap(new WeakHashMap<>());
    private static final Object BOOT = new Object();

    private LensJavaAgent() {
    }

    public static void premain(String arguments, Instrumentation instrumentation) {
        try {
            Map<String, Object> options = LaunchOptions.read(System.getProperties(), System.getenv());
            AgentJar jar = AgentJar.of(LensJavaAgent.class);
            References references = References.of(jar, ADVICE);
            String tooOld = references.javaProblem(Runtime.version().feature());
            if (tooOld != null) {
                Hook.say(tooOld);
                return;
            }
            check(options);
            Hook.configure(options, jar);
            install(instrumentation, references);
        } catch (IllegalArgumentException bad) {
            Hook.say(bad.getMessage() + " (set as -Dlens.* system property or LENS_* environment variable)");
        } catch (RuntimeException | LinkageError e) {
            Hook.say("could not start (" + e + ")");
        }
    }

    /** The options checked by the library's parser, in the system class loader (it names no Kafka type). */
    private static void check(Map<String, Object> options) {
        try {
            Class.forName(LAUNCH_CHECK).getMethod("check", Map.class).invoke(null, options);
        } catch (InvocationTargetException e) {
            throw e.getCause() instanceof RuntimeException ? (RuntimeException) e.getCause()
                    : new IllegalStateException(e.getCause());
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Advise KafkaConsumer and the client's coordinators ({@link CoordinatorAdvice}) when they load. Touches no Kafka
     * class: they are the application's to load first.
     */
    private static void install(Instrumentation instrumentation, References references) {
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
                .type(named(KAFKA_CONSUMER.replace('/', '.')))
                .transform((builder, type, loader, module, domain) -> advise(builder, loader, references))
                .type(ElementMatchers.namedOneOf(CoordinatorAdvice.ABSTRACT_COORDINATOR, CoordinatorAdvice.SYNC_HANDLER,
                                CoordinatorAdvice.CONSUMER_COORDINATOR)
                        .or(ElementMatchers.namedOneOf(CoordinatorAdvice.MEMBERSHIP.toArray(new String[0]))))
                .transform((builder, type, loader, module, domain) -> attached(loader, references)
                        ? builder.visit(CoordinatorAdvice.forType(type.getName())) : builder)
                .installOn(instrumentation);
    }

    /** The advice, where kafka-clients has everything the agent uses; else one line and the class unchanged. */
    private static DynamicType.Builder<?> advise(DynamicType.Builder<?> builder, ClassLoader loader,
                                                 References references) {
        List<String> missing = references.missing(loader == null ? ClassFileLocator.ForClassLoader.ofBootLoader()
                : ClassFileLocator.ForClassLoader.of(loader));
        ATTACHED.put(loader == null ? BOOT : loader, missing.isEmpty());
        if (!missing.isEmpty()) {
            Hook.say("kafka-clients " + version(loader) + " lacks what the agent uses: " + References.summary(missing)
                    + " (java -jar rebalance-lens-javaagent.jar check <kafka-clients jar> lists all)");
            return builder;
        }
        return builder.visit(Advice.to(ConstructorAdvice.class).on(isConstructor().and(takesArguments(3)).and(
                m -> m.getParameters().get(0).getType().asErasure().getInternalName().equals(CONFIG))));
    }

    /**
     * Whether the KafkaConsumer of {@code loader}'s kafka-clients was advised: its coordinators are advised only then
     * (they load while a KafkaConsumer is built, after KafkaConsumer itself), so a kafka-clients the agent refused
     * stays untouched.
     */
    private static boolean attached(ClassLoader loader, References references) {
        Boolean known = ATTACHED.get(loader == null ? BOOT : loader);
        if (known != null) {
            return known;
        }
        return references.missing(loader == null ? ClassFileLocator.ForClassLoader.ofBootLoader()
                : ClassFileLocator.ForClassLoader.of(loader)).isEmpty();
    }

    /** The kafka-clients version a loader sees (its own properties file, read without loading a class). */
    private static String version(ClassLoader loader) {
        try (InputStream in = loader == null ? ClassLoader.getSystemResourceAsStream(VERSION_FILE)
                : loader.getResourceAsStream(VERSION_FILE)) {
            Properties properties = new Properties();
            if (in != null) {
                properties.load(in);
            }
            return properties.getProperty("version", "(unknown version)");
        } catch (IOException e) {
            return "(unknown version)";
        }
    }

    /** {@code check <kafka-clients jar>...}: whether the agent attaches to each; exit status 1 if not to all. */
    public static void main(String[] args) throws IOException {
        if (args.length < 2 || !args[0].equals("check")) {
            System.err.println("usage: java -jar rebalance-lens-javaagent.jar check <kafka-clients jar>...");
            System.exit(2);
        }
        References references = References.of(AgentJar.of(LensJavaAgent.class), ADVICE);
        boolean all = true;
        for (String path : Arrays.asList(args).subList(1, args.length)) {
            ClassFileLocator jar = ClassFileLocator.ForJarFile.of(new File(path));
            List<String> missing = references.missing(new ClassFileLocator.Compound(jar,
                    ClassFileLocator.ForClassLoader.ofPlatformLoader()));
            String name = new File(path).getName();
            System.out.println(missing.isEmpty() ? name + ": the agent attaches"
                    : name + ": the agent does not attach; it lacks " + String.join(", ", missing));
            all &= missing.isEmpty();
        }
        System.exit(all ? 0 : 1);
    }
}
