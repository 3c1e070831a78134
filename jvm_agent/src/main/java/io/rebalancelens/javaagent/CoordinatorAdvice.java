package io.rebalancelens.javaagent;

import static net.bytebuddy.matcher.ElementMatchers.isConstructor;
import static net.bytebuddy.matcher.ElementMatchers.named;
import static net.bytebuddy.matcher.ElementMatchers.takesArgument;
import static net.bytebuddy.matcher.ElementMatchers.takesArguments;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.util.List;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.asm.AsmVisitorWrapper;
import net.bytebuddy.description.method.MethodDescription;
import net.bytebuddy.matcher.ElementMatcher;

/**
 * Advice on the client's group coordinators, for the rebalance phases the client goes through and shows nobody
 * (the design's KIP-795 page: join, the leader's assignment, sync), reported to {@link Hook#step} as they happen:
 *
 * <ul>
 *   <li>classic ({@code AbstractCoordinator}, every kafka-clients this agent supports): a JoinGroup sent
 *   ({@code sendJoinGroupRequest}), its answer ({@code onJoinFollower}, or the leader's private
 *   {@code onLeaderElected(JoinGroupResponse)} on entry), the leader's assignment sent (its exit), each SyncGroup
 *   answer handled (where the client ends its own rebalance-latency), the join complete
 *   ({@code ConsumerCoordinator.onJoinComplete}, right before the callbacks it runs);</li>
 *   <li>KIP-848 ({@code AbstractMembershipManager.transitionTo}, 4.0+; {@code MembershipManagerImpl}, 3.8 and
 *   3.9): each member state the client enters.</li>
 * </ul>
 *
 * Each coordinator is tied to its consumer by the client {@code Metrics} both were built with (constructor exit,
 * {@link Hook#built}). Like {@link ConstructorAdvice}, the inlined code names only JDK types, reaches Hook through
 * the system class loader and never throws into the host; it runs a few times per rebalance, never per record.
 */
final class CoordinatorAdvice {
    static final String INTERNALS = "org.apache.kafka.clients.consumer.internals.";
    static final String ABSTRACT_COORDINATOR = INTERNALS + "AbstractCoordinator";
    static final String CONSUMER_COORDINATOR = INTERNALS + "ConsumerCoordinator";
    static final String SYNC_HANDLER = ABSTRACT_COORDINATOR + "$SyncGroupResponseHandler";
    /** The KIP-848 membership managers: 4.0+, and 3.8/3.9's. */
    static final List<String> MEMBERSHIP = List.of(INTERNALS + "AbstractMembershipManager",
            INTERNALS + "ConsumerMembershipManager", INTERNALS + "MembershipManagerImpl");
    static final String METRICS = "org.apache.kafka.common.metrics.Metrics";

    private CoordinatorAdvice() {
    }

    /** The advice for one class of the client, by its name; null for a class not advised. */
    static AsmVisitorWrapper forType(String name) {
        if (ABSTRACT_COORDINATOR.equals(name)) {
            return new AsmVisitorWrapper.Compound(
                    Advice.to(Built.class).on(builtWithMetrics()),
                    step("join_sent", Enter.class).on(named("sendJoinGroupRequest").and(takesArguments(0))),
                    step("joined", Enter.class).on(named("onJoinFollower").and(takesArguments(0))),
                    step("joined", Enter.class).on(named("onLeaderElected").and(takesArguments(1))),
                    step("assigned", Exit.class).on(named("onLeaderElected").and(takesArguments(1))));
        }
        if (SYNC_HANDLER.equals(name)) {
            return step("sync_answered", Answered.class).on(named("handle").and(takesArguments(2))
                    .and(takesArgument(0, named("org.apache.kafka.common.requests.SyncGroupResponse"))));
        }
        if (CONSUMER_COORDINATOR.equals(name)) {
            return step("synced", Enter.class).on(named("onJoinComplete").and(takesArguments(4)));
        }
        if (MEMBERSHIP.contains(name)) {
            return new AsmVisitorWrapper.Compound(Advice.to(Built.class).on(builtWithMetrics()),
                    Advice.to(State.class).on(named("transitionTo").and(takesArguments(1))
                            .and(takesArgument(0, named(INTERNALS + "MemberState")))));
        }
        return null;
    }

    /** {@code advice} with its {@link Step} parameter bound to {@code step}. */
    private static Advice step(String step, Class<?> advice) {
        return Advice.withCustomMapping().bind(Step.class, step).to(advice);
    }

    /** The constructors that take the client's Metrics (the ones that know whose consumer they serve). */
    private static ElementMatcher<MethodDescription> builtWithMetrics() {
        return isConstructor().and(m -> m.getParameters().asTypeList().asErasures().stream()
                .anyMatch(type -> type.getName().equals(METRICS)));
    }

    /** The step an advised method reports (bound per method by {@link #step}). */
    @Retention(RetentionPolicy.RUNTIME)
    @Target(ElementType.PARAMETER)
    @interface Step {
    }

    static final class Built {
        private Built() {
        }

        @Advice.OnMethodExit(suppress = Throwable.class)
        static void exit(@Advice.This Object owner, @Advice.AllArguments Object[] arguments)
                throws ReflectiveOperationException {
            ClassLoader.getSystemClassLoader().loadClass(ConstructorAdvice.HOOK)
                    .getMethod("built", Object.class, Object[].class).invoke(null, owner, arguments);
        }
    }

    /** The step on entry to a coordinator's method. */
    static final class Enter {
        private Enter() {
        }

        @Advice.OnMethodEnter(suppress = Throwable.class)
        static void enter(@Advice.This Object coordinator, @Step String step) throws ReflectiveOperationException {
            ClassLoader.getSystemClassLoader().loadClass(ConstructorAdvice.HOOK)
                    .getMethod("step", Object.class, String.class).invoke(null, coordinator, step);
        }
    }

    /** The step on exit from a coordinator's method (the leader's: its assignment computed and sent). */
    static final class Exit {
        private Exit() {
        }

        @Advice.OnMethodExit(suppress = Throwable.class)
        static void exit(@Advice.This Object coordinator, @Step String step) throws ReflectiveOperationException {
            ClassLoader.getSystemClassLoader().loadClass(ConstructorAdvice.HOOK)
                    .getMethod("step", Object.class, String.class).invoke(null, coordinator, step);
        }
    }

    /**
     * A SyncGroup answer handled (on the polling or the heartbeat thread), for its coordinator (the handler's outer
     * instance): where the client ends its rebalance-latency when the answer is a success, which the join completing
     * next tells.
     */
    static final class Answered {
        private Answered() {
        }

        @Advice.OnMethodExit(suppress = Throwable.class)
        static void exit(@Advice.FieldValue("this$0") Object coordinator, @Step String step)
                throws ReflectiveOperationException {
            ClassLoader.getSystemClassLoader().loadClass(ConstructorAdvice.HOOK)
                    .getMethod("step", Object.class, String.class).invoke(null, coordinator, step);
        }
    }

    /** A KIP-848 member state entered (on exit: a transition the client refuses throws, and is not one). */
    static final class State {
        private State() {
        }

        @Advice.OnMethodExit(suppress = Throwable.class)
        static void exit(@Advice.This Object manager, @Advice.Argument(0) Object state)
                throws ReflectiveOperationException {
            ClassLoader.getSystemClassLoader().loadClass(ConstructorAdvice.HOOK)
                    .getMethod("step", Object.class, String.class).invoke(null, manager, String.valueOf(state));
        }
    }
}
