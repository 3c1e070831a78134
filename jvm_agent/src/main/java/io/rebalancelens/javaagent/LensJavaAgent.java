package io.rebalancelens.javaagent;

import static net.bytebuddy.matcher.ElementMatchers.named;

import io.rebalancelens.agent.ClientVersion;
import java.io.File;
import java.io.IOException;
import java.lang.instrument.Instrumentation;
import java.lang.reflect.InvocationTargetException;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;
import net.bytebuddy.agent.builder.AgentBuilder;
import net.bytebuddy.dynamic.ClassFileLocator;
import net.bytebuddy.dynamic.DynamicType;
import net.bytebuddy.matcher.ElementMatchers;
import net.bytebuddy.utility.JavaModule;

/**
 * {@code java -javaagent:rebalance-lens-javaagent.jar -Dlens.telemetry.topic=... -jar app.jar}: every
 * {@code KafkaConsumer} the application builds emits the telemetry-v1 contract, with no change to its code.
 *
 * <p>How: advice on the constructor every KafkaConsumer goes through puts the agent's CommitWitness among the
 * interceptors on entry and, on exit, routes the consumer's calls through the library's
 * {@code io.rebalancelens.agent.InstrumentedConsumer} (one code path for both ways of adopting the agent), the way
 * the kafka-clients' version family allows ({@link Family}: by swapping the ConsumerDelegate of 3.7 and later, by
 * routing the methods of 3.5 and 3.6's KafkaConsumer). The classes that link against kafka-clients (the helpers)
 * are loaded beside the loader that defined KafkaConsumer ({@link Hook}, {@link HelperLoader}), so a Spring Boot
 * executable jar's nested kafka-clients is instrumented as a flat class path's is; a family is applied only where
 * its references resolve ({@link References}). The whole agent is Java 11 bytecode, as kafka-clients. Telemetry
 * never fails the host: a bad option or a kafka-clients that lacks what the agent uses prints one line and the
 * application runs uninstrumented.
 *
 * <p>{@code java -jar rebalance-lens-javaagent.jar check kafka-clients-X.jar...} says whether the agent attaches to
 * each, and what it lacks.
 */
public final class LensJavaAgent {
    static final String DELEGATE_FIELD = "delegate";
    private static final String LAUNCH_CHECK = "io.rebalancelens.javaagent.helper.LaunchCheck";

    /** Per class loader that defined a KafkaConsumer: whether the agent attached to it ({@link #advise}). */
    private static final Map<Object, Boolean> ATTACHED = Collections.synchronizedMap(new WeakHashMap<>());
    private static final Object BOOT = new Object();

    private LensJavaAgent() {
    }

    public static void premain(String arguments, Instrumentation instrumentation) {
        try {
            Map<String, Object> options = LaunchOptions.read(System.getProperties(), System.getenv());
            AgentJar jar = AgentJar.of(LensJavaAgent.class);
            Map<Family, References> families = references(jar);
            check(options);
            Hook.configure(options, jar);
            install(instrumentation, families);
        } catch (IllegalArgumentException bad) {
            Hook.say(bad.getMessage() + " (set as -Dlens.* system property or LENS_* environment variable)");
        } catch (RuntimeException | LinkageError e) {
            Hook.say("could not start (" + e + ")");
        }
    }

    /** What each family uses: the library's and its own helpers' references, and its advice's. */
    static Map<Family, References> references(AgentJar jar) {
        Map<Family, References> families = new EnumMap<>(Family.class);
        for (Family family : Family.values()) {
            families.put(family, References.of(jar, family.advice, List.of(family.otherHelper)));
        }
        return families;
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
     * class: they are the application's to load first. REDEFINE, not DECORATE: the facade family adds a field (at the
     * class's first load only: nothing is retransformed).
     */
    private static void install(Instrumentation instrumentation, Map<Family, References> families) {
        new AgentBuilder.Default()
                .with(AgentBuilder.TypeStrategy.Default.REDEFINE)
                .with(AgentBuilder.InitializationStrategy.NoOp.INSTANCE)  // the class gains no initializer
                .with(new AgentBuilder.Listener.Adapter() {
                    @Override
                    public void onError(String typeName, ClassLoader loader, JavaModule module, boolean loaded,
                                        Throwable error) {
                        Hook.say("could not instrument " + typeName + " (" + error + ")");
                    }
                })
                .type(named(Family.KAFKA_CONSUMER.replace('/', '.')))
                .transform((builder, type, loader, module, domain) -> advise(builder, loader, families))
                .type(ElementMatchers.namedOneOf(CoordinatorAdvice.ABSTRACT_COORDINATOR, CoordinatorAdvice.SYNC_HANDLER,
                                CoordinatorAdvice.CONSUMER_COORDINATOR)
                        .or(ElementMatchers.namedOneOf(CoordinatorAdvice.MEMBERSHIP.toArray(new String[0]))))
                .transform((builder, type, loader, module, domain) -> attached(loader, families)
                        ? builder.visit(CoordinatorAdvice.forType(type.getName())) : builder)
                .installOn(instrumentation);
    }

    /** The first family whose references all resolve, advised; else one line and the class unchanged. */
    private static DynamicType.Builder<?> advise(DynamicType.Builder<?> builder, ClassLoader loader,
                                                 Map<Family, References> families) {
        Fit fit = fit(families, classesOf(loader));
        ATTACHED.put(loader == null ? BOOT : loader, fit.family != null);
        if (fit.family == null) {
            Hook.say("kafka-clients " + ClientVersion.of(loader) + " lacks what the agent uses: "
                    + References.summary(fit.missing)
                    + " (java -jar rebalance-lens-javaagent.jar check <kafka-clients jar> lists all)");
            return builder;
        }
        return fit.family.advise(builder);
    }

    /**
     * Whether a family was applied to the KafkaConsumer of {@code loader}'s kafka-clients: its coordinators are advised
     * only then (they load while a KafkaConsumer is built, after KafkaConsumer itself), so a kafka-clients the agent
     * refused stays untouched.
     */
    private static boolean attached(ClassLoader loader, Map<Family, References> families) {
        Boolean known = ATTACHED.get(loader == null ? BOOT : loader);
        return known != null ? known : fit(families, classesOf(loader)).family != null;
    }

    private static ClassFileLocator classesOf(ClassLoader loader) {
        return loader == null ? ClassFileLocator.ForClassLoader.ofBootLoader()
                : ClassFileLocator.ForClassLoader.of(loader);
    }

    /** The family that fits {@code classes}, or none and what the closest one lacks. */
    static Fit fit(Map<Family, References> families, ClassFileLocator classes) {
        List<String> closest = null;
        for (Map.Entry<Family, References> family : families.entrySet()) {
            List<String> missing = family.getValue().missing(classes);
            if (missing.isEmpty()) {
                return new Fit(family.getKey(), missing);
            }
            closest = closest == null || missing.size() < closest.size() ? missing : closest;
        }
        return new Fit(null, closest);
    }

    /** A family that fits (and nothing missing), or none and what the closest family lacks. */
    static final class Fit {
        final Family family;
        final List<String> missing;

        Fit(Family family, List<String> missing) {
            this.family = family;
            this.missing = missing;
        }
    }

    /**
     * {@code check <kafka-clients jar>...}: whether the agent attaches to each, and with which family, else what it
     * lacks; exit status 1 if not to all.
     */
    public static void main(String[] args) throws IOException {
        if (args.length < 2 || !args[0].equals("check")) {
            System.err.println("usage: java -jar rebalance-lens-javaagent.jar check <kafka-clients jar>...");
            System.exit(2);
        }
        Map<Family, References> families = references(AgentJar.of(LensJavaAgent.class));
        boolean all = true;
        for (String path : Arrays.asList(args).subList(1, args.length)) {
            ClassFileLocator jar = ClassFileLocator.ForJarFile.of(new File(path));
            Fit fit = fit(families, new ClassFileLocator.Compound(jar,
                    ClassFileLocator.ForClassLoader.ofPlatformLoader()));
            String name = new File(path).getName();
            System.out.println(fit.family != null
                    ? name + ": the agent attaches (" + fit.family.helperName() + " family)"
                    : name + ": the agent does not attach; it lacks " + String.join(", ", fit.missing));
            all &= fit.family != null;
        }
        System.exit(all ? 0 : 1);
    }
}
